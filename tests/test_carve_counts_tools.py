"""What one tool write costs: the lock taken once, the path resolved once, the front matter parsed once.

Counted on a real vault (real git, a real index) by wrapping the real functions with counters
that call them: nothing is replaced. A wrapper is set wherever memfs imported the function, so
a call through any module counts.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import memfs
from memfs import _fs, content, credentials, documents, paths
from memfs.tools import MemoryTools

NS = "users/alice"
SCANNED: list[str] = []  # the texts find_secrets was given, in the test running


def count(monkeypatch: pytest.MonkeyPatch, counts: Counter[str], module: Any, name: str) -> None:
    """Count the calls of ``module.name`` made through any memfs module that imported it."""
    original: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        if name == "find_secrets":
            SCANNED.append(args[0])
        return original(*args, **kwargs)

    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("memfs") and getattr(mod, name, None) is original:
            monkeypatch.setattr(mod, name, counted)


def count_method(monkeypatch: pytest.MonkeyPatch, counts: Counter[str], cls: type, name: str) -> None:
    original = getattr(cls, name)

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, counted)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    found: Counter[str] = Counter()
    SCANNED.clear()
    count_method(monkeypatch, found, _fs.VaultLock, "_acquire_file")  # the lock taken (not re-entered)
    count_method(monkeypatch, found, _fs.VaultLock, "hold")  # the lock entered, taken or re-entered
    count_method(monkeypatch, found, MemoryTools, "_resolve_now")  # a /memories path resolved
    count(monkeypatch, found, paths, "split_virtual")
    count(monkeypatch, found, documents, "_load_yaml")  # front matter parsed
    count(monkeypatch, found, content, "parse_text")
    count(monkeypatch, found, credentials, "find_secrets")
    return found


@pytest.fixture
def tools(vault: memfs.Vault) -> MemoryTools:
    tools = MemoryTools(vault, NS)
    text = "---\ntype: fact\ntags: [travel]\n---\nAlice prefers the window seat.\nShe flies from Lyon.\n"
    assert not tools.call({"command": "create", "path": "/memories/seat.md", "file_text": text}).is_error
    return tools


def test_str_replace_takes_the_lock_once_resolves_once_and_parses_once(
    tools: MemoryTools, counts: Counter[str], vault: memfs.Vault
) -> None:
    result = tools.call(
        {"command": "str_replace", "path": "/memories/seat.md", "old_str": "window", "new_str": "aisle"}
    )

    assert not result.is_error, result.text
    written = (vault.root / "memories" / NS / "seat.md").read_text("utf-8")
    assert "aisle seat" in written
    assert counts["_acquire_file"] == counts["hold"] == 1  # the steps inside the tool's hold enter it no more
    assert counts["_resolve_now"] == counts["split_virtual"] == 1  # the write check and the edit share it
    assert counts["_load_yaml"] == counts["parse_text"] == 1  # the edited text, once: not the stamped one again
    # the memory's text is scanned once (stamp); the others are the file name, the commit's message,
    # trailers and identities in one (history), the model's new_str (the redaction note) and the answer
    assert counts["find_secrets"] == 5
    scanned = SCANNED[:]
    assert scanned.count(written) == 1 and not [t for t in scanned if t != written and t.startswith("---")]


@pytest.mark.parametrize("old, new", [("window", "aisle\nseat"), ("She flies from Lyon.", "")])
def test_other_edits_cost_the_same(
    tools: MemoryTools, counts: Counter[str], vault: memfs.Vault, old: str, new: str
) -> None:
    result = tools.call({"command": "str_replace", "path": "/memories/seat.md", "old_str": old, "new_str": new})

    assert not result.is_error, result.text
    assert (counts["_acquire_file"], counts["_resolve_now"], counts["_load_yaml"]) == (1, 1, 1)


def test_the_snippet_still_numbers_the_lines_of_the_stamped_file(tools: MemoryTools, vault: memfs.Vault) -> None:
    """The front matter's lines are counted by its fences now: the snippet names the changed line as before."""
    text = tools.run("str_replace", path="/memories/seat.md", old_str="Lyon", new_str="Nice")

    lines = (vault.root / "memories" / NS / "seat.md").read_text("utf-8").split("\n")
    number = next(i for i, line in enumerate(lines, 1) if "Nice" in line)
    assert f"{str(number).rjust(6)}\tShe flies from Nice." in text


def test_create_resolves_once_and_the_write_parses_once(vault: memfs.Vault, counts: Counter[str]) -> None:
    tools = MemoryTools(vault, NS)
    counts.clear()

    result = tools.call({"command": "create", "path": "/memories/new.md", "file_text": "---\ntype: fact\n---\nHi.\n"})

    assert not result.is_error, result.text
    assert counts["_resolve_now"] == 1
    assert counts["parse_text"] == 1  # the write parses the text once; the near-duplicate check reads its body
    # the near-duplicate search (after the write let the lock go) takes the lock and indexes the new
    # file: that is the second lock and the second parse, the index's own
    assert counts["_acquire_file"] == counts["_load_yaml"] == 2


def test_a_stamped_front_matter_at_the_size_bound_is_still_refused(vault: memfs.Vault) -> None:
    """Text the write does not parse again is only text memfs stamped; one stamped past the bound is refused."""
    tools = MemoryTools(vault, NS)
    filler = "x" * (documents.MAX_FRONT_MATTER_BYTES - 40)
    result = tools.call(
        {"command": "create", "path": "/memories/big.md", "file_text": f"---\nnote: {filler}\n---\nbody\n"}
    )

    assert result.is_error
    assert "front matter is larger" in result.text
    assert not (vault.root / "memories" / NS / "big.md").exists()
