"""A session append takes the vault lock once, reads the transcript at most once, scans what it writes once.

The real functions are wrapped by counters (they still run): the lock's ``hold`` and its ``flock``,
the YAML parser of front matter, the reader of a transcript's tail, and ``find_secrets`` where the
session's text is scanned and where a commit's words are.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memfs
from memfs import _fs, commits, credentials, documents, transcript
from memfs.credentials import find_secrets, redact_value, redact_values

MESSAGE = [{"role": "user", "content": "one more message"}]
TOKEN = "ghp_" + "a1B2" * 9


def count(monkeypatch: pytest.MonkeyPatch, counts: Counter[str], owner: Any, name: str, key: str) -> None:
    """Count the calls of ``owner.name`` under ``key``; the original still does the work."""
    original: Callable[..., Any] = getattr(owner, name)
    depth = 0

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal depth
        counts[key] += depth == 0  # a call it makes of itself is part of the same one
        depth += 1
        try:
            return original(*args, **kwargs)
        finally:
            depth -= 1

    monkeypatch.setattr(owner, name, counted)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counts: Counter[str] = Counter()
    count(monkeypatch, counts, _fs.VaultLock, "hold", "lock")
    count(monkeypatch, counts, _fs.VaultLock, "_acquire_file", "flock")
    count(monkeypatch, counts, documents, "_load_yaml", "yaml")
    count(monkeypatch, counts, transcript, "read_tail", "tail read")
    # the text a session writes is scanned in credentials (redact_values); a commit's words in commits
    count(monkeypatch, counts, credentials, "find_secrets", "content scan")
    count(monkeypatch, counts, commits, "find_secrets", "commit words scan")
    for module in [m for name, m in sys.modules.items() if name.startswith("memfs.") and m is not None]:
        if module not in (credentials, commits) and getattr(module, "find_secrets", None) is find_secrets:
            count(monkeypatch, counts, module, "find_secrets", "content scan")
    return counts


def test_an_append_to_a_transcript_this_process_wrote(vault: memfs.Vault, counts: Counter[str]) -> None:
    session = vault.session("chat")
    session.append([{"role": "user", "content": "hello"}])
    head = vault.log()[0].sha
    for attempt, appender in enumerate([session, vault.session("chat")]):  # objects of a process share its writes
        counts.clear()
        appender.append(MESSAGE)
        assert counts == {"lock": 1, "flock": 1, "content scan": 1, "commit words scan": 1}, attempt
    assert vault.log()[0].sha != head and session.items()[-1] == MESSAGE[0]


def test_an_append_after_another_process_wrote_reads_the_tail_once(vault: memfs.Vault, counts: Counter[str]) -> None:
    vault.session("chat").append([{"role": "user", "content": "hello"}])
    with memfs.Vault.open(vault.root) as other:  # another engine: as another process
        other.session("chat").append([{"role": "assistant", "content": "hi"}])
    session = vault.session("chat")
    counts.clear()
    session.append(MESSAGE)
    assert counts == {"lock": 1, "flock": 1, "tail read": 1, "content scan": 1, "commit words scan": 1}
    assert [item["content"] for item in session.items()] == ["hello", "hi", "one more message"]


def test_an_append_with_a_credential_redacts_it_as_before(vault: memfs.Vault, counts: Counter[str]) -> None:
    session = vault.session("chat")
    session.append([{"role": "user", "content": "hello"}])
    counts.clear()
    session.append([{"role": "user", "content": f"my token\n{TOKEN}", "name": f"é{TOKEN}"}])
    # the text once; then, since something was found, the warning's place and writer (redacted too)
    assert counts["content scan"] == 3 and counts["lock"] == 1
    assert session.items()[-1] == {
        "role": "user",
        "content": "my token\n[REDACTED:github-token]",
        "name": "é[REDACTED:github-token]",
    }
    assert TOKEN not in session.file.read_text()


@pytest.mark.parametrize(
    "values",
    [
        [{"role": "user", "content": "nothing here"}],
        [{"content": f"a\n{TOKEN}"}, {"x": [f"é{TOKEN}", 5, None, True, {f"key {TOKEN}": f"{TOKEN}\x00{TOKEN}"}]}],
        [{"a": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----", "b": "AKIA" + "ABCDEFGHIJKLMNOP"}],
        [{"a": "-----BEGIN PRIVATE KEY-----", "b": "-----END PRIVATE KEY-----", "c": "-"}, ["----", "eyJ"]],
        [["eyJabcdefghij.eyJabcdefghij.abcdefghijklmnopqr"], "sk-" + "Ab1" * 12, TOKEN[:-1], TOKEN + "x"],
    ],
)
def test_one_scan_redacts_as_a_scan_of_each_string(values: list[Any]) -> None:
    redacted, found = redact_values(json.loads(json.dumps(values)))
    assert redacted == [redact_value(value) for value in values]

    def kinds(value: Any) -> list[str]:  # what scanning each string alone finds, keys included
        if isinstance(value, str):
            return [f.kind for f in find_secrets(value)]
        if isinstance(value, list):
            return [k for item in value for k in kinds(item)]
        if isinstance(value, dict):
            return [k for key, item in value.items() for k in kinds(key) + kinds(item)]
        return []

    assert sorted(f.kind for f in found) == sorted(kinds(values))


def test_the_put_back_memory_is_the_engines_not_a_module_global(tmp_path: Path) -> None:
    import memfs.sessions

    assert not [name for name, value in vars(memfs.sessions).items() if isinstance(value, dict) and "TAIL" in name]
    with memfs.Vault.open(tmp_path / "a", create=True) as a, memfs.Vault.open(tmp_path / "b", create=True) as b:
        a.session("chat").append(MESSAGE)
        assert a.engine.appends.tail("sessions/chat.md").n == 1
        assert b.engine.appends.tail("sessions/chat.md").n == 0


def test_durable_set_on_an_open_engine_reaches_its_journal_and_transcripts(vault: memfs.Vault) -> None:
    engine = vault.engine
    for value in (not engine.durable, engine.durable):
        engine.durable = value
        assert (engine.durable, engine.journal.durable, engine.appends.durable) == (value, value, value)


def test_a_memory_added_is_parsed_once_scanned_once_and_locked_once(vault: memfs.Vault, counts: Counter[str]) -> None:
    store = vault.memories("users/bob")
    store.add("Bob visited the museum on Saturday with his sister.")  # the first write sets the vault up
    counts.clear()

    memory = store.add("Bob keeps bees on the roof of his building.")

    assert counts["flock"] == 1 and counts["yaml"] == 1  # the stamped document is handed down, not parsed again
    # the stamped document once; the body once more for the title made of its first sentence (which
    # must never carry a credential, whatever on_secret lets the body keep); the commit's message,
    # trailers and identities in one scan
    assert (counts["content scan"], counts["commit words scan"]) == (2, 1)
    assert store.get(memory.id).body.strip() == "Bob keeps bees on the roof of his building."
