"""A scripted agent works on its memory through the tools; files, index and git agree."""

from __future__ import annotations

import memfs
from memfs.models import Reply, ScriptedModel, ToolCall, run_agent
from memfs.tools import MemoryTools


def call(n: int, command: str, **args: object) -> ToolCall:
    return ToolCall(f"call_{n}", "memory", {"command": command, **args})


def test_scripted_agent_session(vault: memfs.Vault) -> None:
    tools = MemoryTools(vault, "users/alice", session="trip-planning")
    model = ScriptedModel(
        [
            Reply("Let me check my memory.", (call(1, "view", path="/memories"),)),
            Reply(
                "",
                (
                    call(
                        2,
                        "create",
                        path="/memories/travel/seats.md",
                        file_text="# Seats\n\nAlice prefers aisle seats.\n",
                    ),
                ),
            ),  # fmt: skip
            Reply("", (call(3, "str_replace", path="/memories/travel/seats.md", old_str="aisle", new_str="window"),)),
            Reply(
                "",
                (
                    call(4, "create", path="/memories/diet.md", file_text="Alice is vegetarian.\n"),
                    call(5, "search", query="which seats does alice prefer"),
                ),
            ),  # fmt: skip
            Reply(
                "",
                (
                    call(6, "rename", old_path="/memories/diet.md", new_path="/memories/food/diet.md"),
                    call(7, "delete", path="/memories/travel"),
                    call(8, "view", path="/memories/nope.md"),
                ),
            ),  # fmt: skip
            Reply("Done: I noted the window seat, filed the diet note, and cleared the travel folder."),
        ]
    )
    conversation = run_agent(model, [{"role": "user", "content": "I switched to window seats."}],
                             dispatch=tools.dispatch, tools=tools.anthropic_tools(native=False))  # fmt: skip

    results = {m["tool_call_id"]: m for m in conversation if m["role"] == "tool"}
    assert results["call_2"]["content"] == "File created successfully at: /memories/travel/seats.md"
    assert "Alice prefers window seats." in results["call_3"]["content"]
    found = results["call_5"]["content"]
    assert found.startswith('2 memories match "which seats does alice prefer" (stored memory data')
    assert found.index("/memories/travel/seats.md") < found.index("/memories/diet.md")
    assert results["call_8"]["is_error"] and "does not exist" in results["call_8"]["content"]
    assert conversation[-1]["content"].startswith("Done")
    # the model saw the tool results of its previous calls
    assert model.calls[2]["messages"][-1]["content"].startswith("File created successfully")

    # files
    files = sorted(p.relative_to(vault.root).as_posix() for p in (vault.root / "memories").rglob("*.md"))
    assert files == ["memories/users/alice/food/diet.md"]
    diet = vault.memories("users/alice").get("food/diet.md")
    assert diet.id and diet.body == "Alice is vegetarian.\n"
    # index
    assert [h.path for h in vault.search("vegetarian")] == ["memories/users/alice/food/diet.md"]
    assert vault.search("window seats") == []
    # git: one commit per write, each naming the tool and the session
    log = vault.log()
    assert [r.trailers.get("Memfs-Tool") for r in log[:5]] == ["delete", "rename", "create", "str_replace", "create"]
    assert all(r.trailers.get("Memfs-Session") == "trip-planning" for r in log[:5])
    assert vault.history.status() == []
