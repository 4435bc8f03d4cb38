"""memfs for Strands Agents: transcripts and managers, long-term memory stores, injection.

``MemfsConversationManager`` is a Strands ``ConversationManager``: it appends what the agent says
to a memfs transcript (the whole conversation, readable and versioned) and gives the agent the
managed view of a memfs manager (sliding window, token window, summarizing)::

    from strands import Agent
    from memfs import Vault
    from memfs.conversation import SlidingWindowConversationManager
    from memfs.integrations.strands import MemfsConversationManager

    session = Vault.open("~/agent-memory").session(keys={"user_id": "alice"})
    manager = MemfsConversationManager(session, SlidingWindowConversationManager(window_size=40))
    agent = Agent(model=..., conversation_manager=manager)

A new agent starts from the transcript's managed view, so a conversation continues across
processes. Strands' ``ContextWindowOverflowException`` is mapped onto memfs's
``ContextWindowOverflowError`` before the memfs manager sees it.

``MemfsMemoryStore`` makes a namespace of a vault a store of Strands' own ``MemoryManager``
(``search_memory`` / ``add_memory`` tools, injection, extraction); ``MemfsInjectionHook`` adds a
memfs ``LongTermMemory``'s block to the system prompt before each invocation.
"""

from __future__ import annotations

from typing import Any

try:
    from strands.agent.conversation_manager import ConversationManager as _StrandsManager
    from strands.hooks import AgentInitializedEvent, BeforeInvocationEvent, HookProvider, HookRegistry
    from strands.memory.types import MemoryEntry
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memfs.integrations.strands needs Strands Agents: pip install 'memfs-vault[strands]'") from exc

from ..conversation import ConversationManager, SlidingWindowConversationManager
from ..errors import ContextWindowOverflowError
from ..longterm import LongTermMemory
from ..sessions import MarkdownSession
from ..store import MemoryStore as _MemfsStore


class MemfsConversationManager(_StrandsManager):
    """A Strands conversation manager backed by a memfs transcript and a memfs manager.

    Args:
        session: The transcript that keeps the whole conversation.
        manager: The memfs manager that decides the view (default: the session's own, else a
            sliding window of 40 messages).
    """

    def __init__(self, session: MarkdownSession, manager: ConversationManager | None = None) -> None:
        super().__init__()
        self.session = session
        self.manager = manager or session.manager or SlidingWindowConversationManager(40)
        session.manager = self.manager
        self._shown = 0  # how many of agent.messages came from the view we last gave it

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Load the transcript's view into a new agent, besides Strands' own hooks."""
        super().register_hooks(registry, **kwargs)
        registry.add_callback(AgentInitializedEvent, self._on_initialized)

    def _on_initialized(self, event: Any) -> None:
        agent = event.agent
        if agent.messages:  # messages given to the agent: they start the transcript
            self.session.append(list(agent.messages))
        self._show(agent)

    def _show(self, agent: Any) -> None:
        view = self.session.items()
        agent.messages[:] = view
        self._shown = len(view)
        self.removed_message_count = self.manager.removed_message_count

    def _record_new(self, agent: Any) -> None:
        new = agent.messages[self._shown :]
        if new:
            self.session.append(list(new))  # runs the memfs manager's apply_management

    def apply_management(self, agent: Any, **kwargs: Any) -> None:
        """Append the turn's new messages to the transcript and give the agent the managed view."""
        self._record_new(agent)
        self._show(agent)

    def reduce_context(self, agent: Any, e: Exception | None = None, **kwargs: Any) -> None:
        """Free room through the memfs manager (its decision is written into the transcript)."""
        self._record_new(agent)
        try:
            self.session.reduce_context(ContextWindowOverflowError.from_exception(e) if e else None)
        except ContextWindowOverflowError:
            if e is not None:
                raise e from None
            return  # a proactive reduction is best effort
        finally:
            self._show(agent)

    def get_state(self) -> dict[str, Any]:
        """Strands' state plus the memfs manager's and the transcript's path."""
        return {**super().get_state(), "memfs": {**self.manager.get_state(), "transcript": self.session.path}}

    def restore_from_session(self, state: dict[str, Any]) -> list[Any] | None:
        """Rebuild the memfs manager from the transcript (the file is the truth, not ``state``)."""
        self.session.restore_manager()
        self.removed_message_count = self.manager.removed_message_count
        return None


# -- long-term memory ------------------------------------------------------------------------


class MemfsMemoryStore:
    """A namespace of a memfs vault as a store of Strands' own ``MemoryManager``.

    Strands' ``search_memory`` / ``add_memory`` tools, injection and extraction then read and write
    Markdown files, committed to git and searched with memfs's index.

    Args:
        store: The memfs store (``vault.memories("users/alice")``).
        name: The store's name in Strands' tools (default: the namespace).
        description: What the store holds, shown to the model.
        writable: Whether Strands may add to it.
        max_search_results: Default number of search results.
        extraction: Strands' extraction setting for a writable store (``True`` for its defaults).
    """

    def __init__(self, store: _MemfsStore, *, name: str | None = None, description: str | None = None,
                 writable: bool = True, max_search_results: int = 5, extraction: Any = None) -> None:  # fmt: skip
        self.store = store
        self.name = name or store.namespace.replace("/", "_")
        self.description = description or f"memories in {store.namespace}"
        self.writable = writable
        self.max_search_results = max_search_results
        self.extraction = extraction

    async def search(self, query: str, options: Any = None) -> list[MemoryEntry]:
        """Memories of the namespace for ``query``, best first."""
        k = (options or {}).get("max_search_results") or self.max_search_results
        entries = []
        for hit in self.store.search(query, k=k):
            text = " ".join(self.store.engine.read(hit.path).body.split())
            meta = {"path": hit.path, "id": hit.id, "title": hit.title, "updated": hit.updated, "score": hit.score}
            entries.append(MemoryEntry(content=text, metadata=meta))
        return entries

    async def add(self, content: str, metadata: dict[str, Any] | None = None) -> Any:
        """Store ``content`` as a memory, unless the namespace already says it.

        A repeat (Strands retries writes) or a restatement of a stored memory is not added twice:
        the stored one is kept, or takes the new words when they say more (``if_similar="update"``),
        and the answer says ``duplicate``.
        """
        if not self.writable:
            raise PermissionError(f"the memfs store {self.name!r} is read-only")
        near = {s.memory.path for s in self.store.similar(content)}
        reserved = ("id", "created", "updated")
        meta = {k: v for k, v in (metadata or {}).items() if isinstance(k, str) and k not in reserved}
        memory = self.store.add(content, metadata={"strands": meta} if meta else None, if_similar="update")
        if memory.path in near:
            return {"id": memory.id, "path": memory.path, "duplicate": True}
        return {"id": memory.id, "path": memory.path}


class MemfsInjectionHook(HookProvider):
    """Adds a memfs ``LongTermMemory``'s block to a Strands agent's system prompt before each invocation."""

    def __init__(self, memory: LongTermMemory, base_prompt: str | None = None) -> None:
        self.memory = memory
        self.base_prompt = base_prompt

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Run before every invocation."""
        registry.add_callback(BeforeInvocationEvent, self._before)

    def _before(self, event: Any) -> None:
        agent = event.agent
        if self.base_prompt is None:
            self.base_prompt = agent.system_prompt or ""
        messages = list(getattr(event, "messages", None) or []) or list(agent.messages)
        texts = [{"role": m.get("role"), "content": m.get("content")} for m in messages]
        block = self.memory.context_for(texts)
        agent.system_prompt = f"{self.base_prompt}\n\n{block}".strip() if block else self.base_prompt
