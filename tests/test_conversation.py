from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memfs
from memfs.conversation import (
    Decision,
    MessageWindow,
    NullConversationManager,
    SlidingWindowConversationManager,
    SummarizingConversationManager,
    TokenWindowConversationManager,
    valid_cuts,
)
from memfs.errors import ContextWindowOverflowError, InvalidArgumentError
from memfs.items import tool_links
from memfs.models import Reply, ScriptedModel


def pair(family: str, n: int, big: bool = False) -> list[dict[str, Any]]:
    """A tool call and its result in one of the four families memfs keeps."""
    output = "x" * 5000 if big else f"result {n}"
    cid = f"c{n}"
    if family == "responses":
        return [
            {"type": "function_call", "call_id": cid, "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": cid, "output": output},
        ]
    if family == "chat":
        call = {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": cid, "content": output},
        ]
    if family == "anthropic":
        return [
            {"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": output}]},
        ]
    return [{"role": "assistant", "content": [{"toolUse": {"toolUseId": cid, "name": "f", "input": {}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": cid, "status": "success",
                                                         "content": [{"text": output}]}}]}]  # fmt: skip


FAMILIES = ["responses", "chat", "anthropic", "strands"]


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    family = draw(st.sampled_from(FAMILIES))
    items: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 30))):
        if draw(st.booleans()):
            items += pair(family, n)
            if draw(st.integers(0, 4)) == 0:  # a text message between a call and its result
                items.insert(len(items) - 1, {"role": "assistant", "content": "thinking"})
        else:
            items.append({"role": draw(st.sampled_from(["user", "assistant"])), "content": f"text {n}"})
    return items


def orphaned(items: list[dict[str, Any]]) -> bool:
    calls: set[str] = set()
    for item in items:
        made, answered = tool_links(item)
        if answered - calls:
            return True
        calls |= made
    return False


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.integers(0, 40))
def test_a_window_never_splits_a_tool_pair(items: list[dict[str, Any]], size: int) -> None:
    window = MessageWindow(size).select(items)
    assert not orphaned(window)
    assert window == items[len(items) - len(window) :]
    assert len(window) <= size
    cuts = valid_cuts(items)
    assert all(not orphaned(items[i:]) for i, ok in enumerate(cuts) if ok)
    assert all(orphaned(items[i:]) for i, ok in enumerate(cuts) if not ok)


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(conversations(), st.integers(2, 12))
def test_managed_views_never_split_a_tool_pair(tmp_path_factory: pytest.TempPathFactory, vault_template: Path,
                                               items: list, size: int) -> None:  # fmt: skip
    root = tmp_path_factory.mktemp("v") / "vault"
    shutil.copytree(vault_template, root, symlinks=True)  # a new vault per example, as conftest's vault_dir
    with memfs.Vault.open(root, durable=False) as vault:
        for manager in (SlidingWindowConversationManager(size), TokenWindowConversationManager(size * 20)):
            session = vault.session(type(manager).__name__, manager=manager, commit="manual")
            for item in items:
                session.append([item])
                assert not orphaned(session.items())
            assert session.history() == items


def chat(session: memfs.MarkdownSession, turns: int, family: str = "responses", start: int = 0) -> None:
    for n in range(start, start + turns):
        session.append([{"role": "user", "content": f"question {n}"}, *pair(family, n),
                        {"role": "assistant", "content": f"answer {n}"}])  # fmt: skip


@pytest.mark.parametrize("family", FAMILIES)
def test_sliding_window_on_a_long_session_with_tools(vault: memfs.Vault, family: str) -> None:
    manager = SlidingWindowConversationManager(window_size=10)
    session = vault.session(f"long-{family}", manager=manager)
    chat(session, 30, family)
    view = session.items()
    assert len(view) <= 10 and not orphaned(view)
    assert view[-1] == {"role": "assistant", "content": "answer 29"}
    assert len(session.history()) == 120  # the file keeps everything
    assert manager.removed_message_count == 120 - len(view)
    text = session.file.read_text()
    assert "## window" in text and "are out of the model's view" in text


@pytest.mark.slow
def test_state_is_restored_from_the_file_in_a_new_process(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True) as vault:
        manager = SummarizingConversationManager(ScriptedModel(["- Alice plans Kyoto.", "- And Osaka."]),
                                                 max_messages=8, preserve_recent_messages=3)  # fmt: skip
        session = vault.session("restore", manager=manager)
        chat(session, 4)
        expected_view, expected_state = session.items(), manager.get_state()
    assert expected_state["summary"].startswith("Summary of messages 1-")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        view, state = pool.apply(_restore, (str(root),))
    assert view == expected_view and state == expected_state
    assert view[0]["content"].startswith("Summary of messages 1-")


def _restore(root: str) -> tuple[list, dict]:
    with memfs.Vault.open(root) as vault:
        manager = SummarizingConversationManager(ScriptedModel([]))
        view = vault.session("restore", manager=manager).restore_manager()
        return view, manager.get_state()


def test_a_second_summary_covers_the_first(vault: memfs.Vault) -> None:
    model = ScriptedModel(["- first summary", "- second summary"] + ["- later summary"] * 10)
    manager = SummarizingConversationManager(model, max_messages=6, preserve_recent_messages=2, summary_ratio=0.5)
    session = vault.session("twice", manager=manager)
    chat(session, 2)
    first = session.items()[0]["content"]
    while len(model.calls) < 2:
        chat(session, 1, start=10 + len(session.history()))
    second = session.file.read_text().split("## summary")[2]
    assert first.startswith("Summary of messages 1-") and "first summary" in first
    assert "-->\nSummary of messages 1-" in second and "second summary" in second
    assert "- first summary" in model.calls[1]["messages"][0]["content"]  # the old summary was summarized
    assert session.file.read_text().count("## summary") >= 2
    assert not orphaned(session.items())


def test_the_default_prompt_asks_for_structured_bullets(vault: memfs.Vault) -> None:
    model = ScriptedModel(["- ok"])
    manager = SummarizingConversationManager(model, max_messages=4, preserve_recent_messages=1)
    chat(vault.session("prompt", manager=manager), 2)
    system = model.calls[0]["system"]
    for heading in ("Topics", "Tools executed and their results", "Code and technical facts", "Key insights"):
        assert heading in system
    assert "third person" in system


def test_a_failing_summarizer_leaves_the_transcript_unchanged(vault: memfs.Vault) -> None:
    class Broken:
        def complete(self, messages: Any, *, system: Any = None, tools: Any = ()) -> Reply:
            raise RuntimeError("model down")

    session = vault.session("broken", manager=NullConversationManager())
    chat(session, 3)
    before = session.file.read_bytes()
    session.manager = SummarizingConversationManager(Broken(), preserve_recent_messages=2)  # type: ignore[arg-type]
    with pytest.raises(memfs.ModelError, match="summarizer failed .*model down.*unchanged"):
        session.reduce_context()
    assert session.file.read_bytes() == before


def test_overflow_paths(vault: memfs.Vault) -> None:
    session = vault.session("overflow", manager=SlidingWindowConversationManager(window_size=50))
    chat(session, 1, family="responses")
    session.append([*pair("responses", 99, big=True), {"role": "user", "content": "more"}])
    chat(session, 4, start=10)
    manager = session.manager
    assert isinstance(manager, SlidingWindowConversationManager)
    before = len(session.items())
    decision = session.reduce_context(RuntimeError("too long"))  # first: shorten the old big tool result
    assert decision.kind == "truncate" and decision.meta["keep"] == manager.truncated_size
    assert len(session.items()) == before
    assert any("shortened for the context window" in str(i) for i in session.items())
    assert "x" * 5000 in session.file.read_text()  # the transcript keeps it whole
    assert session.reduce_context(RuntimeError("too long")).kind == "window"  # then: drop messages
    assert len(session.items()) < before and not orphaned(session.items())
    with pytest.raises(ContextWindowOverflowError):
        NullConversationManager().reduce_context(session.view())
    strict = SlidingWindowConversationManager(window_size=5, should_truncate_results=False)
    only_pair = vault.session("pair", manager=strict)
    only_pair.append(pair("anthropic", 1))
    with pytest.raises(ContextWindowOverflowError, match="tool call"):
        only_pair.reduce_context()


def test_token_window(vault: memfs.Vault) -> None:
    manager = TokenWindowConversationManager(200)
    session = vault.session("tokens", manager=manager)
    chat(session, 10, family="chat")
    view = session.items()
    assert sum(manager.tokens(i) for i in view) <= 200 and not orphaned(view)
    custom = TokenWindowConversationManager(3, tokenizer=lambda text: 1)
    assert custom.tokens({"role": "user", "content": "anything"}) == 5


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: SlidingWindowConversationManager(window_size=-1), "window_size"),
        (lambda: SlidingWindowConversationManager(window_size=0), "window_size"),
        (lambda: SlidingWindowConversationManager(window_size="40"), "window_size"),
        (lambda: SummarizingConversationManager(None), "needs a summarizer"),
        (lambda: SummarizingConversationManager(ScriptedModel([]), summary_ratio="half"), "summary_ratio"),
        (lambda: SummarizingConversationManager(ScriptedModel([]), preserve_recent_messages=-2), "preserve"),
        (lambda: SummarizingConversationManager(ScriptedModel([]), prompt=""), "prompt"),
        (lambda: TokenWindowConversationManager(0), "max_tokens"),
        (lambda: TokenWindowConversationManager(10, tokenizer=42), "tokenizer"),
        (lambda: MessageWindow(-1), "size"),
    ],
)
def test_bad_configuration(factory: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        factory()


def test_summary_ratio_is_clamped() -> None:
    assert SummarizingConversationManager(ScriptedModel([]), summary_ratio=5).summary_ratio == 0.8
    assert SummarizingConversationManager(ScriptedModel([]), summary_ratio=0).summary_ratio == 0.1


def test_explicit_history_returns_everything_and_the_sdk_sees_the_view(vault: memfs.Vault) -> None:
    import asyncio

    session = vault.session("sdk", manager=SlidingWindowConversationManager(window_size=4))
    chat(session, 3)
    assert len(asyncio.run(session.get_items())) <= 4
    assert len(session.history()) == 12
    assert asyncio.run(session.get_items(limit=2)) == session.items()[-2:]


def test_restoring_twice_neither_loses_nor_duplicates_the_summary(vault: memfs.Vault) -> None:
    manager = SummarizingConversationManager(ScriptedModel(["- kept once"] * 5), max_messages=6,
                                             preserve_recent_messages=2)  # fmt: skip
    session = vault.session("dup", manager=manager)
    chat(session, 3)
    for _ in range(2):
        fresh = SummarizingConversationManager(ScriptedModel([]))
        view = vault.session("dup", manager=fresh).restore_manager()
        assert sum("Summary of messages" in str(i) for i in view) == 1
        assert view == session.items()


def test_history_limit_counts_items_past_manager_entries(vault: memfs.Vault) -> None:
    session = vault.session("limits", manager=SlidingWindowConversationManager(window_size=3))
    chat(session, 6)
    assert len(session.history(5)) == 5 and session.history(5) == session.history()[-5:]
    assert len(session.history()) == 24 and session.positions(2) == session.positions(24)[-2:]
    assert session.pop() == {"role": "assistant", "content": "answer 5"}
    assert session.history(1) == [session.history()[-1]]


def test_managers_decide_and_never_write(vault: memfs.Vault) -> None:
    session = vault.session("decide", manager=NullConversationManager())
    chat(session, 6)
    before = session.file.read_bytes()
    view = session.view()
    decision = SlidingWindowConversationManager(window_size=4).apply_management(view)
    assert decision is not None and decision.kind == "window" and decision.meta["start"] > 1
    assert session.file.read_bytes() == before  # deciding wrote nothing
    assert SlidingWindowConversationManager(window_size=100).apply_management(view) is None
    session.record(decision)
    assert len(session.view().items) == len(view.items) - (decision.meta["start"] - 1)
    assert session.view().removed == decision.meta["removed"] > 0


def test_a_decision_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown kind"):
        Decision("rewrite", {}, "x")


def test_a_session_without_a_manager_cannot_reduce(vault: memfs.Vault) -> None:
    session = vault.session("plain")
    chat(session, 1)
    with pytest.raises(InvalidArgumentError, match="no conversation manager"):
        session.reduce_context()
