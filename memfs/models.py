"""The small model protocol that memfs's own LLM-driven parts call, and a scripted model.

memfs never talks to a model provider itself. Extractors, summarizers and the demo agent take
any object with a ``complete`` method; :class:`ScriptedModel` replays prepared replies, for
tests and demos that must run offline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .errors import InvalidArgumentError, ModelError, ScriptExhaustedError


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asks for: its id, the tool's name and the arguments."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Reply:
    """What a model answers: text, and any tool calls to run before it continues."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


ChatMessage = Mapping[str, Any]  # {"role": ..., "content": ...}, as a model is sent it


@runtime_checkable
class Model(Protocol):
    """Anything that completes a conversation: a provider's client wrapped, or a script."""

    def complete(
        self, messages: Sequence[ChatMessage], *, system: str | None = None, tools: Sequence[Mapping[str, Any]] = ()
    ) -> Reply:
        """Answer the conversation so far; ``messages`` are ``{"role", "content"}`` mappings."""
        ...


@dataclass
class ScriptedModel:
    """A model that replays replies in order and records what it was asked.

    Example:
        >>> model = ScriptedModel([Reply("hello")])
        >>> model.complete([{"role": "user", "content": "hi"}]).text
        'hello'
    """

    replies: list[Reply]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __init__(self, replies: Iterable[Reply | str]) -> None:
        self.replies = [r if isinstance(r, Reply) else Reply(r) for r in replies]
        self.calls = []

    def complete(
        self, messages: Sequence[ChatMessage], *, system: str | None = None, tools: Sequence[Mapping[str, Any]] = ()
    ) -> Reply:
        """Return the next scripted reply."""
        self.calls.append({"messages": [dict(m) for m in messages], "system": system, "tools": list(tools)})
        if len(self.calls) > len(self.replies):
            raise ScriptExhaustedError(f"the script has {len(self.replies)} replies; call {len(self.calls)} asked")
        return self.replies[len(self.calls) - 1]


def run_agent(
    model: Model,
    messages: Sequence[ChatMessage],
    *,
    dispatch: Any,
    tools: Sequence[Mapping[str, Any]] = (),
    system: str | None = None,
    max_steps: int = 20,
) -> list[dict[str, Any]]:
    """A minimal agent loop: ask the model, run the tool calls it makes, repeat until it answers.

    Args:
        model: The model to ask.
        messages: The conversation so far.
        dispatch: ``dispatch(name, arguments)`` returning an object with ``text`` and ``is_error``,
            e.g. ``MemoryTools.dispatch``.
        tools: The tool definitions shown to the model.
        system: The system prompt.
        max_steps: How many model calls at most.

    Returns:
        The whole conversation: the given messages, then assistant turns and tool results
        (``{"role": "tool", "tool_call_id", "content", "is_error"}``).
    """
    if not isinstance(max_steps, int) or max_steps < 1:
        raise InvalidArgumentError(f"max_steps must be a positive integer, got {max_steps!r}")
    conversation = [dict(m) for m in messages]
    for _ in range(max_steps):
        reply = model.complete(conversation, system=system, tools=tools)
        turn: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            turn["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in reply.tool_calls
            ]
        conversation.append(turn)
        if not reply.tool_calls:
            return conversation
        for call in reply.tool_calls:
            outcome = dispatch(call.name, call.arguments)
            conversation.append(
                {"role": "tool", "tool_call_id": call.id, "content": outcome.text, "is_error": outcome.is_error}
            )
    raise ModelError(f"the agent made tool calls for {max_steps} steps without answering")
