"""The OpenAI Agents SDK drives memfs offline: its Runner with its own scripted model, a compaction
session with the SDK's OpenAI client on an in-process transport, and memfs's memory commands as
the SDK's function tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import memfs
from memfs.errors import InvalidArgumentError
from memfs.tools import MemoryTools

# The SDK is imported by the tests that use it, not at collection (tests/conftest.py says why).


@pytest.fixture(scope="module", autouse=True)
def agents() -> Any:
    sdk = pytest.importorskip("agents")
    sdk.set_tracing_disabled(True)  # no trace exporter thread: the run is offline
    return sdk


def _texts(items: list[Any]) -> list[str]:
    out = []
    for item in items:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [part.get("text", "") for part in content if isinstance(part, dict) and "text" in part]
    return out


@pytest.mark.parametrize("settings", [{"limit": 2}, {"limit": 3}])
def test_session_settings_as_a_dict_work_like_sqlite_session(agents: Any, vault: memfs.Vault,
                                                             settings: dict[str, int]) -> None:  # fmt: skip
    from agents import Agent, Runner, SQLiteSession
    from agents.testing import ScriptedModel, assistant_message

    def runs(session: Any) -> list[Any]:
        model = ScriptedModel([[assistant_message(f"answer {i}")] for i in range(3)])
        agent = Agent(name="a", model=model)

        async def go() -> None:
            for i in range(3):
                await Runner.run(agent, f"question {i}", session=session)

        asyncio.run(go())
        return [_texts(json.loads(json.dumps(call.input, default=str))) for call in model.calls]

    ours = runs(vault.session(f"dict-{settings['limit']}", session_settings=dict(settings)))
    theirs = runs(SQLiteSession("s", session_settings=dict(settings)))
    assert ours == theirs and len(ours[-1]) == settings["limit"] + 1  # the limit's items, then the new question
    again = vault.session(f"dict-{settings['limit']}", session_settings=dict(settings))  # a restart reads the file
    assert _texts(again.items()) == _texts(again.history(-1))[-settings["limit"] :]
    assert len(again.history(-1)) == 6


def test_session_settings_refuse_what_they_do_not_know(agents: Any, vault: memfs.Vault) -> None:
    with pytest.raises(InvalidArgumentError, match="only 'limit'"):
        vault.session("x", session_settings={"limt": 2})
    with pytest.raises(InvalidArgumentError, match="integer"):
        vault.session("x", session_settings={"limit": "2"})


def _compaction_client(output: list[dict[str, Any]], requests: list[Any]) -> Any:
    import httpx2
    from openai import AsyncOpenAI

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append((request.url.path, json.loads(request.content)))
        details = {"input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
        usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, **details}
        body = {"id": "cmp_1", "object": "response.compaction", "created_at": 1, "output": output, "usage": usage}
        return httpx2.Response(200, json=body)

    return AsyncOpenAI(api_key="test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))


@pytest.mark.parametrize("turns", [2, 4])
def test_compaction_is_one_commit_and_the_history_stays_in_the_file(agents: Any, vault: memfs.Vault,
                                                                    turns: int) -> None:  # fmt: skip
    from agents import Agent, Runner
    from agents.memory import OpenAIResponsesCompactionSession
    from agents.testing import ScriptedModel, assistant_message

    compacted = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "question 0"}]},
                 {"type": "compaction", "id": "cmp_item", "encrypted_content": "opaque"}]  # fmt: skip
    requests: list[Any] = []
    session = vault.session("compacted")
    wrapped = OpenAIResponsesCompactionSession("compacted", session, client=_compaction_client(compacted, requests),
                                               should_trigger_compaction=lambda context: False)  # fmt: skip
    model = ScriptedModel([[assistant_message(f"answer {i}")] for i in range(turns + 1)])
    agent = Agent(name="a", model=model)

    async def go() -> None:
        for i in range(turns):
            await Runner.run(agent, f"question {i}", session=wrapped)
        before = len(vault.log())
        await wrapped.run_compaction({"force": True})
        assert len(vault.log()) == before + 1  # one commit, not a clear and an add
        await Runner.run(agent, "after", session=wrapped)

    asyncio.run(go())
    assert requests and requests[0][0].endswith("/responses/compact")
    assert [i.get("type") for i in model.calls[-1].input][:2] == [
        "message",
        "compaction",
    ]  # the model saw the compacted view
    history = session.history()
    assert _texts(history)[: 2 * turns] == [t for i in range(turns) for t in (f"question {i}", f"answer {i}")]
    text = session.file.read_text()
    assert "out of the model's view (compaction)" in text and "\nanswer 0\n" in text  # verbatim, readable
    fresh = memfs.Vault.open(vault.root, durable=False)  # a restart: the view comes from the file
    try:
        view = fresh.session("compacted").items()
    finally:
        fresh.close()
    assert [i.get("type") for i in view][:2] == ["message", "compaction"]
    assert _texts(view)[-1] == f"answer {turns}"
    assert vault.history.status() == []


def test_memory_commands_as_function_tools(agents: Any, vault: memfs.Vault) -> None:
    from agents import Agent, FunctionTool, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    tools = MemoryTools(vault, "users/alice", session="agents-1").openai_agents_tools()
    assert all(isinstance(t, FunctionTool) for t in tools)
    assert {t.name for t in tools} >= {"memory_view", "memory_create", "memory_search", "memory_history"}
    create = {"path": "/memories/seats.md", "file_text": "Alice prefers window seats.\n"}
    model = ScriptedModel([
        [function_call("memory_create", create, call_id="c1")],
        [function_call("memory_view", {"path": "/etc/passwd"}, call_id="c2")],
        [function_call("memory_search", {"query": "window seats"}, call_id="c3")],
        [assistant_message("Noted.")],
    ])  # fmt: skip
    agent = Agent(name="a", model=model, tools=tools)
    result = asyncio.run(Runner.run(agent, "Remember that I like window seats."))
    assert result.final_output == "Noted."
    outputs = [i["output"] for i in model.calls[-1].input if i.get("type") == "function_call_output"]
    assert "File created successfully at: /memories/seats.md" in outputs[0]
    assert "must start with /memories" in outputs[1]  # an error the model can act on, not a crash
    assert "seats.md" in outputs[2]
    assert vault.memories("users/alice").get("seats.md").body == "Alice prefers window seats.\n"
    assert vault.log()[0].trailers["Memfs-Session"] == "agents-1"
    single = MemoryTools(vault, "users/alice", read_only=True).openai_agents_tools(single=True)
    assert [t.name for t in single] == ["memory"] and "create" not in json.dumps(single[0].params_json_schema)
