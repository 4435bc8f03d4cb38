"""memfs conversation managers and transcripts for Strands Agents.

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
"""

from __future__ import annotations

from typing import Any

try:
    from strands.agent.conversation_manager import ConversationManager as _StrandsManager
    from strands.hooks import AgentInitializedEvent, HookRegistry
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memfs.integrations.strands needs Strands Agents: pip install 'memfs[strands]'") from exc

from ..conversation import ContextWindowOverflowError, ConversationManager, SlidingWindowConversationManager
from ..sessions import MarkdownSession


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
            self.manager.reduce_context(self.session, ContextWindowOverflowError.from_exception(e) if e else None)
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
        self.manager.restore_from_session(self.session)
        self.removed_message_count = self.manager.removed_message_count
        return None
