"""memfs as the memory service of Google's Agent Development Kit (ADK).

``MemfsMemoryService`` is an ADK ``BaseMemoryService``: give it to a ``Runner``
(``memory_service=MemfsMemoryService(vault)``) and ADK's ``load_memory`` / ``preload_memory``
tools search a vault::

    from google.adk.runners import Runner
    from memfs import Vault
    from memfs.integrations.adk import MemfsMemoryService

    memory = MemfsMemoryService(Vault.open("~/agent-memory"))
    runner = Runner(app_name="trips", agent=agent, session_service=sessions, memory_service=memory)
    ...
    await memory.add_session_to_memory(session)   # the transcript kept, facts extracted

``add_session_to_memory`` (and ``add_events_to_memory``) append the session's text events to a
transcript, ``sessions/<app>/<user>/<session>.md`` (each event once, however often a session is
added), and run memfs's extraction over the new ones: the facts become memory files in the
namespace ``<app>/<user>`` (``namespace=`` changes it), a near-duplicate updated rather than added.
``search_memory`` is memfs's ranked search of that namespace; ``add_memory`` and
``delete_memory`` write and delete memory files.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

try:
    from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memfs.integrations.adk needs Google ADK: pip install 'memfs-vault[adk]'") from exc

from ..errors import MemoryNotFoundError
from ..extract import Extractor, RuleExtractor
from ..layout import MEMORIES_DIR
from ..longterm import LongTermMemory
from ..paths import clean_namespace
from ..sessions import MarkdownSession

if TYPE_CHECKING:
    from ..vault import Vault

__all__ = ["MemfsMemoryService"]


class MemfsMemoryService(BaseMemoryService):
    """An ADK memory service over a memfs vault: transcripts, extraction, search.

    Args:
        vault: The vault.
        namespace: The memory namespace of an app's user, a template over ``app_name`` and
            ``user_id`` (default ``"{app_name}/{user_id}"``).
        extractor: What turns conversation into memories (default: :class:`memfs.RuleExtractor`
            with the user named by their ``user_id``; a :class:`memfs.ModelExtractor` asks a model).
        k: How many memories a search returns at most.
    """

    def __init__(
        self, vault: Vault, *, namespace: str = "{app_name}/{user_id}", extractor: Extractor | None = None, k: int = 10
    ) -> None:
        self.vault = vault
        self.namespace = namespace
        self.extractor = extractor
        self.k = k

    def namespace_of(self, app_name: str, user_id: str) -> str:
        """The memory namespace of an app's user (checked as any outside path)."""
        return clean_namespace(self.namespace.format(app_name=app_name, user_id=user_id))

    async def add_session_to_memory(self, session: Any) -> None:
        """Keep the session's new text events in its transcript and extract memories from them."""
        await asyncio.to_thread(self._add, session.app_name, session.user_id, session.id, list(session.events))

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Any],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """As :meth:`add_session_to_memory`, for some events of a session (``session_id``, else ``adk-events``)."""
        await asyncio.to_thread(self._add, app_name, user_id, session_id or "adk-events", list(events))

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Write each entry's text as a memory file (a near-duplicate is updated, not added)."""

        def add() -> None:
            store = self.vault.memories(self.namespace_of(app_name, user_id), writer="agent")
            for entry in memories:
                text = _text(entry.content)
                if text.strip():
                    extra = {**dict(custom_metadata or {}), **entry.custom_metadata}
                    meta = {"adk": {k: v for k, v in extra.items() if isinstance(k, str)}} if extra else None
                    store.add(text, metadata=meta, if_similar="update")

        await asyncio.to_thread(add)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories most relevant to ``query``, best first."""

        def search() -> list[MemoryEntry]:
            store = self.vault.memories(self.namespace_of(app_name, user_id))
            found = []
            for hit in store.search(query, k=self.k):
                try:
                    memory = store.get(hit.id or hit.path.removeprefix(f"{MEMORIES_DIR}/{store.namespace}/"))
                except MemoryNotFoundError:
                    continue
                found.append(
                    MemoryEntry(
                        content=types.Content(role="user", parts=[types.Part(text=memory.body.strip())]),
                        id=memory.id,
                        author=str(memory.metadata.get("provenance") or "memfs"),
                        timestamp=memory.updated,
                        custom_metadata={"path": hit.path, "title": memory.title, "score": hit.score},
                    )
                )
            return found

        return SearchMemoryResponse(memories=await asyncio.to_thread(search))

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Delete the memory with this id (from ``MemoryEntry.id``); a commit a person can undo."""
        if not memory_id:
            raise ValueError("delete_memory needs the memory_id a search returned")
        store = self.vault.memories(self.namespace_of(app_name, user_id), writer="agent")
        await asyncio.to_thread(store.delete, memory_id)

    # -- the synchronous core ------------------------------------------------------------

    def _add(self, app_name: str, user_id: str, session_id: str, events: list[Any]) -> None:
        namespace = self.namespace_of(app_name, user_id)
        transcript = MarkdownSession(
            self.vault.engine, session_id, folder=namespace, keys={"app_name": app_name, "user_id": user_id}
        )
        recorded = {_event_id(item) for item in transcript.history(-1)} - {None}
        items = [_item(event) for event in events if getattr(event, "id", None) not in recorded]
        items = [item for item in items if item["content"].strip()]
        if not items:
            return
        transcript.append(items)
        extractor = self.extractor or RuleExtractor(names={"user": user_id})
        memory = LongTermMemory(self.vault, stores=[namespace], extractor=extractor)
        memory.observe(items, session=transcript)
        memory.end_session()


def _text(content: Any) -> str:
    parts = getattr(content, "parts", None) or []
    return "\n".join(part.text for part in parts if getattr(part, "text", None) and not getattr(part, "thought", False))


def _item(event: Any) -> dict[str, Any]:
    """A transcript item of an ADK event: its text, who said it, and its id (so it is kept once)."""
    content = getattr(event, "content", None)
    role = getattr(content, "role", None) or ("user" if event.author == "user" else "assistant")
    return {
        "role": "user" if role == "user" else "assistant",
        "content": _text(content),
        "adk": {"event_id": event.id, "author": event.author, "invocation_id": event.invocation_id},
    }


def _event_id(item: Any) -> str | None:
    meta = item.get("adk") if isinstance(item, dict) else None
    return str(meta["event_id"]) if isinstance(meta, dict) and meta.get("event_id") else None
