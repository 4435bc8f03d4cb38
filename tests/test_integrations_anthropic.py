"""The anthropic SDK drives memfs through its own tool runner, offline.

The SDK is real; only the HTTP layer is an in-process transport that answers with scripted
Messages API responses, so the runner really calls our tool and sends its results back.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

import memfs
from memfs.tools import MemoryTools

# The SDK is imported by the tests that use it, not at collection (tests/conftest.py says why).


@pytest.fixture(scope="module")
def anthropic() -> ModuleType:
    return pytest.importorskip("anthropic")


def message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip


def tool_use(n: int, **command: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": "memory", "input": command}


def test_sdk_command_objects_run_through_the_adapter(anthropic: ModuleType, vault: memfs.Vault) -> None:
    from anthropic.lib.tools import ToolError
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )

    from memfs.integrations.anthropic import MemfsMemoryTool

    tool = MemfsMemoryTool(MemoryTools(vault, "users/alice"))
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    run = tool.execute
    assert run(BetaMemoryTool20250818CreateCommand(command="create", path="/memories/a.md", file_text="one\n"))
    assert "one" in str(run(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/a.md")))
    run(BetaMemoryTool20250818StrReplaceCommand(command="str_replace", path="/memories/a.md",
                                                old_str="one", new_str="two"))  # fmt: skip
    run(BetaMemoryTool20250818InsertCommand(command="insert", path="/memories/a.md", insert_line=6,
                                            insert_text="three"))  # fmt: skip
    run(BetaMemoryTool20250818RenameCommand(command="rename", old_path="/memories/a.md", new_path="/memories/b.md"))
    assert vault.memories("users/alice").get("b.md").body == "two\nthree\n"
    run(BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/b.md"))
    with pytest.raises(ToolError, match="does not exist"):
        run(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/b.md"))
    with pytest.raises(ToolError, match="must start with /memories"):
        tool.call({"command": "view", "path": "/etc/passwd"})


def test_tool_runner_drives_memfs(anthropic: ModuleType, vault: memfs.Vault) -> None:
    try:  # the anthropic SDK 2.x is built on the httpx2 fork, 0.x on httpx
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - depends on the installed SDK
        import httpx  # type: ignore[no-redef]

    from memfs.integrations.anthropic import MemfsMemoryTool

    script = [
        message([tool_use(1, command="view", path="/memories")], "tool_use"),
        message(
            [tool_use(2, command="create", path="/memories/seats.md", file_text="Alice prefers window seats.\n")],
            "tool_use",
        ),  # fmt: skip
        message([tool_use(3, command="view", path="/etc/passwd")], "tool_use"),
        message([{"type": "text", "text": "Noted: window seats."}], "end_turn"),
    ]
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(request.content))
        return httpx.Response(200, json=script[len(requests) - 1])

    client = anthropic.Anthropic(api_key="test", http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    runner = client.beta.messages.tool_runner(
        model="claude-test",
        max_tokens=100,
        tools=[MemfsMemoryTool(MemoryTools(vault, "users/alice", session="t1"))],
        messages=[{"role": "user", "content": "Remember that I like window seats."}],
    )
    final = runner.until_done()
    assert final.content[0].text == "Noted: window seats."
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = [block for r in requests[1:] for block in r["messages"][-1]["content"]]
    assert "Here're the files and directories" in str(results[0]["content"])
    assert "File created successfully at: /memories/seats.md" in str(results[1]["content"])
    assert results[2].get("is_error") is True and "must start with /memories" in str(results[2]["content"])
    assert vault.search("window seats")[0].path == "memories/users/alice/seats.md"
    assert vault.log()[0].trailers == {"Memfs-Op": "create", "Memfs-Tool": "create", "Memfs-Session": "t1"}
