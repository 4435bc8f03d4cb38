"""A tool error is a sentence for the model that never shows a vault-internal path."""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memfs
from memfs import errors
from memfs.tools import COMMANDS, MemoryTools

NS = "users/alice"
CALLS: dict[str, dict[str, Any]] = {
    "view": {"path": "/memories/a.md"},
    "create": {"path": "/memories/new.md", "file_text": "new\n"},
    "str_replace": {"path": "/memories/a.md", "old_str": "alpha", "new_str": "beta"},
    "insert": {"path": "/memories/a.md", "insert_line": 5, "insert_text": "more"},
    "delete": {"path": "/memories/a.md"},
    "rename": {"old_path": "/memories/a.md", "new_path": "/memories/b.md"},
    "search": {"query": "alpha"},
    "history": {"path": "/memories/a.md"},
    "links": {"path": "/memories/a.md"},
    "restore": {"path": "/memories/a.md", "revision": "HEAD"},
    "supersede": {"path": "/memories/a.md", "new_text": "alpha, changed"},
}


def leaks(text: str, vault: memfs.Vault) -> list[str]:
    """Vault-internal paths in ``text``: the vault folder, or a vault path not in /memories form."""
    found = [m.group(0) for m in re.finditer(r"(?<![/\w])memories/\S+", text)]
    return found + ([str(vault.root)] if str(vault.root) in text else [])


def error_classes() -> list[type[errors.MemfsError]]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.MemfsError)]


def make(cls: type[errors.MemfsError], vault: memfs.Vault) -> errors.MemfsError:
    rel = f"memories/{NS}/a.md"
    text = f"{rel} and {vault.root / rel} failed; memories/users/bob/secret.md too"
    if cls is errors.FileTooLargeError:
        return cls(rel, 2**31, 4 * 2**20)
    if cls is errors.UnsafeRepositoryError:
        return cls(text, str(vault.root))
    return cls(rel, text) if cls in (errors.DocumentError, errors.ProposalError) else cls(text)


def snapshot(vault: memfs.Vault) -> tuple[dict[str, bytes], str]:
    folder = vault.root / f"memories/{NS}"
    return {p.name: p.read_bytes() for p in folder.iterdir()}, vault.log()[0].sha


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[memfs.Vault]:
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False, lock_timeout=0.2) as v:
        yield v


@pytest.fixture
def tools(vault: memfs.Vault) -> MemoryTools:
    tools = MemoryTools(vault, NS)
    assert not tools.call({"command": "create", "path": "/memories/a.md", "file_text": "alpha\n"}).is_error
    return tools


def test_the_calls_cover_every_command() -> None:
    assert set(CALLS) == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_error_type_becomes_a_sentence_with_memories_paths_only(
    tools: MemoryTools, vault: memfs.Vault, command: str
) -> None:
    classes = error_classes()
    assert len(classes) >= 15
    for cls in classes:
        text = tools.explain(make(cls, vault), command, CALLS[command])
        assert text and "\n" not in text and not leaks(text, vault), (cls.__name__, text)
        assert "Traceback" not in text and "memfs." not in text, (cls.__name__, text)


def test_the_other_tenants_path_is_not_named(tools: MemoryTools, vault: memfs.Vault) -> None:
    text = tools.explain(errors.HistoryError("git failed on memories/users/bob/secret.md"), "create", {})
    assert "bob" not in text
    text = tools.explain(errors.ToolCallError("see memories/users/bob/secret.md"), "view", {})
    assert "bob" not in text and "outside your memory" in text


def test_restore_of_a_file_that_never_existed_names_the_virtual_path(tools: MemoryTools, vault: memfs.Vault) -> None:
    result = tools.call({"command": "restore", "path": "/memories/b.md", "revision": "HEAD"})
    assert result.is_error and not leaks(result.text, vault)
    assert "/memories/b.md did not exist at revision 'HEAD'" in result.text
    bad = tools.call({"command": "restore", "path": "/memories/a.md", "revision": "deadbeef"})
    assert bad.is_error and "no revision 'deadbeef'" in bad.text and not leaks(bad.text, vault)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_held_vault_lock_is_a_sentence_and_changes_nothing(
    tools: MemoryTools, vault: memfs.Vault, command: str
) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with vault.locked():
            held.set()
            release.wait(10)

    vault.engine.catalog.mark_pending([f"memories/{NS}/a.md"])  # so that even a search needs the lock
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        before = (vault.root / f"memories/{NS}/a.md").read_bytes(), vault.log()[0].sha
        result = tools.call({"command": command, **CALLS[command]})
    finally:
        release.set()
        holder.join()
    assert not leaks(result.text, vault), result.text
    if result.is_error:
        assert (vault.root / f"memories/{NS}/a.md").read_bytes() == before[0] and vault.log()[0].sha == before[1]
    if command in ("create", "str_replace", "insert", "delete", "rename", "restore", "search", "supersede"):
        assert result.is_error and "busy" in result.text, result.text


@pytest.mark.parametrize("command", ["create", "str_replace", "insert", "delete", "rename", "restore", "supersede"])
def test_git_refusing_a_commit_is_a_sentence_and_changes_nothing(
    tools: MemoryTools, vault: memfs.Vault, command: str
) -> None:
    call = {"command": command, **CALLS[command]}
    if command == "restore":  # a restore that changes something: back to before an edit
        assert not tools.call({"command": "str_replace", **CALLS["str_replace"]}).is_error
        call["revision"] = "HEAD~1"
    lock = vault.root / ".git/refs/heads/main.lock"
    lock.write_text("held by another git command\n")
    try:
        before = snapshot(vault)
        result = tools.call(call)
    finally:
        lock.unlink()
    assert result.is_error and not leaks(result.text, vault), result.text
    assert "could not be recorded" in result.text
    assert snapshot(vault) == before
