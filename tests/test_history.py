"""GitHistory on real git repositories: commits, log across renames, show, diff, status, locks.

Each test makes a repository in tmp_path and uses only the public methods. The autouse fixture in
conftest.py gives git no identity and no global config, as on a fresh CI machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memfs.errors import GitLockError, HistoryError, NotFoundError
from memfs.history import GitHistory, Identity

ALICE = Identity("Alice", "alice@example.com")
BOT = Identity("memfs agent", "agent@memfs.invalid")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def on_disk(root: Path, *paths: str) -> dict[str, bytes | None]:
    """What to commit: each path's bytes as they are in the work tree (None: removed)."""
    return {p: (root / p).read_bytes() if (root / p).is_file() else None for p in paths}


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[GitHistory, Path]]:
    root = tmp_path / "vault"
    root.mkdir()
    state = tmp_path / "state"  # outside the work tree, so it never shows in status
    state.mkdir()
    history = GitHistory(root, state, lock_timeout=0.1)
    yield history, root
    history.close()


def test_init_makes_a_repository_on_main_with_no_commits(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    assert (root / ".git").is_dir() and history.prefix == "" and history.top == root.resolve()
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert history.log() == [] and history.log("a.md") == []
    assert history.status() == []
    write(root, "a.md", "a\n")
    assert history.status() == ["?? a.md"]


def test_commit_with_author_committer_and_trailers(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "a.md", "alpha\n")
    sha = history.commit(on_disk(root, "a.md"), "memory: create a.md\n\nWhy it was made.", author=ALICE, committer=BOT,
                         trailers={"Memfs-Op": "create", "Memfs-Session": "chat\n42  now"})  # fmt: skip
    assert sha is not None and re.fullmatch("[0-9a-f]{40}", sha)
    (rev,) = history.log()
    assert rev.sha == sha and rev.short == sha[:10]
    assert rev.author == ALICE and rev.subject == "memory: create a.md"
    assert rev.trailers == {"Memfs-Op": "create", "Memfs-Session": "chat 42 now"}  # one line each, in order
    assert list(rev.trailers) == ["Memfs-Op", "Memfs-Session"]
    assert rev.path == "a.md" and rev.status == "A" and rev.old_path is None
    assert git(root, "show", "-s", "--format=%an <%ae>|%cn <%ce>", sha).strip() == (
        "Alice <alice@example.com>|memfs agent <agent@memfs.invalid>"
    )
    assert "Why it was made." in git(root, "show", "-s", "--format=%B", sha)
    assert history.status() == [] and git(root, "status", "--porcelain") == ""  # git's own index follows


def test_a_commit_that_changes_nothing_returns_none(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "a.md", "a\n")
    first = history.commit(on_disk(root, "a.md"), "add", author=ALICE)
    assert history.commit(on_disk(root, "a.md"), "again", author=ALICE) is None
    assert history.commit(on_disk(root), "nothing", author=ALICE) is None
    assert [r.sha for r in history.log()] == [first]


def test_only_the_named_paths_are_committed_and_missing_ones_are_removed(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "a.md", "a\n")
    write(root, "b.md", "b\n")
    history.commit(on_disk(root, "a.md", "b.md"), "two", author=ALICE)
    write(root, "a.md", "a2\n")
    write(root, "c.md", "not named\n")
    (root / "b.md").unlink()
    sha = history.commit(on_disk(root, "b.md"), "remove b", author=ALICE)
    assert sha is not None
    assert history.files_changed(sha) == [("D", "b.md")]
    assert git(root, "ls-tree", "--name-only", "HEAD").split() == ["a.md"]
    assert sorted(history.status()) == [" M a.md", "?? c.md"]  # left as they were, not swept in


def test_log_follows_a_file_across_renames(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "notes/a.md", "line one\nline two\nline three\n")
    history.commit(on_disk(root, "notes/a.md"), "create", author=ALICE)
    os.rename(root / "notes/a.md", root / "b.md")
    history.commit(on_disk(root, "notes/a.md", "b.md"), "rename", author=BOT)
    write(root, "b.md", "line one\nline two\nline three\nline four\n")
    history.commit(on_disk(root, "b.md"), "edit", author=ALICE)
    revs = history.log("b.md")
    assert [r.subject for r in revs] == ["edit", "rename", "create"]  # newest first
    assert [r.status for r in revs] == ["M", "R", "A"]
    assert [r.path for r in revs] == ["b.md", "b.md", "notes/a.md"]
    assert revs[1].old_path == "notes/a.md" and revs[1].author == BOT
    assert [r.subject for r in history.log("b.md", follow=False)] == ["edit", "rename"]
    assert [r.subject for r in history.log("b.md", limit=1)] == ["edit"]
    assert [r.subject for r in history.log(author="memfs agent")] == ["rename"]
    assert [r.subject for r in history.log(grep="^cre")] == ["create"]
    assert [r.subject for r in history.log(since="2000-01-01")] == ["edit", "rename", "create"]
    assert history.files_changed(revs[1].sha) == [("A", "b.md"), ("D", "notes/a.md")]  # renames split, by path
    assert history.files_changed(revs[2].sha) == [("A", "notes/a.md")]  # the root commit too


def test_show_returns_the_exact_bytes_at_a_revision(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    (root / "a.md").write_bytes(b"first\r\n\n\n")
    history.commit(on_disk(root, "a.md"), "one", author=ALICE)
    (root / "a.md").write_bytes(b"second")
    history.commit(on_disk(root, "a.md"), "two", author=ALICE)
    assert history.show("a.md", "HEAD") == b"second"
    assert history.show("a.md", "HEAD~1") == b"first\r\n\n\n"  # no newline stripped or added
    assert history.show("a.md", history.log()[1].sha[:7]) == b"first\r\n\n\n"
    with pytest.raises(NotFoundError, match="did not exist"):
        history.show("missing.md", "HEAD")
    with pytest.raises(NotFoundError):
        history.show("a.md", "HEAD~5")


def test_diff_between_revisions_and_against_the_files(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "a.md", "one\ntwo\n")
    write(root, "b.md", "b\n")
    history.commit(on_disk(root, "a.md", "b.md"), "one", author=ALICE)
    write(root, "a.md", "one\nTWO\n")
    history.commit(on_disk(root, "a.md"), "two", author=ALICE)
    between = history.diff("a.md", "HEAD~1", "HEAD")
    assert "-two\n+TWO" in between and "b.md" not in between
    assert history.diff("a.md", "HEAD") == ""  # the files match HEAD
    write(root, "a.md", "one\nthree\n")
    write(root, "b.md", "bee\n")
    working = history.diff(None, "HEAD")  # the whole vault against the files on disk
    assert "-TWO\n+three" in working and "-b\n+bee" in working
    write(root, "b.md", "b\n")
    os.rename(root / "b.md", root / "c.md")
    history.commit(on_disk(root, "b.md", "c.md"), "move", author=ALICE)
    assert "rename from b.md\nrename to c.md" in history.diff(None, "HEAD~1", "HEAD")
    with pytest.raises(NotFoundError):
        history.diff("a.md", "no-such-revision")


def test_resolve(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "a.md", "a\n")
    first = history.commit(on_disk(root, "a.md"), "one", author=ALICE)
    write(root, "a.md", "b\n")
    second = history.commit(on_disk(root, "a.md"), "two", author=ALICE)
    assert history.resolve("HEAD") == history.resolve("main") == second
    assert history.resolve("HEAD~1") == history.resolve(str(first)[:8]) == history.resolve(str(first)) == first
    git(root, "tag", "v1", str(first))
    assert history.resolve("v1") == first
    for bad in ("", "--all", "-n1", "HEAD\x00", "HEAD~9", "nope", "HEAD:a.md", None, 12):
        with pytest.raises(NotFoundError):
            history.resolve(bad)  # type: ignore[arg-type]


def test_status_and_changed(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    for name in ("clean.md", "edited.md", "gone.md", "sub/deep.md"):
        write(root, name, f"{name}\n")
    history.commit(on_disk(root, "clean.md", "edited.md", "gone.md", "sub/deep.md"), "setup", author=ALICE)
    write(root, "edited.md", "changed\n")
    (root / "gone.md").unlink()
    write(root, "new.md", "new\n")
    write(root, "café note.md", "unicode\n")
    quoted = '?? "café note.md"'  # as git writes it
    assert sorted(history.status()) == [" D gone.md", " M edited.md", quoted, "?? new.md"]
    assert history.status(["clean.md", "sub/deep.md"]) == []
    assert history.status(["edited.md"]) == [" M edited.md"]
    everything = ["clean.md", "edited.md", "gone.md", "new.md", "café note.md", "sub/deep.md", "never.md"]
    assert history.changed(everything) == ["café note.md", "edited.md", "gone.md", "new.md"]
    history.commit(on_disk(root, *history.changed(everything)), "absorb", author=ALICE)
    assert history.changed(everything) == [] and history.status() == []


def test_names_git_would_quote_come_back_exactly(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    names = ["café.md", 'say "日本".md', "tab\there.md", "back\\slash.md"]
    for name in names:
        write(root, name, "x\n")
    sha = history.commit(on_disk(root, *names), "odd names", author=ALICE)
    assert sha is not None
    assert sorted(p for _, p in history.files_changed(sha)) == sorted(names)
    for name in names:
        (rev,) = history.log(name)
        assert rev.path == name, (name, rev.path)
        assert history.show(name, "HEAD") == b"x\n"
    assert history.changed(names) == []


def test_a_commit_made_by_git_in_between_becomes_the_parent(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "a.md", "a\n")
    history.commit(on_disk(root, "a.md"), "ours", author=ALICE)
    write(root, "person.md", "by hand\n")  # a person commits with git itself
    git(root, "add", "person.md")
    git(root, "-c", "user.name=Person", "-c", "user.email=p@example.com", "commit", "-qm", "theirs")
    write(root, "a.md", "a2\n")
    sha = history.commit(on_disk(root, "a.md"), "ours again", author=ALICE)
    assert [r.subject for r in history.log()] == ["ours again", "theirs", "ours"]
    assert git(root, "ls-tree", "--name-only", str(sha)).split() == ["a.md", "person.md"]  # theirs is kept
    assert history.status() == []


def test_a_stale_guess_of_head_never_loses_a_commit_made_in_between(repo: tuple[GitHistory, Path]) -> None:
    """``base`` (HEAD as read when a change began) is only a guess: a person's commit since then is kept."""
    history, root = repo
    write(root, "a.md", "a\n")
    history.commit(on_disk(root, "a.md"), "ours", author=ALICE)
    guess = history.head_and_tree()
    assert guess == tuple(git(root, "rev-parse", "HEAD", "HEAD^{tree}").split())
    write(root, "person.md", "by hand\n")  # a person commits with git after the guess was read
    git(root, "add", "person.md")
    git(root, "-c", "user.name=Person", "-c", "user.email=p@example.com", "commit", "-qm", "theirs")
    write(root, "a.md", "a2\n")
    sha = history.commit(on_disk(root, "a.md"), "ours again", author=ALICE, base=guess)
    assert [r.subject for r in history.log()] == ["ours again", "theirs", "ours"]
    assert git(root, "ls-tree", "--name-only", str(sha)).split() == ["a.md", "person.md"]  # theirs is kept
    assert history.status() == []
    # the files match the guessed tree but not HEAD's: still a commit, not "nothing changed"
    stale = history.head_and_tree()
    git(root, "rm", "-q", "--cached", "a.md")  # a person commits a.md's removal meanwhile (the file stays)
    git(root, "-c", "user.name=Person", "-c", "user.email=p@example.com", "commit", "-qm", "theirs again")
    sha = history.commit(on_disk(root, "a.md"), "ours, back", author=ALICE, base=stale)
    assert sha is not None and history.show("a.md", "HEAD") == b"a2\n"
    assert [r.subject for r in history.log()][:2] == ["ours, back", "theirs again"]
    # and with a true guess a commit of nothing new is still nothing
    assert history.commit(on_disk(root, "a.md"), "nothing", author=ALICE, base=history.head_and_tree()) is None


def test_a_vault_in_a_sub_folder_of_a_larger_repository(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    write(project, "app.py", "print('hi')\n")
    git(project, "add", "app.py")
    git(project, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "app")
    write(project, "app.py", "print('staged')\n")
    git(project, "add", "app.py")  # a developer's staged change
    write(project, "scratch.txt", "untracked\n")
    vault = project / ".memory"
    vault.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    history = GitHistory(vault, state)
    try:
        assert history.prefix == ".memory/" and history.top == project.resolve()
        assert not (vault / ".git").exists()
        assert history.log() == []  # the project's own commit is not the vault's history
        write(vault, "memories/x.md", "x\n")
        assert history.status() == ["?? .memory/memories/x.md"]
        assert history.changed(["memories/x.md"]) == ["memories/x.md"]  # vault-relative
        sha = history.commit(on_disk(vault, "memories/x.md"), "memory: x", author=ALICE)
        assert sha is not None
        assert git(project, "show", "--name-only", "--format=", str(sha)).split() == [".memory/memories/x.md"]
        assert history.files_changed(sha) == [("A", "memories/x.md")]
        (rev,) = history.log()
        assert rev.path == "memories/x.md" and history.log("memories/x.md")[0].sha == sha
        assert history.show("memories/x.md", "HEAD") == b"x\n"
        write(vault, "memories/x.md", "y\n")
        assert "-x\n+y" in history.diff("memories/x.md", "HEAD")
        assert history.status() == [" M .memory/memories/x.md"]  # only the vault's paths
        # the developer's staged change and untracked file are untouched, and were not committed
        assert git(project, "diff", "--cached", "--name-only").split() == ["app.py"]
        assert "?? scratch.txt" in git(project, "status", "--porcelain")
        assert git(project, "show", "HEAD:app.py") == "print('hi')\n"
    finally:
        history.close()


def test_an_ignored_sub_folder_gets_a_repository_of_its_own(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    write(project, ".gitignore", "scratch/\n")
    vault = project / "scratch" / "vault"
    vault.mkdir(parents=True)
    state = tmp_path / "state"
    state.mkdir()
    history = GitHistory(vault, state)
    try:
        assert history.prefix == "" and (vault / ".git").is_dir() and history.top == vault.resolve()
        write(vault, "a.md", "a\n")
        history.commit(on_disk(vault, "a.md"), "a", author=ALICE)
        assert git(project, "status", "--porcelain").split() == ["??", ".gitignore"]
    finally:
        history.close()


def test_a_missing_folder_is_a_history_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="does not exist"):
        GitHistory(tmp_path / "nope", tmp_path)


def test_commits_work_with_no_git_identity_configured(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    assert subprocess.run(["git", "config", "user.name"], cwd=root, capture_output=True).returncode != 0
    assert subprocess.run(["git", "config", "user.email"], cwd=root, capture_output=True).returncode != 0
    config_before = (root / ".git" / "config").read_bytes()
    write(root, "a.md", "a\n")
    assert history.commit(on_disk(root, "a.md"), "no identity anywhere", author=BOT) is not None
    assert history.log()[0].author == BOT
    assert (root / ".git" / "config").read_bytes() == config_before  # no identity written anywhere
    assert not Path(os.environ["GIT_CONFIG_GLOBAL"]).exists()


def test_identity() -> None:
    assert Identity.parse("Trip Planner <planner@example.com>") == Identity("Trip Planner", "planner@example.com")
    assert Identity.parse("  Ana Lu  ") == Identity("Ana Lu", "ana-lu@memfs.invalid")
    assert Identity.parse("!!!").email == "memfs@memfs.invalid"
    assert str(ALICE) == "Alice <alice@example.com>"
    for name, email in (("", "a@b"), ("a", " "), ("a<b", "x@y"), ("a", "x>y"), ("a\nb", "x@y"), ("a", "x\x00")):
        with pytest.raises(ValueError):
            Identity(name, email)


def test_a_held_ref_lock_is_an_error_that_names_the_file(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    write(root, "a.md", "a\n")
    first = history.commit(on_disk(root, "a.md"), "one", author=ALICE)
    lock = root / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")  # fresh: as if another git command holds the branch right now
    write(root, "a.md", "b\n")
    with pytest.raises(GitLockError, match=r"main\.lock is held.*remove that file"):
        history.commit(on_disk(root, "a.md"), "two", author=ALICE)
    assert lock.exists()  # a live lock is never removed
    assert [r.sha for r in history.log()] == [first] and history.resolve("HEAD") == first
    lock.unlink()
    second = history.commit(on_disk(root, "a.md"), "two", author=ALICE)  # the private index recovers
    assert second is not None and [r.subject for r in history.log()] == ["two", "one"]
    assert history.status() == []


def test_a_stale_ref_lock_is_removed(repo: tuple[GitHistory, Path], caplog: pytest.LogCaptureFixture) -> None:
    history, root = repo
    write(root, "a.md", "a\n")
    history.commit(on_disk(root, "a.md"), "one", author=ALICE)
    lock = root / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    old = time.time() - 60  # left by a killed process: old, and no git is running here
    os.utime(lock, (old, old))
    write(root, "a.md", "b\n")
    assert history.commit(on_disk(root, "a.md"), "two", author=ALICE) is not None
    assert not lock.exists() and "removing stale git lock" in caplog.text
    assert [r.subject for r in history.log()] == ["two", "one"]


# -- the trees a commit builds --------------------------------------------------------------

NAMES = ["a", "a.b", "a-b", "a0", "b", "é"]  # around "/" in git's order of names, and not ASCII


def plumbing_tree(root: Path, tmp: Path, base: str | None, contents: dict[str, bytes | None]) -> str:
    """The tree git's own plumbing makes of ``base`` with ``contents``: read-tree, update-index, write-tree."""
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp / "plumbing-index")}
    run = lambda *args, **kw: subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, **kw)  # noqa: E731
    run("read-tree", *([base] if base else ["--empty"]))
    lines = []
    for path, data in sorted(contents.items()):
        if data is None:
            lines.append(f"0 {'0' * 40}\t{path}\0")
        else:
            blob = run("hash-object", "-w", "--stdin", input=data).stdout.decode().strip()
            lines.append(f"100644 {blob}\t{path}\0")
    run("update-index", "-z", "--index-info", input="".join(lines).encode())
    return str(run("write-tree").stdout.decode().strip())


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(rounds=[{"a/a": b"", "a.b": b""}, {"a": b"", "a/a": b""}])  # a file and a folder of one name at once
@given(rounds=st.lists(st.dictionaries(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join),
                                       st.one_of(st.none(), st.binary(max_size=8)), min_size=1, max_size=6),
                       min_size=1, max_size=4))  # fmt: skip
def test_a_commit_builds_the_tree_gits_plumbing_would(tmp_path_factory: pytest.TempPathFactory,
                                                      rounds: list[dict[str, bytes | None]]) -> None:  # fmt: skip
    # memfs writes only the trees on the way to a changed file; the result must be exactly git's
    # read-tree + update-index + write-tree: empty folders gone, a file replacing a folder and a
    # folder a file, removing a folder's name doing nothing.
    tmp = tmp_path_factory.mktemp("trees")
    root = tmp / "vault"
    root.mkdir()
    history = GitHistory(root, tmp, lock_timeout=0.1)
    try:
        for contents in rounds:
            before = history.head()
            base = git(root, "rev-parse", "HEAD^{tree}").strip() if before else None
            expected = plumbing_tree(root, tmp, base, contents)
            sha = history.commit(contents, "round", author=ALICE)
            now = git(root, "rev-parse", "HEAD^{tree}").strip() if history.head() else None
            assert (now if sha is not None else base) == expected
            git(root, "fsck", "--strict", "--no-dangling")
    finally:
        history.close()


def test_a_commit_writes_only_the_trees_on_the_way_to_its_file(repo: tuple[GitHistory, Path]) -> None:
    history, root = repo
    history.commit({f"m/{ns}/{i}.md": b"x%d\n" % i for ns in ("p", "q") for i in range(50)}, "many", author=ALICE)
    objects = root / ".git" / "objects"
    loose = lambda: {p.parent.name + p.name for p in objects.glob("??/*")}  # noqa: E731
    before = loose()
    history.commit({"m/p/7.md": b"changed\n"}, "one", author=ALICE)
    new = loose() - before
    kinds = sorted(git(root, "cat-file", "-t", oid).strip() for oid in new)
    assert kinds == ["blob", "commit", "tree", "tree", "tree"]  # the file, m/p, m, the root, the commit
    git(root, "fsck", "--strict", "--no-dangling")


def test_head_moved_by_a_person_between_commits_is_seen(repo: tuple[GitHistory, Path]) -> None:
    # HEAD is asked of memfs's long-running `git cat-file`: it must give the commit HEAD names now.
    history, root = repo
    history.commit({"a.md": b"a\n"}, "one", author=ALICE)
    write(root, "b.md", "b\n")
    git(root, "add", "b.md")
    git(root, "-c", "user.name=P", "-c", "user.email=p@e", "commit", "-qm", "by hand")
    git(root, "pack-refs", "--all")
    assert history.head() == git(root, "rev-parse", "HEAD").strip()
    history.commit({"c.md": b"c\n"}, "two", author=ALICE)
    assert [r.subject for r in history.log()] == ["two", "by hand", "one"]
    assert git(root, "ls-tree", "--name-only", "HEAD").split() == ["a.md", "b.md", "c.md"]


@pytest.mark.parametrize("crlf", [False, True])
def test_a_few_paths_compared_with_head_by_memfs_agree_with_git_status(
    repo: tuple[GitHistory, Path], crlf: bool
) -> None:
    """changed() answers a few paths without git where it can be sure; every answer is git status's."""
    history, root = repo
    if crlf:
        git(root, "config", "core.autocrlf", "true")
    names = ["same.md", "edited.md", "gone.md", "exec.md", "linked.md", "folder.md", "crlf.md", "d/same.md"]
    contents = {name: f"{name} as committed\n".encode() for name in names}
    history.commit(contents, "start", author=ALICE)
    for name, data in contents.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_bytes(data)
    (root / "edited.md").write_bytes(b"a person's words\n")
    (root / "gone.md").unlink()
    (root / "exec.md").chmod(0o755)
    (root / "linked.md").unlink()
    (root / "linked.md").symlink_to("same.md")
    (root / "folder.md").unlink()
    (root / "folder.md").mkdir()
    (root / "folder.md" / "inside.md").write_text("x\n")
    (root / "crlf.md").write_bytes(b"crlf.md as committed\r\n")  # the same file to git when it converts
    (root / "new.md").write_text("never committed\n")
    (root / ".gitignore").write_text("ignored.md\n")
    (root / "ignored.md").write_text("ignored\n")
    asked = [*names, "new.md", "ignored.md", "never.md", "d/never.md"]
    for path in asked:  # one at a time (memfs's own comparison first), and beside git status alone
        assert history.changed([path]) == sorted({line[3:] for line in history.status([path])}), path
    changed = history.changed(asked)
    assert changed == sorted({line[3:] for line in history.status(asked)})
    assert {"edited.md", "gone.md", "linked.md", "folder.md", "new.md"} <= set(changed)
    assert {"same.md", "d/same.md", "never.md", "d/never.md", "ignored.md"}.isdisjoint(changed)
    assert ("crlf.md" in changed) is not crlf
