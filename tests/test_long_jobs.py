"""Long index jobs are built outside the vault lock and published under it (issue #11, item 9).

The first index of a big transcript and a rebuild from scratch read, parse and index without the
lock, into a private index beside the real one; the lock is taken only to check what changed
meanwhile, redo that, and publish. These tests check that writers in other processes are not kept
waiting, that searches see every write whatever the timing, and that two processes doing the same
job leave one correct index. Lock hold times are measured in bench/locks.py, not asserted here.
"""

from __future__ import annotations

import json
import random
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memfs
from memfs.index import STAGE_FROM_BYTES, STAGE_FROM_FILES

BIG = 3000  # messages: over STAGE_FROM_BYTES (each carries a long word), seconds to index on a 2-core machine
BIG_PATH = "sessions/big.md"
PADDING = "z" * 400  # one word (too long to be indexed), so the file is large for few tokens
# The tests run in this process need a job that is staged (a transcript over STAGE_FROM_BYTES), not
# a long one (the processes' tests need that, to outlast the writers' lock timeout): a third of the
# messages, three times as long, are as many bytes for a third of the indexing.
STAGED = 1000
STAGED_PADDING = "z" * 1200
# Between two writes while another process's job runs, the writer waits this long for that process
# to speak (it goes on at once when it does): writes still meet the job many times over, and the
# writer no longer takes a whole core from the job it waits for on a 2-core machine.
PACE = 0.1


def message(i: int, padding: str = PADDING) -> dict[str, Any]:
    return {"role": "user" if i % 2 else "assistant", "content": f"message {i} about the museum, token w{i}x {padding}"}


def big_transcript(vault: memfs.Vault, count: int = STAGED, padding: str = STAGED_PADDING) -> memfs.MarkdownSession:
    """A committed transcript of ``count`` messages the index has not read yet."""
    session = vault.session("big", commit="manual")
    session.append([message(i, padding) for i in range(count)])
    session.commit()
    assert (vault.root / BIG_PATH).stat().st_size > STAGE_FROM_BYTES
    return session


def positions(vault: memfs.Vault, token: str) -> list[int]:
    """The messages that say ``token`` themselves (a search also finds, lower, the messages around them)."""
    return [h.position for h in vault.search_messages(token, k=10) if token in str(h.item)]


def test_a_big_transcript_is_indexed_aside_then_published(vault: memfs.Vault) -> None:
    big_transcript(vault)
    staged = vault.engine.catalog.index.stage([BIG_PATH])
    assert staged is not None and not staged.fresh
    assert staged.aside.folder.parent == vault.engine.catalog.index.folder.parent
    assert positions(vault, "w42x") == [43]  # a search meanwhile indexes it itself, and finds it
    with vault.engine.locked():
        vault.engine.catalog.index.publish(staged)  # the index has it already: nothing is added twice
    assert not staged.aside.folder.exists()
    assert positions(vault, "w42x") == [43]
    assert vault.engine.catalog.index.doc_count() == STAGED + 1
    assert not list(vault.engine.state_dir.glob("index.*-*"))


def test_messages_appended_while_it_was_built_are_added_after_it(vault: memfs.Vault) -> None:
    session = big_transcript(vault)
    staged = vault.engine.catalog.index.stage([BIG_PATH])
    assert staged is not None
    session.append([{"role": "user", "content": "a zebra crossing"}])  # after the build read the file
    with vault.engine.locked():
        report = vault.engine.catalog.index.publish(staged)
    assert report.added == [BIG_PATH]
    assert BIG_PATH not in vault.engine.catalog.index.outdated([BIG_PATH])  # published as the file is now
    assert positions(vault, "zebra") == [STAGED + 1]
    assert positions(vault, "w7x") == [8]
    assert vault.engine.catalog.index.doc_count() == STAGED + 2


def test_a_transcript_rewritten_meanwhile_is_not_published_as_built(vault: memfs.Vault) -> None:
    session = big_transcript(vault)
    staged = vault.engine.catalog.index.stage([BIG_PATH])
    assert staged is not None
    session.clear()
    session.append([{"role": "user", "content": "only a zebra now"}])
    with vault.engine.locked():
        vault.engine.catalog.index.publish(staged)
    assert positions(vault, "w42x") == []
    assert positions(vault, "zebra") == [1]
    assert vault.engine.catalog.index.doc_count() == 2


def test_two_builds_of_the_same_job_leave_one_index(vault: memfs.Vault) -> None:
    big_transcript(vault)
    first = vault.engine.catalog.index.stage([BIG_PATH])
    second = vault.engine.catalog.index.stage([BIG_PATH])
    assert first is not None and second is not None
    with vault.engine.locked():
        vault.engine.catalog.index.publish(first)
        vault.engine.catalog.index.publish(second)  # finds the index holding the file as built: keeps it
    assert positions(vault, "w42x") == [43]
    assert vault.engine.catalog.index.doc_count() == STAGED + 1


def test_memories_changed_while_they_were_built_are_indexed_as_they_are_now(vault: memfs.Vault) -> None:
    store = vault.memories("bulk")
    with vault.batch("many facts"):
        written = [store.add(f"Fact {i}: the kettle is blue.", title=f"Fact {i}") for i in range(STAGE_FROM_FILES)]
    with vault.engine.locked():  # forget them, as a new index would: the next sync reads them all
        vault.engine.catalog.index.clear()
    staged = vault.engine.catalog.index.stage(None)
    assert staged is not None
    store.update(written[0].id, body="The teapot is a striking orange.\n")
    store.delete(written[1].id)
    assert [h.id for h in store.search("orange")] == [written[0].id]  # the search meanwhile sees the write
    with vault.engine.locked():
        vault.engine.catalog.index.publish(staged)
    assert [h.id for h in store.search("orange")] == [written[0].id]
    ids = {h.id for h in store.search("kettle blue", k=1000)}
    assert written[0].id not in ids and written[1].id not in ids and len(ids) == STAGE_FROM_FILES - 2


def test_a_rebuild_is_made_aside_and_swapped_in(vault: memfs.Vault) -> None:
    store = vault.memories("a")
    store.add("The museum opens at ten.", title="Museum")
    staged = vault.engine.catalog.index.stage(fresh=True)
    assert staged is not None and staged.fresh
    late = store.add("The aquarium opens at nine.", title="Aquarium")
    with vault.engine.locked():
        vault.engine.catalog.index.publish(staged)
    assert [h.id for h in store.search("aquarium")] == [late.id]
    assert len(store.search("opens")) == 2
    other = memfs.Vault.open(vault.root)  # another process's view: the new index, verified
    try:
        assert len(other.memories("a").search("opens")) == 2
    finally:
        other.close()


def test_two_rebuilds_at_once_leave_one_index_and_no_folder_aside(vault: memfs.Vault) -> None:
    memory = vault.memories("a").add("The museum opens at ten.", title="Museum")
    first, second = vault.engine.catalog.index.stage(fresh=True), vault.engine.catalog.index.stage(fresh=True)
    assert first is not None and second is not None
    with vault.engine.locked():
        vault.engine.catalog.index.publish(first)
        vault.engine.catalog.index.publish(second)  # as current as the first: it replaces it whole
    assert [h.id for h in vault.search("museum")] == [memory.id]
    assert vault.engine.catalog.index.doc_count() == 1
    assert sorted(p.name for p in vault.engine.state_dir.iterdir() if p.name.startswith("index")) == ["index"]


def test_reindex_full_reports_and_commits_as_before(vault: memfs.Vault) -> None:
    store = vault.memories("a")
    kept = store.add("Alice likes tea.", title="Tea")
    path = vault.root / kept.path
    path.write_text(path.read_text().replace("tea", "green tea"))  # a person's edit, not committed yet
    report = vault.reindex(full=True)
    assert kept.path in report.added
    assert vault.outside_edits() == []  # committed as the person's edit, as a rebuild always did
    assert [h.id for h in store.search("green")] == [kept.id]


WRITER_CHILD = r"""
import json, sys
import memfs
root = sys.argv[1]
print("start", flush=True)
vault = memfs.Vault.open(root)  # the first index of the big transcript happens here
hits = vault.search_messages("w42x")
print("job-done", json.dumps([h.position for h in hits if "w42x" in str(h.item)]), flush=True)
sys.stdin.readline()  # the parent has written more: search for all of it
ids = [h.id for h in vault.memories("notes").search("harbour", k=1000)]
print("found", json.dumps(ids), flush=True)
vault.close()
"""


def unindexed_big_vault(root: Path) -> None:
    """A vault whose committed big transcript no index has read (its index folder is gone)."""
    with memfs.Vault.open(root, create=True) as setup:
        big_transcript(setup, BIG, PADDING)
        (root / ".memfs" / "pending").write_bytes(b"")  # no index build at close: the index is deleted below
    shutil.rmtree(root / ".memfs" / "index")


def _child_busy(root: Path) -> bool:
    """True while a build aside exists (a process's long job is under way)."""
    return any((root / ".memfs").glob("index.stage-*"))


@pytest.mark.slow
def test_writers_in_another_process_are_not_kept_waiting(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    unindexed_big_vault(root)
    written: list[str] = []
    overlapped = 0
    with subprocess.Popen([sys.executable, "-c", WRITER_CHILD, str(root)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:  # fmt: skip
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        try:
            assert child.stdout.readline().strip() == "start"
            with memfs.Vault.open(root, lock_timeout=1.0, reconcile=False) as vault:
                notes = vault.memories("notes")
                # while the child indexes the transcript (seconds), no write may time out on its lock
                while not select.select([child.stdout], [], [], 0)[0]:
                    before = _child_busy(root)
                    written.append(notes.add(f"Harbour note {len(written)}.", title=f"Note {len(written)}").id)
                    overlapped += before and _child_busy(root)
                    select.select([child.stdout], [], [], PACE)
                word, _, rest = child.stdout.readline().partition(" ")
                assert word == "job-done" and json.loads(rest) == [43], child.stderr.read()
                written.append(notes.add("Harbour note, the last one.", title="Last").id)
                child.stdin.write("search\n")
                child.stdin.flush()
                word, _, rest = child.stdout.readline().partition(" ")
                assert word == "found", child.stderr.read()
                assert sorted(json.loads(rest)) == sorted(written)  # every acknowledged write, in another process
                assert sorted(h.id for h in notes.search("harbour", k=1000)) == sorted(written)
                assert positions(vault, "w2942x") == [2943]
            assert child.wait(timeout=120) == 0
        finally:
            child.kill()
    assert overlapped >= 1  # some writes started and ended while the child's job ran


SAME_JOB_CHILD = r"""
import json, sys
import memfs
vault = memfs.Vault.open(sys.argv[1], reconcile=False, lock_timeout=5.0)
print(json.dumps([h.position for h in vault.search_messages("w42x") if "w42x" in str(h.item)]), flush=True)
vault.close()
"""


@pytest.mark.slow
def test_two_processes_indexing_the_same_transcript_leave_one_correct_index(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    unindexed_big_vault(root)
    children = [subprocess.Popen([sys.executable, "-c", SAME_JOB_CHILD, str(root)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    outputs = [child.communicate(timeout=300) for child in children]  # communicate closes the pipes
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert json.loads(out) == [43]
    with memfs.Vault.open(root) as vault:
        assert vault.engine.catalog.index.doc_count() == BIG + 1  # no message indexed twice
        assert positions(vault, f"w{BIG - 1}x") == [BIG]
        assert not list(vault.engine.state_dir.glob("index.*-*"))


SUMMARIZER_CHILD = r"""
import sys
import memfs
from memfs.conversation import SummarizingConversationManager
from memfs.models import ScriptedModel
vault = memfs.Vault.open(sys.argv[1], reconcile=False)
manager = SummarizingConversationManager(ScriptedModel(["- what was said"] * 3), max_messages=40)
session = vault.session("huge", commit="manual", manager=manager)
print("start", flush=True)
session.append([{"role": "user", "content": "the first managed turn"}])  # reads the whole view: 30,000 items
print("done", session.items()[0]["content"].startswith("Summary of messages"), flush=True)
session.commit()
(vault.root / ".memfs" / "pending").write_bytes(b"")  # the index is not what this test is about
vault.close()
"""


@pytest.mark.slow
def test_the_first_summarized_turn_of_a_long_session_leaves_the_lock_to_writers(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True) as setup:
        session = setup.session("huge", commit="manual")
        for start in range(0, 30_000, 5000):
            session.append([message(i) for i in range(start, start + 5000)])
        session.commit()
        (root / ".memfs" / "pending").write_bytes(b"")  # no index build at close: not what is tested here
    written = 0
    with subprocess.Popen([sys.executable, "-c", SUMMARIZER_CHILD, str(root)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as child:  # fmt: skip
        assert child.stdout is not None and child.stderr is not None
        try:
            assert child.stdout.readline().strip() == "start"
            with memfs.Vault.open(root, lock_timeout=1.0, reconcile=False) as vault:
                notes = vault.memories("notes")
                while not select.select([child.stdout], [], [], 0)[0]:  # no write may time out meanwhile
                    notes.add(f"Harbour note {written}.", title=f"Note {written}")
                    written += 1
                    select.select([child.stdout], [], [], PACE)
                assert child.stdout.readline().split() == ["done", "True"], child.stderr.read()
                (vault.root / ".memfs" / "pending").write_bytes(b"")  # no index build of the transcript at close
            assert child.wait(timeout=120) == 0
        finally:
            child.kill()
    assert written >= 1


def test_a_program_that_seeds_random_publishes_grown_transcripts_without_a_clash(
    vault: memfs.Vault, caplog: pytest.LogCaptureFixture
) -> None:
    """A long job's publish names its new segment (a transcript's late entries) from `secrets`, not `random`.

    Whoosh's own writer drew the name from `random`: seeded alike before each publish, the second
    publish named its segment as the first had, and its commit failed on the clash.
    """
    index = vault.engine.catalog.index
    state = random.getstate()
    try:
        for job in range(3):
            folder = vault.root / f"memories/imported{job}"
            folder.mkdir()
            for i in range(STAGE_FROM_FILES):  # a long job: built aside
                (folder / f"n{i}.md").write_text(f"imported note {i} of job {job}, about tea\n")
            session = vault.session(f"chat{job}", commit="manual")
            session.append([message(i, "") for i in range(5)])
            session.commit()
            paths = [f"memories/imported{job}/n{i}.md" for i in range(STAGE_FROM_FILES)] + [f"sessions/chat{job}.md"]
            staged = index.stage(paths)
            assert staged is not None
            session.append([{"role": "user", "content": f"a zebra{job} crossing"}])  # grows after the build read it
            random.seed(7)  # what a reproducible run (or Hypothesis, before each example) does
            with vault.engine.locked():
                report = index.publish(staged)
            assert f"sessions/chat{job}.md" in report.added
            assert positions(vault, f"zebra{job}") == [6]
            assert len(vault.search(f"job {job} tea", k=500)) >= STAGE_FROM_FILES
    finally:
        random.setstate(state)  # the rest of the suite keeps its own randomness
    assert index.doc_count() == 3 * (STAGE_FROM_FILES + 1 + 6)
    with memfs.Vault.open(vault.root, durable=False) as other:  # another process's view: the published segments
        assert [positions(other, f"zebra{job}") for job in range(3)] == [[6], [6], [6]]
    assert "rebuilding" not in caplog.text and "could not" not in caplog.text
