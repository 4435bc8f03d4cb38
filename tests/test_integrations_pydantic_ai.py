"""Pydantic AI keeps its conversations in a vault: MemfsConversationStore under a real Agent with
Pydantic AI's own FunctionModel, across processes, and the store's branches, forks and conflicts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import run_script

import memfs

# Pydantic AI is imported by the tests that use it, not at collection (tests/conftest.py says why).


@pytest.fixture(scope="module", autouse=True)
def pydantic_ai() -> Any:
    return pytest.importorskip("pydantic_ai")


def _turn(vault_dir: Path, conversation: str, prompt: str) -> dict[str, Any]:
    return run_script("pydantic_ai_turn.py", vault_dir, conversation, prompt)


@pytest.mark.slow
def test_a_conversation_goes_on_across_processes_each_message_stored_once(vault_dir: Path) -> None:
    seen = [_turn(vault_dir, "chat", prompt) for prompt in ("Hi, I'm Alice.", "I like window seats.", "Which?")]
    assert [s["answer"] for s in seen] == ["you sent 1 messages", "you sent 3 messages", "you sent 5 messages"]
    assert [s["messages"] for s in seen] == [2, 4, 6]
    assert _turn(vault_dir, "other", "Hello")["answer"] == "you sent 1 messages"  # conversations apart
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        text = (vault.root / "sessions/pydantic-ai/chat.md").read_text()
        assert "\nI like window seats.\n" in text and "\nyou sent 3 messages\n" in text  # a person reads it
        assert len(vault.session("chat", folder="pydantic-ai").history(-1)) == 6
        assert vault.history.status() == []


def test_a_persons_edit_of_a_message_is_what_the_next_run_reads(vault: memfs.Vault) -> None:
    from pydantic_ai.conversation import Conversation

    from memfs.integrations.pydantic_ai import MemfsConversationStore

    store = MemfsConversationStore(vault)
    sent: list[Any] = []

    async def go() -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart
        from pydantic_ai.models.function import FunctionModel

        agent = Agent(
            FunctionModel(lambda messages, info: sent.append(messages) or ModelResponse(parts=[TextPart("ok")]))
        )
        result = await agent.run("I live in Lisbon.", conversation=Conversation(conversation_id="edit"))
        await store.save(result)
        path = vault.root / "sessions/pydantic-ai/edit.md"
        path.write_text(path.read_text().replace("I live in Lisbon.", "I live in Porto."))
        again = await MemfsConversationStore(vault).load("edit")  # a new store: nothing cached
        assert again is not None
        await store.save(await agent.run("Where do I live?", conversation=again))

    asyncio.run(go())
    assert "Porto" in repr(sent[-1]) and "Lisbon" not in repr(sent[-1])


def test_branches_forks_and_conflicts(vault: memfs.Vault) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.conversation_store import ConversationConflict
    from pydantic_ai.models.test import TestModel

    from memfs.integrations.pydantic_ai import MemfsConversationStore

    store = MemfsConversationStore(vault)
    agent = Agent(TestModel(custom_output_text="fine"))

    async def go() -> None:
        conversation = Conversation(conversation_id="main")
        for prompt in ("one", "two"):
            result = await agent.run(prompt, conversation=conversation)
            await store.save(result, scope="alice")
            conversation = result.conversation
        entries = await store.load_entries("main")
        assert entries is not None and len(entries) == 4
        fork = await store.fork("main", new_conversation_id="side", from_entry=entries[1].id)
        assert fork is not None
        side = await store.load("side")
        assert side is not None and len(side.messages) == 2
        await store.save(await agent.run("three", conversation=side))
        assert len((await store.load("side")).messages) == 4  # type: ignore[union-attr]
        assert len((await store.load("main")).messages) == 4  # type: ignore[union-attr]  # the fork shares, not changes
        assert {r.conversation_id for r in await store.read_records(scope="alice")} == {"main", "side"}
        assert await store.read_records(scope="bob") == []
        assert await store.load("main", scope="bob") is None
        stale = await MemfsConversationStore(vault).load("main")
        await store.save(await agent.run("four", conversation=conversation))
        with pytest.raises(ConversationConflict):
            await store.save(await agent.run("five", conversation=stale))  # type: ignore[arg-type]
        await store.delete("side")
        assert await store.load("side") is None and await store.load("main") is not None

    asyncio.run(go())
    assert vault.history.status() == []
