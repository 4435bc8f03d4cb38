"""What one MCP ``memory_search`` costs: one search, whose hits are both the text and the structured content.

Counted on a real vault (real git, a real index, the real model for search by meaning) by wrapping
the real ``Catalog.search`` with a counter that calls it: nothing is replaced.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_carve_counts_tools import count_method

import memfs
from memfs.catalog import Catalog
from memfs.integrations.mcp import MemoryServer
from memfs.semantic import E5Embedder

FACTS = {
    "users/alice": [
        ("Alice prefers the window seat on flights.", ["travel"]),
        ("Alice books the aisle seat on trains.", ["travel"]),
        ("Alice is allergic to penicillin.", ["health"]),
    ],
    "users/bob": [("Bob prefers the aisle seat on flights.", ["travel"])],
}


@pytest.fixture(params=["words", "meaning"])
def seeded(request: pytest.FixtureRequest, vault_dir: Path) -> Iterator[memfs.Vault]:
    """A vault of a few facts, searched by words (no model) or by words and meaning (the bundled model)."""
    embedder = E5Embedder() if request.param == "meaning" else None
    with memfs.Vault.open(vault_dir, durable=False, embedder=embedder) as vault:
        for namespace, facts in FACTS.items():
            for text, tags in facts:
                vault.memories(namespace).add(text, tags=tags)
        vault.search("seat")  # the index caught up and every memory embedded: what follows is one call's cost
        yield vault


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    found: Counter[str] = Counter()
    count_method(monkeypatch, found, Catalog, "search")
    return found


def listed(text: str) -> list[tuple[str, str]]:
    """The (path, title) of each hit the text lists, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^\d+\. (\S+) — (.*) \([^()]*score [\d.-]+\)$", text, re.M)]


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "window seat"},
        {"query": "seat", "k": 1},
        {"query": "seat", "tag": "travel", "history": True},
        {"query": "zanzibar recipe"},  # by words nothing found: the text says so, the data is empty
    ],
)
@pytest.mark.parametrize("namespaces", [["users/alice"], ["users/alice", "users/bob"]])
def test_an_mcp_search_searches_once_and_its_text_and_data_agree(
    seeded: memfs.Vault, searches: Counter[str], arguments: dict[str, Any], namespaces: list[str]
) -> None:
    server = MemoryServer(seeded, namespaces)
    searches.clear()

    text, is_error, data = server.call_structured("memory_search", arguments)

    assert not is_error, text
    assert searches["search"] == len(namespaces)  # each namespace once: the text and the data were two searches
    assert data is not None and data["query"] == arguments["query"]
    assert listed(text) == [(r["path"], r["title"]) for r in data["results"]]
    if seeded.semantic is None:  # by meaning, the memories nearest any query are found
        assert bool(data["results"]) == (arguments["query"] != "zanzibar recipe")
    if not data["results"]:
        assert text.startswith('No memories match "zanzibar recipe"')
    assert all(("state" in r) == bool(arguments.get("history")) for r in data["results"])


def test_a_refused_mcp_search_searches_nothing_and_has_no_data(seeded: memfs.Vault, searches: Counter[str]) -> None:
    server = MemoryServer(seeded, ["users/alice"])
    searches.clear()

    text, is_error, data = server.call_structured("memory_search", {"query": "seat", "k": 0})

    assert is_error and "k must be from 1" in text and data is None
    assert searches["search"] == 0


def test_the_tools_search_carries_its_hits_as_data_for_every_face(seeded: memfs.Vault) -> None:
    """The data is the tools' own answer: any face (not only MCP) takes it from the one search."""
    tools = memfs.MemoryTools(seeded, "users/alice")
    result = tools.call({"command": "search", "query": "window seat"})
    assert result.data is not None and listed(result.text) == [(r["path"], r["title"]) for r in result.data["results"]]
    assert tools.call({"command": "view", "path": "/memories"}).data is None
