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

import asyncio
import json
import os
from typing import Any

try:
    from strands.agent.conversation_manager import ConversationManager as _StrandsManager
    from strands.hooks import AgentInitializedEvent, BeforeInvocationEvent, HookProvider, HookRegistry
    from strands.memory.types import MemoryEntry
    from strands.session.session_repository import SessionRepository
    from strands.tools.tools import PythonAgentTool
    from strands.types.exceptions import SessionException
    from strands.types.session import Session, SessionAgent, SessionMessage, decode_bytes_values
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memfs.integrations.strands needs Strands Agents: pip install 'memfs-vault[strands]'") from exc

from .. import transcript
from ..conversation import ConversationManager, SlidingWindowConversationManager
from ..credentials import redact_value
from ..errors import ContextWindowOverflowError, MemfsError
from ..extract import Extractor, RuleExtractor
from ..longterm import LongTermMemory
from ..paths import clean_relpath
from ..sessions import _SAFE_ID, MarkdownSession, session_file
from ..store import MemoryStore as _MemfsStore
from ..tools import MemoryTools
from ..vault import Vault


class MemfsConversationManager(_StrandsManager):
    """A Strands conversation manager backed by a memfs transcript and a memfs manager.

    The transcript holds every message once. Messages an agent starts with (``Agent(messages=...)``,
    or what a Strands session manager restored) that the transcript already holds are not appended
    again, so memfs can sit beside ``FileSessionManager`` or a seed passed on every restart.
    Messages Strands pins (``metadata.custom.pinned``) stay in the agent's view when the memfs
    manager's window or summary leaves them out, as Strands' own managers keep them.

    Args:
        session: The transcript that keeps the whole conversation.
        manager: The memfs manager that decides the view (default: the session's own, else a
            sliding window of 40 messages).
        proactive_compression: Strands' setting (``True`` or ``{"compression_threshold": 0.8}``):
            before a model call that would fill that share of the context window, the memfs
            manager is asked to free room (best effort; its decision is written into the transcript).
    """

    def __init__(
        self, session: MarkdownSession, manager: ConversationManager | None = None, *, proactive_compression: Any = None
    ) -> None:
        super().__init__(proactive_compression=proactive_compression)
        self.session = session
        self.manager = manager or session.manager or SlidingWindowConversationManager(40)
        session.manager = self.manager
        self._shown = 0  # how many of agent.messages came from the view we last gave it
        self._pinned: list[dict[str, Any]] = []  # pinned messages, kept in view whatever the manager decides

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Load the transcript's view into a new agent, besides Strands' own hooks."""
        super().register_hooks(registry, **kwargs)
        registry.add_callback(AgentInitializedEvent, self._on_initialized)

    def _on_initialized(self, event: Any) -> None:
        agent = event.agent
        history = self._history_if(bool(agent.messages))
        if agent.messages:  # a seed, or what a session manager restored: only what the transcript lacks
            new = unrecorded(list(agent.messages), history or [])
            if new:
                self.session.append(new)
                history = (history or []) + [dict(m) for m in new]
        self._pin(history or [])
        self._show(agent)

    def _history_if(self, given: bool) -> list[dict[str, Any]] | None:
        """The whole history when it is needed: messages were given, or the transcript pins some."""
        if given:
            return self.session.history(-1)
        if not self.session.file.exists():
            return None
        try:
            data = self.session.engine.read_bytes(self.session.path)
        except MemfsError:  # too large to read at once: parse it
            return self.session.history(-1)
        return self.session.history(-1) if b'"pinned"' in data else None

    def _pin(self, messages: list[dict[str, Any]]) -> None:
        """Remember the pinned messages among ``messages`` (and forget those unpinned since)."""
        known = {_identity(m) for m in self._pinned}
        for i in range(len(messages)):
            if is_pinned(messages, i) and _identity(messages[i]) not in known:
                self._pinned.append(messages[i])
                known.add(_identity(messages[i]))
        self._pinned = [m for i, m in enumerate(self._pinned) if is_pinned(self._pinned, i)]

    def _show(self, agent: Any) -> None:
        view = self.session.items()
        seen = {_identity(m) for m in view}
        agent.messages[:] = [m for m in self._pinned if _identity(m) not in seen] + view
        self._shown = len(agent.messages)
        self.removed_message_count = self.manager.removed_message_count

    def _record_new(self, agent: Any) -> None:
        self._pin(list(agent.messages))  # a message pinned since the last turn is kept from now on
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
        """Strands' state plus the memfs manager's, the transcript's path and the pinned messages."""
        memfs_state = {**self.manager.get_state(), "transcript": self.session.path, "pinned": list(self._pinned)}
        return {**super().get_state(), "memfs": memfs_state}

    def restore_from_session(self, state: dict[str, Any]) -> list[Any] | None:
        """Rebuild the memfs manager from the transcript (the file is the truth, not ``state``).

        Messages pinned after the transcript recorded them are taken from ``state``.
        """
        self.session.restore_manager()
        self.removed_message_count = self.manager.removed_message_count
        pinned = (state.get("memfs") or {}).get("pinned") if isinstance(state, dict) else None
        if isinstance(pinned, list):
            self._pin([m for m in pinned if isinstance(m, dict)])
        return None


def unrecorded(messages: list[Any], history: list[dict[str, Any]]) -> list[Any]:
    """The messages of ``messages`` that ``history`` (a transcript's items) does not hold yet.

    A message whose Strands ``tracking_id`` the history holds is recorded. Of the rest, the
    longest leading run found, in order, somewhere in the history (a seed passed again on a
    restart: Strands gives it new tracking ids) is recorded too. Messages are compared as the
    transcript stores them (credentials redacted, without their tracking id).
    """
    ids = {m.get("tracking_id") for m in history if isinstance(m, dict)} - {None}
    rest = [m for m in messages if not (isinstance(m, dict) and m.get("tracking_id") in ids)]
    if not rest:
        return []
    stored = [_content_key(m) for m in history]
    wanted = [_content_key(m) for m in rest]
    best = 0
    for start in range(len(stored)):
        run = 0
        while run < len(wanted) and start + run < len(stored) and stored[start + run] == wanted[run]:
            run += 1
        best = max(best, run)
        if best == len(wanted):
            break
    return rest[best:]


def is_pinned(messages: list[dict[str, Any]], index: int) -> bool:
    """Whether Strands keeps ``messages[index]``: pinned itself, or the tool-pair partner of a pinned neighbour."""
    if _has_pin(messages[index]):
        return True
    ids = _tool_ids(messages[index])
    neighbours = [messages[j] for j in (index - 1, index + 1) if 0 <= j < len(messages)]
    return bool(ids) and any(_has_pin(m) and ids & _tool_ids(m) for m in neighbours)


def _has_pin(message: Any) -> bool:
    metadata = message.get("metadata") if isinstance(message, dict) else None
    custom = metadata.get("custom") if isinstance(metadata, dict) else None
    return isinstance(custom, dict) and custom.get("pinned") is True


def _tool_ids(message: Any) -> set[str]:
    ids: set[str] = set()
    for block in message.get("content") or [] if isinstance(message, dict) else []:
        for key in ("toolUse", "toolResult"):
            if isinstance(block, dict) and isinstance(block.get(key), dict) and block[key].get("toolUseId"):
                ids.add(str(block[key]["toolUseId"]))
    return ids


def _content_key(message: Any) -> str:
    if not isinstance(message, dict):
        return json.dumps(message, sort_keys=True, default=str)
    plain = {k: v for k, v in message.items() if k not in ("tracking_id", "metadata")}
    return json.dumps(redact_value(json.loads(json.dumps(plain, default=str))), sort_keys=True)


def _identity(message: Any) -> str:
    # not the tracking id: Strands gives a message one when it first sends it, after the transcript recorded it
    return _content_key(message)


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
        extraction: Strands' extraction setting for a writable store (``True`` for its defaults):
            Strands then hands the conversation to :meth:`add_messages`.
        extractor: What :meth:`add_messages` extracts with (default :class:`memfs.RuleExtractor`;
            a :class:`memfs.ModelExtractor` asks a model).
    """

    def __init__(
        self,
        store: _MemfsStore,
        *,
        name: str | None = None,
        description: str | None = None,
        writable: bool = True,
        max_search_results: int = 5,
        extraction: Any = None,
        extractor: Extractor | None = None,
    ) -> None:
        self.store = store
        self.extractor = extractor
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

    async def add_messages(self, messages: list[Any], context: Any = None) -> Any:
        """Extract memories from a batch of conversation messages (Strands' extraction without a model).

        With ``extraction`` set, Strands hands a writable store's messages here instead of calling
        its own model: memfs's extractor (``extractor=``, default :class:`memfs.RuleExtractor`)
        turns what the user said into memory files of the namespace, a near-duplicate updated
        rather than added. Returns how many memories the namespace gained or changed.
        """
        if not self.writable:
            raise PermissionError(f"the memfs store {self.name!r} is read-only")
        items = [
            {
                "role": m.get("role", ""),
                "content": " ".join(
                    b["text"] for b in m.get("content") or [] if isinstance(b, dict) and isinstance(b.get("text"), str)
                ),
            }
            for m in messages
            if isinstance(m, dict)
        ]

        def extract() -> dict[str, int]:
            before = {m.path: m.updated for m in self.store.list()}
            extractor = self.extractor or RuleExtractor()
            memory = LongTermMemory(Vault(self.store.engine), stores=[self.store.namespace], extractor=extractor)
            memory.observe([i for i in items if i["content"].strip()])
            memory.extract_now()
            after = {m.path: m.updated for m in self.store.list()}
            return {"stored": sum(1 for path, updated in after.items() if before.get(path) != updated)}

        return await asyncio.to_thread(extract)

    def get_tools(self) -> list[Any]:
        """The memory commands Strands lacks (beside ``search_memory`` and ``add_memory``), as Strands tools.

        View and history of the memory files, and restore and supersede on a writable store, each
        named ``<store>_memory_<command>`` (Strands registers them with the manager's tools).
        """
        commands = ("view", "history") + (("restore", "supersede") if self.writable else ())
        tools = MemoryTools(self.store.engine, self.store.namespace, commands=commands)
        found = []
        for definition in tools.anthropic_tools(native=False, single=False):
            command = definition["name"]

            def run(tool_use: Any, _command: str = command, **state: Any) -> dict[str, Any]:
                result = tools.dispatch(_command, tool_use.get("input") or {})
                return {
                    "toolUseId": tool_use["toolUseId"],
                    "status": "error" if result.is_error else "success",
                    "content": [{"text": result.text}],
                }

            name = f"{self.name}_{command}"
            spec = {
                "name": name,
                "description": definition["description"],
                "inputSchema": {"json": definition["input_schema"]},
            }
            found.append(PythonAgentTool(name, spec, run))  # type: ignore[arg-type]
        return found


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


# -- memfs as Strands' session store ---------------------------------------------------------


class MemfsSessionRepository(SessionRepository):
    """A Strands ``SessionRepository`` that keeps sessions in a memfs vault, for ``RepositorySessionManager``.

    Each agent's messages are a transcript, ``sessions/<folder>/<session id>/<agent id>.md``,
    one entry per message in order (``message_id`` is the position less one), readable and
    committed per turn. The session's record, each agent's record (its state and its conversation
    manager's state) and multi-agent states are the front matter of ``sessions/<folder>/<session
    id>.md``, a transcript with no messages. A redacted message is replaced in its transcript by
    the redaction (the original stays in git's history until purged: ``memfs purge``).

    Args:
        vault: The vault.
        folder: The folder under ``sessions/`` (default ``strands``).
    """

    def __init__(self, vault: Vault, *, folder: str = "strands") -> None:
        self.vault = vault
        self.folder = clean_relpath(folder.strip("/"), what="session folder")

    # -- records ---------------------------------------------------------------------

    def _record_path(self, session_id: str) -> str:
        return session_file(_checked_id(session_id, "session"), self.folder)

    def _record(self, session_id: str) -> dict[str, Any] | None:
        rel = self._record_path(session_id)
        if not (self.vault.root / rel).exists():
            return None
        parsed = transcript.parse(self.vault.read_bytes(rel), path=rel)
        record = parsed.metadata.get("strands")
        if not isinstance(record, dict) or not isinstance(record.get("session"), dict):
            raise SessionException(f"{rel} is not a Strands session record (no 'strands.session' in its front matter)")
        return record

    def _write_record(self, session_id: str, record: dict[str, Any], what: str) -> None:
        rel = self._record_path(session_id)
        record = json.loads(json.dumps(record))  # plain data: Strands' enums are strings
        meta = {"session_id": session_id, "created": record["session"].get("created_at"), "strands": record}
        self.vault.engine.write(
            rel,
            transcript.new_head(meta),
            message=f"session: {session_id} {what}",
            trailers={"Memfs-Op": "session", "Memfs-Session": session_id},
        )

    def create_session(self, session: Session, **kwargs: Any) -> Session:
        """Create a new session; SessionException if it exists."""
        with self.vault.locked():
            if self._record(session.session_id) is not None:
                raise SessionException(f"Session {session.session_id} already exists")
            self._write_record(session.session_id, {"session": session.to_dict(), "agents": {}}, "created")
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        """The session, or None."""
        record = self._record(session_id)
        return None if record is None else Session.from_dict(record["session"])

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Record a new agent of a session."""
        self._put_agent(session_id, session_agent, "agent created")

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        """An agent's record (its state and its conversation manager's), or None."""
        record = self._record(session_id)
        agent = (record or {}).get("agents", {}).get(_checked_id(agent_id, "agent"))
        return None if agent is None else SessionAgent.from_dict(decode_bytes_values(agent))

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Replace an agent's record; SessionException if there is none."""
        if self.read_agent(session_id, session_agent.agent_id) is None:
            raise SessionException(f"Agent {session_agent.agent_id} in session {session_id} does not exist")
        self._put_agent(session_id, session_agent, "agent state")

    def _put_agent(self, session_id: str, session_agent: SessionAgent, what: str) -> None:
        with self.vault.locked():
            record = self._record(session_id)
            if record is None:
                raise SessionException(f"Session {session_id} does not exist")
            agents = dict(record.get("agents") or {})
            agents[_checked_id(session_agent.agent_id, "agent")] = session_agent.to_dict()
            self._write_record(session_id, {**record, "agents": agents}, what)

    # -- messages ----------------------------------------------------------------------

    def _messages(self, session_id: str, agent_id: str) -> MarkdownSession:
        folder = f"{self.folder}/{_checked_id(session_id, 'session')}"
        keys = {"strands_session": session_id, "strands_agent": agent_id}
        return MarkdownSession(self.vault.engine, _checked_id(agent_id, "agent"), folder=folder, keys=keys)

    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        """Append a message to the agent's transcript (its ``message_id`` must be the next position less one)."""
        messages = self._messages(session_id, agent_id)
        with self.vault.locked():
            count = _count(messages)
            if session_message.message_id < count:  # the same message created again (a retry): replace it
                self._replace(messages, session_message)
                return
            if session_message.message_id > count:
                raise SessionException(
                    f"message {session_message.message_id} of agent {agent_id} would leave a gap "
                    f"after message {count - 1}"
                )
            messages.append([_stored(session_message)])

    def read_message(self, session_id: str, agent_id: str, message_id: int, **kwargs: Any) -> SessionMessage | None:
        """One message, or None."""
        found = self.list_messages(session_id, agent_id, limit=1, offset=message_id) if message_id >= 0 else []
        return found[0] if found else None

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        """Replace a message in the transcript (a redaction); SessionException if there is none."""
        messages = self._messages(session_id, agent_id)
        with self.vault.locked():
            if not 0 <= session_message.message_id < _count(messages):
                raise SessionException(f"Message {session_message.message_id} does not exist")
            self._replace(messages, session_message)

    def _replace(self, messages: MarkdownSession, session_message: SessionMessage) -> None:
        """Rewrite the transcript from the message on: popped, then it and the ones after appended; one commit."""
        messages.commit_policy = "manual"
        later: list[dict[str, Any]] = []
        while _count(messages) > session_message.message_id + 1:
            later.insert(0, messages.pop() or {})
        messages.pop()
        messages.append([_stored(session_message), *later])
        messages.commit()

    def list_messages(
        self, session_id: str, agent_id: str, limit: int | None = None, offset: int = 0, **kwargs: Any
    ) -> list[SessionMessage]:
        """The agent's messages from ``offset`` on (at most ``limit``), oldest first."""
        session = self._messages(session_id, agent_id)
        fd = None
        try:
            fd = session.engine.open_file(session.path)
        except FileNotFoundError:
            return []
        try:
            entries, _, _ = transcript.read_tail(fd, None)
        finally:
            os.close(fd)
        found = [e for e in entries if e.kind == "item"]
        chosen = found[offset:] if limit is None else found[offset : offset + limit]
        return [_loaded(entry.item, entry.n - 1, entry.time) for entry in chosen]

    # -- multi-agent state --------------------------------------------------------------

    def create_multi_agent(self, session_id: str, multi_agent: Any, **kwargs: Any) -> None:
        """Record a multi-agent system's state."""
        self._put_multi_agent(session_id, multi_agent.id, multi_agent.serialize_state(), create=True)

    def read_multi_agent(self, session_id: str, multi_agent_id: str, **kwargs: Any) -> dict[str, Any] | None:
        """A multi-agent system's state, or None."""
        state = ((self._record(session_id) or {}).get("multi_agents") or {}).get(multi_agent_id)
        return None if state is None else dict(state)

    def update_multi_agent(self, session_id: str, multi_agent: Any, **kwargs: Any) -> None:
        """Replace a multi-agent system's state; SessionException if there is none."""
        self._put_multi_agent(session_id, multi_agent.id, multi_agent.serialize_state(), create=False)

    def _put_multi_agent(self, session_id: str, multi_agent_id: str, state: dict[str, Any], *, create: bool) -> None:
        with self.vault.locked():
            record = self._record(session_id)
            if record is None:
                raise SessionException(f"Session {session_id} does not exist")
            states = dict(record.get("multi_agents") or {})
            if not create and multi_agent_id not in states:
                raise SessionException(f"MultiAgent state {multi_agent_id} in session {session_id} does not exist")
            states[_checked_id(multi_agent_id, "multi-agent")] = json.loads(json.dumps(state, default=str))
            self._write_record(session_id, {**record, "multi_agents": states}, "multi-agent state")


def _count(messages: MarkdownSession) -> int:
    """How many messages a transcript holds (it has no manager entries: the last one's position)."""
    return (messages.positions(1) or [0])[0]


def _checked_id(value: str, what: str) -> str:
    """A session or agent id that names a file as it is (Strands' ids are such names)."""
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value):
        raise SessionException(
            f"a Strands {what} id must be 1-100 letters, digits, '-' or '_', starting with a "
            f"letter or digit, got {value!r}"
        )
    return value


def _stored(session_message: SessionMessage) -> dict[str, Any]:
    """The transcript item of a message: what the agent reads (the redaction, if any), bytes as base64."""
    data = session_message.to_dict()
    message: dict[str, Any] = data["redact_message"] or data["message"]
    return {
        **message,
        "strands": {
            "created_at": data["created_at"],
            "updated_at": data["updated_at"],
            "redacted": data["redact_message"] is not None,
        },
    }


def _loaded(item: dict[str, Any], message_id: int, time: str | None) -> SessionMessage:
    extra: dict[str, Any] = item["strands"] if isinstance(item.get("strands"), dict) else {}
    message = decode_bytes_values({k: v for k, v in item.items() if k != "strands"})
    created = extra.get("created_at") or time or ""
    return SessionMessage(
        message=message, message_id=message_id, created_at=created, updated_at=extra.get("updated_at") or created
    )
