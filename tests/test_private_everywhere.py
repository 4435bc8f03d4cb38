"""A private vault is private all the way down, under umask 022: cloned, synced, and inside .git and .memfs.

What ``init`` made private a clone made world-readable (folders 0755, files 0644), and inside a
private vault the index segments, ``.memfs/pending`` and git's own index were 0644 too.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import memfs


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def readable_by_others(root: Path) -> list[str]:
    """Every file and folder under ``root`` that its group or others may read, write or enter."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
                found.append(f"{oct(stat.S_IMODE(st.st_mode))} {os.path.relpath(path, root)}")
    return sorted(found)


def use(vault: memfs.Vault) -> None:
    vault.memories("users/alice").add(f"Alice likes tea {os.urandom(2).hex()}.", title="Tea")
    vault.session("chat").append([{"role": "user", "content": "hello"}])
    vault.search("tea")


def test_a_new_vault_in_use_has_nothing_others_can_read(tmp_path: Path, umask_022: None) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False) as vault:
        use(vault)
        memory = vault.memories("users/bob").add("Bob likes coffee.", title="Coffee")
        assert vault.search("coffee")
        (vault.root / memory.path).write_text("---\ntitle: Coffee\n---\nBob likes strong coffee.\n")
        assert vault.search("strong")  # a person's edit, noted by the search
        lock = vault.root / ".git/index.lock"
        lock.write_bytes(b"")  # git's index busy: the paths it lags on are noted under .memfs/
        vault.memories("users/bob").add("Bob likes tea too.", title="Tea")
        lock.unlink()
        vault.memories("users/bob").add("Bob likes cake.", title="Cake")
        assert readable_by_others(vault.root) == []


def test_a_clone_and_a_sync_are_as_private_as_init(tmp_path: Path, umask_022: None) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "--initial-branch=main", str(remote)], check=True)
    with memfs.Vault.open(tmp_path / "a", create=True, durable=False) as a:
        subprocess.run(["git", "-C", str(a.root), "remote", "add", "origin", remote.as_uri()], check=True)
        use(a)
        a.sync()
    with memfs.Vault.clone(remote.as_uri(), tmp_path / "b", durable=False) as b:
        assert readable_by_others(b.root) == [], "a fresh clone"
        use(b)
        b.sync()
        assert readable_by_others(b.root) == [], "after writes and a sync"
    with memfs.Vault.open(tmp_path / "a", durable=False) as a:
        use(a)
        a.sync()  # fetches what b pushed: new objects and packs
        assert readable_by_others(a.root) == [], "after a sync that fetched"


def test_a_shared_vault_still_shares_with_its_group(tmp_path: Path, umask_022: None) -> None:
    with memfs.Vault.open(tmp_path / "team", create=True, durable=False, shared=True) as vault:
        memory = vault.memories("team").add("The standup is at ten.", title="Standup")
        assert stat.S_IMODE(os.lstat(vault.root / memory.path).st_mode) & 0o040
        assert vault.history.shared()
