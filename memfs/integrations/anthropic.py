"""memfs as the memory tool of Anthropic's Python SDK, for its sync and async tool runners.

``MemfsMemoryTool`` subclasses the SDK's ``BetaAbstractMemoryTool`` and ``MemfsAsyncMemoryTool``
its ``BetaAsyncAbstractMemoryTool``, so the SDK's tool runners drive a memfs vault directly;
``memory_tools`` / ``async_memory_tools`` add memfs's search, history and restore as runnable
custom tools beside the six built-in commands::

    from anthropic import Anthropic
    from memfs import MemoryTools, Vault
    from memfs.integrations.anthropic import memory_tools

    tools = MemoryTools(Vault.open("~/agent-memory"), "users/alice")
    runner = Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=1024, tools=memory_tools(tools),
        messages=[{"role": "user", "content": "Remember that I like window seats."}],
    )

Errors reach the model as ``ToolError`` (a tool result with ``is_error: true``), with the same
text as :meth:`memfs.MemoryTools.run` returns. The async classes run each command in a worker
thread (the vault's work is blocking file and git I/O).
"""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        BetaAsyncBuiltinFunctionTool,
        BetaBuiltinFunctionTool,
        ToolError,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memfs.integrations.anthropic needs the anthropic SDK: pip install 'memfs-vault[anthropic]'"
    ) from exc

from ..tools import MemoryTools, ToolResult

__all__ = ["MemfsAsyncMemoryTool", "MemfsCommandTool", "MemfsMemoryTool", "async_memory_tools", "memory_tools"]


def _arguments(command: Any) -> dict[str, Any]:
    """A command object of the SDK as the arguments of a memfs call (unset fields left out)."""
    data = command.model_dump() if hasattr(command, "model_dump") else dict(command)
    return {k: v for k, v in data.items() if v is not None}


def _text(result: ToolResult) -> str:
    """A memfs tool result as the SDK takes it: the text, or the refusal as ``ToolError``."""
    if result.is_error:
        raise ToolError(result.text)
    return result.text


def _result(tools: MemoryTools, arguments: dict[str, Any]) -> str:
    return _text(tools.call(arguments))


def _clear(tools: MemoryTools) -> str:
    try:
        return tools.clear_all()
    except Exception as exc:
        raise ToolError(str(exc)) from exc


class MemfsMemoryTool(BetaAbstractMemoryTool):
    """The SDK's memory tool (``memory_20250818``) backed by :class:`memfs.MemoryTools`."""

    def __init__(self, tools: MemoryTools, *, cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self.tools = tools

    def execute(self, command: Any) -> str:
        """Run any of the six commands (``view``, ``create``, ``str_replace``, ``insert``, ``delete``, ``rename``)."""
        return _result(self.tools, _arguments(command))

    def _command(self, command: Any) -> str:
        return self.execute(command)

    # The SDK's six abstract commands: memfs runs every one the same way, through execute.
    view = create = str_replace = insert = delete = rename = _command

    def clear_all_memory(self) -> str:
        """Delete every memory file the agent may write, in one commit a person can undo."""
        return _clear(self.tools)


class MemfsAsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """The memory tool for ``AsyncAnthropic().beta.messages.tool_runner``; each command runs in a thread."""

    def __init__(self, tools: MemoryTools, *, cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self.tools = tools

    async def execute(self, command: Any) -> str:
        """Run any of the six commands in a worker thread."""
        return await asyncio.to_thread(_result, self.tools, _arguments(command))

    async def _command(self, command: Any) -> str:
        return await self.execute(command)

    # The SDK's six abstract commands: memfs runs every one the same way, through execute.
    view = create = str_replace = insert = delete = rename = _command

    async def clear_all_memory(self) -> str:
        """Delete every memory file the agent may write, in one commit a person can undo."""
        return await asyncio.to_thread(_clear, self.tools)


class MemfsCommandTool(BetaBuiltinFunctionTool):
    """One more memfs command (``memory_search``, ``memory_history``, ...) as a custom tool the sync runner runs."""

    def __init__(self, tools: MemoryTools, definition: dict[str, Any]) -> None:
        self.tools = tools
        self.definition = definition

    def to_dict(self) -> Any:
        """The tool's definition for the Messages API (from memfs's one registry)."""
        return dict(self.definition)

    def call(self, input: object) -> str:
        """Run the command; errors as ``ToolError``."""
        return _text(self.tools.dispatch(self.definition["name"], input if isinstance(input, dict) else None))


class _AsyncCommandTool(BetaAsyncBuiltinFunctionTool):
    def __init__(self, tools: MemoryTools, definition: dict[str, Any]) -> None:
        self.sync = MemfsCommandTool(tools, definition)

    def to_dict(self) -> Any:
        return self.sync.to_dict()

    async def call(self, input: object) -> str:
        return await asyncio.to_thread(self.sync.call, input)


def memory_tools(tools: MemoryTools) -> list[Any]:
    """The tools for ``Anthropic().beta.messages.tool_runner(tools=...)``: the memory tool and memfs's other commands.

    When ``tools`` offers all six built-in commands they go through the built-in
    ``memory_20250818`` tool; every other command (search, history, restore, ...) is a custom
    tool ``memory_<command>``. A read-only ``MemoryTools`` gives custom tools only.
    """
    return [
        MemfsMemoryTool(tools) if d.get("type") == "memory_20250818" else MemfsCommandTool(tools, d)
        for d in tools.anthropic_tools(native=True)
    ]


def async_memory_tools(tools: MemoryTools) -> list[Any]:
    """What :func:`memory_tools` gives, for ``AsyncAnthropic().beta.messages.tool_runner``."""
    return [
        MemfsAsyncMemoryTool(tools) if d.get("type") == "memory_20250818" else _AsyncCommandTool(tools, d)
        for d in tools.anthropic_tools(native=True)
    ]
