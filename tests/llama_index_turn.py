"""One turn of a LlamaIndex chat engine whose memory is kept by MemfsChatStore, in a process of its own.

    python tests/llama_index_turn.py VAULT KEY MESSAGE

Prints how many messages the key holds after the turn, and what the LLM (LlamaIndex's MockLLM) was
sent, as JSON.
"""

from __future__ import annotations

import json
import sys

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer

import memfs
from memfs.integrations.llama_index import MemfsChatStore


def main(vault_dir: str, key: str, message: str) -> None:
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        store = MemfsChatStore(vault)
        memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key=key, token_limit=100_000)
        engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
        engine.chat(message)
        sent = [m.content for m in memory.get_all()]
        sys.stdout.write(json.dumps({"count": len(store.get_messages(key)), "history": sent}) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
