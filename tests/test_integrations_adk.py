"""Google ADK keeps its memory in a vault: MemfsMemoryService under a real Runner with a scripted
model, across processes, and the rest of the BaseMemoryService contract."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import run_script

import memfs

# ADK is imported by the tests that use it, not at collection (tests/conftest.py says why).


@pytest.fixture(scope="module", autouse=True)
def adk() -> Any:
    return pytest.importorskip("google.adk")


def _run(vault_dir: Path, mode: str, words: str) -> str:
    return json.dumps(run_script("adk_turn.py", vault_dir, mode, words)["sent"])


@pytest.mark.slow
def test_a_runner_remembers_what_a_user_said_in_another_process(vault_dir: Path) -> None:
    _run(vault_dir, "tell", "I prefer window seats on long flights.")
    _run(vault_dir, "tell", "I am allergic to peanuts.")
    sent = _run(vault_dir, "ask", "window seats")
    assert "alice prefers window seats on long flights." in sent.lower()  # load_memory found it
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        bodies = sorted(m.body for m in vault.memories("trips/alice").list())
        assert len(bodies) == 2 and "window seats" in bodies[1] and "peanuts" in bodies[0]  # each once
        transcripts = vault.sessions(app_name="trips", user_id="alice")
        assert len(transcripts) == 3
        for info in transcripts:  # each session's events once, though it was added twice
            history = vault.session(info.session_id, folder="trips/alice").history(-1)
            assert len(history) == len({item["adk"]["event_id"] for item in history})
        assert vault.history.status() == []


def test_add_search_and_delete_memories(vault: memfs.Vault) -> None:
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from memfs.integrations.adk import MemfsMemoryService

    service = MemfsMemoryService(vault, namespace="users/{user_id}")

    def entry(text: str) -> MemoryEntry:
        return MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=text)]),
                           custom_metadata={"source": "test"})  # fmt: skip

    async def go() -> None:
        await service.add_memory(app_name="a", user_id="bob", memories=[entry("Bob drinks green tea."),
                                                                        entry("Bob lives in Porto.")])  # fmt: skip
        await service.add_memory(app_name="a", user_id="bob", memories=[entry("Bob drinks green tea.")])  # a repeat
        found = await service.search_memory(app_name="a", user_id="bob", query="green tea")
        assert [m.content.parts[0].text for m in found.memories] == ["Bob drinks green tea."]
        assert found.memories[0].id and found.memories[0].custom_metadata["path"].startswith("memories/users/bob/")
        assert (await service.search_memory(app_name="a", user_id="carol", query="green tea")).memories == []
        await service.delete_memory(app_name="a", user_id="bob", memory_id=found.memories[0].id)
        assert (await service.search_memory(app_name="a", user_id="bob", query="green tea")).memories == []
        with pytest.raises(memfs.errors.PathError):
            await service.search_memory(app_name="a", user_id="../etc", query="x")

    asyncio.run(go())
    assert len(vault.memories("users/bob").list()) == 1 and vault.history.status() == []
