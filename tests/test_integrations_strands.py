"""A Strands Agent keeps its conversation in a memfs transcript, with a memfs manager."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

import memfs
from memfs.conversation import SlidingWindowConversationManager, SummarizingConversationManager
from memfs.models import ScriptedModel


@pytest.fixture(scope="module")
def strands() -> SimpleNamespace:
    """The SDK's parts these tests use, with a scripted model and a tool built on them.

    Imported here, not at collection (tests/conftest.py says why).
    """
    pytest.importorskip("strands")
    from strands import Agent, tool
    from strands.models import Model
    from strands.types.exceptions import ContextWindowOverflowException

    class Scripted(Model):  # type: ignore[misc]
        """A Strands model that replays turns: text, or a tool call; optionally an overflow first."""

        def __init__(self, turns: list[Any]) -> None:
            self.turns = list(turns)
            self.seen: list[list[dict[str, Any]]] = []

        def update_config(self, **config: Any) -> None:
            pass

        def get_config(self) -> dict[str, Any]:
            return {}

        async def structured_output(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
            raise NotImplementedError
            yield

        async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None,
                         **kwargs: Any) -> AsyncIterator[dict[str, Any]]:  # fmt: skip
            self.seen.append(json.loads(json.dumps(messages, default=str)))
            turn = self.turns.pop(0)
            if isinstance(turn, Exception):
                raise turn
            yield {"messageStart": {"role": "assistant"}}
            if isinstance(turn, dict):
                start = {"toolUse": {"toolUseId": turn["id"], "name": turn["name"]}}
                yield {"contentBlockStart": {"start": start}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(turn["input"])}}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
            else:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": turn}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
            yield {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                                "metrics": {"latencyMs": 1}}}  # fmt: skip

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
