"""One turn of a Pydantic AI agent whose conversation lives in a MemfsConversationStore, in its own process.

    python tests/pydantic_ai_turn.py VAULT CONVERSATION PROMPT

The model (Pydantic AI's FunctionModel) answers with how many messages it was sent. Prints that
answer and the number of messages of the conversation after the run, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import memfs
from memfs.integrations.pydantic_ai import MemfsConversationStore


def answer(messages: list[Any], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(f"you sent {len(messages)} messages")])


async def main(vault_dir: str, conversation_id: str, prompt: str) -> None:
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        store = MemfsConversationStore(vault)
        agent = Agent(FunctionModel(answer))
        conversation = await store.load(conversation_id) or Conversation(conversation_id=conversation_id)
        result = await agent.run(prompt, conversation=conversation)
        await store.save(result)
        sys.stdout.write(json.dumps({"answer": result.output, "messages": len(result.all_messages())}) + "\n")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
