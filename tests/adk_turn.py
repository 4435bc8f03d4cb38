"""One ADK run over a MemfsMemoryService, in a process of its own (a restart).

    python tests/adk_turn.py VAULT tell|ask TEXT

``tell``: the user says TEXT, the model answers, the session is added to memory twice (ADK may add
a session more than once). ``ask``: the user asks TEXT, the model calls ``load_memory`` with it,
then answers. Prints what the model was sent last, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory
from google.genai import types
from pydantic import Field

import memfs
from memfs.integrations.adk import MemfsMemoryService


class Scripted(BaseLlm):
    """Replies with the given contents in turn, and keeps every request."""

    model: str = "scripted"
    replies: list[Any] = Field(default_factory=list)
    requests: list[Any] = Field(default_factory=list)

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        self.requests.append(llm_request)
        yield LlmResponse(content=self.replies.pop(0))


def text(role: str, words: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=words)])


async def main(vault_dir: str, mode: str, words: str) -> None:
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        if mode == "tell":
            replies = [text("model", "Noted.")]
        else:
            call = types.FunctionCall(name="load_memory", args={"query": words})
            replies = [types.Content(role="model", parts=[types.Part(function_call=call)]), text("model", "Done.")]
        model = Scripted(replies=replies)
        agent = LlmAgent(name="planner", model=model, instruction="Help with trips.", tools=[load_memory])
        sessions = InMemorySessionService()
        memory = MemfsMemoryService(vault)
        runner = Runner(app_name="trips", agent=agent, session_service=sessions, memory_service=memory)
        session = await sessions.create_session(app_name="trips", user_id="alice")
        async for _ in runner.run_async(user_id="alice", session_id=session.id, new_message=text("user", words)):
            pass
        session = await sessions.get_session(app_name="trips", user_id="alice", session_id=session.id)
        await memory.add_session_to_memory(session)
        await memory.add_session_to_memory(session)  # again: nothing is added twice
        contents = [c.model_dump(mode="json", exclude_none=True) for c in model.requests[-1].contents]
        sys.stdout.write(json.dumps({"sent": contents}) + "\n")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
