"""The watcher with a real watchdog observer, for each way editors save."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

import memfs
from memfs.watch import FileEvents, Watcher, ignored

PERSON = "Alice Editor <alice@example.com>"


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[memfs.Vault, Watcher, list[tuple[str, list[str]]]]]:
    vault = memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person=PERSON)
    store = vault.memories("users/alice")
    store.add("Alice drinks green tea.", title="Tea")
    events: list[tuple[str, list[str]]] = []
    watcher = vault.watch(index_delay=0.05, commit_delay=0.3, on_change=lambda k, p: events.append((k, p)))
    try:
        yield vault, watcher, events
    finally:
        watcher.stop()
        vault.close()


def note(vault: memfs.Vault) -> Path:
    return vault.root / "memories/users/alice/tea.md"


def person_commits(vault: memfs.Vault) -> list[memfs.Revision]:
    return [r for r in vault.log() if r.trailers.get("Memfs-Op") == "reconcile"]


def settled(vault: memfs.Vault, commits: int) -> Callable[[], bool]:
    return lambda: len(person_commits(vault)) >= commits and vault.history.status() == []


@pytest.mark.slow
def test_write_in_place(watched: tuple) -> None:
    vault, _, events = watched
    path = note(vault)
    path.write_text(path.read_text().replace("green tea", "matcha"))
    wait_for(lambda: vault.search("matcha"))
    wait_for(settled(vault, 1))
    (commit,) = person_commits(vault)
    assert str(commit.author) == PERSON
    assert commit.subject == "edit: memories/users/alice/tea.md (changed outside memfs)"
    # told after the commit lands, from the watcher's thread: it may come a moment after the log has it
    wait_for(lambda: ("committed", ["memories/users/alice/tea.md"]) in events)


@pytest.mark.slow
def test_vim_rename_over_with_probe_file(watched: tuple) -> None:
    vault, _, _ = watched
    path = note(vault)
    text = path.read_text()
    probe = path.parent / "4913"
    probe.write_text("")  # vim checks it may create files here
    probe.unlink()
    os.rename(path, path.with_name("tea.md~"))  # backup, then a new file
    path.write_text(text.replace("green tea", "sencha"))
    path.with_name("tea.md~").unlink()
    wait_for(lambda: vault.search("sencha"))
    wait_for(settled(vault, 1))
    assert len(person_commits(vault)) == 1
    tracked = vault.history._git("ls-files", "memories", ":!memories/.gitkeep").split()
    assert tracked == ["memories/users/alice/tea.md"]


@pytest.mark.slow
def test_atomic_save_through_a_temp_file(watched: tuple) -> None:
    vault, _, _ = watched
    path = note(vault)
    original = path.read_text()
    for tmp_name, word in ((".tea.md.tmp", "oolong"), ("tea.md.vsctmp", "rooibos")):  # JetBrains, VS Code
        tmp = path.with_name(tmp_name)
        tmp.write_text(original.replace("green tea", word))
        os.replace(tmp, path)
        wait_for(lambda w=word: vault.search(w))
    wait_for(settled(vault, 1))
    assert vault.search("oolong") == []  # the second save replaced the first
    assert vault.history._git("ls-files", "memories", ":!memories/.gitkeep").split() == ["memories/users/alice/tea.md"]


@pytest.mark.slow
def test_truncate_and_write_in_chunks(watched: tuple) -> None:
    vault, _, _ = watched
    path = note(vault)
    final = path.read_text().replace("green tea", "hojicha")
    with open(path, "w") as handle:  # truncated: the file is briefly empty
        handle.flush()
        time.sleep(0.1)
        for i in range(0, len(final), 20):
            handle.write(final[i : i + 20])
            handle.flush()
            time.sleep(0.02)
    wait_for(lambda: vault.search("hojicha"))
    wait_for(settled(vault, 1))
    assert vault.show("memories/users/alice/tea.md", "HEAD").decode() == final


@pytest.mark.slow
def test_files_created_moved_and_deleted(watched: tuple) -> None:
    vault, _, _ = watched
    folder = note(vault).parent
    (folder / "new.md").write_text("# Bikes\n\nAlice cycles to work.\n")
    wait_for(lambda: vault.search("cycles"))
    os.rename(folder / "new.md", folder / "bikes.md")
    wait_for(lambda: [h.path for h in vault.search("cycles")] == ["memories/users/alice/bikes.md"])
    note(vault).unlink()
    wait_for(lambda: vault.search("green tea") == [])
    wait_for(lambda: vault.history.status() == [] and len(person_commits(vault)) >= 1)
    tracked = vault.history._git("ls-files", "memories", ":!memories/.gitkeep").split()
    assert tracked == ["memories/users/alice/bikes.md"]


@pytest.mark.slow
def test_folders_moved_in_and_out(watched: tuple, tmp_path: Path) -> None:
    vault, _, _ = watched
    outside = tmp_path / "import"
    (outside / "sub").mkdir(parents=True)
    (outside / "a.md").write_text("apricot jam\n")
    (outside / "sub" / "b.md").write_text("blueberry jam\n")
    shutil.move(str(outside), str(vault.root / "memories/users/alice/import"))
    wait_for(lambda: vault.search("apricot") and vault.search("blueberry"))
    (vault.root / "memories/users/alice/import/sub/c.md").write_text("cherry jam\n")  # inside a moved-in folder
    wait_for(lambda: vault.search("cherry"))
    shutil.move(str(vault.root / "memories/users/alice/import"), str(tmp_path / "gone"))
    wait_for(lambda: not vault.search("jam"))
    wait_for(lambda: vault.history.status() == [])


@pytest.mark.slow
def test_editor_artefacts_are_ignored(watched: tuple) -> None:
    vault, watcher, _ = watched
    folder = note(vault).parent
    for name in (".tea.md.swp", "#tea.md#", "tea.md~", "4913", ".memfs-tmp-x", "notes.txt"):
        (folder / name).write_text("artefact kumquat\n")
    (folder / "real.md").write_text("real kumquat\n")
    wait_for(lambda: vault.search("kumquat"))
    watcher.flush()
    assert [h.path for h in vault.search("kumquat")] == ["memories/users/alice/real.md"]
    wait_for(lambda: "memories/users/alice/real.md" in vault.history._git("ls-files", "memories"))
    tracked = vault.history._git("ls-files", "memories", ":!memories/.gitkeep").split()
    assert "memories/users/alice/4913" not in tracked and not any(t.endswith(("~", ".swp", "#")) for t in tracked)
    assert all(ignored(n) for n in (".x.swp", "x~", "4913", "#x#", "x.vsctmp", ".memfs-tmp-1"))
    assert not ignored("notes.md")


@pytest.mark.slow
def test_memfs_own_writes_are_not_taken_for_a_persons(watched: tuple) -> None:
    vault, watcher, _ = watched
    store = vault.memories("users/alice")
    for i in range(5):
        store.add(f"agent fact {i} about quinces", title=f"fact {i}")
    time.sleep(0.6)  # longer than the commit delay: give the watcher every chance to misfire
    watcher.flush()
    assert person_commits(vault) == []
    assert all(str(r.author) == "memfs agent <agent@memfs.invalid>" for r in vault.log())


def _edit_by_hand(path: str) -> None:
    text = Path(path).read_text()
    Path(path).write_text(text.replace("green tea", "mint tea"))


@pytest.mark.slow
def test_no_lost_update_when_a_person_edits_after_the_agent_read(watched: tuple) -> None:
    vault, _, _ = watched
    tools = memfs.MemoryTools(vault, "users/alice")
    assert "green tea" in tools.run("view", path="/memories/tea.md")
    proc = multiprocessing.get_context("spawn").Process(target=_edit_by_hand, args=(str(note(vault)),))
    proc.start()
    proc.join(30)
    result = tools.call({"command": "str_replace", "path": "/memories/tea.md", "old_str": "drinks", "new_str": "loves"})
    assert result.is_error and "View it again" in result.text
    assert "mint tea" in note(vault).read_text() and "loves" not in note(vault).read_text()
    wait_for(settled(vault, 1))
    assert "mint tea" in tools.run("view", path="/memories/tea.md")
    assert not tools.call({"command": "str_replace", "path": "/memories/tea.md",
                           "old_str": "drinks", "new_str": "loves"}).is_error  # fmt: skip


@pytest.mark.slow
def test_malformed_files_are_reported_and_left_alone(watched: tuple) -> None:
    vault, _, events = watched
    bad = note(vault).parent / "bad.md"
    data = b"---\ntitle: [oops\n---\nbody\n"
    bad.write_bytes(data)
    huge = note(vault).parent / "paste.md"
    huge.write_bytes(b"x" * (5 * 1024 * 1024))
    wait_for(lambda: any(k == "problem" and any("paste.md" in p for p in ps) for k, ps in events))
    wait_for(lambda: any(k == "problem" and any("bad.md" in p for p in ps) for k, ps in events))
    assert bad.read_bytes() == data and huge.stat().st_size == 5 * 1024 * 1024
    wait_for(lambda: "memories/users/alice/bad.md" in vault.history._git("ls-files", "memories"))
    assert "paste.md" not in vault.history._git("ls-files", "memories")  # too big to commit
    assert {p.path.rsplit("/", 1)[1] for p in vault.problems()} == {"bad.md", "paste.md"}


@pytest.mark.slow
def test_a_burst_of_files_is_absorbed_as_one_change(tmp_path: Path) -> None:
    vault = memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person=PERSON)
    source = tmp_path / "bulk"
    source.mkdir()
    for i in range(300):
        (source / f"note-{i}.md").write_text(f"bulk note {i} about persimmons\n")
    with vault.watch(index_delay=0.2, commit_delay=0.5, storm_threshold=50):
        shutil.copytree(source, vault.root / "memories/imported")
        wait_for(lambda: len(vault.search("persimmons", k=500)) == 300, timeout=60)
        wait_for(settled(vault, 1), timeout=60)
    assert len(person_commits(vault)) <= 3
    assert len(vault.history._git("ls-files", "memories", ":!memories/.gitkeep").split()) == 300
    vault.close()


@pytest.mark.slow
def test_polling_observer(tmp_path: Path) -> None:
    vault = memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person=PERSON)
    with vault.watch(polling=True, index_delay=0.05, commit_delay=0.2) as watcher:
        assert watcher.polling
        (vault.root / "memories" / "polled.md").write_text("polled pomegranate\n")
        wait_for(lambda: vault.search("pomegranate"))
        wait_for(settled(vault, 1))
    vault.close()


@pytest.mark.parametrize(
    "options",
    [{"index_delay": -1}, {"commit_delay": "soon"}, {"rescan_interval": -5}, {"storm_threshold": 0}],
)
def test_bad_options(vault: memfs.Vault, options: dict) -> None:
    with pytest.raises(ValueError):
        Watcher(vault, **options)


@pytest.mark.slow
def test_stop_commits_what_was_seen(tmp_path: Path) -> None:
    vault = memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person=PERSON)
    indexed: list[str] = []

    def told(kind: str, paths: list[str]) -> None:
        if kind == "indexed":
            indexed.extend(paths)

    watcher = vault.watch(index_delay=0.05, commit_delay=30, on_change=told)
    (vault.root / "memories" / "late.md").write_text("late lychee\n")
    wait_for(lambda: "memories/late.md" in indexed)  # seen by the watcher (a search finds it on its own, maybe first)
    assert vault.search("lychee")
    watcher.stop()
    assert len(person_commits(vault)) == 1
    assert not watcher.running
    vault.close()


@pytest.mark.slow
def test_git_checkout_of_another_branch_is_absorbed_without_person_commits(tmp_path: Path) -> None:
    vault = memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person=PERSON)
    with vault.batch("seed"):
        for i in range(120):
            vault.memories("notes").add(f"note {i} about figs", title=f"n{i}")
    git = vault.history._git
    git("branch", "other")
    git("checkout", "-q", "other")
    with vault.batch("rewrite on the other branch"):
        for i in range(120):
            vault.memories("notes").update(f"n{i}.md", body=f"note {i} about dates\n")
    with vault.watch(index_delay=0.2, commit_delay=0.3, storm_threshold=50):
        git("checkout", "-q", "main")  # 120 files change on disk at once
        wait_for(lambda: len(vault.search("figs", k=500)) == 120 and vault.search("dates") == [], timeout=60)
        time.sleep(0.6)
    assert person_commits(vault) == []  # the files match the new HEAD: nothing to commit
    assert vault.history.status() == []
    vault.close()


class _Recorder:
    """A watchdog handler that keeps (event type, file name) of what the observer hands on."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def dispatch(self, event: Any) -> None:
        self.seen.append((event.event_type, os.path.basename(os.fsdecode(event.src_path))))


@pytest.mark.parametrize("kind", ["watcher", "file events"])
def test_reading_a_watched_memory_wakes_no_observer(tmp_path: Path, kind: str) -> None:
    """Reads are not asked of the OS: a search reads each hit's file, and each read woke two threads for nothing."""
    vault = memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person=PERSON)
    tea = vault.root / "memories/users/alice/tea.md"
    vault.memories("users/alice").add("Alice drinks green tea.", title="Tea")
    watcher = vault.watch(index_delay=0.05, commit_delay=30) if kind == "watcher" else None
    events = FileEvents(vault.root, ["memories"]) if kind == "file events" else None
    assert events is None or events.start()
    recorder = _Recorder()
    try:
        observers = watcher._observer if watcher is not None else events._observers  # type: ignore[union-attr]
        for observer in observers:
            for emitter in list(observer.emitters):
                observer.add_handler_for_watch(recorder, emitter.watch)
        for _ in range(20):
            tea.read_bytes()
            os.listdir(tea.parent)
        vault.search("tea")
        (tea.parent / "coffee.md").write_text("Alice drinks no coffee.\n")  # events come in order: after the reads'
        wait_for(lambda: ("closed", "coffee.md") in recorder.seen)
    finally:
        if watcher is not None:
            watcher.stop()
        if events is not None:
            events.stop()
        vault.close()
    assert [e for e in recorder.seen if e[1] == "tea.md"] == []
    assert {"created", "modified", "closed"} <= {t for t, name in recorder.seen if name == "coffee.md"}
