from __future__ import annotations

import multiprocessing
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import memfs


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_open_creates_layout_and_repo(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True) as vault:
        assert (vault.root / ".git").is_dir()
        assert (vault.root / "memories").is_dir()
        assert ".memfs/" in (vault.root / ".gitignore").read_text().splitlines()
        assert [r.subject for r in vault.log()] == ["vault: init"]
    with memfs.Vault.open(tmp_path / "v") as vault:  # reopening adds nothing
        assert len(vault.log()) == 1


def test_open_refuses_missing_folder_without_create(tmp_path: Path) -> None:
    with pytest.raises(memfs.NotFoundError, match="memfs init"):
        memfs.Vault.open(tmp_path / "nope", create=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(memfs.NotFoundError, match="is a file"):
        memfs.Vault.open(tmp_path / "file")


def test_commits_work_without_any_git_identity(tmp_path: Path) -> None:
    # the autouse fixture leaves git with no user.name anywhere, as on a fresh CI machine
    assert subprocess.run(["git", "config", "user.name"], capture_output=True).returncode != 0
    with memfs.Vault.open(tmp_path / "v", create=True) as vault:
        vault.memories("a").add("x", title="x")
        assert vault.log()[0].author == memfs.Identity("memfs agent", "agent@memfs.invalid")
    assert not (Path(os.environ["HOME"]) / ".gitconfig").exists()
    assert not Path(os.environ["GIT_CONFIG_GLOBAL"]).exists()


def test_author_is_configurable(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, author="Trip planner <planner@example.com>") as vault:
        vault.memories("a").add("x", title="x")
        assert str(vault.log()[0].author) == "Trip planner <planner@example.com>"
    with pytest.raises(ValueError):
        memfs.Identity("bad<name", "x@y")


def test_every_write_leaves_git_clean(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    m = store.add("a", title="a")
    store.update(m.id, body="b")  # type: ignore[arg-type]
    store.move(m.id, "c.md")  # type: ignore[arg-type]
    store.delete(m.id)  # type: ignore[arg-type]
    assert vault.history.status() == []
    assert git(vault.root, "status", "--porcelain") == ""


def test_batch_is_one_commit(vault: memfs.Vault) -> None:
    before = len(vault.log())
    with vault.batch("import notes"):
        for i in range(20):
            vault.memories("notes").add(f"note {i}", title=f"Note {i}")
    log = vault.log()
    assert len(log) == before + 1
    assert log[0].subject == "import notes"
    assert len(vault.search("note", k=50)) == 20
    assert vault.history.status() == []


def test_batch_that_raises_leaves_files_and_git_as_before(vault: memfs.Vault) -> None:
    store = vault.memories("notes")
    kept = store.add("original", title="Kept")
    before = vault.log()
    with pytest.raises(RuntimeError), vault.batch("doomed"):
        store.update(kept.id, body="changed\n")  # type: ignore[arg-type]
        store.add("new", title="New")
        raise RuntimeError("boom")
    assert vault.log() == before
    assert store.get(kept.id).body == "original\n"  # type: ignore[arg-type]
    assert "new.md" not in store
    assert [h.title for h in vault.search("new original changed")] == ["Kept"]
    assert vault.history.status() == []


def test_vault_inside_a_larger_repository(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "app.py").write_text("print('hi')\n")
    git(project, "add", "app.py")
    git(project, "-c", "user.name=Dev", "-c", "user.email=dev@x", "commit", "-qm", "app")
    (project / "app.py").write_text("print('changed, staged')\n")
    git(project, "add", "app.py")
    (project / "notes.txt").write_text("untracked\n")
    with memfs.Vault.open(project / ".memory", create=True) as vault:
        assert vault.history.prefix == ".memory/"
        assert not (project / ".memory" / ".git").exists()
        m = vault.memories("users/alice").add("x", title="x")
        assert [r.path for r in vault.log()][:1] == ["memories/users/alice/x.md"]
        assert vault.memories("users/alice").history(m.id)[0].path == "memories/users/alice/x.md"  # type: ignore[arg-type]
    files = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert files == [".memory/memories/users/alice/x.md"]
    # the developer's staged change and untracked file are untouched
    assert git(project, "diff", "--cached", "--name-only").split() == ["app.py"]
    assert "?? notes.txt" in git(project, "status", "--porcelain")
    assert ".memory/" not in git(project, "status", "--porcelain")


def test_ignored_folder_of_a_repository_gets_its_own_repo(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / ".gitignore").write_text("scratch/\n")
    with memfs.Vault.open(project / "scratch" / "vault", create=True) as vault:
        assert (vault.root / ".git").is_dir()
        vault.memories("a").add("x", title="x")
    assert git(project, "status", "--porcelain").split() == ["??", ".gitignore"]


def test_stale_index_lock_is_cleared(vault: memfs.Vault) -> None:
    lock = vault.root / ".git" / "index.lock"
    lock.write_text("")
    old = time.time() - 60
    os.utime(lock, (old, old))
    vault.memories("a").add("x", title="x")
    assert not lock.exists()
    assert vault.history.status() == []


def test_held_index_lock_does_not_block_commits(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, lock_timeout=0.3) as vault:
        lock = vault.root / ".git" / "index.lock"
        lock.write_text("")  # fresh: as if a person's git command is running right now
        vault.memories("a").add("x", title="x")
        assert "will retry" in caplog.text
        assert vault.log()[0].subject == "memory: create a/x.md"
        lock.unlink()
        vault.memories("a").add("y", title="y")  # catches git's own index up
        assert vault.history.status() == []


@pytest.mark.slow
def test_held_ref_lock_fails_the_write_and_leaves_nothing(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, lock_timeout=0.3) as vault:
        store = vault.memories("a")
        m = store.add("v1", title="x")
        before = vault.log()
        lock = vault.root / ".git" / "refs" / "heads" / "main.lock"
        lock.write_text("")
        with pytest.raises(memfs.GitLockError, match="remove that file"):
            store.update(m.id, body="v2")  # type: ignore[arg-type]
        with pytest.raises(memfs.GitLockError):
            store.add("new", title="new")
        lock.unlink()
        assert vault.log() == before
        assert store.get(m.id).body == "v1\n"  # type: ignore[arg-type]
        assert "new.md" not in store
        assert vault.history.status() == []
        assert [h.title for h in vault.search("new v1 v2")] == ["x"]


def test_reconcile_commits_files_changed_outside_memfs_as_the_person(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, person="Alice <alice@example.com>") as vault:
        vault.memories("a").add("x", title="x")
    (root / "memories/a/by-hand.md").write_text("# Written in an editor\n")
    with memfs.Vault.open(root, person="Alice <alice@example.com>") as vault:
        top = vault.log()[0]
        assert str(top.author) == "Alice <alice@example.com>"
        assert top.subject == "edit: memories/a/by-hand.md (changed outside memfs)"
        assert vault.search("editor")[0].path == "memories/a/by-hand.md"


def test_orphaned_temp_files_are_swept(tmp_path: Path) -> None:
    root = tmp_path / "v"
    memfs.Vault.open(root, create=True).close()
    orphan = root / "memories" / ".memfs-tmp-abc123"
    orphan.write_text("half a file")
    old = time.time() - 3600
    os.utime(orphan, (old, old))
    with memfs.Vault.open(root) as vault:
        assert not orphan.exists()
        assert vault.history.status() == []


def _writer(root: str, worker: int, count: int, start: Any) -> None:
    with memfs.Vault.open(root, durable=False) as vault:
        store = vault.memories(f"w{worker}")
        start.wait(120)  # both processes open, then write at once: every write contends for the lock
        for i in range(count):
            store.add(f"worker {worker} note {i} pineapple", title=f"n{i}")


@pytest.mark.slow
def test_two_processes_write_120_memories(tmp_path: Path) -> None:
    # 60 writes each (it was 200): released together, one writer waits on the vault lock while the
    # other writes from the first write on; more writes repeat that at 7 git calls each.
    root = tmp_path / "v"
    memfs.Vault.open(root, create=True).close()
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(root), w, 60, start)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    files = sorted((root / "memories").rglob("*.md"))
    assert len(files) == 120
    with memfs.Vault.open(root) as vault:
        assert vault.history.status() == []
        log = vault.log()
        assert len(log) == 121
        assert len(vault.search("pineapple", k=1000)) == 120
        tracked = git(root, "ls-files", "memories", ":!memories/.gitkeep").split()
        assert len(tracked) == 120


def test_threads_share_one_vault(vault: memfs.Vault) -> None:
    import threading

    store = vault.memories("t")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(10):
                store.add(f"thread {n} item {i}", title=f"t{n}-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store.list()) == 40
    assert vault.history.status() == []


def test_lock_timeout_is_a_clear_error(tmp_path: Path) -> None:
    import fcntl

    root = tmp_path / "v"
    memfs.Vault.open(root, create=True).close()
    with open(root / ".memfs" / "lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # another holder (flock is per open file)
        with pytest.raises(memfs.LockTimeout, match="held by another process"):
            memfs.Vault.open(root, lock_timeout=0.2)


@pytest.mark.parametrize("failing", ["write", "fsync", "exchange", "git"])
def test_a_full_disk_leaves_the_original_and_no_temp_file(vault: memfs.Vault, failing: str) -> None:
    from memfs import _fs

    store = vault.memories("a")
    m = store.add("original text", title="Doc")
    path = vault.root / "memories/a/doc.md"
    before, log_before = path.read_bytes(), vault.log()
    vault.engine.durable = True
    with _fs.faults(_fs.FaultPlan(at=1, fault="enospc", only=failing)) as plan:
        with pytest.raises(OSError, match="No space left"):
            store.update(m.id, body="new text that does not fit")  # type: ignore[arg-type]
    assert plan.fired
    assert path.read_bytes() == before and vault.log() == log_before
    assert list(path.parent.glob(".memfs-tmp-*")) == []
    assert store.update(m.id, body="fits now").body == "fits now"  # type: ignore[arg-type]
