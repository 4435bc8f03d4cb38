"""A real full disk: a small tmpfs holding the vault, filled up, then freed."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest
from helpers import fill

import memfs

#: Whoosh keeps the buffered segment files of a write that failed on the full disk; when they are
#: collected, their last flush fails with ENOSPC inside __del__ ("exception ignored"). memfs
#: cannot close what Whoosh keeps; the index is rebuilt from the files, so nothing is lost.
WHOOSH_LEAK = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def tree_state(vault: memfs.Vault) -> tuple[dict[str, bytes], str | None]:
    files = {p.relative_to(vault.root).as_posix(): p.read_bytes()
             for top in ("memories", "sessions") for p in (vault.root / top).rglob("*") if p.is_file()}  # fmt: skip
    return files, vault.history.head()


@pytest.mark.faults
@WHOOSH_LEAK
def test_a_full_disk_refuses_writes_cleanly_and_everything_works_once_freed(small_disk: Path) -> None:
    with memfs.Vault.open(small_disk / "vault", create=True) as vault:
        store = vault.memories("users/alice")
        memory = store.add("Alice drinks green tea.", title="Tea")
        session = vault.session("chat")
        session.append([{"role": "user", "content": "hello"}])
        vault.search("tea")
        filler = fill(small_disk)
        before = tree_state(vault)
        attempts = [
            lambda: store.update(memory.id or "", body="Alice drinks matcha now, " + "a long tale " * 400 + "\n"),
            lambda: store.add("A new memory " * 400, title="New"),
            lambda: session.append([{"role": "user", "content": "more " * 2000}]),
            lambda: store.delete(memory.id or ""),
        ]
        refused = 0
        for attempt in attempts:
            try:
                attempt()
            except OSError as exc:  # refused: a clear error, the files and git exactly as before
                assert exc.errno in (errno.ENOSPC, errno.EDQUOT), exc
                assert tree_state(vault) == before
                refused += 1
            else:  # a delete may free enough room to commit: then it is all in git
                assert vault.history.status() == []
                before = tree_state(vault)
        assert refused >= 3
        filler.unlink()
        for crumb in small_disk.glob("crumb-*"):
            crumb.unlink()
        store.update(memory.id or "", body="Alice drinks matcha now.\n")
        session.append([{"role": "user", "content": "more"}])
        assert [h.path for h in vault.search("matcha")] == [f"memories/users/alice/{memory.name}"]
        assert vault.history.status() == []
    fsck = subprocess.run(["git", "-C", str(small_disk / "vault"), "fsck"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


@pytest.mark.faults
@WHOOSH_LEAK
def test_a_commit_that_fails_on_a_full_disk_puts_the_old_bytes_back(small_disk: Path) -> None:
    with memfs.Vault.open(small_disk / "vault", create=True) as vault:
        store = vault.memories("users/alice")
        memory = store.add("Alice drinks green tea.", title="Tea")
        path = vault.root / "memories/users/alice" / memory.name
        fill(small_disk)
        outcomes = []
        for crumb in sorted(small_disk.glob("crumb-4096-*"))[:3]:  # room for the new file, not for git too
            crumb.unlink()
            before = tree_state(vault)
            try:
                store.update(memory.id or "", body=f"Alice drinks matcha ({crumb.name}).\n")
            except OSError as exc:
                assert exc.errno in (errno.ENOSPC, errno.EDQUOT), exc
                assert tree_state(vault) == before, "a refused write left its bytes behind"
                outcomes.append("refused")
            else:
                assert vault.history.status() == [] and "matcha" in path.read_text()
                outcomes.append("written")
        assert "refused" in outcomes
