"""A Strands model that replays scripted turns, for tests and the processes they start.

Imported only where Strands is installed (tests skip without it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from strands.models import Model


class Scripted(Model):  # type: ignore[misc]
    """Replays turns: text, or a tool call (a dict with id, name, input); an exception is raised instead."""

    def __init__(self, turns: list[Any]) -> None:
        self.turns = list(turns)
        self.seen: list[list[dict[str, Any]]] = []

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError
        yield

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None,
                     **kwargs: Any) -> AsyncIterator[dict[str, Any]]:  # fmt: skip
        self.seen.append(json.loads(json.dumps(messages, default=str)))
        turn = self.turns.pop(0)
        if isinstance(turn, Exception):
            raise turn
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, dict):
            start = {"toolUse": {"toolUseId": turn["id"], "name": turn["name"]}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(turn["input"])}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        yield {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                            "metrics": {"latencyMs": 1}}}  # fmt: skip
