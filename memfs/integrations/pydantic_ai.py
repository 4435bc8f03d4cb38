"""memfs as Pydantic AI's conversation store: each conversation a transcript in a vault.

``MemfsConversationStore`` is a Pydantic AI ``ConversationStore``::

    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from memfs import Vault
    from memfs.integrations.pydantic_ai import MemfsConversationStore

    store = MemfsConversationStore(Vault.open("~/agent-memory"))
    conversation = await store.load("chat-42") or Conversation(conversation_id="chat-42")
    result = await agent.run("Where was I flying?", conversation=conversation)
    await store.save(result)

A conversation's messages are the entries of a transcript, ``sessions/pydantic-ai/<id>.md``, in
the order they were stored (a message with one text shows it as Markdown, which a person may
edit); each entry names the one before it, so branches and forks keep Pydantic AI's shape. The
conversation's record (where its history ends, its usage, a paused run's tool requests, its scope,
its revision) is the front matter of ``sessions/pydantic-ai/records/<id>.md``. A save is one
commit. With ``memory=`` (a :class:`memfs.LongTermMemory`), every message saved also feeds its
extraction, so facts said in conversation become memory files.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

try:
    from pydantic import TypeAdapter
    from pydantic_ai.conversation_store import (
        ConversationConflict,
        ConversationEntry,
        ConversationRecord,
        ConversationStore,
    )
    from pydantic_ai.messages import ModelMessagesTypeAdapter
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memfs.integrations.pydantic_ai needs Pydantic AI: pip install 'memfs-vault[pydantic-ai]'"
    ) from exc

from .. import transcript
from ..errors import DocumentError, MemoryNotFoundError
from ..sessions import MarkdownSession, session_file

if TYPE_CHECKING:
    from ..longterm import LongTermMemory
    from ..vault import Vault

__all__ = ["MemfsConversationStore"]

_RECORD = TypeAdapter(ConversationRecord)
_TEXT_PARTS = ("user-prompt", "text")


class MemfsConversationStore(ConversationStore):
    """A Pydantic AI ``ConversationStore`` keeping conversations as transcripts in a memfs vault.

    Args:
        vault: The vault.
        folder: The folder under ``sessions/`` (default ``pydantic-ai``).
        memory: A :class:`memfs.LongTermMemory` whose extraction every saved message feeds.
    """

    def __init__(self, vault: Vault, *, folder: str = "pydantic-ai", memory: LongTermMemory | None = None) -> None:
        self.vault = vault
        self.folder = folder.strip("/")
        self.memory = memory
        self._lock = threading.Lock()
        self._entries: dict[str, ConversationEntry] = {}  # every entry read so far, by id
        self._read_files: set[str] = set()

    # -- the five primitives --------------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The record of a conversation, or None."""
        return await asyncio.to_thread(self._read_record_sync, conversation_id)

    async def read_records(self, *, scope: str | None = None, limit: int | None = None) -> Sequence[ConversationRecord]:
        """The records (of ``scope``), newest first, at most ``limit``."""

        def read() -> list[ConversationRecord]:
            prefix = session_file("x", f"{self.folder}/records").rsplit("/", 1)[0] + "/"
            records = []
            for rel in self.vault.engine.catalog.files(prefix):
                record = self._record_at(rel)
                if record is not None and (scope is None or record.scope == scope):
                    records.append(record)
            records.sort(key=lambda r: r.updated_at, reverse=True)
            return records[:limit]

        return await asyncio.to_thread(read)

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Append the new entries to the conversation's transcript and replace its record: one commit."""
        await asyncio.to_thread(self._write, record, list(new_entries), expected_revision)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete the record, and the transcript unless a fork of it still points into it; one commit."""
        await asyncio.to_thread(self._delete, conversation_id, expected_revision)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """The entry with this id (KeyError if no transcript holds it)."""
        return await asyncio.to_thread(self._entry, entry_id)

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        """The entries up to ``head_id``, oldest first (the last ``limit``), read in one pass per transcript."""

        def walk() -> list[ConversationEntry]:
            entries: list[ConversationEntry] = []
            entry_id = head_id
            while entry_id is not None and (limit is None or len(entries) < limit):
                entry = self._entry(entry_id)
                entries.append(entry)
                entry_id = entry.parent_id
            entries.reverse()
            return entries

        return await asyncio.to_thread(walk)

    # -- the synchronous core ---------------------------------------------------------------

    def _messages(self, conversation_id: str, *, commit: str = "turn") -> MarkdownSession:
        return MarkdownSession(self.vault.engine, conversation_id, folder=self.folder, commit=commit)

    def _record_path(self, conversation_id: str) -> str:
        return session_file(conversation_id, f"{self.folder}/records")

    def _read_record_sync(self, conversation_id: str) -> ConversationRecord | None:
        return self._record_at(self._record_path(conversation_id))

    def _record_at(self, rel: str) -> ConversationRecord | None:
        try:
            parsed = transcript.parse(self.vault.read_bytes(rel), path=rel)
        except (MemoryNotFoundError, DocumentError):
            return None
        data = parsed.metadata.get("pydantic_ai")
        return _RECORD.validate_python(data) if isinstance(data, dict) else None

    def _write(self, record: ConversationRecord, new: list[ConversationEntry], expected: str | None) -> None:
        engine = self.vault.engine
        with engine.locked():
            stored = self._read_record_sync(record.conversation_id)
            if (stored.revision if stored is not None else None) != expected:
                raise ConversationConflict(record.conversation_id)
            new_ids = {entry.id for entry in new}
            if record.head_id is not None and record.head_id not in new_ids and not self._has(record.head_id):
                raise ConversationConflict(record.conversation_id)
            messages = self._messages(record.conversation_id, commit="manual")
            items = [_item(entry) for entry in new]
            if items:
                messages.append(items)
            data = _RECORD.dump_python(record, mode="json")
            meta = {"session_id": record.conversation_id, "pydantic_ai": data}
            rel = self._record_path(record.conversation_id)
            engine.appends.replace(rel, transcript.new_head(meta).encode("utf-8"))
            count = f"+{len(items)} message{'s' if len(items) != 1 else ''}"
            engine.commit(
                [messages.path, rel],
                f"session: {record.conversation_id} {count}",
                {"Memfs-Op": "session", "Memfs-Session": record.conversation_id},
            )
            with self._lock:
                for entry in new:
                    self._entries[entry.id] = entry
        if self.memory is not None and items:
            self.memory.observe([_plain(item) for item in items], session=messages)

    def _delete(self, conversation_id: str, expected: str) -> None:
        engine = self.vault.engine
        with engine.locked():
            stored = self._read_record_sync(conversation_id)
            if stored is None or stored.revision != expected:
                raise ConversationConflict(conversation_id)
            paths = [self._record_path(conversation_id)]
            others = [r for r in self._all_records() if r.conversation_id != conversation_id]
            if not any(r.forked_from == conversation_id for r in others):
                paths.append(self._messages(conversation_id).path)
            with engine.batch(f"session: {conversation_id} deleted", trailers={"Memfs-Op": "delete"}):
                for rel in paths:
                    if (engine.root / rel).exists():
                        engine.delete(rel, message=f"session: delete {rel}")

    def _all_records(self) -> list[ConversationRecord]:
        prefix = self._record_path("x").rsplit("/", 1)[0] + "/"
        return [r for rel in self.vault.engine.catalog.files(prefix) if (r := self._record_at(rel)) is not None]

    def _has(self, entry_id: str) -> bool:
        try:
            self._entry(entry_id)
        except KeyError:
            return False
        return True

    def _entry(self, entry_id: str) -> ConversationEntry:
        with self._lock:
            found = self._entries.get(entry_id)
        if found is not None:
            return found
        self._scan()
        with self._lock:
            if entry_id not in self._entries:
                raise KeyError(entry_id)
            return self._entries[entry_id]

    def _scan(self) -> None:
        """Read every transcript of the folder into the cache of entries (a restart, a fork into another)."""
        prefix = session_file("x", self.folder).rsplit("/", 1)[0] + "/"
        found: dict[str, ConversationEntry] = {}
        for rel in self.vault.engine.catalog.files(prefix):
            if "/" in rel[len(prefix) :]:
                continue  # the records, and other folders
            try:
                items = transcript.items(self.vault.read_bytes(rel))
            except (MemoryNotFoundError, DocumentError):
                continue
            for item in items:
                entry = _entry(item)
                if entry is not None:
                    found[entry.id] = entry
        with self._lock:
            self._entries.update(found)


def _item(entry: ConversationEntry) -> dict[str, Any]:
    """A transcript item of an entry: its one text as the body a person reads (and may edit), the rest kept whole."""
    message = json.loads(ModelMessagesTypeAdapter.dump_json([entry.message]))[0]
    parts = message.get("parts") or []
    texts = [
        i
        for i, part in enumerate(parts)
        if part.get("part_kind") in _TEXT_PARTS and isinstance(part.get("content"), str)
    ]
    item: dict[str, Any] = {"role": "user" if message.get("kind") == "request" else "assistant"}
    meta: dict[str, Any] = {"entry_id": entry.id, "parent_id": entry.parent_id, "kind": entry.kind}
    if len(texts) == 1:
        item["content"] = parts[texts[0]]["content"]
        parts[texts[0]]["content"] = None
        meta["text_at"] = texts[0]
    item["pydantic_ai"] = {**meta, "message": message}
    return item


def _entry(item: Any) -> ConversationEntry | None:
    meta = item.get("pydantic_ai") if isinstance(item, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("message"), dict):
        return None
    message = json.loads(json.dumps(meta["message"]))
    if isinstance(meta.get("text_at"), int):
        message["parts"][meta["text_at"]]["content"] = item.get("content", "")
    parsed = ModelMessagesTypeAdapter.validate_python([message])[0]
    return ConversationEntry(id=str(meta["entry_id"]), parent_id=meta.get("parent_id"), message=parsed)


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {"role": item["role"], "content": item.get("content", "")}
