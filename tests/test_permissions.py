"""Private by default: what memfs creates is its owner's alone unless the vault is shared by choice.

Modes are checked under the umasks people run with (022, 002, 077); a second local user's read is
tried where the test can switch users (as root), with a control file proving the attempt works.
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import ok

import memfs
from memfs._fs import umask as umask_now
from memfs.cli import cli

UMASKS = [0o022, 0o002, 0o077]


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    value: int = request.param
    previous = os.umask(value)
    try:
        yield value
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _fill(vault: memfs.Vault) -> None:
    vault.memories("users/alice").add("Alice likes tea.", title="Tea")
    vault.session("chat-1").append([{"role": "user", "content": "hello"}])


def _check_state_dir(vault: memfs.Vault) -> None:
    assert mode(vault.root / ".memfs") == 0o700
    assert mode(vault.root / ".memfs" / "lock") == 0o600


@pytest.mark.parametrize("umask", UMASKS, indirect=True, ids=oct)
def test_a_new_vault_is_private(tmp_path: Path, umask: int) -> None:
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False) as vault:
        _fill(vault)
        root = vault.root
        for folder in ("", "memories", "memories/users", "memories/users/alice", "sessions", ".git"):
            assert mode(root / folder) == 0o700, folder
        for file in ("memories/users/alice/tea.md", "sessions/chat-1.md", "memories/.gitkeep", ".gitignore"):
            assert mode(root / file) == 0o600, file
        _check_state_dir(vault)
        assert not vault.history.shared()


@pytest.mark.parametrize("umask", UMASKS, indirect=True, ids=oct)
def test_a_shared_vault_gives_the_group_what_the_umask_allows(tmp_path: Path, umask: int) -> None:
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False, shared=True) as vault:
        _fill(vault)
        root = vault.root
        for folder in ("", "memories", "memories/users/alice", "sessions"):
            assert mode(root / folder) == 0o2770 & ~umask, folder
        for file in ("memories/users/alice/tea.md", "sessions/chat-1.md"):
            assert mode(root / file) == 0o660 & ~umask, file
        _check_state_dir(vault)  # never shared
        assert vault.history.shared()
        config = subprocess.run(["git", "-C", str(root), "config", "core.sharedRepository"], capture_output=True,
                                text=True, check=True)  # fmt: skip
        assert config.stdout.strip() in ("group", "1")  # git init --shared=group writes "1"
    with memfs.Vault.open(tmp_path / "vault") as again:  # the choice is the vault's, not the call's
        again.memories("users/bob").add("Bob likes coffee.", title="Coffee")
        assert mode(again.root / "memories/users/bob/coffee.md") == 0o660 & ~umask


@pytest.mark.parametrize("umask", [0o022], indirect=True, ids=oct)
def test_an_existing_file_keeps_its_mode(tmp_path: Path, umask: int) -> None:
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False) as vault:
        store = vault.memories("users/alice")
        memory = store.add("Alice likes tea.", title="Tea")
        path = vault.root / memory.path
        os.chmod(path, 0o640)
        vault.commit()
        store.update(memory.id or "", body="Alice likes green tea.\n")
        assert mode(path) == 0o640
        tools = memfs.MemoryTools(vault, "users/alice")
        ok(tools, "str_replace", path="/memories/tea.md", old_str="green", new_str="jasmine")
        assert mode(path) == 0o640
        session = vault.session("chat-1")
        session.append([{"role": "user", "content": "hello"}])
        os.chmod(vault.root / session.path, 0o644)
        session.append([{"role": "user", "content": "again"}])
        assert mode(vault.root / session.path) == 0o644


def test_an_old_vault_gets_a_private_state_folder_and_can_be_shared_later(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False) as vault:
        root = vault.root
    os.chmod(root / ".memfs", 0o755)  # as an earlier memfs left it
    with memfs.Vault.open(root, shared=True) as vault:
        assert mode(root / ".memfs") == 0o700
        vault.memories("team").add("The standup is at ten.", title="Standup")
        assert mode(root / "memories/team/standup.md") == 0o660 & ~umask_now()
        assert mode(root / "memories") == 0o700  # what exists keeps its mode: chmod it to share it
    with memfs.Vault.open(root, shared=False) as vault:
        assert not vault.history.shared()


def objects_of(root: Path, sha: str) -> tuple[int, int]:
    """The modes of the loose object ``sha`` and of its folder."""
    obj = root / ".git" / "objects" / sha[:2] / sha[2:]
    return mode(obj), mode(obj.parent)


def object_folders(root: Path) -> dict[Path, int]:
    """Git's fan-out folders of loose objects, with their modes."""
    return {f: mode(f) for f in (root / ".git" / "objects").glob("[0-9a-f][0-9a-f]")}


def test_the_objects_a_commit_writes_follow_the_sharing_the_vault_was_opened_with(tmp_path: Path) -> None:
    """A private vault opened shared (and back): its next commits' objects are the group's (and private again).

    A commit's objects land in git's fan-out folders (``objects/ab/``); a folder that already
    exists keeps its mode (docs/security.md: existing files and folders keep theirs), so the
    folders checked are those each commit made.
    """
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False) as vault:
        root = vault.root
    before = object_folders(root)
    with memfs.Vault.open(root, shared=True, durable=False) as vault:
        vault.memories("team").add("The standup is at ten.", title="Standup")
        shared = objects_of(root, vault.log()[0].sha)
    made_shared = {f: m for f, m in object_folders(root).items() if f not in before}
    before = object_folders(root)
    with memfs.Vault.open(root, shared=False, durable=False) as vault:
        vault.memories("team").add("The retro is on Friday.", title="Retro")
        private = objects_of(root, vault.log()[0].sha)
    made_private = {f: m for f, m in object_folders(root).items() if f not in before}
    assert shared[0] == 0o444 and private[0] == 0o400  # git's own modes for the objects, shared then private
    assert made_shared and made_private  # a commit writes a commit, trees and a blob: some land in new folders
    assert all(m & 0o070 == 0o070 & ~umask_now() for m in made_shared.values()), made_shared
    assert all(m == 0o700 for m in made_private.values()), made_private


def test_cli_init_shared(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(tmp_path / "private")]).exit_code == 0
    assert runner.invoke(cli, ["init", "--shared", str(tmp_path / "team")]).exit_code == 0
    assert mode(tmp_path / "private") == 0o700
    assert mode(tmp_path / "team") & 0o2070 == 0o2070 & ~umask_now()


def _other_user() -> pwd.struct_passwd | None:
    for name in ("nobody", "daemon"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    return None


def test_another_local_user_cannot_read(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip(f"reading as another local user needs root to switch users; this test runs as uid {os.geteuid()}")
    other = _other_user()
    if other is None:
        pytest.skip("no second local user (nobody, daemon) exists on this machine to read as")
    base = Path(tempfile.mkdtemp(dir="/tmp", prefix="memfs-perm-"))  # tmp_path's parents are 0700: not reachable
    try:
        os.chmod(base, 0o711)
        with memfs.Vault.open(base / "vault", create=True, durable=False) as vault:
            _fill(vault)
            memory, transcript = vault.root / "memories/users/alice/tea.md", vault.root / "sessions/chat-1.md"
            control = vault.root / "memories/users/alice/control.txt"
            control.write_text("readable\n")
            os.chmod(control, 0o644)
            for folder in ("", "memories", "memories/users", "memories/users/alice", "sessions"):
                os.chmod(vault.root / folder, 0o711)  # traversable, so only the files' own modes stand in the way

            def read_as_other(path: Path) -> subprocess.CompletedProcess[str]:
                return subprocess.run(["cat", str(path)], user=other.pw_uid, group=other.pw_gid, extra_groups=[],
                                      capture_output=True, text=True, check=False)  # fmt: skip

            assert read_as_other(control).stdout == "readable\n"  # the attempt itself works
            for path in (memory, transcript, vault.root / ".memfs/index/memfs-index.json"):
                denied = read_as_other(path)
                assert denied.returncode != 0 and "Permission denied" in denied.stderr, path
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)
