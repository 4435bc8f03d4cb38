"""memfs as the memory tool of Anthropic's Python SDK.

``MemfsMemoryTool`` subclasses the SDK's ``BetaAbstractMemoryTool``, so the SDK's tool runner
drives a memfs vault directly::

    from anthropic import Anthropic
    from memfs import MemoryTools, Vault
    from memfs.integrations.anthropic import MemfsMemoryTool

    tools = MemoryTools(Vault.open("~/agent-memory"), "users/alice")
    runner = Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=1024, tools=[MemfsMemoryTool(tools)],
        messages=[{"role": "user", "content": "Remember that I like window seats."}],
    )

Errors reach the model as ``ToolError`` (a tool result with ``is_error: true``), with the same
text as :meth:`memfs.MemoryTools.run` returns.
"""

from __future__ import annotations

from typing import Any

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "memfs.integrations.anthropic needs the anthropic SDK: pip install 'memfs-vault[anthropic]'"
    ) from exc

from ..tools import MemoryTools


class MemfsMemoryTool(BetaAbstractMemoryTool):
    """The SDK's memory tool (``memory_20250818``) backed by :class:`memfs.MemoryTools`."""

    def __init__(self, tools: MemoryTools, *, cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self.tools = tools

    def _run(self, command: str, **args: Any) -> str:
        result = self.tools.call({"command": command, **{k: v for k, v in args.items() if v is not None}})
        if result.is_error:
            raise ToolError(result.text)
        return result.text

    def view(self, command: Any) -> str:
        """Show a folder listing or a file with line numbers."""
        return self._run("view", path=command.path, view_range=command.view_range)

    def create(self, command: Any) -> str:
        """Create a memory file."""
        return self._run("create", path=command.path, file_text=command.file_text)

    def str_replace(self, command: Any) -> str:
        """Replace text that occurs once in a memory file."""
        return self._run("str_replace", path=command.path, old_str=command.old_str, new_str=command.new_str)

    def insert(self, command: Any) -> str:
        """Insert text after a line of a memory file."""
        return self._run("insert", path=command.path, insert_line=command.insert_line,
                         insert_text=command.insert_text)  # fmt: skip

    def delete(self, command: Any) -> str:
        """Delete a memory file or folder."""
        return self._run("delete", path=command.path)

    def rename(self, command: Any) -> str:
        """Rename or move a memory file or folder."""
        return self._run("rename", old_path=command.old_path, new_path=command.new_path)
