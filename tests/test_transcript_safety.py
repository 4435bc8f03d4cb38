"""Transcripts keep every acknowledged message: torn tails, failed commits, pops seen by every object.

Real files, real git and real processes: a writer killed by SIGKILL in the middle of a large
append, a genuine short write from an RLIMIT_FSIZE limit (the kernel then kills the writer with
SIGXFSZ, or refuses with EFBIG when the signal is ignored), a commit that git refuses (a
reflog that cannot be written), and a summarizer model that blocks while other writers work.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memfs
from memfs import transcript
from memfs.conversation import (
    SlidingWindowConversationManager,
    SummarizingConversationManager,
    TokenWindowConversationManager,
    View,
    extend_view,
    read_view,
)
from memfs.errors import HistoryError
from memfs.models import Reply

SOURCE = str(Path(memfs.__file__).resolve().parents[1])


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SOURCE + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_child(code: str, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=child_env(), capture_output=True,
                          text=True, timeout=120, **options)  # fmt: skip


def msg(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": text}


def contents(session: memfs.MarkdownSession) -> list[str]:
    return [i["content"] for i in session.history()]


@contextlib.contextmanager
def fail_commits(root: Path) -> Iterator[None]:
    """git refuses every ref update while the block runs: its reflog folder is a file.

    (A failing ``reference-transaction`` hook did this once; memfs runs no hook of a vault's.)
    """
    logs = root / ".git/logs"
    aside = root / ".git/logs.aside"
    logs.rename(aside)
    logs.write_text("not a folder: every ref update fails to write its reflog\n")
    try:
        yield
    finally:
        logs.unlink()
        aside.rename(logs)


def git_texts(root: Path) -> str:
    """Every version of every file git holds, as one text."""
    return subprocess.run(["git", "log", "--all", "-p", "--format=%H %an"], cwd=root, capture_output=True,
                          text=True, errors="replace", check=True).stdout  # fmt: skip


def person_commits(vault: memfs.Vault) -> list[memfs.Revision]:
    return [r for r in vault.log() if r.author.name != "memfs agent"]


# -- the format: a torn tail is not a person's edit ----------------------------------------------


def two_entries() -> tuple[bytes, bytes, bytes]:
    head = transcript.new_head({"session_id": "s"}).encode()
    first = transcript.render_entry(msg("first"), 1, "2026-11-23T10:00:00Z")
    second = transcript.render_entry(msg("second " + "y" * 300), 2, "2026-11-23T10:00:01Z")
    return head, first, second


def test_a_heading_cut_short_at_the_end_is_not_text_of_the_message_before() -> None:
    head, first, second = two_entries()
    heading_end = second.index(b"\n") + 1
    for cut in (len(b"## user \xc2\xb7 2"), heading_end // 2, heading_end - 1):
        data = head + first + second[:cut]
        parsed = transcript.parse(data)
        assert [e.item for e in parsed.entries] == [msg("first")]
        assert "interrupted" in parsed.problems[0].reason
        assert transcript.partial_heading(data) == len(head + first)
    assert transcript.partial_heading(head + first + b"## My notes") is None  # a person's heading stays theirs
    assert transcript.partial_heading(head + first) is None


def test_a_tail_is_classified_as_whole_entries_torn_or_an_edit() -> None:
    _, first, second = two_entries()
    assert transcript.classify_tail(b"") == "complete"
    assert transcript.classify_tail(first + second) == "complete"
    for cut in range(1, len(second) - 1, 7):
        assert transcript.classify_tail(first + second[:cut]) == "torn", cut
    assert transcript.classify_tail(b"I added this line by hand.\n") == "edit"
    assert transcript.classify_tail(first[:-2] + b"!!\n\n") == "edit"  # the length no longer lands on the end


def test_a_save_without_the_final_blank_line_does_not_glue_the_next_append(vault: memfs.Vault) -> None:
    session = vault.session("no-newline")
    session.append([msg("hello")])
    for ending in (b"hello, edited", b"hello, edited\n"):
        text = session.file.read_bytes()
        session.file.write_bytes(text[: text.rindex(b"hello")] + ending)  # an editor that strips the blank line
        session.append([msg("next")])
        assert contents(session)[-2:] == [ending.decode().strip(), "next"]
        session.pop()


# -- killed writers and short writes -----------------------------------------------------------


SHORT_WRITE_CHILD = """
    import resource, signal, sys, memfs
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL if sys.argv[3] == "kill" else signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
    vault = memfs.Vault.open(sys.argv[1], create=True, durable=False, reconcile=False)
    try:
        vault.session("t", commit=sys.argv[4]).append([{"role": "user", "content": "TORN-" + "x" * 5000}])
    except OSError as exc:
        print("refused", exc.errno)
    else:
        print("acknowledged")
"""


def short_write(root: Path, limit: int, mode: str, policy: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(SHORT_WRITE_CHILD), str(root), str(limit), mode,
                           policy], env=child_env(), capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.parametrize("policy", ["turn", "manual"])
@pytest.mark.parametrize("where", [40, 300])  # inside the heading line, inside the body
def test_a_writer_killed_after_a_short_write_leaves_no_torn_entry(tmp_path: Path, policy: str, where: int) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.session("t", commit=policy).append([msg("one"), msg("two", "assistant")])
    path = root / "sessions/t.md"
    size = path.stat().st_size
    child = short_write(root, size + where, "kill", policy)  # one short write, then SIGXFSZ
    assert child.returncode == -signal.SIGXFSZ, child.stderr
    torn = path.read_bytes()
    assert len(torn) == size + where and torn[size:].startswith(b"## user")
    # a fresh process's engine: reconcile, then append
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        session = vault.session("t", commit=policy)
        session.append([msg("three (acknowledged)")])
        assert contents(session) == ["one", "two", "three (acknowledged)"]
        assert transcript.parse(path.read_bytes()).problems == []
        new_heading = path.read_bytes()[size:].split(b"\n", 1)[0]
        assert new_heading.startswith(b"## user") and new_heading.count(b"## ") == 1  # nothing glued before it
        salvage = vault.engine.salvage_files()
        assert [p.read_bytes() for p in salvage] == [torn[size:]]
        assert salvage[0].name.startswith("sessions__t.md.")
        assert any(f.check == "salvage" and salvage[0].name in f.message for f in vault.doctor())
        assert person_commits(vault) == []  # the torn bytes were never committed as someone's edit
        session.commit()
    assert "TORN-" not in git_texts(root)


def test_without_a_record_a_heading_cut_short_is_still_cut(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.session("t").append([msg("one")])
    size = (root / "sessions/t.md").stat().st_size
    assert short_write(root, size + 40, "kill", "turn").returncode == -signal.SIGXFSZ
    (root / ".memfs/own").unlink()  # .memfs is derived state: it may be gone
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        session = vault.session("t")
        session.append([msg("two")])
        assert contents(session) == ["one", "two"]
        assert len(vault.engine.salvage_files()) == 1


def test_without_a_record_a_body_cut_short_is_closed_off_and_the_next_message_kept(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.session("t").append([msg("one")])
    size = (root / "sessions/t.md").stat().st_size
    assert short_write(root, size + 300, "kill", "turn").returncode == -signal.SIGXFSZ
    (root / ".memfs/own").unlink()
    with memfs.Vault.open(root, create=True, durable=False, reconcile=False) as vault:
        session = vault.session("t")
        session.append([msg("two")])  # cannot be told from a person's edit: kept, but never glued to
        got = contents(session)
        assert got[0] == "one" and got[1].startswith("TORN-xxx") and got[2:] == ["two"]


def test_a_short_write_refused_with_efbig_leaves_the_file_and_its_record_as_before(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.session("t", commit="manual").append([msg("one")])  # acknowledged, not committed yet
    path = root / "sessions/t.md"
    before = path.read_bytes()
    child = short_write(root, len(before) + 300, "ignore", "manual")
    assert child.stdout.split() == ["refused", "27"], child.stderr  # EFBIG, after a short write
    assert path.read_bytes() == before
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        assert person_commits(vault) == []  # memfs's pending message is not taken for a person's edit
        session = vault.session("t", commit="manual")
        session.append([msg("two")])
        assert contents(session) == ["one", "two"]
        assert session.commit() is not None and person_commits(vault) == []


KILL_CHILD = """
    import sys, memfs
    root, start, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    vault = memfs.Vault.open(root, create=True, durable=False, reconcile=False)
    session = vault.session("k", commit="manual")
    i = start
    while True:
        session.append([{"role": "user", "content": f"ack-{i}"}])
        print("ack", i, flush=True)
        print("big", i, flush=True)
        session.append([{"role": "assistant", "content": f"BIG-{i}-" + "z" * big}])
        i += 1
"""

AFTER_CHILD = """
    import sys, memfs
    with memfs.Vault.open(sys.argv[1], create=True, durable=False) as vault:
        vault.session("k", commit="manual").append([{"role": "user", "content": sys.argv[2]}])
"""


@pytest.mark.slow
def test_kill_9_in_the_middle_of_large_appends_loses_no_acknowledged_message(tmp_path: Path) -> None:
    root = tmp_path / "v"
    memfs.Vault.open(root, create=True, durable=False).close()
    path = root / "sessions/k.md"
    big = 16 * 1024 * 1024  # long enough a write for a kill to land inside it on a busy machine
    rng = random.Random(11)
    acked: list[str] = []
    torn_kills = start = 0
    for round_ in range(12):
        if torn_kills >= 3:
            break
        proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILL_CHILD), str(root), str(start), str(big)],
                                env=child_env(), stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert proc.stdout is not None
        while True:  # acknowledgements, then the start of a big append
            word, number = proc.stdout.readline().split()
            if word == "ack":
                acked.append(f"ack-{number}")
            elif rng.random() < 0.7:  # and let some big appends finish whole
                break
        start = int(number) + 1
        floor = path.stat().st_size
        deadline = time.monotonic() + 30
        while path.stat().st_size < floor + 65_536 and time.monotonic() < deadline:
            pass  # the big write is under way once the file grew by more than a small message
        time.sleep(rng.uniform(0, 0.001))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        killed = path.read_bytes()
        salvaged_before = len(list(root.glob(".memfs/salvage/*")))
        after = subprocess.run([sys.executable, "-c", textwrap.dedent(AFTER_CHILD), str(root), f"after-{round_}"],
                               env=child_env(), capture_output=True, text=True, timeout=120)  # fmt: skip
        assert after.returncode == 0, after.stderr
        acked.append(f"after-{round_}")
        parsed = transcript.parse(path.read_bytes())
        assert parsed.problems == []
        items = [e.item["content"] for e in parsed.entries]
        small = iter(c for c in items if not c.startswith("BIG-"))
        assert all(any(c == a for c in small) for a in acked)  # every acknowledged message, in order
        # the rest were written whole by a child killed before it could acknowledge them; none is cut or glued
        assert all(re.fullmatch(r"(ack|after)-\d+", c) for c in items if not c.startswith("BIG-"))
        assert all(c == c[: c.index("-", 4) + 1] + "z" * big for c in items if c.startswith("BIG-"))
        salvage = sorted(root.glob(".memfs/salvage/*"), key=lambda p: p.stat().st_mtime_ns)
        if len(salvage) > salvaged_before:
            torn_kills += 1
            cut = salvage[-1].read_bytes()
            assert killed.endswith(cut) and cut.startswith(b"## assistant")
            assert transcript.classify_tail(cut) == "torn"
    assert torn_kills >= 1, "no kill landed inside an append"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        assert len(vault.engine.salvage_files()) == torn_kills
        assert [f for f in vault.doctor() if f.check == "salvage"]
        assert person_commits(vault) == []


# -- a failed commit leaves no message ----------------------------------------------------------


def test_a_failed_commit_leaves_no_message_and_a_retry_does_not_duplicate(vault: memfs.Vault) -> None:
    session = vault.session("t")
    session.append([msg("one")])
    before = session.file.read_bytes()
    with fail_commits(vault.root):
        with pytest.raises(HistoryError):
            session.append([msg("two")])
        assert session.file.read_bytes() == before
        assert vault.engine.own_uncommitted() == {}
        assert vault.search_messages("two") == []
    session.append([msg("two")])  # the caller's retry
    assert contents(session) == ["one", "two"]
    assert [r.subject for r in vault.log(session.path)][:2] == ["session: t +1 message"] * 2


def test_a_failed_first_append_leaves_no_file(vault: memfs.Vault) -> None:
    session = vault.session("new")
    with fail_commits(vault.root):
        with pytest.raises(HistoryError):
            session.append([msg("hello")])
    assert not session.file.exists() and vault.engine.own_uncommitted() == {}
    session.append([msg("hello")])
    assert contents(session) == ["hello"]


def test_a_failed_commit_of_a_pop_or_a_clear_leaves_the_file_as_before(vault: memfs.Vault) -> None:
    session = vault.session("t")
    session.append([msg("one"), msg("two"), msg("three")])
    before = session.file.read_bytes()
    other = vault.session("t")  # what a second object sees afterwards
    with fail_commits(vault.root):
        for operation in (session.pop, session.clear):
            with pytest.raises(HistoryError):
                operation()
            assert session.file.read_bytes() == before
            assert vault.engine.own_uncommitted() == {}
    other.append([msg("four")])
    assert contents(session) == ["one", "two", "three", "four"]
    assert session.pop() == msg("four") and contents(other) == ["one", "two", "three"]


def test_a_failed_commit_of_a_managed_append_leaves_neither_the_items_nor_the_decision(vault: memfs.Vault) -> None:
    session = vault.session("managed", manager=SlidingWindowConversationManager(window_size=3))
    session.append([msg(f"m{i}") for i in range(3)])
    before = session.file.read_bytes()
    with fail_commits(vault.root):
        with pytest.raises(HistoryError):
            session.append([msg("m3"), msg("m4")])
    assert session.file.read_bytes() == before
    session.append([msg("m3"), msg("m4")])
    assert [i["content"] for i in session.items()] == ["m2", "m3", "m4"]
    assert contents(session) == [f"m{i}" for i in range(5)]


def test_a_failed_manual_commit_keeps_the_acknowledged_messages(vault: memfs.Vault) -> None:
    session = vault.session("m", commit="manual")
    session.append([msg("one")])
    with fail_commits(vault.root):
        with pytest.raises(HistoryError):
            session.commit()
    assert contents(session) == ["one"] and session.path in vault.engine.own_uncommitted()
    assert session.commit() is not None and vault.engine.own_uncommitted() == {}


# -- pops and clears are seen by every object ----------------------------------------------------


@pytest.mark.parametrize("operation", ["pop", "clear"])
def test_a_pop_or_clear_by_one_object_is_not_undone_by_another(vault: memfs.Vault, operation: str) -> None:
    a, b = vault.session("shared"), vault.session("shared")
    b.append([msg("one"), msg("two")])
    getattr(a, operation)()
    b.append([msg("three")])
    assert contents(a) == (["one", "three"] if operation == "pop" else ["three"])


def test_a_pop_in_another_process_is_not_undone(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        session = vault.session("shared", commit="manual")
        session.append([msg("one"), msg("two")])
        popped = run_child(f"""
            import memfs
            with memfs.Vault.open({str(root)!r}, create=True, durable=False) as vault:
                print(vault.session("shared", commit="manual").pop()["content"])
                vault.session("other").append([{{"role": "user", "content": "x"}}])
        """)
        assert popped.stdout.strip() == "two", popped.stderr
        session.append([msg("three")])
        assert contents(session) == ["one", "three"]
        cleared = run_child(f"""
            import memfs
            with memfs.Vault.open({str(root)!r}, create=True, durable=False) as vault:
                vault.session("shared").clear()
        """)
        assert cleared.returncode == 0, cleared.stderr
        session.append([msg("four")])
        assert contents(session) == ["four"]


def test_an_editor_save_that_drops_entries_is_repaired_by_any_object(vault: memfs.Vault) -> None:
    a, b = vault.session("edited"), vault.session("edited")
    a.append([msg("one")])
    stale = a.file.read_bytes()  # an editor opens the file here
    a.append([msg("two"), msg("three")])
    b.pop()  # memfs's own removal: "three" stays removed
    tmp = a.file.with_name(".edited.md.swp")
    tmp.write_bytes(stale.replace(b"one", b"one, edited"))
    os.replace(tmp, a.file)  # ...and saves its stale copy over it
    b.append([msg("four")])
    assert contents(a) == ["one, edited", "two", "four"]


# -- managers decide outside the vault lock ------------------------------------------------------


class GatedModel:
    """A summarizer that waits on an Event the first time it is called."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.calls: list[list[dict[str, Any]]] = []

    def complete(self, messages: Any, *, system: Any = None, tools: Any = ()) -> Reply:
        self.calls.append(messages)
        if len(self.calls) == 1:
            self.entered.set()
            assert self.gate.wait(60)
        return Reply(f"- summary number {len(self.calls)}")


def summarizing(vault: memfs.Vault, model: GatedModel) -> memfs.MarkdownSession:
    manager = SummarizingConversationManager(model, max_messages=6, preserve_recent_messages=2,  # type: ignore[arg-type]
                                             summary_ratio=0.5)  # fmt: skip
    session = vault.session("slow", manager=manager)
    session.append([msg(f"m{i}") for i in range(6)])  # at the limit: no summary yet
    assert model.calls == []
    return session


def check_summary_ranges(session: memfs.MarkdownSession) -> None:
    """The newest summary covers exactly the items before the view's start, and nothing is lost."""
    view = session.view()
    assert view.summary_range is not None
    first, last = view.summary_range
    history = transcript.parse(session.file.read_bytes()).entries
    items = [e.n for e in history if e.kind == "item"]
    start = view.positions[0]
    assert first == items[0] and [n for n in items if n < start] == [n for n in items if n <= last]
    assert view.positions == [n for n in items if n >= start]


def test_a_slow_summarizer_does_not_block_another_process(vault: memfs.Vault) -> None:
    model = GatedModel()
    session = summarizing(vault, model)
    turn = threading.Thread(target=session.append, args=([msg("m6")],))
    turn.start()
    try:
        assert model.entered.wait(30)
        writer = run_child(f"""
            import memfs
            with memfs.Vault.open({str(vault.root)!r}, durable=False, reconcile=False, lock_timeout=5) as vault:
                vault.memories("notes").add("written while the summarizer was thinking", title="Meanwhile")
        """)
        assert writer.returncode == 0, writer.stderr  # within its 5 s lock timeout, summarizer still waiting
        assert not model.gate.is_set()
    finally:
        model.gate.set()
        turn.join(60)
    assert vault.memories("notes").list()[0].title == "Meanwhile"
    assert session.items()[0]["content"].startswith("Summary of messages 1-") and len(model.calls) == 1
    check_summary_ranges(session)


def test_a_summary_decided_on_a_view_that_changed_is_decided_again(vault: memfs.Vault) -> None:
    model = GatedModel()
    session = summarizing(vault, model)
    turn = threading.Thread(target=session.append, args=([msg("m6")],))
    turn.start()
    other = vault.session("slow")  # another object, without a manager: its append does not wait
    try:
        assert model.entered.wait(30)
        writer = threading.Thread(target=other.append, args=([msg("meanwhile")],))
        writer.start()
        writer.join(20)
        assert not writer.is_alive(), "an append waited for the summarizer"
    finally:
        model.gate.set()
        turn.join(60)
    assert len(model.calls) == 2  # the first decision was made on a view without "meanwhile"
    assert "meanwhile" in model.calls[1][0]["content"] or contents(session).index("meanwhile") > 3
    assert contents(session) == [f"m{i}" for i in range(6)] + ["meanwhile", "m6"]
    check_summary_ranges(session)
    assert session.file.read_text().count("## summary") == 1


def test_reduce_context_with_a_slow_summarizer_does_not_hold_the_lock(vault: memfs.Vault) -> None:
    model = GatedModel()
    session = summarizing(vault, model)
    result: list[Any] = []
    turn = threading.Thread(target=lambda: result.append(session.reduce_context()))
    turn.start()
    try:
        assert model.entered.wait(30)
        with memfs.Vault.open(vault.root, create=True, durable=False, reconcile=False, lock_timeout=5) as again:
            again.memories("notes").add("not blocked")
    finally:
        model.gate.set()
        turn.join(60)
    assert result and result[0].kind == "summary"
    check_summary_ranges(session)


# -- the first managed append on a long unmanaged session ------------------------------------------


def chat_items(count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        if i % 7 == 3:
            out += [{"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": f"c{i}", "output": f"r{i}"}]  # fmt: skip
        else:
            out.append(msg(f"message {i}", "user" if i % 2 else "assistant"))
    return out


def full_and_bounded(path: Path, limit: int) -> tuple[View, View]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_view(fd), read_view(fd, limit)
    finally:
        os.close(fd)


@pytest.mark.parametrize("manager", [SlidingWindowConversationManager(10), TokenWindowConversationManager(300)])
def test_a_bounded_view_gives_the_decision_the_whole_view_gives(vault: memfs.Vault, manager: Any) -> None:
    session = vault.session("long")
    session.append(chat_items(600))
    full, bounded = full_and_bounded(session.file, manager.items_needed())
    assert bounded.skipped > 0 and len(bounded.items) < len(full.items) // 2
    assert bounded.items == full.items[-len(bounded.items) :] and bounded.next_position == full.next_position
    new = [msg("one more")]
    assert manager.apply_management(extend_view(bounded, new)) == manager.apply_management(extend_view(full, new))
    session.manager = manager
    session.append(new)
    assert session.items() == full_and_bounded(session.file, 10**6)[0].items  # what a full read says now
    assert session.view().removed == session.view().positions[0] - 1 - 0


def test_a_manager_entry_further_back_than_the_bound_is_still_found(vault: memfs.Vault) -> None:
    session = vault.session("marked", manager=SlidingWindowConversationManager(5))
    session.append(chat_items(20))  # records a window entry
    session.manager = None
    session.append(chat_items(300))  # unmanaged for a long while
    full, bounded = full_and_bounded(session.file, 5 + 64)
    assert bounded == full and bounded.skipped == 0 and bounded.removed > 0


@pytest.mark.slow
def test_the_first_managed_append_on_a_long_unmanaged_session_reads_only_its_tail(vault: memfs.Vault) -> None:
    session = vault.session("huge", commit="manual")
    for k in range(10):
        session.append([msg(f"turn {k}-{i} " + "w" * 200) for i in range(5000)])
    size = session.file.stat().st_size
    session.manager = SlidingWindowConversationManager(40)
    tracemalloc.start()
    try:
        session.append([msg("the first managed turn")])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 5, (peak, size)  # a whole parse holds the file and its 50,000 entries (time: bench/hostile.py)
    assert len(session.items()) == 40 and session.view().removed == 50_001 - 40
    session.file.unlink()  # spare the vault's close a 50,000-message index build: not what is measured here


def test_read_view_and_extend_view_agree_with_a_full_parse(vault: memfs.Vault) -> None:
    session = vault.session("agree")
    items = chat_items(40)
    session.append(items[:-5])
    fd = os.open(session.file, os.O_RDONLY)
    try:
        extended = extend_view(read_view(fd), items[-5:])
    finally:
        os.close(fd)
    session.append(items[-5:])
    assert extended == session.view()
    assert json.dumps(extended.items)  # plain data
