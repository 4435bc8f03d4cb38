"""Git states people create, and locks left by a killed memfs writer."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

import memfs
from memfs.history import GitHistory

NS = "users/alice"


# -- locks --------------------------------------------------------------------------------


def test_private_index_lock_left_by_a_killed_writer_is_cleared_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, durable=False) as vault:
        vault.memories(NS).add("one", title="one")
    lock = root / ".memfs" / "git-index.lock"
    lock.write_text("")  # fresh, as a writer killed in the middle of `update-index` leaves it
    with memfs.Vault.open(root, durable=False, lock_timeout=1) as vault:
        started = time.monotonic()
        vault.memories(NS).add("two", title="two")
        assert time.monotonic() - started < 1
        assert not lock.exists()
        assert vault.log()[0].subject == "memory: create users/alice/two.md"
        assert vault.history.status() == []
    assert "left by an interrupted memfs write" in caplog.text


def test_private_index_lock_keeps_the_careful_rule_without_the_vault_lock(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, durable=False):
        pass
    (root / "note.md").write_text("x\n")
    lock = root / ".memfs" / "git-index.lock"
    lock.write_text("")
    history = GitHistory(root, root / ".memfs", lock_timeout=0.2)  # nobody holds the vault lock
    try:
        with pytest.raises(memfs.GitLockError):
            history.commit(["note.md"], "note", author=memfs.Identity("a", "a@b"))
    finally:
        history.close()
    assert lock.exists()


def test_gits_own_fresh_lock_is_never_taken_for_memfss(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with memfs.Vault.open(tmp_path / "v", durable=False, lock_timeout=0.3) as vault:
        lock = vault.root / ".git" / "index.lock"
        lock.write_text("")  # a person's git command is running
        vault.memories(NS).add("one", title="one")
        assert lock.exists()
        assert "interrupted memfs write" not in caplog.text
        lock.unlink()
