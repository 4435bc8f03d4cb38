"""LangGraph keeps its long-term memory in a vault: MemfsStore driven by a real graph, across processes,
and the BaseStore contract (get, put, delete, search with filters, namespaces, ttl, batches)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import run_script

import memfs

# LangGraph is imported by the tests that use it, not at collection (tests/conftest.py says why).


@pytest.fixture(scope="module", autouse=True)
def langgraph() -> Any:
    return pytest.importorskip("langgraph.store.base")


def _turn(vault_dir: Path, user: str, message: str) -> str:
    return str(run_script("langgraph_turn.py", vault_dir, user, message)["answer"])


@pytest.mark.slow
def test_a_graph_remembers_across_processes(vault_dir: Path) -> None:
    assert _turn(vault_dir, "alice", "remember Alice prefers window seats") == "nothing yet"
    assert _turn(vault_dir, "alice", "remember Alice is allergic to peanuts") == "Alice prefers window seats"
    assert _turn(vault_dir, "alice", "which seats?") == "Alice prefers window seats"
    assert _turn(vault_dir, "bob", "which seats?") == "nothing yet"  # another user's folder
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        files = vault.memories("users/alice/facts").list()
        assert sorted(m.body for m in files) == ["Alice is allergic to peanuts\n", "Alice prefers window seats\n"]
        assert vault.history.status() == []


def test_put_get_delete_as_readable_files(vault: memfs.Vault) -> None:
    from memfs.integrations.langgraph import MemfsStore

    store = MemfsStore(vault)
    store.put(("users", "alice"), "seats", {"text": "Alice prefers window seats.", "confidence": 0.9})
    item = store.get(("users", "alice"), "seats")
    assert item is not None and item.value == {"text": "Alice prefers window seats.", "confidence": 0.9}
    assert item.namespace == ("users", "alice") and item.key == "seats"
    text = (vault.root / "memories/users/alice/seats.md").read_text()
    assert text.endswith("\nAlice prefers window seats.\n") and "confidence: 0.9" in text  # a person reads it
    first = item.created_at
    store.put(("users", "alice"), "seats", {"text": "Alice prefers aisle seats."})
    again = store.get(("users", "alice"), "seats")
    assert again is not None and again.value == {"text": "Alice prefers aisle seats."} and again.created_at == first
    for key in ("user@example.com", "Ünïcode key / with slash", "x" * 300):  # keys that are no file names
        store.put(("users", "alice"), key, {"text": f"value of {key[:20]}"})
        assert store.get(("users", "alice"), key).value == {"text": f"value of {key[:20]}"}  # type: ignore[union-attr]
    store.delete(("users", "alice"), "seats")
    assert store.get(("users", "alice"), "seats") is None and store.get(("users", "alice"), "never") is None
    assert vault.log()[0].subject == "langgraph: 1 change" and vault.history.status() == []
    from langgraph.store.base import InvalidNamespaceError

    for bad in ((), ("users", "../etc"), ("a/b",), (".hidden",)):
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"text": "x"})


def test_search_by_query_filter_and_namespace(vault: memfs.Vault) -> None:
    from memfs.integrations.langgraph import MemfsStore

    store = MemfsStore(vault)
    store.put(("users", "alice", "facts"), "f1", {"text": "Alice flies to Tokyo in March.", "kind": "trip", "n": 3})
    store.put(("users", "alice", "facts"), "f2", {"text": "Alice likes green tea.", "kind": "taste", "n": 1})
    store.put(("users", "bob", "facts"), "f3", {"text": "Bob flies to Lisbon.", "kind": "trip", "n": 5})
    hits = store.search(("users",), query="flies to")
    assert {h.key for h in hits} == {"f1", "f3"} and all(h.score is not None for h in hits)
    assert [h.key for h in store.search(("users", "alice"), query="flies")] == ["f1"]
    assert {h.key for h in store.search(("users",), filter={"kind": "trip"})} == {"f1", "f3"}
    assert [h.key for h in store.search(("users",), query="flies", filter={"n": {"$gt": 4}})] == ["f3"]
    assert [h.key for h in store.search(("users",), filter={"kind": {"$ne": "trip"}})] == ["f2"]
    assert len(store.search(("users",), limit=2)) == 2 and len(store.search(("users",), limit=2, offset=2)) == 1
    assert store.list_namespaces() == [("users", "alice", "facts"), ("users", "bob", "facts")]
    assert store.list_namespaces(prefix=("users", "bob")) == [("users", "bob", "facts")]
    assert store.list_namespaces(suffix=("facts",), max_depth=2) == [("users", "alice"), ("users", "bob")]
    # a person's own note in the same folder is not a LangGraph item, and is left alone
    vault.memories("users/alice/facts").add("A note a person wrote.", title="Note")
    assert {h.key for h in store.search(("users", "alice"))} == {"f1", "f2"}
    # nor is one too large for memfs to read: it breaks no search, and no get of its key
    big = vault.root / "memories/users/alice/facts/huge.md"
    big.write_text("A person's pasted log.\n" + "x" * (5 * 1024 * 1024))
    assert {h.key for h in store.search(("users", "alice"))} == {"f1", "f2"}
    assert store.get(("users", "alice", "facts"), "huge") is None


def test_a_batch_is_one_commit_and_reads_see_the_store_before_it(vault: memfs.Vault) -> None:
    from langgraph.store.base import GetOp, PutOp, SearchOp

    from memfs.integrations.langgraph import MemfsStore

    store = MemfsStore(vault)
    before = len(vault.log())
    results = store.batch([PutOp(("notes",), "a", {"text": "one"}), GetOp(("notes",), "a"),
                           PutOp(("notes",), "b", {"text": "two"}), PutOp(("notes",), "a", {"text": "three"}),
                           SearchOp(("notes",))])  # fmt: skip
    assert results == [None, None, None, None, []]
    assert len(vault.log()) == before + 1
    assert store.get(("notes",), "a").value == {"text": "three"}  # type: ignore[union-attr]  # the last put wins
    got = asyncio.run(store.aget(("notes",), "b"))
    assert got is not None and got.value == {"text": "two"}
    asyncio.run(store.aput(("notes",), "c", {"text": "four"}))
    assert [h.key for h in asyncio.run(store.asearch(("notes",), query="four"))] == ["c"]


def test_ttl_is_the_memorys_expiry(vault: memfs.Vault) -> None:
    from memfs.integrations.langgraph import MemfsStore

    store = MemfsStore(vault, ttl={"default_ttl": 60})
    store.put(("cache",), "fresh", {"text": "still good"})
    store.put(("cache",), "stale", {"text": "gone soon"}, ttl=1)
    assert "expires:" in (vault.root / "memories/cache/fresh.md").read_text()
    memory = vault.memories("cache").get("stale.md")
    vault.memories("cache").update("stale.md", metadata={"expires": "2000-01-01T00:00:00Z"})  # as if a minute passed
    assert memory.metadata["langgraph"]["ttl"] == 1
    assert store.get(("cache",), "stale") is None
    assert [h.key for h in store.search(("cache",))] == ["fresh"]
    assert [h.key for h in store.search(("cache",), query="gone soon good")] == ["fresh"]
    assert store.get(("cache",), "fresh") is not None


def test_index_fields_choose_the_searchable_text(vault: memfs.Vault) -> None:
    from memfs.integrations.langgraph import MemfsStore

    store = MemfsStore(vault, index={"dims": 4, "embed": lambda texts: [[0.0] * 4 for _ in texts],
                                     "fields": ["summary"]})  # fmt: skip
    store.put(("docs",), "d1", {"summary": "Quarterly revenue grew.", "body": "zebra giraffe"})
    assert [h.key for h in store.search(("docs",), query="revenue")] == ["d1"]
    assert store.search(("docs",), query="zebra") == []  # not an indexed field
    store.put(("docs",), "d2", {"summary": "x", "body": "zebra"}, index=["body"])  # per item
    assert [h.key for h in store.search(("docs",), query="zebra")] == ["d2"]
