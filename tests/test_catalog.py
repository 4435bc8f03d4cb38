"""Search goes one way: the catalog asks the index, the index answers with its stale hits, the catalog loops.

The index's reader never re-indexes anything: a hit whose file changed since it was indexed is
left out and named in ``Found.stale``, and the catalog indexes those files and asks again. Three
reads of that kind are checked: memory search, message search, a memory's path by id.
"""

from __future__ import annotations

import memfs
from memfs.results import Found

SEATS = "memories/users/alice/seats.md"


def edit_by_hand(vault: memfs.Vault, rel: str, old: str, new: str) -> None:
    """Change a file as a person's editor would, unseen by searches (freshness None): only the hit check finds it."""
    path = vault.root / rel
    path.write_text(path.read_text("utf-8").replace(old, new), "utf-8")


def test_a_stale_memory_hit_is_named_by_the_index_and_indexed_again_by_the_catalog(vault: memfs.Vault) -> None:
    vault.freshness = None
    vault.memories("users/alice").add("Alice prefers window seats.", title="Seats", path="seats.md")
    assert [h.path for h in vault.search("window")] == [SEATS]
    edit_by_hand(vault, SEATS, "window seats", "window seats over the wing, always")
    reader, index = vault.engine.catalog.reader, vault.engine.catalog.index

    found = reader.search("window")
    assert isinstance(found, Found)
    assert found.hits == [] and found.stale == [SEATS]  # left out, named, and not indexed again by the reader
    assert index.outdated([SEATS]) == [SEATS]

    hits = vault.search("window")  # the catalog re-indexes the stale file and asks again
    assert [h.path for h in hits] == [SEATS] and "over the wing" in hits[0].snippet
    assert index.outdated([SEATS]) == []
    assert [h.path for h in reader.search("wing").hits] == [SEATS]


def test_a_deleted_file_is_stale_and_never_returned(vault: memfs.Vault) -> None:
    vault.freshness = None
    vault.memories("users/alice").add("Alice prefers window seats.", title="Seats", path="seats.md")
    vault.search("window")
    (vault.root / SEATS).unlink()
    assert vault.engine.catalog.reader.search("window").stale == [SEATS]
    assert vault.search("window") == []


def test_a_stale_message_hit_goes_the_same_way(vault: memfs.Vault) -> None:
    vault.freshness = None
    session = vault.session("trip")
    session.append([{"role": "user", "content": "We land in Lisbon on Friday."}])
    assert [h.position for h in vault.search_messages("Lisbon")] == [1]
    edit_by_hand(vault, session.path, "Lisbon", "Porto and then Lisbon")

    found = vault.engine.catalog.reader.search_messages("Lisbon")
    assert found.stale == [session.path] and found.hits == []
    assert [h.position for h in vault.search_messages("Lisbon")] == [1]  # re-indexed on the way
    assert [h.position for h in vault.search_messages("Porto")] == [1]


def test_a_memory_whose_file_changed_is_looked_up_by_id_after_indexing_it_again(vault: memfs.Vault) -> None:
    vault.freshness = None
    memory = vault.memories("users/alice").add("Alice prefers window seats.", title="Seats", path="seats.md")
    assert vault.path_of(memory.id) == SEATS
    edit_by_hand(vault, SEATS, "window seats", "aisle seats now")
    found = vault.engine.catalog.reader.path_of(memory.id)
    assert found is not None and found.hits == [SEATS] and found.stale == [SEATS]
    assert vault.path_of(memory.id) == SEATS
    assert vault.engine.catalog.index.outdated([SEATS]) == []  # indexed again on the way


def test_the_catalog_owns_its_files_under_memfs(vault: memfs.Vault) -> None:
    catalog = vault.engine.catalog
    catalog.mark_pending([SEATS, "archive/x.md"])  # only content files are queued
    assert (vault.root / ".memfs" / "pending").read_text("utf-8") == f"{SEATS}\n"
    assert catalog.index.folder == vault.root / ".memfs" / "index"
