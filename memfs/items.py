"""Conversation items: the one place that knows their shapes.

memfs stores whatever items an SDK hands it, in four families: chat messages (``role`` and
``content``, assistant ``tool_calls``, ``tool`` messages), OpenAI Responses items
(``function_call`` / ``function_call_output`` and friends), Anthropic content blocks
(``tool_use`` / ``tool_result``) and Strands content blocks (``toolUse`` / ``toolResult``). This
module answers the questions the rest of memfs asks of an item: its text, where its one text
sits, which tool calls it opens and answers, and how a summary should look among them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Item = dict[str, Any]

TEXT_TYPES = frozenset({None, "text", "input_text", "output_text"})
_NOT_TEXT_KEYS = frozenset({"type", "id", "call_id", "status", "role", "toolUseId", "tool_use_id"})


def text_of(item: Mapping[str, Any]) -> str:
    """The searchable text of an item: its string values, identifiers and roles left out."""
    found: list[str] = []

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, str):
            if key not in _NOT_TEXT_KEYS:
                found.append(value)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)

    walk(item)
    return "\n".join(found)


def text_path(item: Mapping[str, Any]) -> list[str | int] | None:
    """Where an item keeps its one text, if it has exactly one; None otherwise."""
    content = item.get("content")
    if isinstance(content, str):
        return ["content"]
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        part = content[0]
        if isinstance(part.get("text"), str) and part.get("type") in TEXT_TYPES:
            return ["content", 0, "text"]
    return None


def tool_links(item: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The tool-call ids an item opens and the ids it answers."""
    calls: set[str] = set()
    results: set[str] = set()
    kind = item.get("type")
    if isinstance(kind, str) and item.get("call_id") is not None:
        (results if kind.endswith("_output") else calls).add(str(item["call_id"]))
    for call in item.get("tool_calls") or []:
        if isinstance(call, Mapping) and call.get("id") is not None:
            calls.add(str(call["id"]))
    if item.get("role") == "tool" and item.get("tool_call_id") is not None:
        results.add(str(item["tool_call_id"]))
    content = item.get("content")
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "tool_use" and block.get("id") is not None:
            calls.add(str(block["id"]))
        if block.get("type") == "tool_result" and block.get("tool_use_id") is not None:
            results.add(str(block["tool_use_id"]))
        if isinstance(block.get("toolUse"), Mapping):
            calls.add(str(block["toolUse"].get("toolUseId")))
        if isinstance(block.get("toolResult"), Mapping):
            results.add(str(block["toolResult"].get("toolUseId")))
    return calls, results


def summary_item(text: str, like: Sequence[Mapping[str, Any]]) -> Item:
    """A user message holding ``text``, shaped like the conversation's own messages."""
    for item in like:
        content = item.get("content")
        if isinstance(content, list) and content and isinstance(content[0], Mapping):
            if "type" in content[0]:
                return {"role": "user", "content": [{"type": "text", "text": text}]}  # Anthropic
            return {"role": "user", "content": [{"text": text}]}  # Strands
    return {"role": "user", "content": text}  # chat messages and Responses input
