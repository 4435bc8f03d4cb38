"""Search is a function of the files when it runs: long-lived objects, no watcher, edits by hand."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import memfs
from memfs.freshness import ChangeFinder, walk
from memfs.longterm import LongTermMemory

ALICE = "memories/users/alice"


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[memfs.Vault]:
    """A vault that looks at every file before every search (freshness 0), so no test sleeps."""
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False) as v:
        v.freshness = 0
        yield v


def fill(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    store.add("Alice prefers window seats on long flights.", title="Window seats", path="seats.md")
    store.add("Alice is vegetarian and allergic to peanuts.", title="Diet", path="diet.md")
    vault.memories("projects/atlas").add("We chose PostgreSQL for its JSON support.", title="Database")


def paths(hits: list[memfs.Hit]) -> list[str]:
    return [h.path for h in hits]


def test_edits_by_hand_are_found_by_the_next_search_and_not_committed(vault: memfs.Vault) -> None:
    fill(vault)
    commits = len(vault.log())
    assert paths(vault.search("peanuts")) == [f"{ALICE}/diet.md"]
    diet = vault.root / ALICE / "diet.md"
    with open(diet, "r+", encoding="utf-8") as handle:  # in place: the folder's mtime does not change
        text = handle.read().replace("peanuts", "shellfish")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    hits = vault.search("shellfish")
    assert paths(hits) == [f"{ALICE}/diet.md"] and "**shellfish**" in hits[0].snippet
    assert vault.search("peanuts") == []
    (vault.root / ALICE / "seats.md").unlink()  # delete
    assert vault.search("window seats") == []
    os.rename(vault.root / "memories/projects/atlas/database.md", vault.root / "memories/projects/db.md")  # rename
    assert paths(vault.search("postgresql")) == ["memories/projects/db.md"]
    new = vault.root / "memories/users/bob/jazz.md"  # create, in a new folder
    new.parent.mkdir(parents=True)
    new.write_text("---\ntitle: Music\n---\nBob listens to jazz on Sundays.\n")
    hits = vault.search("jazz sundays")
    assert paths(hits) == ["memories/users/bob/jazz.md"] and hits[0].title == "Music"
    assert vault.search("jazz", namespace="users/bob")[0].namespace == "users/bob"
    assert len(vault.log()) == commits  # indexed, not committed: that is the watcher's or reconcile's job
    assert len(vault.history.status()) == 5  # the rename shows as a deletion and a new file
    assert vault.reconcile().changed == 0  # the index has them all, and still reconcile commits them
    assert vault.history.status() == [] and vault.log()[0].trailers["Memfs-Op"] == "reconcile"


def test_a_hit_whose_file_changed_is_reranked_without_the_change_check(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False) as vault:
        vault.freshness = None  # the change check is off: the hits are checked all the same
        store = vault.memories("notes")
        store.add("zebra zebra zebra stripes", title="One", path="one.md")
        store.add("a zebra once", title="Two", path="two.md")
        store.add("a quiet note", title="Three", path="three.md")
        assert vault.search("zebra")[0].path == "memories/notes/one.md"
        one = vault.root / "memories/notes/one.md"
        one.write_text(one.read_text().replace("zebra zebra zebra stripes", "nothing here now"))
        assert paths(vault.search("zebra")) == ["memories/notes/two.md"]  # re-indexed and re-ranked
        (vault.root / "memories/notes/two.md").unlink()
        assert vault.search("zebra") == []  # a gone file is never returned


def test_a_positive_delay_bounds_how_long_a_change_goes_unseen(tmp_path: Path) -> None:
    delay = 0.3
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False) as vault:
        vault.freshness = delay
        vault.memories("notes").add("a quiet note", title="Quiet", path="quiet.md")
        vault.search("quiet")
        for word in ("okapi", "quokka"):
            quiet = vault.root / "memories/notes/quiet.md"
            quiet.write_text(quiet.read_text() + f"{word}\n")
            changed = time.monotonic()
            vault.search(word)  # may or may not see it yet: within the delay either is right
            time.sleep(max(0.0, delay - (time.monotonic() - changed)) + 0.05)
            assert paths(vault.search(word)) == ["memories/notes/quiet.md"]


def test_no_deleted_file_is_ever_returned_whatever_the_freshness(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False) as vault:
        vault.freshness = None  # the change check is off: only the hits' own check remains
        store = vault.memories("many")
        with vault.batch("many"):
            for i in range(30):
                store.add(f"note {i} about gnus and more gnus", title=f"Gnu {i}", path=f"gnu{i}.md")
        assert len(vault.search("gnus", k=50)) == 30  # all indexed
        for i in range(0, 30, 2):
            (vault.root / f"memories/many/gnu{i}.md").unlink()
        hits = vault.search("gnus", k=10)
        assert len(hits) == 10 and all((vault.root / h.path).exists() for h in hits)
        assert {h.path for h in vault.search("gnus", k=50)} == {f"memories/many/gnu{i}.md" for i in range(1, 30, 2)}


def test_memory_tools_see_edits_by_hand(vault: memfs.Vault) -> None:
    fill(vault)
    tools = memfs.MemoryTools(vault, "users/alice")
    assert "/memories/diet.md" in tools.run("search", query="peanuts")
    diet = vault.root / ALICE / "diet.md"
    diet.write_text(diet.read_text().replace("peanuts", "sesame"))
    assert "No memories match" in tools.run("search", query="peanuts")
    assert "/memories/diet.md" in tools.run("search", query="sesame")
    (vault.root / ALICE / "notes.md").write_text("Alice keeps bees.\n")
    assert "/memories/notes.md" in tools.run("search", query="bees")
    os.rename(vault.root / ALICE / "notes.md", vault.root / ALICE / "hobby.md")
    found = tools.run("search", query="bees")
    assert "/memories/hobby.md" in found and "/memories/notes.md" not in found


def test_long_term_memory_injects_what_the_files_say_now(vault: memfs.Vault) -> None:
    fill(vault)
    manager = LongTermMemory(vault, stores=["users/alice"])
    question = [{"role": "user", "content": "Which seat does Alice like on flights?"}]
    assert "window seats" in manager.context_for(question)
    seats = vault.root / ALICE / "seats.md"
    seats.write_text(seats.read_text().replace("window seats", "aisle seats"))
    block = manager.context_for(question)
    assert "aisle seats" in block and "window seats" not in block
    seats.unlink()
    assert "seats.md" not in manager.context_for(question)
    (vault.root / ALICE / "airline.md").write_text("On flights Alice always picks seat 3A with TAP.\n")
    assert "seat 3A with TAP" in manager.context_for(question)  # a memory written by hand
    manager.close()


def test_session_search_sees_transcripts_edited_and_deleted_by_hand(vault: memfs.Vault) -> None:
    session = vault.session("trip")
    session.append([{"role": "user", "content": "I would like a kumquat tart."},
                    {"role": "assistant", "content": "A tart it is."}])  # fmt: skip
    other = vault.session("other")
    other.append([{"role": "user", "content": "Another kumquat question."}])
    assert [h.position for h in session.search("kumquat")] == [1, 2]  # 2 through its neighbour
    path = vault.root / session.path
    path.write_text(path.read_text().replace("kumquat", "papayas"))  # same length: the entry stays valid
    assert session.search("kumquat") == [] and [h.position for h in session.search("papayas")] == [1, 2]
    assert [h.session for h in vault.search_messages("kumquat")] == [other.path]
    (vault.root / other.path).unlink()
    assert vault.search_messages("kumquat") == []
    assert {h.session_id for h in vault.search_messages("papayas")} == {"trip"}


def _rebuild(root: str) -> None:
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.reindex(full=True)


@pytest.mark.slow
def test_a_rebuild_by_another_process_is_seen_at_once(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.freshness = None  # only the check of the index itself can see what the rebuild added
        fill(vault)
        assert paths(vault.search("peanuts")) == [f"{ALICE}/diet.md"]  # the index's first commit
        kiwi = root / ALICE / "kiwi.md"
        kiwi.write_text("Alice grows kiwi fruit.\n")  # by hand: only the rebuild will index it
        proc = multiprocessing.get_context("spawn").Process(target=_rebuild, args=(str(root),))
        proc.start()
        proc.join(120)
        assert proc.exitcode == 0
        # the new index has the same generation number as the one open here, and other contents
        assert paths(vault.search("kiwi")) == [f"{ALICE}/kiwi.md"]
        mine = vault.memories("users/alice").add("Alice learns the oboe.", title="Oboe")
        assert paths(vault.search("oboe")) == [mine.path]  # its own write, into the new index
        # the command line does the same: `memfs reindex --full` replaces the folder
        (root / ALICE / "fig.md").write_text("Alice dries figs.\n")
        cli = subprocess.run([sys.executable, "-c", "from memfs.cli import main; main()", "reindex", "--full",
                              "--vault", str(root)], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})  # fmt: skip
        assert cli.returncode == 0, cli.stderr
        assert paths(vault.search("figs")) == [f"{ALICE}/fig.md"]
        harp = vault.memories("users/alice").add("Alice learns the harp.", title="Harp")
        assert paths(vault.search("harp")) == [harp.path]
        assert len(vault.search("alice", k=20)) == 6


def test_the_change_finder_reports_each_kind_of_change(tmp_path: Path) -> None:
    (tmp_path / "memories/a").mkdir(parents=True)
    (tmp_path / "memories/a/x.md").write_text("x")
    (tmp_path / "memories/a/y.md").write_text("y")
    (tmp_path / "memories/.hidden.md").write_text("h")
    finder = ChangeFinder(tmp_path)
    assert finder.step(0) is None  # nothing is known before the first scan
    assert set(finder.scan()) == {"memories/a/x.md", "memories/a/y.md"}
    assert finder.step(0) == []
    (tmp_path / "memories/a/x.md").write_text("xx")  # edited in place
    (tmp_path / "memories/a/y.md").unlink()
    (tmp_path / "memories/b/c").mkdir(parents=True)
    (tmp_path / "memories/b/c/z.md").write_text("z")
    (tmp_path / "sessions").mkdir()  # a content folder that did not exist at the scan
    (tmp_path / "sessions/t.md").write_text("t")
    (tmp_path / "memories/a/link.md").symlink_to(tmp_path / "memories/a/x.md")
    assert finder.step(0) == ["memories/a/x.md", "memories/a/y.md", "memories/b/c/z.md", "sessions/t.md"]
    os.rename(tmp_path / "memories/b", tmp_path / "memories/d")  # a folder renamed with its files
    assert finder.step(0) == ["memories/b/c/z.md", "memories/d/c/z.md"]
    (tmp_path / "memories/a/x.md").unlink()
    (tmp_path / "memories/a/x.md").write_text("back")  # deleted and made again between looks
    assert finder.step(0) == ["memories/a/x.md"]
    assert finder.step(3600) == []  # nothing is due for an hour, and the few extra checks find nothing
    assert len(finder) == 3


def test_the_change_finder_looks_at_the_files_it_is_told_of_and_sweeps_a_few_at_a_time(tmp_path: Path) -> None:
    (tmp_path / "memories/a").mkdir(parents=True)
    for name in ("x", "y", "z"):
        (tmp_path / f"memories/a/{name}.md").write_text(name)
    finder = ChangeFinder(tmp_path, ["memories/a"])
    assert finder.look(["memories/a/x.md"]) is None and finder.sweep(5) is None  # nothing known before a scan
    finder.scan()
    (tmp_path / "memories/a/x.md").write_text("xx")
    (tmp_path / "memories/a/y.md").unlink()
    (tmp_path / "memories/a/new.md").write_text("new")
    (tmp_path / "memories/a/.hidden.md").write_text("h")
    (tmp_path / "memories/b.md").write_text("outside the finder's folders")
    told = ["memories/a/x.md", "memories/a/y.md", "memories/a/new.md", "memories/a/.hidden.md", "memories/b.md"]
    assert finder.look(told) == ["memories/a/new.md", "memories/a/x.md", "memories/a/y.md"]
    assert finder.look(told) == []  # told twice of the same change: reported once
    assert len(finder) == 3  # x, z and the new file, which is tracked from now on
    assert finder.step(0) == []  # the folder's next listing agrees: nothing is new or gone
    (tmp_path / "memories/a/z.md").write_text("changed, and no event told of it")
    found = [finder.sweep(1) for _ in range(4)]  # one file or folder per sweep: a whole pass in four
    assert [p for paths in found for p in (paths or [])] == ["memories/a/z.md"]
    (tmp_path / "memories/a/new.md").write_text("again")
    assert finder.look(["memories/a/new.md"]) == ["memories/a/new.md"]


def test_a_check_of_every_file_slower_than_the_delay_makes_the_delay_grow(tmp_path: Path) -> None:
    # With 100,000 files on a loaded machine a full check takes seconds; if that is longer than the
    # delay, everything is due again by the next search, and every search stats every file.
    folder = tmp_path / "memories/a"
    folder.mkdir(parents=True)
    for i in range(2000):
        (folder / f"{i}.md").write_text(str(i))
    finder = ChangeFinder(tmp_path)
    finder.scan()
    assert finder.full_check_seconds == 0.0 and finder.effective_delay(1e-6) == 1e-6
    finder.step(0)  # a check of every file: how long that takes is kept
    took = finder.full_check_seconds
    assert took > 0
    assert finder.effective_delay(1e-6) == 2 * took  # a bound shorter than a full check grows to twice it
    assert finder.effective_delay(3600) == 3600  # a longer one stays
    assert finder.effective_delay(0) == 0  # 0 (every file before every search) is kept as asked
    (folder / "7.md").write_text("edited")
    time.sleep(2.5 * took)  # past the grown bound: the edit is found
    assert finder.step(1e-6) == ["memories/a/7.md"]


def test_freshness_is_a_number_of_seconds_or_none(vault: memfs.Vault) -> None:
    for bad in (-1, "2", True, float("nan"), float("inf")):
        with pytest.raises(memfs.InvalidArgumentError, match="freshness must be a number of seconds"):
            vault.freshness = bad  # type: ignore[assignment]
    vault.freshness = 5
    assert vault.freshness == 5.0 and vault.engine.catalog.freshness == 5.0
    vault.freshness = None
    assert vault.freshness is None


def test_the_change_finder_agrees_with_a_fresh_walk_after_random_changes(tmp_path: Path) -> None:
    rng = random.Random(12)
    folders = ["memories", "memories/a", "memories/a/b", "memories/c", "sessions"]
    for folder in folders:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    finder = ChangeFinder(tmp_path)
    finder.scan()
    before = dict(walk(tmp_path))
    for round_ in range(40):
        for _ in range(rng.randint(1, 6)):
            existing = sorted(before) or ["memories/x.md"]
            op = rng.choice(["create", "edit", "delete", "rename", "folder"])
            target = tmp_path / rng.choice(existing)
            if op == "create":
                folder = tmp_path / rng.choice(folders)
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"f{rng.randint(0, 30)}.md").write_text("x" * rng.randint(0, 9))
            elif op == "edit" and target.exists():
                target.write_text(target.read_text() + "more")
            elif op == "delete" and target.exists():
                target.unlink()
            elif op == "rename" and target.exists():
                dest = tmp_path / rng.choice(folders) / f"r{rng.randint(0, 30)}.md"
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, dest)
            elif op == "folder":  # a whole folder goes, or moves
                victim = tmp_path / rng.choice(folders[1:])
                if victim.exists():
                    if rng.random() < 0.5:
                        shutil.rmtree(victim)
                    else:
                        os.replace(victim, tmp_path / "memories" / f"moved{round_}")
        after = dict(walk(tmp_path))
        expected = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        assert finder.step(0) == expected, f"round {round_}"
        before = after
    assert finder.step(0) == []
