"""The one way memfs runs git (memfs.gitrun) and the one codec of git's trees (memfs.gitstore.Tree).

Every git command starts through the runner, so they share one environment, one wording of
git's complaints and one wait for git's lock files, whether the command runs to its end or
keeps running (``update-ref --stdin``); trees are read and written by one codec, checked here
against what git itself writes.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfs import gitrun
from memfs.errors import GitLockError, HistoryError
from memfs.gitenv import OLDEST_GIT
from memfs.gitstore import GITLINK_MODE, TREE_MODE, Tree
from memfs.history import GitHistory, Identity

ALICE = Identity("Alice", "alice@example.com")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def git(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, input=input).stdout


@pytest.fixture
def history(tmp_path: Path) -> Iterator[GitHistory]:
    root = tmp_path / "vault"
    root.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    found = GitHistory(root, state, lock_timeout=0.2)
    found.commit({"a.md": b"a\n"}, "first", author=ALICE)
    yield found
    found.close()


@pytest.mark.parametrize(
    "names",
    [
        [(b"100644", b"a.b"), (TREE_MODE, b"a"), (b"100644", b"a-b")],  # a folder sorts as "a/": after "a.b"
        [(TREE_MODE, b"x"), (b"100644", b"x0"), (b"100755", b"x.md"), (b"120000", b"x!")],
        [(b"100644", "caf\u00e9.md".encode()), (TREE_MODE, b"cafe"), (GITLINK_MODE, b"sub")],
    ],
)
def test_a_tree_is_written_as_git_writes_it_and_read_back(tmp_path: Path, names: list[tuple[bytes, bytes]]) -> None:
    git(tmp_path, "init", "-q")
    blob = git(tmp_path, "hash-object", "-w", "--stdin", input=b"").decode().strip()
    ids = {TREE_MODE: EMPTY_TREE, GITLINK_MODE: "1" * 40}  # a submodule's commit is never in the repository
    entries = [(mode, name, ids.get(mode, blob)) for mode, name in names]
    listing = b"".join(
        b"%s %s %s\t%s\n" % (mode, {TREE_MODE: b"tree", GITLINK_MODE: b"commit"}.get(mode, b"blob"), oid.encode(), name)
        for mode, name, oid in entries
    )
    made = git(tmp_path, "mktree", "--missing", input=listing).decode().strip()
    raw = git(tmp_path, "cat-file", "tree", made)
    assert Tree.of(entries).raw == raw  # git's order and git's bytes, whatever order they came in
    assert Tree.of(reversed(entries)).raw == raw
    assert sorted(Tree.parse(raw).entries()) == sorted(entries)
    assert Tree.of(Tree.parse(raw).entries()).raw == raw


def test_a_command_and_a_move_of_head_wait_for_a_lock_the_same_way(history: GitHistory) -> None:
    lock = history.git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("")  # fresh: held by someone, never removed
    with pytest.raises(GitLockError) as by_command:
        history.plumbing("update-ref", "refs/heads/main", history.head() or "")
    with pytest.raises(GitLockError) as by_commit:
        history.commit({"b.md": b"b\n"}, "second", author=ALICE)
    expected = r"^git lock file \S*/refs/heads/main\.lock is held\. If no git command is running on this repository"
    assert re.match(expected, str(by_command.value)), by_command.value
    assert re.match(expected, str(by_commit.value)), by_commit.value
    assert lock.exists()


def test_a_stale_lock_is_removed_and_both_ways_go_on(history: GitHistory) -> None:
    lock = history.git_dir / "refs" / "heads" / "main.lock"
    for run in (
        lambda: history.commit({"b.md": b"b\n"}, "second", author=ALICE),
        lambda: history.plumbing("update-ref", "refs/heads/main", history.head() or ""),
    ):
        lock.write_text("")
        os.utime(lock, (0, 0))  # left by a process killed long ago; no git runs here
        run()
        assert not lock.exists()
    assert [rev.subject for rev in history.log()] == ["second", "first"]


def test_a_failed_command_says_what_git_said_on_one_line(history: GitHistory) -> None:
    with pytest.raises(HistoryError, match=r"^git cat-file failed: fatal: Not a valid object name no-such-thing$"):
        history.plumbing("cat-file", "-p", "no-such-thing")
    assert history.plumbing("cat-file", "-p", "no-such-thing", check=False) == ""


def test_git_gets_no_stdin_and_speaks_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    monkeypatch.setenv("LANGUAGE", "de")
    proc = gitrun.run(["hash-object", "--stdin"], cwd=tmp_path, overrides={})
    assert proc.stdout.strip() == b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # stdin closed: nothing read
    env = gitrun.environment({"GIT_PAGER": "cat"})
    assert env["LC_ALL"] == "C" and env["LANGUAGE"] == "C" and env["GIT_PAGER"] == "cat"
    assert gitrun.version({})[:2] >= OLDEST_GIT


def test_every_git_process_starts_through_the_runner_with_its_flags() -> None:
    assert gitrun.safe_args(["-c", "a=b", "log", "-1"]) == [
        "-c",
        "a=b",
        "log",
        "--no-ext-diff",
        "--no-textconv",
        "--no-show-signature",
        "-1",
    ]
    assert gitrun.subcommand(["-c", "a=b", "status"]) == "status"
