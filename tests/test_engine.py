"""The write engine: transcripts written in place, and memfs's own writes never taken for a person's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import wait_for

import memfs
from memfs.engine import WriteEngine, engine_of

PERSON = "Alice Editor <alice@example.com>"


def person_commits(vault: memfs.Vault) -> list[memfs.Revision]:
    return [r for r in vault.log() if r.author.email == "alice@example.com"]


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[memfs.Vault]:
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person=PERSON) as v:
        yield v


def test_engine_of_takes_a_vault_or_an_engine_and_nothing_else(vault: memfs.Vault) -> None:
    assert engine_of(vault) is vault.engine and engine_of(vault.engine) is vault.engine
    with pytest.raises(memfs.InvalidArgumentError, match="expected a memfs Vault"):
        engine_of("~/agent-memory")
    with pytest.raises(memfs.InvalidArgumentError):
        memfs.MemoryStore(object(), "users/alice")


def test_append_refuses_a_file_that_changed_since_it_was_read(vault: memfs.Vault) -> None:
    engine: WriteEngine = vault.engine
    engine.replace("sessions/t.md", b"---\nmemfs: transcript/1\n---\n")
    target = vault.root / "sessions/t.md"
    st = target.stat()
    size = engine.append("sessions/t.md", b"one\n", expect=(st.st_ino, st.st_size))
    assert size == st.st_size + 4 and target.read_bytes().endswith(b"one\n")
    with pytest.raises(memfs.ConflictError, match="changed since it was read"):
        engine.append("sessions/t.md", b"two\n", expect=(st.st_ino, st.st_size))  # the size moved on
    assert not target.read_bytes().endswith(b"two\n")
    engine.truncate("sessions/t.md", st.st_size)
    assert target.read_bytes() == b"---\nmemfs: transcript/1\n---\n"


def test_uncommitted_session_writes_are_recorded_as_memfs_own_until_committed(vault: memfs.Vault) -> None:
    session = vault.session("later", commit="manual")
    session.append([{"role": "user", "content": "hello"}])
    assert session.path in vault.engine.own_uncommitted()
    assert vault.engine.commit_outside_edits([session.path]) is None  # not a person's edit
    assert person_commits(vault) == []
    assert any(f.check == "sessions" for f in vault.doctor())
    assert session.commit() is not None
    assert vault.engine.own_uncommitted() == {}
    assert vault.log(session.path)[0].author.name == "memfs agent"


def test_a_person_who_edits_a_transcript_on_top_of_pending_messages_is_the_author(vault: memfs.Vault) -> None:
    session = vault.session("mixed", commit="manual")
    session.append([{"role": "user", "content": "hello"}])
    session.file.write_text(session.file.read_text().replace("hello", "hello there"))
    assert vault.engine.commit_outside_edits([session.path]) is not None
    assert [r.subject for r in person_commits(vault)] == [f"edit: {session.path} (changed outside memfs)"]
    assert vault.engine.own_uncommitted() == {}


def test_a_reopened_vault_does_not_commit_pending_session_messages_as_the_person(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False, person=PERSON) as vault:
        vault.session("pending", commit="close").append([{"role": "user", "content": "not yet"}])
    with memfs.Vault.open(root, durable=False, person=PERSON) as again:
        assert person_commits(again) == []
        assert "sessions/pending.md" in again.engine.own_uncommitted()


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["manual", "close", 3600.0])
def test_the_watcher_never_commits_memfs_own_writes_as_the_person(vault: memfs.Vault, policy: object) -> None:
    events: list[tuple[str, list[str]]] = []
    with vault.watch(index_delay=0.05, commit_delay=0.2, on_change=lambda k, p: events.append((k, p))):
        session = vault.session("agent", commit=policy)  # type: ignore[arg-type]
        session.append([{"role": "user", "content": "the agent writes this"}])
        session.append([{"role": "assistant", "content": "and this"}])
        store = vault.memories("users/alice")
        memory = store.add("Alice likes tea.", title="Tea")
        store.update(memory.id or "", body="Alice likes green tea.\n")
        wait_for(lambda: vault.search_messages("agent writes"))
        time.sleep(1.0)  # several commit delays: the watcher had every chance to commit
        assert person_commits(vault) == []
        # a person's own save in the same vault is still theirs
        path = vault.root / "memories/users/alice/tea.md"
        path.write_text(path.read_text().replace("green tea", "matcha"))
        wait_for(lambda: len(person_commits(vault)) == 1)
        assert person_commits(vault)[0].subject == "edit: memories/users/alice/tea.md (changed outside memfs)"
        session.commit()
    assert {r.author.name for r in vault.log(session.path)} == {"memfs agent"}  # (an interval commits at once too)
    assert vault.history.status() == []
