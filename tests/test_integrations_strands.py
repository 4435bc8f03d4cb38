"""A Strands Agent keeps its conversation in a memfs transcript, with a memfs manager."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import run_script

import memfs
from memfs.conversation import SlidingWindowConversationManager, SummarizingConversationManager
from memfs.models import ScriptedModel


@pytest.fixture(scope="module")
def strands() -> SimpleNamespace:
    """The SDK's parts these tests use, with a scripted model and a tool built on them.

    Imported here, not at collection (tests/conftest.py says why).
    """
    pytest.importorskip("strands")
    from sdk_strands import Scripted
    from strands import Agent, tool
    from strands.types.exceptions import ContextWindowOverflowException

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}, 21 C"

    return SimpleNamespace(Agent=Agent, Scripted=Scripted, weather=weather, Overflow=ContextWindowOverflowException)


def test_a_strands_agent_keeps_its_conversation_in_a_transcript(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from memfs.integrations.strands import MemfsConversationManager

    session = vault.session("strands-chat")
    manager = MemfsConversationManager(session, SlidingWindowConversationManager(window_size=6))
    model = strands.Scripted([{"id": "t1", "name": "weather", "input": {"city": "Lisbon"}}, "It is sunny in Lisbon.",
                              "Porto then.", "Faro is warm.", "Noted."])  # fmt: skip
    agent = strands.Agent(model=model, conversation_manager=manager, tools=[strands.weather], callback_handler=None)
    agent("What's the weather in Lisbon?")
    agent("And Porto?")
    agent("Faro?")
    agent("Thanks")
    history = session.history()
    assert len(history) == 10  # 4 user turns, a tool call and its result, 4 answers
    assert history[1]["content"][0]["toolUse"]["name"] == "weather"
    assert "Sunny in Lisbon" in json.dumps(history[2])
    assert len(agent.messages) <= 6 and agent.messages == session.items()
    assert manager.removed_message_count == 10 - len(agent.messages)
    text = session.file.read_text()
    assert "\nWhat's the weather in Lisbon?\n" in text and "## window" in text
    assert json.dumps(model.seen[-1]).count("Thanks") == 1  # the model saw the managed view
    # a new agent in a new process would start from the file: a new manager restores the view
    again = MemfsConversationManager(vault.session("strands-chat"), SlidingWindowConversationManager(window_size=6))
    fresh = strands.Agent(model=strands.Scripted(["Hello again."]), conversation_manager=again, callback_handler=None)
    assert fresh.messages == agent.messages
    assert again.get_state()["memfs"]["transcript"] == session.path


def test_overflow_from_strands_is_reduced_by_a_memfs_summarizer(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from memfs.integrations.strands import MemfsConversationManager

    session = vault.session("strands-summary")
    summarizer = ScriptedModel(["- The user asked about several cities."])
    memfs_manager = SummarizingConversationManager(summarizer, max_messages=50, preserve_recent_messages=1,
                                                   summary_ratio=0.5)  # fmt: skip
    manager = MemfsConversationManager(session, memfs_manager)
    model = strands.Scripted(["One.", "Two.", "Three.", strands.Overflow("too long"), "Four."])
    agent = strands.Agent(model=model, conversation_manager=manager, callback_handler=None)
    for question in ("a?", "b?", "c?", "d?"):
        agent(question)
    first = agent.messages[0]
    assert first["role"] == "user" and first["content"][0]["text"].startswith("Summary of messages 1-")
    assert "## summary" in session.file.read_text()
    assert len(session.history()) == 8


def test_a_memfs_namespace_as_a_store_of_strands_memory_manager(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from strands.memory import MemoryManager as StrandsMemoryManager

    from memfs.integrations.strands import MemfsMemoryStore

    vault.memories("users/alice").add("Alice prefers window seats on long flights.", title="Window seats")
    vault.memories("shared/company").add("Economy class on flights under six hours.", title="Travel policy")
    alice = MemfsMemoryStore(vault.memories("users/alice"), name="alice")
    policy = MemfsMemoryStore(vault.memories("shared/company"), name="company", writable=False)
    memory = StrandsMemoryManager(stores=[alice, policy], add_tool_config=True)
    model = strands.Scripted([
        {"id": "t1", "name": "search_memory", "input": {"query": "window seats flights"}},
        {"id": "t2", "name": "add_memory", "input": {"entries": ["Alice is flying to Tokyo on 3 March."]}},
        "Booked a window seat for the Tokyo flight.",
    ])  # fmt: skip
    agent = strands.Agent(model=model, memory_manager=memory, callback_handler=None)
    agent("Book my Tokyo flight on 3 March, you know my seat.")
    seen = json.dumps(model.seen)
    assert "Alice prefers window seats on long flights." in seen  # search results and injection
    added = [m for m in vault.memories("users/alice").list() if "Tokyo" in m.body]
    assert len(added) == 1 and added[0].body == "Alice is flying to Tokyo on 3 March.\n"
    assert vault.memories("shared/company").list()[0].title == "Travel policy"
    assert vault.history.status() == [] and vault.log()[0].subject.startswith("memory: create users/alice/")
    import asyncio

    retried = asyncio.run(alice.add("Alice is flying to Tokyo on 3 March."))  # Strands retries writes: no duplicate
    assert len([m for m in vault.memories("users/alice").list() if "Tokyo" in m.body]) == 1 and retried["duplicate"]
    refined = asyncio.run(alice.add("Alice is flying to Tokyo on 3 March, in the morning."))  # a restatement
    tokyo = [m for m in vault.memories("users/alice").list() if "Tokyo" in m.body]
    assert [m.body for m in tokyo] == ["Alice is flying to Tokyo on 3 March, in the morning.\n"]
    assert refined == {"id": tokyo[0].id, "path": tokyo[0].path, "duplicate": True}
    with pytest.raises(PermissionError):
        asyncio.run(policy.add("x"))


def test_memfs_injection_hook_for_strands(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from memfs.integrations.strands import MemfsInjectionHook
    from memfs.longterm import LongTermMemory

    vault.memories("users/alice").add("Alice is allergic to peanuts.", title="Peanut allergy")
    manager = LongTermMemory(vault, stores=["users/alice"])
    model = strands.Scripted(["No satay, then."])
    agent = strands.Agent(model=model, system_prompt="You plan dinners.", hooks=[MemfsInjectionHook(manager)],
                          callback_handler=None)  # fmt: skip
    agent("Any peanut dishes I should avoid tonight?")
    assert "Alice is allergic to peanuts." in (agent.system_prompt or "")
    assert agent.system_prompt.startswith("You plan dinners.")


def _turns(vault_dir: Path, mode: str, prompts: list[str], sessions_dir: Path | None = None) -> list[list[Any]]:
    """What the model was sent at each prompt, each run in a new process (a restart)."""
    more = [sessions_dir] if sessions_dir else []
    return [run_script("strands_turn.py", vault_dir, mode, prompt, *more)["seen"] for prompt in prompts]


def _texts(items: list[Any]) -> list[str]:
    return [block.get("text", "") for item in items for block in item["content"] if "text" in block]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["file", "seed", "plain"])
def test_restarts_never_duplicate_the_conversation(strands: SimpleNamespace, vault_dir: Path, tmp_path: Path,
                                                   mode: str) -> None:  # fmt: skip
    """Three runs in three processes: the model sees 1, 3, 5 messages (2 more with a seed); each is stored once."""
    seen = _turns(vault_dir, mode, ["one?", "two?", "three?"], tmp_path / "strands-sessions")
    seed = 2 if mode == "seed" else 0
    assert [len(s) for s in seen] == [seed + 1, seed + 3, seed + 5]
    assert _texts(seen[-1])[seed:] == ["one?", "Answer to one?", "two?", "Answer to two?", "three?"]
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        history = vault.session("chat").history()
    assert len(history) == seed + 6
    assert _texts(history)[seed:] == ["one?", "Answer to one?", "two?", "Answer to two?", "three?", "Answer to three?"]


def test_a_seed_given_again_is_not_appended_again(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from memfs.integrations.strands import MemfsConversationManager, unrecorded

    seed = [{"role": "user", "content": [{"text": "I am Bob."}]}, {"role": "assistant", "content": [{"text": "Hi."}]}]
    for turn in ("a?", "b?"):
        manager = MemfsConversationManager(vault.session("seeded"))
        agent = strands.Agent(model=strands.Scripted([f"re {turn}"]), conversation_manager=manager,
                              messages=[dict(m) for m in seed], callback_handler=None)  # fmt: skip
        agent(turn)
    assert _texts(vault.session("seeded").history()) == ["I am Bob.", "Hi.", "a?", "re a?", "b?", "re b?"]
    # a message the transcript lacks is appended, after the part it holds
    history = vault.session("seeded").history()
    extra = {"role": "user", "content": [{"text": "new"}]}
    assert unrecorded([dict(m) for m in seed] + [extra], history) == [extra]
    assert unrecorded([{**history[2], "tracking_id": "x"}], history) == []  # known content, a new tracking id
    assert unrecorded([history[3]], history) == []


def test_pinned_messages_stay_in_view(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from memfs.integrations.strands import MemfsConversationManager

    pin = {"custom": {"pinned": True}}
    pinned = {"role": "user", "content": [{"text": "Always answer in French."}], "metadata": pin}
    ack = {"role": "assistant", "content": [{"text": "D'accord."}]}
    manager = MemfsConversationManager(vault.session("pins"), SlidingWindowConversationManager(window_size=4))
    model = strands.Scripted([f"r{i}" for i in range(6)])
    agent = strands.Agent(model=model, conversation_manager=manager, messages=[pinned, ack], callback_handler=None)
    for i in range(5):
        agent(f"q{i}")
    view = manager.session.items()
    assert "Always answer in French." not in _texts(view)  # the window dropped it, the pin kept it
    assert _texts(model.seen[-1]) == ["Always answer in French.", "q2", "r2", "q3", "r3", "q4"]
    assert _texts(agent.messages) == ["Always answer in French.", *_texts(view)]
    # a message pinned later is kept too, and a new agent in a new process finds the pins in the file
    from strands.agent.conversation_manager.compression.pin_message import pin_message

    index = _texts(agent.messages).index("q3")
    pin_message(agent.messages, index)
    agent("q5")
    assert "q3" in _texts(agent.messages)
    again = MemfsConversationManager(vault.session("pins"), SlidingWindowConversationManager(window_size=4))
    fresh = strands.Agent(model=strands.Scripted(["x"]), conversation_manager=again, callback_handler=None)
    assert _texts(fresh.messages)[0] == "Always answer in French."
    assert vault.session("pins").history().count(vault.session("pins").history()[0]) == 1


def test_proactive_compression_is_passed_to_strands(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from memfs.integrations.strands import MemfsConversationManager

    manager = MemfsConversationManager(vault.session("p"), proactive_compression={"compression_threshold": 0.5})
    assert manager._compression_threshold == 0.5
    assert MemfsConversationManager(vault.session("q"), proactive_compression=True)._compression_threshold == 0.7
    with pytest.raises(ValueError, match="compression_threshold"):
        MemfsConversationManager(vault.session("r"), proactive_compression={"compression_threshold": 2})


@pytest.mark.slow
def test_memfs_as_the_session_store_of_strands_across_restarts(strands: SimpleNamespace, vault_dir: Path) -> None:
    """RepositorySessionManager over MemfsSessionRepository: three processes, 1 / 3 / 5 messages, 6 stored once."""
    seen = _turns(vault_dir, "repository", ["one?", "two?", "three?"])
    assert [len(s) for s in seen] == [1, 3, 5]
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        from memfs.integrations.strands import MemfsSessionRepository

        repo = MemfsSessionRepository(vault)
        stored = repo.list_messages("chat", "default")
        assert [m.message_id for m in stored] == list(range(6))
        assert _texts([m.to_message() for m in stored]) == ["one?", "Answer to one?", "two?", "Answer to two?",
                                                            "three?", "Answer to three?"]  # fmt: skip
        text = (vault.root / "sessions/strands/chat/default.md").read_text()
        assert "\nthree?\n" in text and "\nAnswer to three?\n" in text  # a transcript a person reads
        agent = repo.read_agent("chat", "default")
        assert agent is not None and agent.conversation_manager_state["__name__"] == "SlidingWindowConversationManager"
        assert vault.history.status() == []  # everything committed


def test_session_repository_contract(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from strands.types.exceptions import SessionException
    from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

    from memfs.integrations.strands import MemfsSessionRepository

    repo = MemfsSessionRepository(vault, folder="bots")
    assert repo.read_session("s1") is None
    repo.create_session(Session(session_id="s1", session_type=SessionType.AGENT))
    with pytest.raises(SessionException, match="already exists"):
        repo.create_session(Session(session_id="s1", session_type=SessionType.AGENT))
    assert repo.read_session("s1").session_id == "s1"  # type: ignore[union-attr]
    repo.create_agent("s1", SessionAgent(agent_id="a1", state={"city": "Lisbon"}, conversation_manager_state={}))
    repo.update_agent("s1", SessionAgent(agent_id="a1", state={"city": "Porto"}, conversation_manager_state={"n": 1}))
    assert repo.read_agent("s1", "a1").state == {"city": "Porto"}  # type: ignore[union-attr]
    with pytest.raises(SessionException, match="does not exist"):
        repo.update_agent("s1", SessionAgent(agent_id="a2", state={}, conversation_manager_state={}))
    image = {"role": "user", "content": [{"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}]}
    for i, text in enumerate(["hi", "hello", "my card is 4111"]):
        repo.create_message("s1", "a1", SessionMessage({"role": "user", "content": [{"text": text}]}, i))
    repo.create_message("s1", "a1", SessionMessage(image, 3))
    with pytest.raises(SessionException, match="gap"):
        repo.create_message("s1", "a1", SessionMessage({"role": "user", "content": [{"text": "x"}]}, 9))
    assert repo.read_message("s1", "a1", 3).message == image  # type: ignore[union-attr]  # bytes come back as bytes
    redacted = SessionMessage({"role": "user", "content": [{"text": "my card is 4111"}]}, 2,
                              redact_message={"role": "user", "content": [{"text": "[redacted]"}]})  # fmt: skip
    repo.update_message("s1", "a1", redacted)
    listed = repo.list_messages("s1", "a1")
    assert [_texts([m.message]) for m in listed] == [["hi"], ["hello"], ["[redacted]"], []]
    assert listed[3].message == image and len(listed) == 4  # the message after the redacted one kept, once
    assert [m.message_id for m in repo.list_messages("s1", "a1", limit=2, offset=1)] == [1, 2]
    assert "4111" not in (vault.root / "sessions/bots/s1/a1.md").read_text()
    with pytest.raises(SessionException, match="does not exist"):
        repo.update_message("s1", "a1", SessionMessage({"role": "user", "content": []}, 7))
    with pytest.raises(SessionException, match="id must be"):
        repo.read_agent("s1", "../etc")
    assert vault.history.status() == []


def test_strands_extraction_hands_the_conversation_to_memfs(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    import asyncio

    from strands.memory import MemoryManager as StrandsMemoryManager
    from strands.memory.extraction.triggers import InvocationTrigger

    from memfs.integrations.strands import MemfsMemoryStore

    store = MemfsMemoryStore(vault.memories("users/alice"), name="alice",
                             extraction={"trigger": [InvocationTrigger()]})  # fmt: skip
    memory = StrandsMemoryManager(stores=[store])
    agent = strands.Agent(model=strands.Scripted(["Noted.", "Noted again."]), memory_manager=memory,
                          callback_handler=None)  # fmt: skip
    agent("I prefer window seats on long flights.")
    agent("I prefer window seats on long flights, really.")
    asyncio.run(memory.flush())
    bodies = [m.body for m in vault.memories("users/alice").list()]
    assert len(bodies) == 1 and "prefers window seats on long flights" in bodies[0]  # once, not twice
    assert asyncio.run(store.add_messages([{"role": "user", "content": [{"text": "I live in Porto."}]}])) == {
        "stored": 1}  # fmt: skip
    with pytest.raises(PermissionError):
        asyncio.run(MemfsMemoryStore(vault.memories("shared"), writable=False).add_messages([]))


def test_the_store_gives_strands_memfs_commands_as_tools(strands: SimpleNamespace, vault: memfs.Vault) -> None:
    from strands.memory import MemoryManager as StrandsMemoryManager

    from memfs.integrations.strands import MemfsMemoryStore

    alice = vault.memories("users/alice")
    name = alice.add("Alice prefers window seats.", title="Seats").name
    alice.update(name, "Alice prefers aisle seats.")
    store = MemfsMemoryStore(alice, name="alice")
    assert [t.tool_name for t in store.get_tools()] == ["alice_memory_view", "alice_memory_history",
                                                        "alice_memory_restore", "alice_memory_supersede"]  # fmt: skip
    reader = MemfsMemoryStore(vault.memories("shared"), name="shared", writable=False)
    assert [t.tool_name for t in reader.get_tools()] == ["shared_memory_view", "shared_memory_history"]
    model = strands.Scripted([
        {"id": "t1", "name": "alice_memory_history", "input": {"path": f"/memories/{name}"}},
        {"id": "t2", "name": "alice_memory_view", "input": {"path": "/etc/passwd"}},
        "Aisle, since you changed it.",
    ])  # fmt: skip
    agent = strands.Agent(model=model, memory_manager=StrandsMemoryManager(stores=[store]), callback_handler=None)
    agent("Did my seat preference change?")
    results = [block["toolResult"] for m in model.seen[-1] for block in m["content"] if "toolResult" in block]
    history = json.dumps(results[0])
    assert results[0]["status"] == "success" and "memory: update users/alice/" in history
    assert "memory: create users/alice/" in history
    assert results[1]["status"] == "error" and "must start with /memories" in json.dumps(results[1])
