"""git's object store, refs and index as memfs writes them itself, checked against git's own tools.

Every object memfs writes must be one git reads and ``git fsck --strict`` accepts; a blob compressed
on from the last one must inflate to exactly its bytes; git's index patched in place must be what
``git update-index --index-info`` makes of the same entries (the same ``ls-files -s``, the same
``write-tree``, a clean ``git status``), or be left to git whenever memfs cannot be sure.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memfs
from memfs._fs import fsync_together
from memfs.errors import HistoryError
from memfs.gitstore import GitIndex, GrowingBlobs, RefUpdates, adler32_joined
from memfs.history import GitHistory, Identity

ALICE = Identity("Alice", "alice@example.com")


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}).stdout  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[GitHistory, Path]]:
    root = tmp_path / "vault"
    root.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    history = GitHistory(root, state, lock_timeout=0.2)
    yield history, root
    history.close()


def commit(history: GitHistory, root: Path, contents: dict[str, bytes | None], message: str = "change") -> str | None:
    """Commit ``contents`` and put the files in the work tree as memfs would have written them."""
    sha = history.commit(contents, message, author=ALICE)
    for rel, data in contents.items():
        file = root / rel
        if data is None:
            if file.is_file():
                file.unlink()
        else:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(data)
    return sha


# -- compression continued from one blob to the next ----------------------------------------------


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.one_of(st.binary(min_size=1, max_size=3000), st.integers(min_value=0, max_value=100)),
                      min_size=1, max_size=25))  # fmt: skip
def test_a_growing_blob_inflates_to_exactly_its_bytes(steps: list[bytes | int]) -> None:
    # bytes: an append; an integer: the file cut to that share of its length (a pop, an edit)
    growing, data = GrowingBlobs(), b"\x00" * 70_000  # over the size from which compression is kept
    for step in steps:
        data = data + step if isinstance(step, bytes) else data[: len(data) * step // 100]
        header = b"blob %d\0" % len(data)
        assert zlib.decompress(b"".join(growing.stream("t.md", header, data))) == header + data


def test_kept_compressions_are_bounded_in_number_and_memory() -> None:
    growing = GrowingBlobs()
    for i in range(12):
        data = bytes([i]) * 100_000
        growing.stream(f"t{i}.md", b"blob %d\0" % len(data), data)
    assert len(growing) == 8  # the sessions most recently written
    huge = b"x" * (65 << 20)  # more than the cap alone: compressed, never kept
    assert zlib.decompress(b"".join(growing.stream("huge.md", b"blob %d\0" % len(huge), huge)))[-3:] == b"xxx"
    assert growing.held() <= 64 << 20
    growing.forget()
    assert len(growing) == 0 and growing.held() == 0


def test_the_checksum_of_joined_bytes_comes_from_the_parts() -> None:
    rng = random.Random(5)
    for _ in range(300):
        a, b = rng.randbytes(rng.randrange(0, 400)), rng.randbytes(rng.randrange(0, 90_000))
        assert adler32_joined(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)


def test_a_session_appended_turn_by_turn_is_committed_as_git_reads_it(vault: memfs.Vault) -> None:
    session = vault.session("long")
    filler = "a turn long enough that the transcript passes the size where compression carries on. " * 40
    for i in range(40):
        session.append([{"role": "user", "content": f"{i}: {filler}"}])
        if i == 20:
            session.pop()  # the file shrinks: compressed again from its first byte
    path = vault.root / "sessions" / "long.md"
    assert path.stat().st_size > 64 * 1024
    assert git(vault.root, "cat-file", "-p", "HEAD:sessions/long.md").encode() == path.read_bytes()
    git(vault.root, "fsck", "--strict", "--no-dangling")
    assert git(vault.root, "status", "--porcelain") == ""


# -- commit objects and the ref update ------------------------------------------------------------


def test_a_commit_object_is_byte_for_byte_what_commit_tree_writes(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    commit(history, root, {"a.md": b"one\n"}, "first")
    sha = commit(history, root, {"a.md": b"two\n"}, "second line of work\n\nwith a body, Ünïcode\n\nMemfs-Op: x")
    assert sha is not None
    raw = git(root, "cat-file", "commit", sha)
    author_line = next(line for line in raw.splitlines() if line.startswith("author "))
    seconds, offset = author_line.split()[-2:]
    message = raw.split("\n\n", 1)[1]
    env = {"GIT_AUTHOR_NAME": ALICE.name, "GIT_AUTHOR_EMAIL": ALICE.email, "GIT_COMMITTER_NAME": ALICE.name,
           "GIT_COMMITTER_EMAIL": ALICE.email, "GIT_AUTHOR_DATE": f"{seconds} {offset}",
           "GIT_COMMITTER_DATE": f"{seconds} {offset}"}  # fmt: skip
    again = subprocess.run(["git", "commit-tree", "--no-gpg-sign", f"{sha}^{{tree}}", "-p", f"{sha}^", "-F", "-"],
                           cwd=root, input=message.encode(), capture_output=True, check=True,
                           env={**os.environ, **env}).stdout.decode().strip()  # fmt: skip
    assert again == sha
    git(root, "fsck", "--strict", "--no-dangling")


def test_a_ref_update_refused_ends_the_process_and_the_next_one_starts_afresh(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    first = commit(history, root, {"a.md": b"a\n"})
    assert first is not None
    tree = git(root, "rev-parse", "HEAD^{tree}").strip()
    other = git(
        root,
        "commit-tree",
        tree,
        "-p",
        first,
        "-m",
        "a person's",
        env={
            "GIT_AUTHOR_NAME": "P",
            "GIT_AUTHOR_EMAIL": "p@example.com",
            "GIT_COMMITTER_NAME": "P",
            "GIT_COMMITTER_EMAIL": "p@example.com",
        },
    )
    refs = RefUpdates(root, {}, "test")
    try:
        with pytest.raises(HistoryError, match="expected"):
            refs.update(other.strip(), "0" * 39 + "1")  # HEAD is not at that old value
        assert not refs.alive()
    finally:
        refs.close()
    # memfs's own updater recovers by itself: a person moved HEAD meanwhile, the commit still lands on top
    git(root, "update-ref", "HEAD", other.strip())
    second = commit(history, root, {"b.md": b"b\n"})
    assert git(root, "rev-parse", "HEAD^").strip() == other.strip() and second == git(root, "rev-parse", "HEAD").strip()
    assert git(root, "reflog", "-1", "--format=%gs").strip() == "memfs: commit"


def test_fsync_together_waits_for_every_file_and_reports_a_failure(tmp_path: Path) -> None:
    fds = [os.open(tmp_path / f"f{i}", os.O_WRONLY | os.O_CREAT, 0o600) for i in range(6)]
    try:
        for fd in fds:
            os.write(fd, b"x" * 10_000)
        fsync_together(fds)
        closed = os.open(tmp_path / "closed", os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(closed)
        with pytest.raises(OSError):
            fsync_together([fds[0], closed])  # a file that cannot be synced is never passed over
    finally:
        for fd in fds:
            os.close(fd)


# -- git's index patched in place -----------------------------------------------------------------

NAMES = [f"m/{folder}/{name}.md" for folder in ("a", "b", "a/c", "a.b") for name in ("k", "m", "x", "y", "a-b")]


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rounds=st.lists(st.dictionaries(st.sampled_from(NAMES), st.one_of(st.none(), st.binary(max_size=6)),
                                       min_size=1, max_size=4), min_size=2, max_size=8))  # fmt: skip
def test_the_patched_index_is_what_git_update_index_makes(tmp_path_factory: pytest.TempPathFactory,
                                                          rounds: list[dict[str, bytes | None]]) -> None:  # fmt: skip
    tmp = tmp_path_factory.mktemp("index")
    root, twin = tmp / "vault", tmp / "twin"
    root.mkdir()
    history = GitHistory(root, tmp, lock_timeout=0.2)
    git(tmp, "init", "-q", str(twin))
    try:
        for contents in rounds:
            commit(history, root, contents)
            lines = "".join(f"0 {'0' * 40}\t{p}\0" if d is None else f"100644 {_blob(root, d)}\t{p}\0"
                            for p, d in sorted(contents.items()))  # fmt: skip
            subprocess.run(["git", "update-index", "-z", "--index-info"], cwd=twin, input=lines.encode(), check=True)
            assert git(root, "ls-files", "-s") == git(twin, "ls-files", "-s")
            assert git(root, "status", "--porcelain") == ""
            if history.head() is not None:  # the cache of tree ids was kept true
                assert git(root, "write-tree").strip() == git(root, "rev-parse", "HEAD^{tree}").strip()
        git(root, "fsck", "--strict", "--no-dangling")
    finally:
        history.close()


def _blob(root: Path, data: bytes) -> str:
    return subprocess.run(["git", "hash-object", "--stdin"], cwd=root, input=data, capture_output=True,
                          check=True).stdout.decode().strip()  # fmt: skip


def test_updates_and_adds_in_a_folder_are_patched_not_left_to_git(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    commit(history, root, {f"m/p/{i:02d}.md": b"%d\n" % i for i in range(20)})
    before = history.git_index.patched
    commit(history, root, {"m/p/05.md": b"changed\n"})  # an update
    commit(history, root, {"m/p/05b.md": b"new\n"})  # an add after a file of its folder
    commit(history, root, {"m/p/07.md": None})  # a delete
    assert history.git_index.patched == before + 3
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "write-tree").strip() == git(root, "rev-parse", "HEAD^{tree}").strip()


@pytest.mark.parametrize("setup", [
    ["update-index", "--index-version", "4"],  # names compressed against the one before
    ["update-index", "--split-index"],  # a shared index holds most entries
    ["update-index", "--untracked-cache"],  # an extension memfs cannot keep true
])  # fmt: skip
def test_an_index_memfs_cannot_patch_safely_is_left_to_git(repo: tuple[GitHistory, Path], setup: list[str]) -> None:
    history, root = repo
    commit(history, root, {f"m/p/{i}.md": b"%d\n" % i for i in range(5)})
    git(root, *setup)
    left = history.git_index.left_to_git
    commit(history, root, {"m/p/2.md": b"changed\n", "m/p/9.md": b"new\n"})
    assert history.git_index.left_to_git == left + 1
    assert git(root, "status", "--porcelain") == ""
    git(root, "fsck", "--strict", "--no-dangling")


def test_a_conflict_in_the_index_is_left_to_git(tmp_path: Path) -> None:
    index = tmp_path / "vault"
    index.mkdir()
    git(index, "init", "-q")
    blob = _blob(index, b"x\n")
    entries = f"100644 {blob} 1\tm/a.md\0100644 {blob} 2\tm/a.md\0"  # stages 1 and 2: git's merge left it
    subprocess.run(["git", "update-index", "-z", "--index-info"], cwd=index, input=entries.encode(), check=True)
    before = (index / ".git" / "index").read_bytes()
    patcher = GitIndex(index / ".git" / "index")
    assert patcher.patch({"m/a.md": blob}, lambda _: None) is False
    assert (index / ".git" / "index").read_bytes() == before


def test_a_held_index_lock_leaves_the_index_as_it_is(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    commit(history, root, {"m/p/a.md": b"a\n", "m/p/b.md": b"b\n"})
    lock = root / ".git" / "index.lock"
    lock.write_text("")  # a person's git command is running
    before = (root / ".git" / "index").read_bytes()
    assert history.git_index.patch({"m/p/a.md": _blob(root, b"changed\n")}, lambda _: None) is None
    assert (root / ".git" / "index").read_bytes() == before and lock.read_text() == ""


@pytest.mark.parametrize("fault", ["eio", "kill"])
def test_a_patch_cut_short_leaves_no_lock_and_is_caught_up(tmp_path: Path, fault: str) -> None:
    """Failed (or killed) while writing git's index: the commit stands, git's lock was never
    taken, and the next commit brings git's index up to date (a left lock would stop every git
    command, and memfs's next commits, until it was seen to be stale)."""
    root = tmp_path / "vault"
    code = f"""
import sys
from pathlib import Path
from memfs._fs import FaultPlan, faults
from memfs.history import GitHistory, Identity
root, state = Path({str(root)!r}), Path({str(tmp_path / "state")!r})
root.mkdir(); state.mkdir()
history = GitHistory(root, state, lock_timeout=0.2)
me = Identity("Alice", "alice@example.com")
for name in ("a", "b"):
    (root / f"{{name}}.md").write_bytes(name.encode())
    history.commit({{f"{{name}}.md": name.encode()}}, "add " + name, author=me)
with faults(FaultPlan(10**9)) as probe:  # which operation writes git's index in a commit like the next
    (root / "b.md").write_bytes(b"b2")
    history.commit({{"b.md": b"b2"}}, "change b", author=me)
at = probe.seen.index("write", probe.seen.index("git:update-index")) + 1
(root / "a.md").write_bytes(b"changed")
with faults(FaultPlan(at, {fault!r})) as plan:
    history.commit({{"a.md": b"changed"}}, "change a", author=me)
assert plan.seen[-2:] == ["git:update-index", "write"], plan.seen
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == (-9 if fault == "kill" else 0), done.stderr
    assert not (root / ".git" / "index.lock").exists()
    assert git(root, "log", "--format=%s").split("\n")[0] == "change a"
    history = GitHistory(root, tmp_path / "state", lock_timeout=0.2)
    try:
        if fault == "kill":  # what the engine's recovery does for a commit whose process died
            history.index_as_at_head(["a.md"])
        commit(history, root, {"c.md": b"c"})
        assert git(root, "status", "--porcelain") == ""
        assert sorted(p.name for p in (root / ".git").iterdir() if p.name.startswith("memfs-")) == []
    finally:
        history.close()


def test_a_name_that_ends_a_longer_one_is_never_taken_for_it(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    commit(history, root, {"m/xa.md": b"long\n", "m/y.md": b"y\n"})
    commit(history, root, {"a.md": b"short\n"})  # "a.md" is the end of "m/xa.md": a new entry, not that one
    assert git(root, "ls-files").split() == ["a.md", "m/xa.md", "m/y.md"]
    assert git(root, "status", "--porcelain") == ""
