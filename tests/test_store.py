from __future__ import annotations

import re

import pytest

import memfs
from memfs.documents import loads
from memfs.store import new_id


def test_add_writes_a_file_with_front_matter(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    m = store.add("Alice prefers window seats on long flights.", title="Window seats",
                  tags=["travel"], type="preference")  # fmt: skip
    assert m.name == "window-seats.md" and m.path == "memories/users/alice/window-seats.md"
    assert re.fullmatch(r"mem_[0-9A-HJKMNP-TV-Z]{26}", m.id or "")
    text = (vault.root / "memories/users/alice/window-seats.md").read_text()
    assert text.startswith("---\nid: mem_")
    doc = loads(text)
    assert list(doc.metadata) == ["id", "title", "type", "tags", "created", "updated"]
    assert doc.metadata["tags"] == ["travel"]
    assert doc.body == "Alice prefers window seats on long flights.\n"
    assert m.created == m.updated


def test_ids_sort_in_the_order_they_were_made() -> None:
    """Many in one millisecond: the parts of a supersede proposed together are accepted in order."""
    made = [new_id() for _ in range(2000)]
    assert sorted(made) == made and len(set(made)) == len(made)
    assert all(re.fullmatch(r"mem_[0-9A-HJKMNP-TV-Z]{26}", m) for m in made)


def test_get_by_id_and_by_path(store: memfs.MemoryStore) -> None:
    m = store.add("Body", title="Thing")
    assert store.get(m.id).body == "Body\n"  # type: ignore[arg-type]
    assert store.get("thing.md").id == m.id
    assert m.id in store and "thing.md" in store and "nope.md" not in store


def test_slug_collisions_get_numbers(store: memfs.MemoryStore) -> None:
    paths = [store.add(f"n{i}", title="Same title").name for i in range(3)]
    assert paths == ["same-title.md", "same-title-2.md", "same-title-3.md"]


def test_slug_from_body_when_no_title(store: memfs.MemoryStore) -> None:
    assert store.add("Café opens at 8 on Sundays").name == "cafe-opens-at-8-on-sundays.md"


def test_update_body_and_metadata_keeps_other_keys(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    m = store.add("old", title="T", metadata={"priority": "high"})
    target = vault.root / "memories/users/alice/t.md"
    target.write_text(target.read_text().replace("priority: high", "priority: high  # set by Alice"))
    vault.reconcile()
    updated = store.update(m.id, body="new\n", tags=["x"])  # type: ignore[arg-type]
    assert updated.body == "new\n"
    text = target.read_text()
    assert "priority: high  # set by Alice" in text
    assert updated.metadata["created"] == m.metadata["created"]
    assert list(updated.metadata)[:3] == ["id", "title", "created"]


def test_update_refuses_to_change_id(store: memfs.MemoryStore) -> None:
    m = store.add("x", title="x")
    with pytest.raises(ValueError, match="maintained by memfs"):
        store.update(m.id, metadata={"id": "mem_other"})  # type: ignore[arg-type]


def test_update_a_hand_written_file_without_front_matter(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    target = vault.root / "memories/users/alice/notes.md"
    target.parent.mkdir(parents=True)
    target.write_text("# Call notes\n\nShe likes trains.\n")
    vault.reconcile()
    assert store.get("notes.md").title == "Call notes"
    updated = store.update("notes.md", tags=["trains"])
    assert updated.body == "# Call notes\n\nShe likes trains.\n"
    assert target.read_text().startswith("---\ntags: [trains]\nupdated: ")


def test_delete_and_restore_a_deleted_memory(store: memfs.MemoryStore) -> None:
    m = store.add("keep me", title="Keep")
    rev = store.history(m.id)[0].sha  # type: ignore[arg-type]
    store.delete(m.id)  # type: ignore[arg-type]
    assert m.id not in store
    with pytest.raises(memfs.MemoryNotFound):
        store.get(m.id)  # type: ignore[arg-type]
    restored = store.restore("keep.md", rev)
    assert restored.id == m.id and restored.body == "keep me\n"
    assert store.search("keep")[0].id == m.id


def test_move_keeps_id_and_history(store: memfs.MemoryStore) -> None:
    m = store.add("v1", title="Seats")
    store.update(m.id, body="v2\n")  # type: ignore[arg-type]
    moved = store.move(m.id, "travel/seats.md")  # type: ignore[arg-type]
    assert moved.id == m.id and moved.name == "travel/seats.md"
    assert store.get(m.id).name == "travel/seats.md"  # type: ignore[arg-type]
    history = store.history(m.id)  # type: ignore[arg-type]
    assert [r.trailers["Memfs-Op"] for r in history] == ["move", "update", "create"]
    assert history[0].status == "R" and history[0].old_path == "memories/users/alice/seats.md"
    assert store.show(m.id, history[-1].sha).body == "v1\n"  # type: ignore[arg-type]


def test_move_onto_existing_file_is_refused(store: memfs.MemoryStore) -> None:
    a = store.add("a", title="a")
    store.add("b", title="b")
    with pytest.raises(memfs.AlreadyExistsError):
        store.move(a.id, "b.md")  # type: ignore[arg-type]
    assert store.get("a.md").body == "a\n" and store.get("b.md").body == "b\n"


def test_restore_to_an_earlier_version_is_a_new_commit(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    m = store.add("first", title="Doc")
    first = store.history(m.id)[0].sha  # type: ignore[arg-type]
    store.update(m.id, body="second\n")  # type: ignore[arg-type]
    commits_before = len(vault.log())
    assert store.restore(m.id, first).body == "first\n"  # type: ignore[arg-type]
    assert len(vault.log()) == commits_before + 1
    assert vault.log()[0].subject == f"restore: users/alice/doc.md to {first[:10]}"


def test_restore_unknown_revision(store: memfs.MemoryStore) -> None:
    m = store.add("x", title="x")
    for rev in ("deadbeef", "--all", "", "HEAD~99"):
        with pytest.raises(memfs.RevisionNotFound):
            store.restore(m.id, rev)  # type: ignore[arg-type]


def test_list_with_filters(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    store.add("a", title="A", type="fact", tags=["x"])
    store.add("b", title="B", type="preference", tags=["x", "y"])
    vault.memories("users/bob").add("c", title="C", type="fact")
    assert [m.title for m in store.list()] == ["A", "B"]
    assert [m.title for m in store.list(type="fact")] == ["A"]
    assert [m.title for m in store.list(tag="y")] == ["B"]


def test_list_skips_malformed_files(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    store.add("fine", title="Fine")
    (vault.root / "memories/users/alice/bad.md").write_text("---\n- a list\n---\nbody\n")
    assert [m.title for m in store.list()] == ["Fine"]
    vault.reconcile()
    assert [p.path for p in vault.problems()] == ["memories/users/alice/bad.md"]


def test_search_is_scoped_to_the_namespace(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    store.add("Alice likes green tea", title="Tea")
    vault.memories("users/bob").add("Bob likes green tea too", title="Tea")
    assert [h.namespace for h in store.search("green tea")] == ["users/alice"]
    assert len(vault.search("green tea")) == 2
    assert len(vault.search("green tea", namespace="users")) == 2


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"body": 42}, TypeError),
        ({"body": "x", "tags": "travel"}, TypeError),
        ({"body": "x", "tags": ["a,b"]}, ValueError),
        ({"body": "x", "tags": [""]}, ValueError),
        ({"body": "x", "title": 3}, TypeError),
        ({"body": "x", "metadata": {"created": "now"}}, ValueError),
        ({"body": "x", "path": "../escape.md"}, memfs.PathError),
        ({"body": "x", "path": "notes.txt"}, memfs.PathError),
        ({"body": "x\x00y"}, memfs.ContentError),
        ({"body": "x" * (1024 * 1024 + 1)}, memfs.ContentError),
        ({"body": "\udc80"}, memfs.ContentError),
    ],
)
def test_add_rejects_bad_input(store: memfs.MemoryStore, vault: memfs.Vault, kwargs: dict, error: type) -> None:
    before = vault.log()
    with pytest.raises(error):
        store.add(**kwargs)
    assert vault.log() == before
    assert list((vault.root / "memories").rglob("*.md")) == []


def test_add_at_an_existing_path_is_refused(store: memfs.MemoryStore) -> None:
    store.add("one", path="fixed.md")
    with pytest.raises(memfs.AlreadyExistsError):
        store.add("two", path="fixed.md")
    assert store.get("fixed.md").body == "one\n"


def test_bad_namespaces(vault: memfs.Vault) -> None:
    for ns in ("", "../x", "a//b", ".git", "x.md", "users/.hidden"):
        with pytest.raises(memfs.PathError):
            vault.memories(ns)
    assert vault.memories("/users/alice/").namespace == "users/alice"


def test_unknown_refs(store: memfs.MemoryStore) -> None:
    for ref in ("mem_NOPE", "missing.md", ""):
        with pytest.raises(memfs.MemoryNotFound):
            store.get(ref)
    with pytest.raises(memfs.PathError):
        store.get("../../etc/passwd.md")


def test_update_detects_a_concurrent_edit(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    m = store.add("v1", title="Race")
    raw = vault.read_bytes("memories/users/alice/race.md")
    (vault.root / "memories/users/alice/race.md").write_text(raw.decode().replace("v1", "edited by hand"))
    with pytest.raises(memfs.ConflictError):
        vault.engine.write("memories/users/alice/race.md", raw.decode(), message="x", expect=raw)
    assert "edited by hand" in store.get(m.id).body  # type: ignore[arg-type]
