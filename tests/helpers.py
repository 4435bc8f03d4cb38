"""Small helpers several test files share: waiting for a condition, and calling the memory tools."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from memfs.tools import MemoryTools, ToolResult

UNEXPECTED = "failed unexpectedly"  # what a tool says when a bug, not a reason, refused a call


def wait_for(condition: Callable[[], object], timeout: float = 15.0) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def ok(tools: MemoryTools, command: str, **args: Any) -> str:
    """Run a tool command that must succeed; its text."""
    result = tools.call({"command": command, **args})
    assert isinstance(result, ToolResult)
    assert not result.is_error, result.text
    return result.text


def err(tools: MemoryTools, command: str, **args: Any) -> str:
    """Run a tool command that must be refused for a reason; its text."""
    result = tools.call({"command": command, **args})
    assert isinstance(result, ToolResult)
    assert result.is_error, result.text
    assert UNEXPECTED not in result.text, result.text
    return result.text
