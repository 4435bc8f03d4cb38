"""memfs for LlamaIndex: a chat store over transcripts and a memory block over long-term memory.

``MemfsChatStore`` is a LlamaIndex ``BaseChatStore``: each key is a transcript,
``sessions/llama-index/<key>.md``, so ``ChatMemoryBuffer.from_defaults(chat_store=MemfsChatStore(vault),
chat_store_key="alice")`` keeps a chat engine's history readable and versioned, every change a commit.

``MemfsMemoryBlock`` is a ``BaseMemoryBlock`` for LlamaIndex's ``Memory``: ``aget`` gives the
memories relevant to the conversation (the block :class:`memfs.LongTermMemory` injects), ``aput``
(messages leaving the short-term memory) feeds its extraction, so what was said becomes memory
files::

    from llama_index.core.memory import Memory
    from memfs import LongTermMemory, Vault
    from memfs.integrations.llama_index import MemfsMemoryBlock

    memory = LongTermMemory(Vault.open("~/agent-memory"), stores=["users/alice"])
    Memory.from_defaults(session_id="alice", memory_blocks=[MemfsMemoryBlock(memory=memory)])
"""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.llms import ChatMessage, TextBlock
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.storage.chat_store.base import BaseChatStore
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memfs.integrations.llama_index needs LlamaIndex: pip install 'memfs-vault[llama-index]'"
    ) from exc

from ..longterm import LongTermMemory
from ..sessions import MarkdownSession, read_info, session_file

__all__ = ["MemfsChatStore", "MemfsMemoryBlock"]


class MemfsChatStore(BaseChatStore):
    """A LlamaIndex chat store whose keys are transcripts of a memfs vault.

    Args:
        vault: The vault.
        folder: The folder under ``sessions/`` (default ``llama-index``).
    """

    folder: str = Field(default="llama-index", description="The folder of sessions/ the transcripts are in.")
    _vault: Any = PrivateAttr()

    def __init__(self, vault: Any, *, folder: str = "llama-index") -> None:
        super().__init__(folder=folder.strip("/"))  # type: ignore[call-arg]
        self._vault = vault

    @classmethod
    def class_name(cls) -> str:
        """The store's name in LlamaIndex's serialization."""
        return "MemfsChatStore"

    def _session(self, key: str, *, commit: str = "turn") -> MarkdownSession:
        return MarkdownSession(self._vault.engine, key, folder=self.folder, commit=commit)

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the key's messages (one commit; the old ones stay in git's history)."""
        session = self._session(key, commit="manual")
        with self._vault.engine.locked():
            session.clear()
            session.append([_item(m) for m in messages])
            session.commit()

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Every message of the key, in order."""
        return [_message(item) for item in self._session(key).history(-1)]

    def add_message(self, key: str, message: ChatMessage) -> None:
        """Append a message (one commit)."""
        self._session(key).append([_item(message)])

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Remove every message of the key; returns them (None if it had none)."""
        session = self._session(key)
        with self._vault.engine.locked():
            found = self.get_messages(key)
            if not found:
                return None
            session.clear()
        return found

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Remove the message at ``idx`` (one commit); None if there is none."""
        session = self._session(key, commit="manual")
        with self._vault.engine.locked():
            items = session.history(-1)
            if not 0 <= idx < len(items):
                return None
            later = [session.pop() for _ in range(len(items) - idx)][::-1]
            session.append([item for item in later[1:] if item is not None])
            session.commit()
        return _message(items[idx])

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Remove the last message (one commit); None if there is none."""
        item = self._session(key).pop()
        return None if item is None else _message(item)

    def get_keys(self) -> list[str]:
        """Every key with a transcript in the folder."""
        prefix = session_file("x", self.folder).rsplit("/", 1)[0] + "/"
        keys = []
        for rel in self._vault.engine.catalog.files(prefix):
            if "/" not in rel[len(prefix) :]:
                info = read_info(self._vault.root, rel)
                if info is not None:
                    keys.append(info.session_id)
        return sorted(keys)


class MemfsMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block: memfs's relevant memories in, extraction of what was said out.

    Args:
        memory: The :class:`memfs.LongTermMemory` to read from and extract into.
        name: The block's name in LlamaIndex's template (default ``memfs``).
    """

    memory: Any = Field(description="The memfs LongTermMemory behind the block.")

    def __init__(self, *, memory: LongTermMemory, name: str = "memfs", **options: Any) -> None:
        super().__init__(name=name, memory=memory, **options)  # type: ignore[call-arg]

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        items = [_plain(m) for m in messages or []]
        return str(await asyncio.to_thread(self.memory.context_for, items)) if items else ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        items = [_plain(m) for m in messages]

        def extract() -> None:
            self.memory.observe(items)
            self.memory.extract_now()

        if items:
            await asyncio.to_thread(extract)


def _plain(message: ChatMessage) -> dict[str, Any]:
    return {"role": str(message.role.value), "content": message.content or ""}


def _item(message: ChatMessage) -> dict[str, Any]:
    """A transcript item of a message: its text as Markdown when it is only text, else the whole message."""
    if all(isinstance(block, TextBlock) for block in message.blocks) and len(message.blocks) <= 1:
        item: dict[str, Any] = {"role": str(message.role.value), "content": message.content or ""}
        if message.additional_kwargs:
            item["additional_kwargs"] = message.model_dump(mode="json")["additional_kwargs"]
        return item
    return {"role": str(message.role.value), "llama_index": message.model_dump(mode="json")}


def _message(item: dict[str, Any]) -> ChatMessage:
    if isinstance(item.get("llama_index"), dict):
        return ChatMessage.model_validate(item["llama_index"])
    content = item.get("content")
    return ChatMessage(
        role=item.get("role", "user"),
        content=content if isinstance(content, str) else str(content),
        additional_kwargs=item.get("additional_kwargs") or {},
    )
