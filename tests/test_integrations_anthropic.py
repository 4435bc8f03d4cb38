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


def _custom(n: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": arguments}


def test_async_tool_runner_drives_memfs_across_a_restart(anthropic: ModuleType, vault: memfs.Vault) -> None:
    import asyncio

    try:  # the anthropic SDK 2.x is built on the httpx2 fork, 0.x on httpx
        import httpx2
    except ImportError:  # pragma: no cover - depends on the installed SDK
        import httpx as httpx2  # type: ignore[no-redef]

    from memfs.integrations.anthropic import MemfsAsyncMemoryTool, async_memory_tools

    def run(script: list[dict[str, Any]], tools: list[Any]) -> tuple[Any, list[dict[str, Any]]]:
        requests: list[dict[str, Any]] = []

        def handler(request: httpx2.Request) -> httpx2.Response:
            requests.append(json.loads(request.content))
            return httpx2.Response(200, json=script[len(requests) - 1])

        async def go() -> Any:
            http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
            client = anthropic.AsyncAnthropic(api_key="test", http_client=http)
            runner = client.beta.messages.tool_runner(model="claude-test", max_tokens=100, tools=tools,
                                                      messages=[{"role": "user", "content": "hi"}])  # fmt: skip
            return await runner.until_done()

        return asyncio.run(go()), requests

    first = [
        message(
            [tool_use(1, command="create", path="/memories/seats.md", file_text="Alice likes window seats.\n")],
            "tool_use",
        ),  # fmt: skip
        message(
            [tool_use(2, command="str_replace", path="/memories/seats.md", old_str="window", new_str="aisle")],
            "tool_use",
        ),  # fmt: skip
        message([{"type": "text", "text": "Noted."}], "end_turn"),
    ]
    final, requests = run(first, [MemfsAsyncMemoryTool(MemoryTools(vault, "users/alice", session="a1"))])
    assert final.content[0].text == "Noted." and len(requests) == 3
    assert vault.memories("users/alice").get("seats.md").body == "Alice likes aisle seats.\n"
    # a new process: a new vault object and tools; search and history run beside the memory tool
    with memfs.Vault.open(vault.root, durable=False) as again:
        tools = async_memory_tools(MemoryTools(again, "users/alice", session="a2"))
        names = ["memory", "memory_search", "memory_history", "memory_links", "memory_restore", "memory_supersede"]
        assert [t.name for t in tools] == names
        second = [
            message([_custom(3, "memory_search", query="aisle seats")], "tool_use"),
            message([_custom(4, "memory_history", path="/memories/seats.md")], "tool_use"),
            message([tool_use(5, command="view", path="/memories/seats.md")], "tool_use"),
            message([{"type": "text", "text": "Aisle."}], "end_turn"),
        ]
        final, requests = run(second, tools)
    results = [str(block["content"]) for r in requests[1:] for block in r["messages"][-1]["content"]]
    assert "seats.md" in results[0] and "aisle" in results[0].lower()
    assert "create" in results[1] and "str_replace" in results[1]  # two revisions, by the first session
    assert "Alice likes aisle seats." in results[2]
    assert final.content[0].text == "Aisle."
    assert len(vault.memories("users/alice").list()) == 1  # nothing duplicated


def test_clear_all_memory_is_one_commit_that_can_be_undone(anthropic: ModuleType, vault: memfs.Vault) -> None:
    import asyncio

    from anthropic.lib.tools import ToolError

    from memfs.integrations.anthropic import MemfsAsyncMemoryTool, MemfsMemoryTool

    alice = vault.memories("users/alice")
    for title in ("Window seats", "Peanut allergy", "Tokyo trip"):
        alice.add(f"{title} noted.", title=title)
    vault.memories("shared").add("Economy under six hours.", title="Policy")
    tools = MemoryTools(vault, ["users/alice", "shared"], writable=["users/alice"], session="clear-1")
    before = len(vault.log())
    assert "deleted" in MemfsMemoryTool(tools).clear_all_memory()
    assert len(vault.log()) == before + 1 and alice.list() == []
    assert [m.title for m in vault.memories("shared").list()] == ["Policy"]  # read-only: kept
    assert vault.log()[0].trailers["Memfs-Tool"] == "clear_all_memory"
    vault.undo(session="clear-1")
    assert sorted(m.title for m in alice.list()) == ["Peanut allergy", "Tokyo trip", "Window seats"]
    asyncio.run(MemfsAsyncMemoryTool(tools).clear_all_memory())  # the async twin, same commit
    assert alice.list() == [] and vault.history.status() == []
    with pytest.raises(ToolError, match="Nothing in your memory is writable"):
        MemfsMemoryTool(MemoryTools(vault, "users/alice", read_only=True)).clear_all_memory()
