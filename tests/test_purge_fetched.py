"""What a refused sync fetched is gone again, packs included (issue 26, item 15).

A purge removes a text from this repository; a remote made before still holds it, and a sync from
it is refused. The fetch brought the old objects in first, loose or as a pack (git keeps a fetch of
more than ``fetch.unpackLimit`` objects as a pack): none of them may stay, or ``git cat-file
--batch-all-objects`` finds the purged text again.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import memfs
from memfs.errors import SyncError

TOKENS = ["correct horse battery staple", "the vault combination is 31-07-44"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def every_object(root: Path) -> bytes:
    """Every object in the repository, loose or packed, reachable or not."""
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch", "--unordered"], cwd=root, capture_output=True, check=True
    ).stdout


@pytest.mark.parametrize("unpack_limit", ["1", "1000"])  # 1: the fetch stays a pack; 1000: it is unpacked
@pytest.mark.parametrize("token", TOKENS)
def test_a_refused_sync_leaves_nothing_it_fetched(tmp_path: Path, token: str, unpack_limit: str) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "--quiet", "--initial-branch=main", str(remote))
    with memfs.Vault.open(tmp_path / "a", create=True, durable=False) as a:
        git(a.root, "remote", "add", "origin", remote.as_uri())
        git(a.root, "config", "fetch.unpackLimit", unpack_limit)
        git(a.root, "config", "transfer.unpackLimit", unpack_limit)
        store = a.memories("users/alice")
        store.add(f"The door code is {token}.", title="Door")
        for n in range(5):  # more objects in the old history than one memory's
            store.add(f"Filler memory number {n} about the garden.", title=f"Garden {n}")
        a.sync()
        with memfs.Vault.clone(remote.as_uri(), tmp_path / "b", durable=False) as b:
            b.memories("users/alice").add("Bob's machine wrote this later.", title="Later")
            b.sync()  # the remote moves on, its history still holding the text
        a.purge(text=token)
        assert token.encode() not in every_object(a.root)
        with pytest.raises(SyncError, match="purged"):
            a.sync()
        assert token.encode() not in every_object(a.root)
        assert "incoming" not in git(a.root, "for-each-ref")
        # the vault is whole: its own memories are all there, and it still syncs with a clean remote
        assert len(a.memories("users/alice").list()) == 6  # the door memory stays, its text purged
        git(a.root, "fsck", "--no-progress", "--connectivity-only")
