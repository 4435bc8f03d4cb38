"""What a remote sends a sync that could hurt the vault: a purge list that stalls every sync, mass
deletions applied without a word, links checked out under the content folders."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import add_origin, person_env

import memfs
from memfs.cli import cli
from memfs.errors import SyncError
from memfs.sync import MAX_NEW_TEXT_LENGTHS, MAX_NEW_TOMBSTONES


def git(cwd: Path, *args: str) -> str:
    env = person_env("Mallory Remote", "mallory@example.org")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env).stdout


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A remote, a plain git clone of it (the other side, ``a``) and a memfs vault cloned from it (``b``)."""
    remote = tmp_path / "remote.git"
    with memfs.Vault.open(tmp_path / "seed", create=True, durable=False, author="agent <agent@example.org>") as v:
        add_origin(v, remote)
        store = v.memories("users/alice")
        for n in range(5):
            store.add(f"Alice fact number {n}.", title=f"Fact {n}")
        v.memories("users/bob").add("Bob likes tea.", title="Tea")
        v.sync()
    git(tmp_path, "clone", "-q", remote.as_uri(), "a")
    memfs.Vault.clone(remote.as_uri(), tmp_path / "b", durable=False, author="agent-b <b@example.org>").close()
    return remote, tmp_path / "a", tmp_path / "b"


def push(folder: Path, message: str) -> None:
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", message)
    git(folder, "push", "-q", "origin", "HEAD:main")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- a remote's purge list -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        [f"text {sha(str(n))} {n + 1}" for n in range(3000)],  # thousands of distinct text lengths
        [f"text {sha(str(n))} {n % 40 + 1}" for n in range(200)],  # a few too many lengths
        [f"blob {sha(str(n))}" for n in range(MAX_NEW_TOMBSTONES + 1)],  # too many entries, no length at all
    ],
    ids=["3000-lengths", "40-lengths", "too-many-blobs"],
)
def test_a_remote_purge_list_past_the_cap_is_refused_before_any_hashing(
    clones: tuple[Path, Path, Path], lines: list[str]
) -> None:
    _, a, b = clones
    (a / ".memfs-tombstones").write_text("\n".join(lines) + "\n")
    (a / "memories/users/alice/big.md").write_text("word " * 40_000)  # 200 KB to scan per length
    push(a, "a purge list and a big memory")
    with memfs.Vault.open(b, durable=False) as vault:
        head = vault.history.head()
        with pytest.raises(SyncError) as refused:
            vault.sync()
        message = str(refused.value)
        assert ".memfs-tombstones adds" in message and f"at most {MAX_NEW_TOMBSTONES:,} entries" in message
        assert "\n" not in message and "memfs clone" in message
        assert vault.history.head() == head and not (b / ".memfs-tombstones").exists()
        assert not (b / "memories/users/alice/big.md").exists()
        assert vault.history.tracked("HEAD") == git(b, "ls-tree", "-r", "--name-only", "HEAD").split()


def test_a_remote_purge_list_within_the_cap_is_joined(clones: tuple[Path, Path, Path]) -> None:
    _, a, b = clones
    lines = [f"text {sha(f'never written {n}')} {n + 1}" for n in range(MAX_NEW_TEXT_LENGTHS)] + [f"blob {sha('x')}"]
    (a / ".memfs-tombstones").write_text("\n".join(lines) + "\n")
    push(a, "a small purge list")
    with memfs.Vault.open(b, durable=False) as vault:
        vault.sync()
        assert len(memfs.purge.tombstones(vault).texts) == MAX_NEW_TEXT_LENGTHS


# -- what a sync deleted ------------------------------------------------------------------------


def sync_out(folder: Path) -> str:
    result = CliRunner().invoke(cli, ["sync", "--vault", str(folder)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("local_change", [False, True], ids=["fast-forward", "merge"])
def test_a_remote_commit_deleting_every_memory_is_told_and_undo_by_its_author_brings_them_back(
    clones: tuple[Path, Path, Path], local_change: bool
) -> None:
    _, a, b = clones
    before = {p.relative_to(b).as_posix(): p.read_bytes() for p in (b / "memories").rglob("*.md")}
    if local_change:  # b has a change of its own: the sync makes a merge commit
        with memfs.Vault.open(b, durable=False) as vault:
            vault.session("chat").append([{"role": "user", "content": "hi"}])
    git(a, "rm", "-q", "-r", "memories")
    push(a, "clean up")
    out = sync_out(b)
    assert "deleted 5 memories from users/alice by Mallory Remote <mallory@example.org>" in out, out
    assert "deleted 1 memory from users/bob by Mallory Remote" in out
    assert out.count("`memfs undo --by mallory@example.org` brings them back") == 2
    assert not (b / "memories").exists() or not list((b / "memories").rglob("*.md"))
    result = CliRunner().invoke(cli, ["undo", "--vault", str(b), "--by", "mallory@example.org"])
    assert result.exit_code == 0, result.output
    after = {p.relative_to(b).as_posix(): p.read_bytes() for p in (b / "memories").rglob("*.md")}
    assert after == before


def test_deletions_in_two_commits_are_traced_to_each_and_undo_is_offered_only_where_it_is_true(
    clones: tuple[Path, Path, Path],
) -> None:
    _, a, b = clones
    git(a, "rm", "-q", "-r", "memories/users/bob")
    push(a, "bob goes")
    git(a, "rm", "-q", "-r", "memories/users/alice")
    push(a, "alice goes")
    with memfs.Vault.open(b, durable=False) as vault:
        report = vault.sync()
        assert len(report.deleted) == 6
        bob, alice = sorted(report.deletions)
        assert alice.startswith("deleted 5 memories from users/alice by Mallory") and "memfs undo --by" in alice
        older = git(b, "rev-parse", "HEAD~1").strip()[:10]
        assert bob.startswith("deleted 1 memory from users/bob") and f"--to {older}~1" in bob
        assert (b / "memories/users/bob").exists() is False
        assert memfs.Vault.show(vault, "memories/users/bob/tea.md", f"{older}~1").startswith(b"---")


# -- links a remote checks out ---------------------------------------------------------------------

LINKS = {"memories/passwd.md": "/etc/passwd", "memories/keys": "/root", "sessions/chat.md": "../memories/users",
         "memories/users/alice/notes.md": "/etc/hostname"}  # fmt: skip


def plant_links(folder: Path) -> None:
    for rel, target in LINKS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, folder / rel)


def test_a_clone_of_a_remote_holding_links_removes_them_and_commits_it(clones: tuple[Path, Path, Path]) -> None:
    remote, a, _ = clones
    plant_links(a)
    push(a, "links")
    clone = a.parent / "c"
    with memfs.Vault.clone(remote.as_uri(), clone, durable=False) as vault:
        assert [p for p in LINKS if os.path.lexists(clone / p)] == []
        assert (clone / "memories/users/alice").is_dir() and list((clone / "memories/users/alice").glob("*.md"))
        assert vault.history.status() == []
        assert "removed 4 symbolic links" in vault.history.log(None, limit=1)[0].subject
        assert not [f for f in vault.doctor() if f.check == "links"]
        vault.sync()  # the removal goes back to the remote
    assert git(a, "pull", "-q", "--no-rebase", "origin", "main") is not None
    assert [p for p in LINKS if os.path.lexists(a / p)] == []


def test_links_a_person_pulled_in_are_removed_by_the_next_sync_and_doctor_names_them(
    clones: tuple[Path, Path, Path],
) -> None:
    _, a, b = clones
    plant_links(a)
    push(a, "links")
    with memfs.Vault.open(b, durable=False) as vault:
        git(b, "pull", "-q", "--no-rebase", "origin", "main")  # a person's own git checks the links out
        found = [f.message for f in vault.doctor() if f.check == "links"]
        assert len(found) == 4 and any("memories/keys is a symbolic link (to '/root')" in m for m in found)
        report = vault.sync()
        assert [p for p in LINKS if os.path.lexists(b / p)] == []
        assert sum("a symbolic link, removed" in n for n in report.notes) == 4
        assert not [f for f in vault.doctor() if f.check == "links"]


def test_a_sync_never_checks_out_a_link_the_remote_sends(clones: tuple[Path, Path, Path]) -> None:
    _, a, b = clones
    plant_links(a)
    push(a, "links")
    with memfs.Vault.open(b, durable=False) as vault:
        report = vault.sync()
        assert [p for p in LINKS if os.path.lexists(b / p)] == []
        assert sum("symbolic link" in s for s in report.skipped) == 4


def test_a_clone_whose_remote_made_a_content_folder_a_link_gets_a_real_folder(clones: tuple[Path, Path, Path]) -> None:
    remote, a, _ = clones
    os.symlink("/etc", a / "archive")
    (a / "proposals").mkdir(exist_ok=True)
    os.symlink("/root", a / "proposals/inbox")
    push(a, "folders as links")
    clone = a.parent / "c"
    with memfs.Vault.clone(remote.as_uri(), clone, durable=False) as vault:
        assert not os.path.islink(clone / "archive") and not os.path.lexists(clone / "proposals/inbox")
        assert vault.history.status() == []
        vault.memories("users/alice").add("Alice likes tea.", title="Tea")  # the vault works as any other
