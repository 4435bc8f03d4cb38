"""LlamaIndex keeps chats and memory in a vault: MemfsChatStore under a real chat engine with
LlamaIndex's MockLLM, across processes; the chat store's contract; MemfsMemoryBlock in Memory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import run_script

import memfs

# LlamaIndex is imported by the tests that use it, not at collection (tests/conftest.py says why).


@pytest.fixture(scope="module", autouse=True)
def llama_index() -> Any:
    return pytest.importorskip("llama_index.core")


def _turn(vault_dir: Path, key: str, message: str) -> dict[str, Any]:
    return run_script("llama_index_turn.py", vault_dir, key, message)


@pytest.mark.slow
def test_a_chat_engine_goes_on_across_processes(vault_dir: Path) -> None:
    turns = [_turn(vault_dir, "alice", m) for m in ("I am Alice.", "I like window seats.", "Which seats?")]
    assert [t["count"] for t in turns] == [2, 4, 6]
    assert turns[-1]["history"][::2] == ["I am Alice.", "I like window seats.", "Which seats?"]
    assert _turn(vault_dir, "bob", "Hi")["count"] == 2
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        assert "\nI like window seats.\n" in (vault.root / "sessions/llama-index/alice.md").read_text()
        assert vault.history.status() == []


def test_chat_store_contract(vault: memfs.Vault) -> None:
    from llama_index.core.llms import ChatMessage, ImageBlock, TextBlock

    from memfs.integrations.llama_index import MemfsChatStore

    store = MemfsChatStore(vault)
    said = [ChatMessage(role="user", content=f"m{i}", additional_kwargs={"n": i}) for i in range(4)]
    store.set_messages("k", said)
    assert [m.content for m in store.get_messages("k")] == ["m0", "m1", "m2", "m3"]
    assert store.get_messages("k")[2].additional_kwargs == {"n": 2}
    before = len(vault.log())
    assert store.delete_message("k", 1).content == "m1"  # type: ignore[union-attr]
    assert [m.content for m in store.get_messages("k")] == ["m0", "m2", "m3"] and len(vault.log()) == before + 1
    assert store.delete_message("k", 9) is None
    assert store.delete_last_message("k").content == "m3"  # type: ignore[union-attr]
    rich = ChatMessage(role="user", blocks=[TextBlock(text="look"), ImageBlock(url="https://example.com/a.png")])
    store.add_message("k", rich)
    assert store.get_messages("k")[-1] == rich
    store.set_messages("other", [ChatMessage(role="assistant", content="hello")])
    assert store.get_keys() == ["k", "other"]
    assert [m.content for m in store.delete_messages("other") or []] == ["hello"]
    assert store.get_messages("other") == [] and store.delete_messages("other") is None
    assert asyncio.run(store.aget_messages("k"))[0].content == "m0"
    assert vault.history.status() == []


def test_memory_block_recalls_and_extracts(vault: memfs.Vault) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import Memory

    from memfs.extract import RuleExtractor
    from memfs.integrations.llama_index import MemfsMemoryBlock
    from memfs.longterm import LongTermMemory

    vault.memories("users/alice").add("Alice is allergic to peanuts.", title="Peanut allergy")
    long_term = LongTermMemory(vault, stores=["users/alice"], extractor=RuleExtractor(names={"user": "Alice"}))
    block = MemfsMemoryBlock(memory=long_term)

    async def go() -> list[ChatMessage]:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine("sqlite+aiosqlite:///:memory:")  # LlamaIndex's short-term memory
        try:
            memory = Memory.from_defaults(session_id="alice", memory_blocks=[block], token_limit=60,
                                          chat_history_token_ratio=0.5, token_flush_size=20,
                                          async_engine=engine)  # fmt: skip
            await memory.aput(ChatMessage(role="user", content="Any peanut dishes I should avoid tonight?"))
            shown = await memory.aget()
            for text in ("I prefer window seats on long flights.", "Noted.", "Anything else?", "No.") * 2:
                await memory.aput(ChatMessage(role="user" if text[0] in "IA" else "assistant", content=text))
            return shown
        finally:
            await engine.dispose()

    shown = asyncio.run(go())
    assert "Alice is allergic to peanuts." in json.dumps([m.content for m in shown])
    bodies = [m.body for m in vault.memories("users/alice").list()]
    assert "Alice prefers window seats on long flights.\n" in bodies  # flushed from short-term, extracted
