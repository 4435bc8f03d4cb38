from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memfs
from memfs import transcript
from memfs.sessions import session_file

HOSTILE_LINES = [
    '## user · 2026 <!-- memfs:entry {"n": 2, "len": 0} -->',
    "---",
    "```",
    "````json memfs:item",
    "~~~",
    "<!-- memfs:entry {} -->",
    "## assistant",
    "",
    "\r",
    "# Heading",
    "...",
]
json_scalars = st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8
)
hostile_text = st.lists(st.sampled_from(HOSTILE_LINES) | st.text(max_size=20), max_size=6).map("\n".join)
chat = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]), "content": hostile_text})
responses_message = st.fixed_dictionaries({
    "type": st.just("message"), "role": st.just("assistant"), "id": st.text(max_size=8),
    "content": st.lists(st.fixed_dictionaries({"type": st.just("output_text"), "text": hostile_text,
                                               "annotations": st.just([])}), min_size=1, max_size=2),
})  # fmt: skip
function_call = st.fixed_dictionaries({"type": st.just("function_call"), "call_id": st.text(max_size=8),
                                       "name": st.text(max_size=8), "arguments": hostile_text})  # fmt: skip
anthropic = st.fixed_dictionaries({"role": st.just("assistant"), "content": st.lists(
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.text(max_size=5), "name": st.text(max_size=5),
                           "input": st.dictionaries(st.text(max_size=5), json_values, max_size=3)})
    | st.fixed_dictionaries({"type": st.just("text"), "text": hostile_text}), min_size=1, max_size=3)})  # fmt: skip
strands = st.fixed_dictionaries({"role": st.just("user"), "content": st.lists(
    st.fixed_dictionaries({"text": hostile_text})
    | st.fixed_dictionaries({"toolResult": st.fixed_dictionaries({"toolUseId": st.text(max_size=5),
                             "status": st.just("success"), "content": st.just([{"text": "ok"}])})}),
    min_size=1, max_size=2)})  # fmt: skip
any_item = (
    chat | responses_message | function_call | anthropic | strands
    | st.dictionaries(st.text(max_size=6), json_values, max_size=4)
)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_item, max_size=6))
def test_parse_render_round_trip(items: list[dict[str, Any]]) -> None:
    assert transcript.items(transcript.render(items, {"session_id": "s"})) == items


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_item, min_size=1, max_size=8), st.integers(0, 9))
def test_tail_read_matches_full_parse(tmp_path_factory: pytest.TempPathFactory, items: list, count: int) -> None:
    path = tmp_path_factory.mktemp("t") / "t.md"
    path.write_text(transcript.render(items, {"session_id": "s"}))
    fd = os.open(path, os.O_RDONLY)
    try:
        entries, _, _ = transcript.read_tail(fd, count, chunk=64)
    finally:
        os.close(fd)
    assert [e.item for e in entries] == (items[-count:] if count else [])


GOLDEN = Path(__file__).parent / "data" / "transcripts"


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.md")))
def test_golden_transcripts(name: str) -> None:
    text = (GOLDEN / f"{name}.md").read_text()
    expected = json.loads((GOLDEN / f"{name}.json").read_text())
    assert transcript.items(text) == expected
    parsed = transcript.parse(text)
    times = [e.time for e in parsed.entries]
    assert transcript.render(expected, {k: v for k, v in parsed.metadata.items() if k != "memfs"}, times=times) == text


def test_golden_files_cover_every_family() -> None:
    assert {p.stem for p in GOLDEN.glob("*.md")} >= {"chat", "openai-responses", "anthropic", "strands"}


def test_text_reads_as_markdown_and_a_hand_edit_is_what_the_agent_gets(vault: memfs.Vault) -> None:
    session = vault.session("trip")
    session.append([{"role": "user", "content": "I want to see **Kyoto**.\n\n- temples\n- gardens"},
                    {"role": "assistant", "content": "Noted."}])  # fmt: skip
    text = session.file.read_text()
    assert "I want to see **Kyoto**.\n\n- temples\n- gardens\n" in text  # Markdown, not escaped JSON
    session.file.write_text(text.replace("Kyoto", "Osaka and Nara"))
    assert session.items()[0]["content"] == "I want to see **Osaka and Nara**.\n\n- temples\n- gardens"
    session.append([{"role": "user", "content": "Thanks"}])
    assert [i["content"] for i in session.items()][1:] == ["Noted.", "Thanks"]


def test_sqlite_session_semantics(vault: memfs.Vault) -> None:
    from agents.memory import SessionSettings

    session = vault.session("s", session_settings=SessionSettings(limit=2))
    assert session.items() == [] and session.pop() is None
    session.append([{"role": "user", "content": str(i)} for i in range(5)])
    assert [i["content"] for i in session.items()] == ["3", "4"]  # session_settings.limit
    assert [i["content"] for i in session.items(3)] == ["2", "3", "4"]
    assert session.items(0) == []
    assert len(session.items(-1)) == 5
    assert session.pop() == {"role": "user", "content": "4"}
    assert [i["content"] for i in session.items(10)] == ["0", "1", "2", "3"]
    session.clear()
    assert session.items(10) == [] and session.pop() is None
    with pytest.raises(TypeError):
        session.items("2")  # type: ignore[arg-type]


def test_async_protocol_and_isinstance(vault: memfs.Vault) -> None:
    from agents.memory import Session

    session = vault.session("async")
    assert isinstance(session, Session)

    async def run() -> None:
        await session.add_items([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
        assert await session.get_items(limit=1) == [{"role": "assistant", "content": "b"}]
        assert await session.pop_item() == {"role": "assistant", "content": "b"}
        await session.clear_session()
        assert await session.get_items() == [] and await session.pop_item() is None

    asyncio.run(run())


def test_a_corrupt_entry_is_reported_and_skipped(vault: memfs.Vault, caplog: pytest.LogCaptureFixture) -> None:
    session = vault.session("c")
    session.append([{"type": "function_call", "call_id": "1", "name": "f", "arguments": "{}"},
                    {"role": "user", "content": "after"}])  # fmt: skip
    text = session.file.read_text()
    session.file.write_text(text.replace('"call_id": "1"', '"call_id": "1" oops'))
    assert session.items() == [{"role": "user", "content": "after"}]
    assert "unreadable" in caplog.text
    session.append([{"role": "user", "content": "still works"}])
    assert session.items(1) == [{"role": "user", "content": "still works"}]


def test_every_add_items_is_a_commit(vault: memfs.Vault) -> None:
    session = vault.session("committed")
    session.append([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
    assert vault.log(limit=1)[0].subject == "session: committed +2 messages"
    assert vault.log(limit=1)[0].trailers == {"Memfs-Op": "session", "Memfs-Session": "committed"}
    assert vault.history.status() == []
    manual = vault.session("manual", commit="manual")
    manual.append([{"role": "user", "content": "x"}])
    assert vault.log(limit=1)[0].subject == "session: committed +2 messages"
    manual.commit()
    assert vault.log(limit=1)[0].subject == "session: manual" and vault.history.status() == []
    with pytest.raises(ValueError):
        vault.session("bad", commit="sometimes")


def test_sessions_by_context_keys(vault: memfs.Vault) -> None:
    a = vault.session(keys={"user_id": "alice", "channel": "telegram"})
    b = vault.session(keys={"channel": "telegram", "user_id": "alice"})
    c = vault.session(keys={"user_id": "bob", "channel": "telegram"})
    assert a.path == b.path != c.path
    a.append([{"role": "user", "content": "hi"}])
    c.append([{"role": "user", "content": "yo"}])
    assert b.items() == [{"role": "user", "content": "hi"}]
    assert [s.keys["user_id"] for s in vault.sessions(channel="telegram")] == ["alice", "bob"]
    assert [s.session_id for s in vault.sessions(user_id="bob")] == [c.session_id]
    assert "user_id: alice" in a.file.read_text()
    for bad in ({}, {"k": [1]}, {1: "x"}):
        with pytest.raises(ValueError):
            vault.session(keys=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("session_id", ["../../etc/passwd", "a/b", "CON", ".git", "x" * 300, "é space", "%2e"])
def test_unsafe_session_ids_are_mapped_safely_and_reversibly(vault: memfs.Vault, session_id: str) -> None:
    path = session_file(session_id)
    assert path.startswith("sessions/") and path.count("/") == 1 and len(path) < 120
    session = vault.session(session_id)
    session.append([{"role": "user", "content": "x"}])
    assert [s.session_id for s in vault.sessions()] == [session_id]
    assert vault.session(session_id).items() == [{"role": "user", "content": "x"}]


def test_message_search_and_context(vault: memfs.Vault) -> None:
    session = vault.session("long")
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"filler message number {i}", "id": f"m{i}"}
             for i in range(40)]  # fmt: skip
    turns[3]["content"] = "My passport expires in March 2027"
    session.append(turns)
    vault.session("other").append([{"role": "user", "content": "passport renewal office hours"}])
    hits = session.search("when does the passport expire")
    assert hits[0].position == 4 and hits[0].item["id"] == "m3" and hits[0].session == session.path
    assert {h.session for h in vault.search_messages("passport")} == {session.path, "sessions/other.md"}
    context = session.context_for("passport expiry", relevant=3, recent=5)
    ids = [c["id"] for c in context]  # the older part: the hit and the messages around it, in order
    assert "m3" in ids[:-5] and ids[:-5] == sorted(ids[:-5]) and ids[-5:] == [f"m{i}" for i in range(35, 40)]
    assert len({c["id"] for c in context}) == len(context)
    assert vault.search("passport") == []  # memory search does not return messages


def test_message_index_follows_appends_and_pops(vault: memfs.Vault) -> None:
    session = vault.session("idx")
    session.append([{"role": "user", "content": "alpha"}])
    assert [h.position for h in vault.search_messages("alpha")] == [1]
    session.append([{"role": "user", "content": "beta"}])
    session.pop()
    assert vault.search_messages("beta") == []
    session.append([{"role": "user", "content": "gamma"}])
    assert [h.position for h in vault.search_messages("gamma")] == [2, 1]  # 1 through its neighbour
    vault.reindex(full=True)
    assert [h.position for h in vault.search_messages("alpha gamma")] == [1, 2] or sorted(
        h.position for h in vault.search_messages("alpha gamma")
    ) == [1, 2]


def _appender(root: str, worker: int, count: int, start: Any) -> None:
    with memfs.Vault.open(root, durable=False, reconcile=False) as vault:
        session = vault.session("shared", commit="manual")
        start.wait(120)  # both processes open, then append at once
        for i in range(count):
            session.append([{"role": "user", "content": f"w{worker}-{i} " + "x" * (i * 37 % 3000)}])


@pytest.mark.slow
def test_two_processes_append_to_one_session(tmp_path: Path) -> None:
    # 80 appends each (it was 150), released together: the sizes still span 0-3,000 characters,
    # and the numbering and content checks are the same.
    count = 80
    root = tmp_path / "v"
    memfs.Vault.open(root, create=True).close()
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_appender, args=(str(root), w, count, start)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with memfs.Vault.open(root) as vault:
        parsed = transcript.parse((root / "sessions/shared.md").read_bytes())
        assert parsed.problems == []
        assert [e.n for e in parsed.entries] == list(range(1, 2 * count + 1))
        contents = {e.item["content"].split(" ")[0] for e in parsed.entries}
        assert contents == {f"w{w}-{i}" for w in range(2) for i in range(count)}
        assert len(vault.session("shared").items()) == 2 * count


def test_threads_append_to_one_session(vault: memfs.Vault) -> None:
    session = vault.session("threads", commit="manual")
    threads = [threading.Thread(target=lambda w=w: [session.append([{"role": "user", "content": f"{w}-{i}"}])
                                                     for i in range(40)]) for w in range(4)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entries = transcript.parse(session.file.read_bytes()).entries
    assert [e.n for e in entries] == list(range(1, 161))
    assert len({e.item["content"] for e in entries}) == 160


def test_an_editor_saving_by_rename_never_loses_agent_messages(vault: memfs.Vault) -> None:
    session = vault.session("edited")
    session.append([{"role": "user", "content": "start"}])
    stop = threading.Event()
    saves = 0

    def editor() -> None:  # reads, "thinks", writes a new file and renames it over: a stale copy
        nonlocal saves
        while not stop.is_set():
            text = session.file.read_text()
            time.sleep(0.003)
            tmp = session.file.with_name(".edited.md.tmp")
            tmp.write_text(text)
            os.replace(tmp, session.file)
            saves += 1

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        for i in range(60):
            session.append([{"role": "assistant", "content": f"agent message {i}"}])
    finally:
        stop.set()
        thread.join()
    session.append([{"role": "user", "content": "end"}])  # heals whatever the last save dropped
    contents = [i["content"] for i in session.items()]
    assert saves > 10
    assert contents == ["start"] + [f"agent message {i}" for i in range(60)] + ["end"]


def test_bad_items_are_refused(vault: memfs.Vault) -> None:
    session = vault.session("bad")
    for bad in (["a string"], [{"content": object()}], [None]):
        with pytest.raises(TypeError):
            session.append(bad)  # type: ignore[arg-type]
    assert session.items() == []
    for bad_id in ("", None, 3, "a\x00b", "line\nbreak", "x" * 1001):
        with pytest.raises(ValueError):
            vault.session(bad_id)  # type: ignore[arg-type]


def test_runner_end_to_end_with_the_sdk_scripted_model(vault: memfs.Vault) -> None:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)  # no trace exporter thread: the run is offline

    @function_tool
    def lookup_flight(city: str) -> str:
        """Find a flight."""
        return f"Flight to {city}: TP1234 at 09:40"

    model = ScriptedModel([
        [function_call("lookup_flight", {"city": "Tokyo"}, call_id="c1")],
        [assistant_message("TP1234 leaves at 09:40.")],
        [assistant_message("You asked about Tokyo.")],
        [assistant_message("Window seat noted.")],
    ])  # fmt: skip
    agent = Agent(name="planner", instructions="Help with trips.", model=model, tools=[lookup_flight])
    session = vault.session("runner")

    async def run() -> None:
        await Runner.run(agent, "Find me a flight to Tokyo", session=session)
        await Runner.run(agent, "Where was I flying?", session=session)
        await Runner.run(agent, "I like window seats", session=session)

    asyncio.run(run())
    third_input = json.dumps(model.calls[-1].input, default=str)
    assert "Find me a flight to Tokyo" in third_input and "TP1234 at 09:40" in third_input
    assert "Where was I flying?" in third_input and "You asked about Tokyo." in third_input
    items = session.items()
    assert [i.get("type") for i in items if i.get("type") in ("function_call", "function_call_output")] == [
        "function_call",
        "function_call_output",
    ]
    text = session.file.read_text()
    assert "## user · " in text and "\nFind me a flight to Tokyo\n" in text and "\nYou asked about Tokyo.\n" in text
    assert len([r for r in vault.log() if r.trailers.get("Memfs-Session") == "runner"]) >= 3


def test_commit_every_n_seconds_and_on_close(vault: memfs.Vault) -> None:
    session = vault.session("timed", commit=3600.0)
    session.append([{"role": "user", "content": "first"}])  # the first append is due at once
    first = len(vault.log())
    session.append([{"role": "user", "content": "second"}])
    assert len(vault.log()) == first and vault.history.status() != []
    session.close()
    assert len(vault.log()) == first + 1 and vault.history.status() == []
    with vault.session("ctx", commit="close") as chat:
        chat.append([{"role": "user", "content": "x"}])
    assert vault.history.status() == []
    for bad in (0, -1, True, "hourly"):
        with pytest.raises(ValueError):
            vault.session("bad", commit=bad)  # type: ignore[arg-type]


def test_message_hits_carry_the_session_id(vault: memfs.Vault) -> None:
    vault.session("trip/99").append([{"role": "user", "content": "tangerine"}])
    vault.session("trip/99").append([{"role": "user", "content": "tangerine again"}])
    assert {h.session_id for h in vault.search_messages("tangerine")} == {"trip/99"}
