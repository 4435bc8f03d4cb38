"""Git states people create: merges and rebases in progress, conflict markers, shallow clones,
core.autocrlf, a detached HEAD, and locks left by a killed memfs writer.

Every case uses real repositories and real clones (``file://``) made by git itself.
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

import memfs
from memfs.history import has_conflict_markers

NS = "users/alice"
PERSON = "Pat Person <pat@example.com>"


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git as a person would, with an identity on the command line (never the developer's)."""
    proc = subprocess.run(["git", "-c", "user.name=Pat Person", "-c", "user.email=pat@example.com", *args],
                          cwd=cwd, capture_output=True, text=True)  # fmt: skip
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def snapshot(root: Path) -> tuple[str, str, str]:
    """HEAD, git's unmerged entries and `git status`: what memfs must never change in a git state."""
    return (git(root, "rev-parse", "HEAD"), git(root, "ls-files", "-u"),
            git(root, "status", "--porcelain", "--untracked-files=all"))  # fmt: skip


@dataclass
class Diverged:
    """An origin vault and a clone whose copies of one memory were edited differently."""

    origin: Path
    clone: Path
    memory_id: str
    path: str


@pytest.fixture
def diverged(tmp_path: Path) -> Diverged:
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    with memfs.Vault.open(origin, create=True, durable=False) as vault:
        memory = vault.memories(NS).add("Window seat.", title="seats")
        vault.memories(NS).add("Vegetarian.", title="food")
    git(tmp_path, "clone", "-q", f"file://{origin}", "clone")
    with memfs.Vault.open(clone, create=True, durable=False) as vault:
        vault.memories(NS).update(memory.id, body="Aisle seat.")  # type: ignore[arg-type]
    with memfs.Vault.open(origin, create=True, durable=False) as vault:
        vault.memories(NS).update(memory.id, body="Window seat, always.")  # type: ignore[arg-type]
    assert memory.id is not None
    return Diverged(origin, clone, memory.id, memory.path)


# -- operations in progress ---------------------------------------------------------------

# operation: (how a person gets there, the file git keeps meanwhile, how to get out, what the error says)
OPERATIONS = {
    "merge": (["pull", "--no-rebase", "-q"], "MERGE_HEAD", ["merge", "--abort"], "git merge --abort"),
    "rebase": (["pull", "--rebase", "-q"], "rebase-merge", ["rebase", "--abort"], "git rebase --abort"),
    "rebase-apply": (["rebase", "--apply", "-q", "origin/main"], "rebase-apply", ["rebase", "--abort"],
                     "git rebase --abort"),
    "cherry-pick": (["cherry-pick", "origin/main"], "CHERRY_PICK_HEAD", ["cherry-pick", "--abort"],
                    "git cherry-pick --abort"),
    "revert": (["revert", "--no-edit", "HEAD~2"], "REVERT_HEAD", ["revert", "--abort"], "git revert --abort"),
    "bisect": (["bisect", "start"], "BISECT_LOG", ["bisect", "reset"], "git bisect reset"),
    "am": (["am", "-q", "../origin.patch"], "rebase-apply/applying", ["am", "--abort"], "git am --abort"),
}  # fmt: skip


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_no_commit_while_an_operation_is_in_progress_and_reads_keep_working(diverged: Diverged, operation: str) -> None:
    start, state_file, abort, advice = OPERATIONS[operation]
    clone = diverged.clone
    git(clone, "fetch", "-q")
    (clone.parent / "origin.patch").write_text(git(clone, "format-patch", "-1", "--stdout", "origin/main"))
    git(clone, *start, check=False)  # conflicts: git stops half-way, as a person's terminal shows
    assert (clone / ".git" / state_file).exists()
    before = snapshot(clone)

    with memfs.Vault.open(clone, create=True, durable=False) as vault:  # opening reconciles: it must commit nothing
        store = vault.memories(NS)
        assert [h.title for h in vault.search("vegetarian")] == ["food"]
        assert store.get("food.md").body == "Vegetarian.\n"
        assert vault.log(diverged.path)
        assert b"Window seat." in vault.show(diverged.path, "HEAD~1")
        with pytest.raises(memfs.RepositoryStateError, match=advice) as raised:
            store.add("Likes tea.", title="tea")
        assert raised.value.operation == operation.partition("-apply")[0]
        assert "is in progress in" in str(raised.value) and "then retry" in str(raised.value)
        assert not (vault.root / "memories" / NS / "tea.md").exists()
        with pytest.raises(memfs.RepositoryStateError):
            store.update("food.md", body="Vegan.")
        assert store.get("food.md").body == "Vegetarian.\n"
        tools = memfs.MemoryTools(vault, NS)
        said = tools.run("create", path="/memories/tea.md", file_text="Likes tea.")
        assert f"git {operation.partition('-apply')[0]} is in progress" in said and "Nothing was changed" in said
    assert snapshot(clone) == before  # HEAD, the conflict entries and the files as git left them
    assert (clone / ".git" / state_file).exists()

    git(clone, *abort)
    with memfs.Vault.open(clone, create=True, durable=False) as vault:
        vault.memories(NS).add("Likes tea.", title="tea")
        assert vault.log()[0].subject == "memory: create users/alice/tea.md"
        assert vault.history.status() == []


def test_conflicted_pull_keeps_markers_and_conflict_state_then_the_persons_resolution_counts(
    diverged: Diverged, caplog: pytest.LogCaptureFixture
) -> None:
    clone = diverged.clone
    git(clone, "pull", "--no-rebase", "-q", check=False)
    conflicted = clone / diverged.path
    assert has_conflict_markers(conflicted.read_bytes())
    assert git(clone, "ls-files", "-u", diverged.path)  # unmerged in git's index
    head = git(clone, "rev-parse", "HEAD")

    with memfs.Vault.open(clone, create=True, durable=False) as vault:
        assert "conflict markers" in caplog.text
        assert git(clone, "rev-parse", "HEAD") == head  # no "changed outside memfs" commit
        assert git(clone, "ls-files", "-u", diverged.path)  # git's conflict state is untouched
        with pytest.raises(memfs.RepositoryStateError, match="a merge is in progress"):
            vault.memories(NS).update(diverged.memory_id, body="Either seat.")
        assert has_conflict_markers(conflicted.read_bytes())
        findings = vault.doctor()
    messages = [f.message for f in findings if f.severity == "error"]
    assert any("a merge is in progress" in m and "git merge --abort" in m for m in messages)
    assert any("conflict markers" in m and diverged.path in m for m in messages)

    # the person resolves the conflict and commits the merge with git: memfs carries on from there
    text = conflicted.read_text()
    conflicted.write_text(text[: text.index("<<<<<<<")] + "Aisle seat, or window.\n")
    git(clone, "commit", "-qam", "merge origin")
    with memfs.Vault.open(clone, create=True, durable=False) as vault:
        store = vault.memories(NS)
        assert store.get(diverged.memory_id).body == "Aisle seat, or window.\n"
        store.update(diverged.memory_id, body="Any seat.")
        assert vault.history.status() == []
        assert [f.severity for f in vault.doctor()].count("error") == 0


def test_an_edit_made_during_a_merge_is_committed_once_the_merge_is_over(diverged: Diverged) -> None:
    clone = diverged.clone
    git(clone, "pull", "--no-rebase", "-q", check=False)
    other = clone / "memories" / NS / "food.md"
    other.write_text(other.read_text().replace("Vegetarian.", "Vegan."))  # not part of the merge
    with memfs.Vault.open(clone, create=True, person=PERSON, durable=False) as vault:
        assert vault.history.changed(["memories/users/alice/food.md"])  # left as it is, uncommitted
        [dirty] = [f for f in vault.doctor() if f.check == "edit" and "food.md" in f.message]
        assert "once the merge is over" in dirty.message
    git(clone, "merge", "--abort")  # keeps the unrelated edit on disk
    assert "Vegan." in other.read_text()
    with memfs.Vault.open(clone, create=True, person=PERSON, durable=False) as vault:  # the file did not change since
        latest = vault.log()[0]
        assert latest.subject == "edit: memories/users/alice/food.md (changed outside memfs)"
        assert latest.author == memfs.Identity("Pat Person", "pat@example.com")
        assert vault.history.status() == []


# -- conflict markers ---------------------------------------------------------------------

CONFLICTED = """---
title: seats
---
<<<<<<< HEAD
Aisle seat.
=======
Window seat.
>>>>>>> origin/main
"""


def test_conflict_markers_are_never_committed_as_a_persons_edit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, person=PERSON, durable=False) as vault:
        store = vault.memories(NS)
        memory = store.add("Aisle seat.", title="seats")
        file = vault.root / memory.path
        file.write_text(CONFLICTED.replace("title: seats", f"id: {memory.id}\ntitle: seats"))  # pasted from a merge
        head = vault.log()[0].sha
        vault.reconcile()
        assert vault.log()[0].sha == head
        assert "holds git's conflict markers" in caplog.text
        assert vault.history.changed([memory.path]) == [memory.path]
        assert any("conflict markers" in f.message for f in vault.doctor() if f.severity == "error")

        with pytest.raises(memfs.ConflictMarkersError, match="resolves the conflict") as raised:
            store.update(memory.id, body="Window.")  # type: ignore[arg-type]
        assert raised.value.path == memory.path
        with pytest.raises(memfs.ConflictMarkersError):
            store.delete(memory.id)  # type: ignore[arg-type]
        with pytest.raises(memfs.ConflictMarkersError):
            store.move(memory.id, "elsewhere.md")  # type: ignore[arg-type]
        tools = memfs.MemoryTools(vault, NS)
        said = tools.run("str_replace", path="/memories/seats.md", old_str="Aisle seat.", new_str="Any seat.")
        assert "unresolved merge conflict markers" in said
        assert file.read_text().count("<<<<<<<") == 1
        assert vault.log()[0].sha == head

        file.write_text(file.read_text().split("<<<<<<<")[0] + "Window seat.\n")  # the person resolves it
        vault.reconcile()
        assert vault.log()[0].author == memfs.Identity("Pat Person", "pat@example.com")
        store.update(memory.id, body="Any seat.")  # type: ignore[arg-type]
        assert vault.history.status() == []


def test_a_markdown_heading_rule_is_not_a_conflict(vault: memfs.Vault) -> None:
    text = "Seats\n=======\n\nAisle.\n\n> quoted\n>>>>>>> not after a start marker\n"
    assert not has_conflict_markers(text.encode())
    assert has_conflict_markers(CONFLICTED.encode())
    assert has_conflict_markers(CONFLICTED.replace("\n", "\r\n").encode())
    assert has_conflict_markers(b"<<<<<<< ours\na\n||||||| base\nb\n=======\nc\n>>>>>>> theirs\n")  # diff3
    store = vault.memories(NS)
    memory = store.add(text, title="rule")
    store.update(memory.id, body=text + "More.\n")  # type: ignore[arg-type]
    assert vault.history.status() == []


# -- shallow clones -----------------------------------------------------------------------


def test_undo_in_a_shallow_clone_never_takes_the_boundary_for_all_files_added(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    with memfs.Vault.open(origin, create=True, durable=False) as vault:
        for title in ("alpha", "beta", "gamma"):
            vault.memories(NS).add(f"{title} body", title=title)
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", "shallow")
    root = tmp_path / "shallow"
    files = sorted(p.name for p in (root / "memories" / NS).iterdir())

    with memfs.Vault.open(root, create=True, durable=False) as vault:
        [boundary] = vault.log()
        with pytest.raises(memfs.ShallowHistoryError, match="not available"):
            vault.undo(author="memfs agent")  # "every file added": it used to delete every memory
        assert sorted(p.name for p in (root / "memories" / NS).iterdir()) == files
        assert vault.log()[0].sha == boundary.sha
        with pytest.raises(memfs.ShallowHistoryError, match="shallow clone"):
            vault.history.files_changed(boundary.sha)
        assert boundary.shallow and boundary.status is None  # not "A"
        [file_rev] = vault.log(f"memories/{NS}/alpha.md")
        assert file_rev.shallow and file_rev.status is None
        with pytest.raises(memfs.RevisionNotFoundError, match="shallow clone"):
            vault.show(f"memories/{NS}/alpha.md", "HEAD~1")
        history = memfs.MemoryTools(vault, NS).run("history", path="/memories/alpha.md")
        assert "older history is not available" in history

        # commits made in the clone have their history: they undo as usual
        vault.memories(NS).add("delta body", title="delta")
        assert vault.undo(author="memfs agent").subject == "memory: create users/alice/delta.md"
        assert not (root / "memories" / NS / "delta.md").exists()
        assert [r.shallow for r in vault.log()] == [False, False, True]
        assert sorted(p.name for p in (root / "memories" / NS).iterdir()) == files


# -- core.autocrlf ------------------------------------------------------------------------


def test_undo_of_a_persons_crlf_save_with_autocrlf(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, person=PERSON, durable=False) as vault:
        git(vault.root, "config", "core.autocrlf", "true")
        store = vault.memories(NS)
        memory = store.add("line one\nline two", title="crlf")
        agents = (vault.root / memory.path).read_bytes()
        file = vault.root / memory.path
        file.write_bytes(agents.replace(b"line two", b"line 2").replace(b"\n", b"\r\n"))  # a Windows editor
        vault.reconcile()
        assert vault.log()[0].author.name == "Pat Person"
        assert b"\r\n" not in vault.show(memory.path, "HEAD")  # git stores LF, the file on disk has CRLF

        undone = vault.undo(author="Pat Person")
        assert undone.subject == f"edit: {memory.path} (changed outside memfs)"
        # the file keeps the person's CRLF endings, as git's own checkout would write it
        assert file.read_bytes() == agents.replace(b"\n", b"\r\n")
        assert store.get(memory.id).body == "line one\r\nline two\r\n"  # type: ignore[arg-type]
        assert vault.history.status() == []


def test_undo_with_autocrlf_still_refuses_a_file_changed_since(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, person=PERSON, durable=False) as vault:
        git(vault.root, "config", "core.autocrlf", "true")
        memory = vault.memories(NS).add("line one", title="crlf")
        file = vault.root / memory.path
        file.write_bytes(file.read_bytes().replace(b"\n", b"\r\n").replace(b"line one", b"line 1"))
        vault.reconcile()
        file.write_bytes(file.read_bytes().replace(b"line 1", b"line first"))  # changed again, not committed
        with pytest.raises(memfs.ConflictError, match="changed after"):
            vault.undo(author="Pat Person")
        assert b"line first" in file.read_bytes()


# -- detached HEAD ------------------------------------------------------------------------


def test_doctor_reports_a_detached_head(vault: memfs.Vault) -> None:
    vault.memories(NS).add("one", title="one")
    assert not any("detached" in f.message for f in vault.doctor())
    git(vault.root, "checkout", "-q", "--detach")
    [finding] = [f for f in vault.doctor() if "detached" in f.message]
    assert finding.severity == "warning" and "git switch -c" in finding.message
    git(vault.root, "checkout", "-q", "main")
    assert not any("detached" in f.message for f in vault.doctor())


# -- locks --------------------------------------------------------------------------------


def test_what_the_private_index_of_an_older_memfs_left_blocks_no_write(tmp_path: Path) -> None:
    # memfs once committed through an index file of its own (.memfs/git-index); it builds the
    # changed trees itself now, so that file and a lock a killed writer left on it are inert.
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.memories(NS).add("one", title="one")
    state = root / ".memfs"
    (state / "git-index.lock").write_text("")
    (state / "git-index").write_bytes(b"DIRC not an index any more")
    (state / "git-index.head").write_text("0" * 40)
    with memfs.Vault.open(root, create=True, durable=False, lock_timeout=0.3) as vault:
        vault.memories(NS).add("two", title="two")
        assert [r.subject for r in vault.log()][:2] == ["memory: create users/alice/two.md",
                                                        "memory: create users/alice/one.md"]  # fmt: skip
        assert vault.history.status() == []
        assert git(root, "ls-tree", "-r", "--name-only", "HEAD", "memories/users").split() == [
            "memories/users/alice/one.md", "memories/users/alice/two.md"]  # fmt: skip


def test_gits_own_fresh_lock_is_never_taken_for_memfss(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False, lock_timeout=0.3) as vault:
        lock = vault.root / ".git" / "index.lock"
        lock.write_text("")  # a person's git command is running
        vault.memories(NS).add("one", title="one")
        assert lock.exists()
        assert "interrupted memfs write" not in caplog.text
        lock.unlink()


def crlf_vault(root: Path) -> memfs.Vault:
    """A vault whose repository (its own config, never the global one) converts line endings and refuses lossy ones."""
    vault = memfs.Vault.open(root, create=True, person=PERSON, durable=False)
    git(vault.root, "config", "core.autocrlf", "true")
    git(vault.root, "config", "core.safecrlf", "true")
    return vault


def clean_status(vault: memfs.Vault) -> None:
    """git, with the repository's conversions, sees the files exactly as committed."""
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert vault.outside_edits() == []


def test_writes_undo_and_restore_with_autocrlf_and_safecrlf(tmp_path: Path) -> None:
    with crlf_vault(tmp_path / "v") as vault:
        store = vault.memories(NS)
        memory = store.add("line one\nline two", title="crlf")
        first = vault.log()[0].sha
        clean_status(vault)
        store.update(memory.id, body="line one\nline 2\n")
        clean_status(vault)
        moved = store.move(memory.id, "moved.md")
        clean_status(vault)
        assert vault.show(moved.path, "HEAD") == (vault.root / moved.path).read_bytes()  # memfs writes LF
        vault.undo(author="memfs agent")  # the move
        clean_status(vault)
        restored = store.restore(memory.id, first)
        assert restored.body == "line one\nline two\n"
        clean_status(vault)
        store.delete(memory.id)
        clean_status(vault)
        vault.undo(author="memfs agent")  # the delete
        assert store.get(memory.id).body == "line one\nline two\n"
        clean_status(vault)
        session = vault.session("chat")
        session.append([{"role": "user", "content": "first\nsecond"}])
        clean_status(vault)
        assert session.items()[0]["content"] == "first\nsecond"


def test_a_persons_crlf_save_is_committed_undone_and_restored_with_safecrlf(tmp_path: Path) -> None:
    with crlf_vault(tmp_path / "v") as vault:
        store = vault.memories(NS)
        memory = store.add("line one\nline two", title="crlf")
        agents = (vault.root / memory.path).read_bytes()
        file = vault.root / memory.path
        file.write_bytes(agents.replace(b"line two", b"line 2").replace(b"\n", b"\r\n"))  # a Windows editor's save
        assert vault.outside_edits() == [memory.path]
        sha = vault.commit()
        assert sha is not None and vault.log()[0].author.name == "Pat Person"
        assert vault.show(memory.path, "HEAD") == agents.replace(b"line two", b"line 2")  # stored with LF
        clean_status(vault)
        assert store.get(memory.id).body == "line one\r\nline 2\r\n"  # the file as the person left it
        assert store.search("line 2")[0].id == memory.id

        store.update(memory.id, body="line one\nline three\n")  # the agent edits the person's CRLF file
        clean_status(vault)
        data = file.read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n")  # it keeps its endings: no mix git's safecrlf refuses
        git(vault.root, "add", "--", memory.path)  # the person's own git agrees
        assert store.get(memory.id).body == "line one\r\nline three\r\n"
        vault.undo(author="memfs agent")  # back to the person's save
        assert file.read_bytes().replace(b"\r\n", b"\n") == agents.replace(b"line two", b"line 2")
        clean_status(vault)
        vault.undo(author="Pat Person")  # and before it
        assert file.read_bytes().replace(b"\r\n", b"\n") == agents
        clean_status(vault)
        store.restore(memory.id, sha)
        assert store.get(memory.id).body == "line one\r\nline 2\r\n"  # git's copy, in the file's CRLF
        clean_status(vault)


def test_a_mixed_line_ending_save_is_committed_with_safecrlf(tmp_path: Path) -> None:
    with crlf_vault(tmp_path / "v") as vault:
        memory = vault.memories(NS).add("line one\nline two", title="mixed")
        file = vault.root / memory.path
        data = file.read_bytes()
        file.write_bytes(data.replace(b"line one\n", b"line one\r\n").replace(b"line two", b"line 2"))
        assert vault.commit() is not None  # git add would refuse (safecrlf); memfs commits what git would store
        assert vault.show(memory.path, "HEAD") == data.replace(b"line two", b"line 2")
        clean_status(vault)
