"""Sync through a real git remote (bare repositories over file://, and git daemon on 127.0.0.1)."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import wait_for

import memfs
from memfs.cli import cli
from memfs.errors import SyncError
from memfs.history import has_conflict_markers


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "--quiet", "--initial-branch=main", str(bare)], check=True)
    return bare


def open_clone(tmp_path: Path, remote: Path, name: str) -> memfs.Vault:
    """A vault cloned from ``remote`` (the first one pushes a new vault into the empty remote)."""
    folder = tmp_path / name
    if not (remote / "refs" / "heads" / "main").exists():
        vault = memfs.Vault.open(folder, create=True, durable=False, author=f"agent-{name} <{name}@example.org>")
        git(folder, "remote", "add", "origin", remote.as_uri())
        vault.sync()
        return vault
    return memfs.Vault.clone(remote.as_uri(), folder, durable=False, author=f"agent-{name} <{name}@example.org>")


@pytest.fixture(autouse=True)
def isolated_env(module_home: Path) -> None:
    """Every test shares the module's home: the copies ``pair`` makes keep indexes signed with its key."""


@pytest.fixture(scope="module")
def pair_template(module_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A remote and two clones of it, the first with a memory, built once per module for ``pair`` to copy."""
    folder = tmp_path_factory.mktemp("pair")
    remote = folder / "remote.git"
    git(folder, "init", "--bare", "--quiet", "--initial-branch=main", str(remote))
    a = open_clone(folder, remote, "a")
    a.memories("users/alice").add("Alice prefers window seats.\nShe flies often.\n", title="Seats")
    a.sync()
    a.close()
    open_clone(folder, remote, "b").close()
    return folder


@pytest.fixture
def pair(pair_template: Path, tmp_path: Path, remote: Path) -> Iterator[tuple[memfs.Vault, memfs.Vault]]:
    """Two machines' vaults sharing ``remote``, which holds one memory: a copy of the module's, pointed
    at this test's remote (cloning and pushing them again for each test cost a fifth of a second)."""
    shutil.rmtree(remote)
    shutil.copytree(pair_template / "remote.git", remote, symlinks=True)
    vaults = []
    for name in ("a", "b"):
        shutil.copytree(pair_template / name, tmp_path / name, symlinks=True)
        git(tmp_path / name, "remote", "set-url", "origin", remote.as_uri())
        vaults.append(memfs.Vault.open(tmp_path / name, durable=False, author=f"agent-{name} <{name}@example.org>"))
    yield vaults[0], vaults[1]
    for vault in vaults:
        vault.close()


def files_of(vault: memfs.Vault) -> dict[str, bytes]:
    root = vault.root
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts and ".memfs" not in p.relative_to(root).parts
    }


def assert_no_markers_in_history(vault: memfs.Vault) -> None:
    for path, data in files_of(vault).items():
        assert not has_conflict_markers(data), path
    log = git(vault.root, "log", "-p", "--all")
    assert "<<<<<<<" not in log and ">>>>>>>" not in log


def converge(*vaults: memfs.Vault) -> None:
    for _ in range(2):
        for vault in vaults:
            vault.sync()


# -- the basic moves ------------------------------------------------------------------------------


def test_a_clone_gets_the_memories_and_searches_them(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    _, b = pair
    hits = b.search("window seats")
    assert [h.path for h in hits] == ["memories/users/alice/seats.md"]


def test_adds_on_both_sides_meet(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    a.memories("users/alice").add("Alice is vegetarian.", title="Diet")
    b.memories("users/bob").add("Bob likes tea.", title="Tea")
    a.sync()
    report = b.sync()
    assert report.pushed and "memories/users/alice/diet.md" in report.received
    a.sync()
    assert files_of(a) == files_of(b)
    assert {h.path for h in a.search("tea")} == {"memories/users/bob/tea.md"}
    assert git(a.root, "status", "--porcelain") == ""
    git(a.root, "fsck", "--strict")


def test_different_keys_changed_on_each_side_merge(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    a.memories("users/alice").update("seats.md", tags=["travel"])
    b.memories("users/alice").update("seats.md", body="Alice prefers window seats.\nShe flies every week.\n")
    a.sync()
    report = b.sync()
    assert report.merged == ["memories/users/alice/seats.md"] and not report.conflicts
    memory = b.memories("users/alice").get("seats.md")
    assert memory.tags == ("travel",) and "every week" in memory.body
    a.sync()
    assert files_of(a) == files_of(b)


def test_the_same_line_changed_on_both_sides_keeps_both_and_writes_no_marker(
    pair: tuple[memfs.Vault, memfs.Vault],
) -> None:
    a, b = pair
    a.memories("users/alice").update("seats.md", body="Alice prefers aisle seats.\nShe flies often.\n")
    b.memories("users/alice").update("seats.md", body="Alice prefers exit rows.\nShe flies often.\n")
    a.sync()
    report = b.sync()
    assert [c.path for c in report.conflicts] == ["memories/users/alice/seats.md"]
    copy = report.conflicts[0].copy
    assert "exit rows" in b.memories("users/alice").get("seats.md").body  # the local version stays
    assert b"aisle seats" in (b.root / copy).read_bytes()  # theirs is kept
    assert [h.path for h in b.search("aisle")] == []  # a conflict copy is not a memory: never injected
    assert b.conflicts() == report.conflicts
    a.sync()
    assert a.conflicts() == report.conflicts  # the copy travels: nothing lost anywhere
    assert_no_markers_in_history(a)
    assert_no_markers_in_history(b)
    b.resolve_conflict("users/alice/seats.md", "remote")
    assert "aisle" in b.memories("users/alice").get("seats.md").body and b.conflicts() == []
    b.sync()
    a.sync()
    assert files_of(a) == files_of(b) and a.conflicts() == []


def test_resolve_keeps_local_or_a_file_and_refuses_what_is_not_a_conflict(
    pair: tuple[memfs.Vault, memfs.Vault], tmp_path: Path
) -> None:
    a, b = pair
    a.memories("users/alice").update("seats.md", title="Aisle")
    b.memories("users/alice").update("seats.md", title="Window")
    a.sync()
    b.sync()
    with pytest.raises(memfs.NotFoundError):
        b.resolve_conflict("users/alice/other.md", "local")
    with pytest.raises(memfs.InvalidArgumentError):
        b.resolve_conflict("users/alice/seats.md", "both")
    chosen = tmp_path / "chosen.md"
    chosen.write_text("---\ntitle: Exit row\n---\nAlice now books exit rows.\n")
    result = CliRunner().invoke(cli, ["resolve", "--vault", str(b.root), "users/alice/seats.md", "--keep",
                                      str(chosen)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert b.memories("users/alice").get("seats.md").title == "Exit row"
    assert b.conflicts() == []


def test_edit_against_delete_keeps_the_edit(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    a.memories("users/alice").delete("seats.md")
    b.memories("users/alice").update("seats.md", body="Alice prefers window seats, always.\n")
    a.sync()
    report = b.sync()
    assert any("edit is kept" in n for n in report.notes)
    a.sync()
    assert "always" in a.memories("users/alice").get("seats.md").body


def test_a_rename_on_one_side_and_an_edit_on_the_other_follow_the_rename(
    pair: tuple[memfs.Vault, memfs.Vault],
) -> None:
    a, b = pair
    a.memories("users/alice").move("seats.md", "travel/seats.md")
    b.memories("users/alice").update("seats.md", body="Alice prefers window seats.\nShe flies every week.\n")
    a.sync()
    report = b.sync()
    assert any("follows it" in n for n in report.notes), report
    assert not (b.root / "memories/users/alice/seats.md").exists()
    assert "every week" in b.memories("users/alice").get("travel/seats.md").body
    a.sync()
    assert files_of(a) == files_of(b)


def test_the_other_way_round_the_rename_is_followed_too(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    a.memories("users/alice").update("seats.md", body="Alice prefers window seats.\nShe flies every week.\n")
    b.memories("users/alice").move("seats.md", "travel/seats.md")
    a.sync()
    b.sync()
    a.sync()
    for vault in (a, b):
        assert not (vault.root / "memories/users/alice/seats.md").exists()
        assert "every week" in vault.memories("users/alice").get("travel/seats.md").body


def test_a_session_appended_on_two_machines_keeps_every_message(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    with a.session("trip") as session:
        session.append([{"role": "user", "content": "Plan a trip."}])
    a.sync()
    b.sync()
    with a.session("trip") as session:
        session.append([{"role": "assistant", "content": "From the laptop."}])
    time.sleep(1.1)  # entries carry times to the second: the server's reply is the later one
    with b.session("trip") as session:
        session.append([{"role": "assistant", "content": "From the server."}])
    a.sync()
    b.sync()
    a.sync()
    for vault in (a, b):
        with vault.session("trip") as session:
            texts = [item["content"] for item in session.items()]
        assert texts == ["Plan a trip.", "From the laptop.", "From the server."]
    assert files_of(a) == files_of(b)


def test_a_persons_uncommitted_edit_is_kept_and_committed_as_theirs(
    pair: tuple[memfs.Vault, memfs.Vault],
) -> None:
    a, b = pair
    a.memories("users/bob").add("Bob likes tea.", title="Tea")
    a.sync()
    seats = b.root / "memories/users/alice/seats.md"
    seats.write_text(seats.read_text().replace("often", "on Mondays"))
    b.sync()
    subjects = git(b.root, "log", "--format=%an|%s")
    assert "changed outside memfs" in subjects
    assert "Mondays" in seats.read_text()
    a.sync()
    assert "Mondays" in (a.root / "memories/users/alice/seats.md").read_text()


def test_a_watcher_commits_nothing_a_sync_wrote(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    a.memories("users/bob").add("Bob likes tea.", title="Tea")
    a.sync()
    with b.watch(index_delay=0.05, commit_delay=0.05):
        before = git(b.root, "rev-list", "--count", "HEAD")
        b.sync()
        after = git(b.root, "rev-list", "--count", "HEAD")
        time.sleep(0.5)
        assert git(b.root, "rev-list", "--count", "HEAD") == after != before
    assert "outside memfs" not in git(b.root, "log", "--format=%s", "-3")


@pytest.mark.slow
def test_a_watcher_syncs_periodically_and_after_commits_and_outlives_failures(
    pair: tuple[memfs.Vault, memfs.Vault],
) -> None:
    a, b = pair
    events: list[tuple[str, list[str]]] = []
    with b.watch(index_delay=0.05, commit_delay=0.1, sync_every=1.0, sync_debounce=0.2,
                 on_change=lambda kind, paths: events.append((kind, paths))):  # fmt: skip
        a.memories("users/bob").add("Bob likes tea.", title="Tea")
        a.sync()
        wait_for(lambda: (b.root / "memories/users/bob/tea.md").is_file())  # a periodic sync brought it
        seats = b.root / "memories/users/alice/seats.md"
        seats.write_text(seats.read_text().replace("often", "weekly"))  # a person's save: committed, then pushed
        wait_for(lambda: "weekly" in git(b.root.parent / "remote.git", "show", "main:memories/users/alice/seats.md"))
        git(b.root, "remote", "set-url", "origin", "/nonexistent/remote.git")
        wait_for(lambda: any(kind == "problem" and "sync" in paths[0] for kind, paths in events))
        assert any(kind == "synced" for kind, _ in events)
    a.sync()
    assert "weekly" in (a.root / "memories/users/alice/seats.md").read_text()


# -- when the remote moves, refuses, or sends what a vault never holds ---------------------------


def test_a_push_rejected_because_the_remote_moved_goes_round_again(
    pair: tuple[memfs.Vault, memfs.Vault], tmp_path: Path, remote: Path
) -> None:
    a, b = pair
    a.memories("users/bob").add("Bob likes tea.", title="Tea")
    a.sync()
    c = open_clone(tmp_path, remote, "c")
    c.memories("users/carol").add("Carol likes jazz.", title="Jazz")  # committed on top of the remote, not pushed
    c.close()
    # The remote moves while b's fetch is being served: git runs this hook to pack what a fetch
    # takes, and the first time it pushes c's commit into the remote.
    hook = tmp_path / "pack-hook.sh"
    marker = tmp_path / "moved"
    hook.write_text(
        "#!/bin/sh\n"
        f"if [ ! -e {marker} ]; then touch {marker}; (unset GIT_DIR GIT_PROTOCOL; "
        f"git -C {tmp_path / 'c'} push -q origin HEAD:main); fi\n"
        'exec "$@"\n'
    )
    hook.chmod(0o755)
    git(tmp_path, "config", "--global", "uploadpack.packObjectsHook", str(hook))
    b.memories("users/dan").add("Dan likes chess.", title="Chess")
    report = b.sync()
    assert marker.exists() and report.rounds == 2 and report.pushed
    git(tmp_path, "config", "--global", "--unset", "uploadpack.packObjectsHook")
    a.sync()
    assert {p for p in files_of(a) if p.endswith(".md")} >= {
        "memories/users/bob/tea.md", "memories/users/carol/jazz.md", "memories/users/dan/chess.md"}  # fmt: skip


def test_what_a_vault_never_holds_is_refused_and_reported(
    pair: tuple[memfs.Vault, memfs.Vault], tmp_path: Path, remote: Path
) -> None:
    a, b = pair
    raw = tmp_path / "raw"
    git(tmp_path, "clone", "-q", remote.as_uri(), str(raw))
    git(raw, "config", "user.name", "mallory")
    git(raw, "config", "user.email", "m@example.org")
    (raw / "memories/users/alice/link.md").symlink_to("/etc/passwd")
    (raw / "memories/users/alice/Seats.md").write_text("a case twin\n")
    (raw / "memories/users/alice/marked.md").write_text("<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
    (raw / "run-me.sh").write_text("#!/bin/sh\necho owned\n")
    (raw / "memories/users/alice/big.md").write_text("x" * (1024 * 1024 + 1))
    (raw / "memories/users/alice/fine.md").write_text("---\ntitle: Fine\n---\nA plain memory.\n")
    git(raw, "add", "-A")
    git(raw, "commit", "-qm", "hostile")
    git(raw, "push", "-q", "origin", "HEAD:main")
    report = b.sync()
    skipped = "\n".join(report.skipped)
    for name in ("link.md", "Seats.md", "marked.md", "run-me.sh", "big.md"):
        assert name in skipped
        assert not os.path.lexists(b.root / "memories/users/alice" / name) or name == "run-me.sh"
    assert not (b.root / "run-me.sh").exists()
    assert (b.root / "memories/users/alice/fine.md").is_file()
    assert [h.path for h in b.search("plain memory")] == ["memories/users/alice/fine.md"]
    a.sync()  # the refused files left the shared history with b's join
    assert not os.path.lexists(a.root / "memories/users/alice/link.md")


@pytest.mark.slow
def test_a_huge_file_a_remote_sends_is_refused_without_being_read(
    pair: tuple[memfs.Vault, memfs.Vault], tmp_path: Path, remote: Path
) -> None:
    a, b = pair
    raw = tmp_path / "raw"
    git(tmp_path, "clone", "-q", remote.as_uri(), str(raw))
    git(raw, "config", "core.compression", "1")
    with open(raw / "memories/users/alice/huge.md", "wb") as out:  # 24 MiB, written in pieces
        for _ in range(24):
            out.write(b"y" * (1 << 20))
    git(raw, "add", "-A")
    git(raw, "-c", "user.name=m", "-c", "user.email=m@example.org", "commit", "-qm", "huge")
    git(raw, "push", "-q", "origin", "HEAD:main")
    tracemalloc.start()
    try:
        report = b.sync()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert any("huge.md" in line and "limit" in line for line in report.skipped)
    assert not (b.root / "memories/users/alice/huge.md").exists()
    assert peak < 8 << 20  # measured, never read whole
    b.memories("users/alice").add("The door code is 4711.", title="Door")  # something to purge
    b.purge(text="4711")
    git(raw, "pull", "-q", "--no-rebase", "origin", "main")
    with open(raw / "memories/users/alice/huge2.md", "wb") as out:  # over a transcript's 64 MiB
        for _ in range(65):
            out.write(b"z" * (1 << 20))
    git(raw, "add", "-A")
    git(raw, "-c", "user.name=m", "-c", "user.email=m@example.org", "commit", "-qm", "huge again")
    git(raw, "push", "-q", "origin", "HEAD:main")
    tracemalloc.start()
    try:
        with pytest.raises(SyncError, match="larger than"):  # purged content here: history must be checked
            b.sync()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20


def test_content_purged_here_is_not_brought_back_by_a_stale_remote(
    pair: tuple[memfs.Vault, memfs.Vault],
) -> None:
    a, b = pair
    token = "correct horse battery staple"
    a.memories("users/alice").add(f"The door code is {token}.", title="Door")
    a.sync()
    b.sync()
    a.purge(text=token)
    with pytest.raises(SyncError, match="purged"):
        a.sync()
    assert token not in git(a.root, "log", "-p", "--all")


def test_bad_arguments_and_states_say_what_to_do(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, _ = pair
    with pytest.raises(SyncError, match="no remote named 'upstream'"):
        a.sync("upstream")
    git(a.root, "checkout", "-q", "--detach")
    with pytest.raises(SyncError, match="detached"):
        a.sync()
    git(a.root, "checkout", "-q", "main")
    git(a.root, "remote", "set-url", "origin", "/nonexistent/remote.git")
    with pytest.raises(SyncError, match="could not fetch"):
        a.sync()
    with pytest.raises(SyncError, match="not a git remote URL"):
        memfs.Vault.clone("--upload-pack=touch /tmp/x", a.root.parent / "x")


def test_the_cli_syncs_reports_json_and_lists_conflicts(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    a.memories("users/alice").update("seats.md", title="Aisle")
    b.memories("users/alice").update("seats.md", title="Window")
    runner = CliRunner()
    assert runner.invoke(cli, ["sync", "--vault", str(a.root)]).exit_code == 0
    result = runner.invoke(cli, ["sync", "--vault", str(b.root), "--json"])
    assert result.exit_code == 0, result.output
    import json

    data = json.loads(result.output)
    assert data["conflicts"][0]["path"] == "memories/users/alice/seats.md" and data["pushed"]
    listed = runner.invoke(cli, ["conflicts", "--vault", str(b.root)])
    assert "memories/users/alice/seats.md" in listed.output
    doctor = runner.invoke(cli, ["doctor", "--vault", str(b.root)])
    assert "conflict" in doctor.output
    bad = runner.invoke(cli, ["sync", "--vault", str(b.root), "--remote", "nowhere"])
    assert bad.exit_code != 0 and "no remote named" in bad.output


def test_memfs_clone_and_init_clone_start_a_vault(pair: tuple[memfs.Vault, memfs.Vault], remote: Path,
                                                  tmp_path: Path) -> None:  # fmt: skip
    runner = CliRunner()
    for args in (["clone", remote.as_uri(), str(tmp_path / "c1")], ["init", str(tmp_path / "c2"), "--clone",
                                                                       remote.as_uri()]):  # fmt: skip
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, result.output
    for name in ("c1", "c2"):
        assert (tmp_path / name / "memories/users/alice/seats.md").is_file()


# -- over the network, and many rounds of it -----------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_sync_over_git_daemon_on_localhost(tmp_path: Path, remote: Path) -> None:
    port = free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}", "--export-all",
         "--enable=receive-pack", f"--base-path={tmp_path}", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"git://127.0.0.1:{port}/remote.git"
        wait_for(lambda: subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0)
        with memfs.Vault.open(tmp_path / "a", create=True, durable=False) as a:
            git(a.root, "remote", "add", "origin", url)
            a.memories("users/alice").add("Alice prefers window seats.", title="Seats")
            assert a.sync().pushed
            with memfs.Vault.clone(url, tmp_path / "b", durable=False) as b:
                b.memories("users/bob").add("Bob likes tea.", title="Tea")
                b.sync()
            a.sync()
            assert (a.root / "memories/users/bob/tea.md").is_file()
    finally:
        daemon.terminate()
        daemon.wait()


ROUNDS = 100


@pytest.mark.faults  # a soak: runs in `make faults` (CI), about a minute
def test_three_clones_random_writes_and_syncs_converge_with_nothing_lost(tmp_path: Path, remote: Path) -> None:
    """3 clones x 100 rounds: each round, every clone (in random order) writes a memory, appends
    to a session or syncs; then every clone syncs. Every acknowledged write is in the shared
    history and its latest version on every clone, the trees are identical, no marker anywhere."""
    rng = random.Random(7)
    vaults = [open_clone(tmp_path, remote, name) for name in ("a", "b", "c")]
    acknowledged: dict[str, set[str]] = {}  # memory -> every text a write put there
    said: list[str] = []  # every message a session acknowledged
    try:
        for round_ in range(ROUNDS):
            for i in rng.sample(range(3), 3):
                vault = vaults[i]
                action = rng.random()
                if action < 0.4:
                    name = f"fact-{rng.randrange(8)}.md"
                    store = vault.memories(f"users/u{rng.randrange(2)}")
                    text = f"round {round_} by {i}: fact {rng.randrange(1000)}"
                    try:
                        store.update(name, body=text + "\n")
                    except memfs.MemoryNotFoundError:
                        store.add(text, title=name[:-3])
                    acknowledged.setdefault(f"{store.namespace}/{name}", set()).add(text)
                elif action < 0.7:
                    with vault.session(f"s{rng.randrange(2)}") as session:
                        session.append([{"role": "user", "content": f"message {round_} from {i}"}])
                        said.append(f"message {round_} from {i}")
                else:
                    vault.sync()
        converge(*vaults)
        trees = [files_of(v) for v in vaults]
        assert trees[0] == trees[1] == trees[2]
        for vault in vaults:
            assert_no_markers_in_history(vault)
            git(vault.root, "fsck", "--strict")
        history = git(vaults[0].root, "log", "-p", "--all")
        for texts in acknowledged.values():
            for text in texts:
                assert text in history  # every acknowledged memory write is in the shared history
        sessions_text = "".join(v.decode() for k, v in trees[0].items() if k.startswith(("sessions/", "conflicts/")))
        missing = [m for m in said if m not in sessions_text]
        assert not missing  # every acknowledged message is in a transcript (or a kept conflict copy)
    finally:
        for vault in vaults:
            vault.close()


def test_a_supersede_and_a_prune_travel_through_a_sync(pair: tuple[memfs.Vault, memfs.Vault]) -> None:
    a, b = pair
    alice = a.memories("users/alice")
    old = alice.add("Alice lives in Paris.", title="Home city")
    alice.supersede(old.id or "", "Alice lives in Berlin.")
    alice.add("Badge at hall B.", title="Badge", metadata={"expires": "2020-01-01"})
    a.prune(apply=True)
    converge(a, b)
    assert (b.root / "archive/users/alice/badge.md").read_bytes() == (
        a.root / "archive/users/alice/badge.md"
    ).read_bytes()
    assert [h.title for h in b.search("lives")] == ["Home city"] and "Berlin" in b.search("lives")[0].snippet
    assert {h.state for h in b.search("lives", history=True)} == {"current", "superseded"}
    assert b.search("badge hall") == [] and git(b.root, "status", "--porcelain") == ""
