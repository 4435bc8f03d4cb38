"""Each index segment's list of files: what an open compares the files with, never trusted unsigned.

An open finds the files changed while the vault was closed by comparing their stats with the
``(mtime_ns, size, sha256)`` the index was built from, read from the list beside each segment
(memfs/indexed.py) instead of every document's stored fields. These tests build real vaults,
change files by hand while they are closed, damage the lists in every way a copy, a crash or a
person could, and check that every change is still found and no answer is wrong.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from whoosh.index import open_dir

import memfs
from memfs import index as index_module
from memfs import indexed
from memfs.freshness import file_stat
from memfs.index import SearchIndex
from memfs.storage import index_key


def index_folder(root: Path) -> Path:
    return root / ".memfs" / "index"


def fill(vault: memfs.Vault) -> None:
    alice = vault.memories("users/alice")
    alice.add("Alice prefers window seats on long flights.", title="Window seats", path="seats.md")
    alice.add("Alice is vegetarian and allergic to peanuts.", title="Diet", path="diet.md")
    vault.memories("projects/atlas").add("We chose PostgreSQL for its JSON support.", title="Database",
                                         path="database.md")  # fmt: skip
    vault.search("anything")  # the writes reach the index: a commit, which writes the lists


def build(root: Path) -> None:
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        fill(vault)


def manifest(root: Path) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((index_folder(root) / "memfs-index.json").read_text())["index"]
    return body


def sign(root: Path, body: dict[str, Any], key: bytes) -> None:
    """Sign ``body`` as memfs-index.json with ``key``: what a memfs with that key would have written."""
    payload = json.dumps(body, sort_keys=True, separators=(",", ":"))
    mac = hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()
    (index_folder(root) / "memfs-index.json").write_text(json.dumps({"index": body, "hmac": mac}))


def lists(root: Path) -> list[Path]:
    return sorted(index_folder(root).glob("*" + indexed.SUFFIX))


def truth(root: Path) -> dict[str, tuple[Any, ...]]:
    """What the index holds per file, from the stored fields of its documents, read by plain Whoosh."""
    ix = open_dir(str(index_folder(root)), indexname="MAIN")
    try:
        with ix.searcher() as searcher:
            return {f["path"]: tuple(f["stat"]) for kind in indexed.FILE_KINDS
                    for f in searcher.documents(kind=kind) if "stat" in f}  # fmt: skip
    finally:
        ix.close()


def known_through_lists(root: Path) -> dict[str, tuple[Any, ...]]:
    """What a new process's index (another open) finds through the lists."""
    index = SearchIndex(root, index_folder(root))
    try:
        return index.known()
    finally:
        index.close()


def edit_by_hand(root: Path) -> None:
    """Each kind of change a person makes while no memfs runs."""
    diet = root / "memories/users/alice/diet.md"
    diet.write_text(diet.read_text().replace("peanuts", "shellfish"))  # an edit: size and mtime change
    seats = root / "memories/users/alice/seats.md"
    before = seats.stat()
    seats.write_text(seats.read_text().replace("prefers", "detests"))  # the same size
    assert seats.stat().st_size == before.st_size
    os.rename(root / "memories/projects/atlas/database.md", root / "memories/projects/atlas/db.md")  # mtime kept
    new = root / "memories/users/bob/jazz.md"
    new.parent.mkdir()
    new.write_text("Bob plays jazz piano.\n")  # a new file, with no front matter
    (root / "memories/users/alice/gone.md").unlink()  # deleted


def check_found(vault: memfs.Vault, *, rebuilt: bool = False) -> None:
    """Every change :func:`edit_by_hand` made is in the index, and nothing of before is.

    And committed as the person's edit; after a rebuild the index no longer knows which files
    were deleted, so the deletions wait for ``memfs commit`` (as they did before the lists).
    """
    assert [h.path for h in vault.search("shellfish")] == ["memories/users/alice/diet.md"]
    assert vault.search("peanuts") == []
    assert [h.path for h in vault.search("detests")] == ["memories/users/alice/seats.md"]
    assert vault.search("prefers") == []
    assert [h.path for h in vault.search("postgresql")] == ["memories/projects/atlas/db.md"]
    assert [h.path for h in vault.search("jazz")] == ["memories/users/bob/jazz.md"]
    assert vault.search("gone") == []
    gone = [" D memories/projects/atlas/database.md", " D memories/users/alice/gone.md"]
    assert vault.history.status() == (gone if rebuilt else [])
    assert "memories/users/alice/gone.md" not in vault.index.known()


def build_for_edits(root: Path) -> None:
    build(root)
    with memfs.Vault.open(root, durable=False) as vault:
        vault.memories("users/alice").add("A note that goes away.", title="Gone", path="gone.md")
        vault.search("anything")


def edited_while_closed(tmp_path: Path) -> Path:
    """A vault whose index has two segments, then :func:`edit_by_hand` while it is closed."""
    root = tmp_path / "v"
    build_for_edits(root)
    edit_by_hand(root)
    return root


def check_signed(root: Path) -> None:
    """Every list is a file (not a link) named in the signed manifest with its size and sha256."""
    signed = manifest(root)["files"]
    for path in lists(root):
        assert not path.is_symlink()
        data = path.read_bytes()
        assert signed[path.name] == [len(data), hashlib.sha256(data).hexdigest()]


def test_every_segment_has_a_signed_list_that_says_what_its_stored_fields_say(tmp_path: Path) -> None:
    root = tmp_path / "v"
    build_for_edits(root)
    segments = {name.split(".", 1)[0] for name in manifest(root)["files"] if name.endswith((".seg", ".trm"))}
    assert segments and {p.name for p in lists(root)} == {indexed.name_of(s) for s in segments}
    check_signed(root)
    assert known_through_lists(root) == truth(root)


def test_files_changed_while_the_vault_was_closed_are_found_through_the_lists(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    root = edited_while_closed(tmp_path)
    with caplog.at_level(logging.DEBUG, logger="memfs.index"), memfs.Vault.open(root, durable=False) as vault:
        assert "not using the list" not in caplog.text  # the lists were read, not the stored fields
        check_found(vault)
        subject = vault.log()[0].subject
        assert subject == "edit: 6 files changed outside memfs"  # 2 edited, 1 renamed (2), 1 new, 1 gone
    assert known_through_lists(root) == truth(root)


def tamper(root: Path, how: str) -> bytes:
    """Make the list of the segment holding diet.md claim the diet.md edited by hand is indexed: a lie."""
    diet = "memories/users/alice/diet.md"
    now = file_stat(root, diet)
    assert now is not None
    for path in lists(root):
        body = json.loads(path.read_bytes())
        if diet not in body["paths"]:
            continue
        i = body["paths"].index(diet)
        body["mtimes"][i], body["sizes"][i] = now
        lie = json.dumps(body).encode()
        if how == "planted":  # the lie, unsigned
            path.write_bytes(lie)
        elif how == "truncated":
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        elif how == "corrupted":
            data = bytearray(path.read_bytes())
            data[len(data) // 2] ^= 0x20
            path.write_bytes(bytes(data))
        elif how == "missing":
            path.unlink()
        elif how == "link":  # a symbolic link to the lie, under the list's name
            (tmp := root.parent / "elsewhere.json").write_bytes(lie)
            path.unlink()
            path.symlink_to(tmp)
        elif how == "unsigned":  # a memfs before lists: the manifest names none, and the lie lies there
            path.write_bytes(lie)
            body_ = manifest(root)
            body_["files"] = {n: v for n, v in body_["files"].items() if not n.endswith(indexed.SUFFIX)}
            sign(root, body_, index_key())
        elif how == "another_segment":  # signed (say a memfs bug), but it says it lists another segment
            body["segment"] = "MAIN_" + "0" * 16
            path.write_bytes(json.dumps(body).encode())
            body_ = manifest(root)
            body_["files"][path.name] = [path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()]
            sign(root, body_, index_key())
        else:
            raise AssertionError(how)
        return lie
    raise AssertionError("no list names diet.md")


@pytest.mark.parametrize("how", ["planted", "truncated", "corrupted", "missing", "link", "unsigned",
                                 "another_segment"])  # fmt: skip
def test_a_list_memfs_did_not_sign_as_it_is_never_trusted(tmp_path: Path, how: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    root = edited_while_closed(tmp_path)
    lie = tamper(root, how)
    with caplog.at_level(logging.DEBUG, logger="memfs.index"), memfs.Vault.open(root, durable=False) as vault:
        check_found(vault)  # a trusted lie would have hidden the edit of diet.md
        assert "not using the list of files of index segment" in caplog.text
        assert "rebuilding" not in caplog.text  # the stored fields were read instead: no rebuild
    check_signed(root)  # the open wrote the list again: signed, true, and used by the next open
    if how == "link":  # the link was replaced, and what it pointed to left as it was
        assert (tmp_path / "elsewhere.json").read_bytes() == lie
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="memfs.index"), memfs.Vault.open(root, durable=False) as vault:
        assert "not using the list" not in caplog.text
        check_found(vault)
    assert known_through_lists(root) == truth(root)


def test_an_unchanged_index_of_an_older_memfs_gets_its_lists_at_the_next_open(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    root = tmp_path / "v"
    build(root)
    for path in lists(root):
        path.unlink()
    body = manifest(root)
    body["files"] = {n: v for n, v in body["files"].items() if not n.endswith(indexed.SUFFIX)}
    sign(root, body, index_key())
    with memfs.Vault.open(root, durable=False) as vault:  # nothing changed, nothing to commit to the index
        assert [h.title for h in vault.search("peanuts")] == ["Diet"]
    assert lists(root)
    check_signed(root)
    with caplog.at_level(logging.DEBUG, logger="memfs.index"), memfs.Vault.open(root, durable=False):
        assert "not using the list" not in caplog.text
    assert known_through_lists(root) == truth(root)


def test_a_list_signed_with_another_users_key_makes_the_index_rebuilt(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    root = edited_while_closed(tmp_path)
    tamper(root, "planted")
    body = manifest(root)
    for path in lists(root):
        body["files"][path.name] = [path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()]
    sign(root, body, os.urandom(32))  # a foreign index (someone else's memfs, another machine)
    with caplog.at_level(logging.WARNING), memfs.Vault.open(root, durable=False) as vault:
        check_found(vault, rebuilt=True)
        assert "not built by memfs for this user" in caplog.text and "rebuilding" in caplog.text
    assert known_through_lists(root) == truth(root)


def test_a_stale_index_restored_with_its_lists_catches_up_with_the_files(tmp_path: Path) -> None:
    root = tmp_path / "v"
    build_for_edits(root)
    old = tmp_path / "old-index"
    shutil.copytree(index_folder(root), old)  # a backup, or a sync, bringing an older .memfs/ back
    with memfs.Vault.open(root, durable=False) as vault:  # memfs's own writes after it
        alice = vault.memories("users/alice")
        alice.update("diet.md", body="Alice is vegetarian and allergic to peanuts and to cats.")
        vault.memories("users/carol").add("Carol collects stamps.", title="Stamps", path="stamps.md")
        vault.search("anything")
    edit_by_hand(root)
    shutil.rmtree(index_folder(root))
    shutil.copytree(old, index_folder(root))
    with memfs.Vault.open(root, durable=False) as vault:
        check_found(vault)
        assert [h.path for h in vault.search("stamps")] == ["memories/users/carol/stamps.md"]
        assert [h.path for h in vault.search("cats")] == ["memories/users/alice/diet.md"]
    assert known_through_lists(root) == truth(root)


def test_the_lists_say_what_the_stored_fields_say_through_many_changes(tmp_path: Path) -> None:
    """Updates, deletions, moves, merges of segments, hand edits, transcripts and a rebuild."""
    root = tmp_path / "v"
    rng = random.Random(16)
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.freshness = 0
        names: list[str] = []
        session = vault.session("s1", commit="manual")
        for step in range(90):
            store = vault.memories(rng.choice(["a", "b/c"]))
            action = rng.random()
            if action < 0.45 or not names:
                names.append(store.add(f"note {step} about {rng.choice(['tea', 'jazz', 'rust'])}").path)
            elif action < 0.6:
                path = rng.choice(names)
                vault.engine.write(path, f"---\ntitle: t{step}\n---\nrewritten {step}\n", message="rewrite")
            elif action < 0.7:
                vault.engine.delete(names.pop(rng.randrange(len(names))), message="delete")
            elif action < 0.78:
                src = names.pop(rng.randrange(len(names)))
                dst = f"memories/moved/m{step}.md"
                vault.engine.move(src, dst, message="move")
                names.append(dst)
            elif action < 0.86:
                (root / rng.choice(names)).write_text(f"by hand {step}\n")  # malformed or plain: both indexed
            elif action < 0.93:
                session.append([{"role": "user", "content": f"turn {step} about tea"}])
            else:
                (root / "memories/broken.md").write_text("---\n: [\n---\nbad\n")
            if step % 7 == 0:
                vault.search("tea")  # an index commit (and Whoosh merges small segments now and then)
            if step == 60:
                vault.reindex(full=True)
            if step % 15 == 14:
                vault.search("tea")
                assert known_through_lists(root) == truth(root)
        vault.search("tea")
    assert known_through_lists(root) == truth(root)
    with memfs.Vault.open(root, durable=False) as vault:
        known = vault.index.known()
        assert all(known[p][:2] == file_stat(root, p) for p in known)
        assert sorted(p for p in known if "#" not in p) == sorted(vault.engine.catalog.files())


def test_segments_built_aside_and_published_have_true_lists(tmp_path: Path) -> None:
    root = tmp_path / "v"
    build(root)
    folder = root / "memories/imported"
    folder.mkdir()
    for i in range(index_module.STAGE_FROM_FILES + 10):  # a long job: built outside the lock, then published
        (folder / f"n{i}.md").write_text(f"imported note {i} about tea\n")
    with memfs.Vault.open(root, durable=False) as vault:
        assert len(vault.search("imported", k=500)) == index_module.STAGE_FROM_FILES + 10
        (folder / "n3.md").unlink()
        vault.reconcile()
    assert known_through_lists(root) == truth(root)
    shutil.rmtree(folder)
    with memfs.Vault.open(root, durable=False) as vault:
        assert vault.search("imported") == []
        vault.reindex(full=True)  # a rebuild aside, renamed into place
    assert known_through_lists(root) == truth(root)
    assert all(p.name in manifest(root)["files"] for p in lists(root))


def test_a_file_another_process_indexed_after_the_walk_stays_indexed(tmp_path: Path) -> None:
    root = tmp_path / "v"
    build(root)
    with memfs.Vault.open(root, durable=False) as opening, memfs.Vault.open(root, durable=False) as other:
        walked, _ = opening.index.walk()  # an open's walk, outside the vault lock
        added = other.memories("users/bob").add("Bob plays jazz piano.", title="Jazz")
        assert [h.path for h in other.search("jazz")] == [added.path]  # indexed by the other process
        other.memories("users/alice").delete("diet.md")
        other.search("anything")
        with opening.locked():  # what the open then does under the lock
            report = opening.index.sync(None, walked=walked)
        assert report.removed == []
        assert [h.path for h in opening.search("jazz")] == [added.path]
        assert opening.search("peanuts") == []


def test_an_edit_made_after_the_walk_is_found_by_the_next_search(tmp_path: Path) -> None:
    root = tmp_path / "v"
    build(root)
    with memfs.Vault.open(root, durable=False) as vault:
        vault.freshness = 0
        walked, _ = vault.index.walk()
        diet = root / "memories/users/alice/diet.md"
        diet.write_text(diet.read_text().replace("peanuts", "shellfish"))
        with vault.locked():
            vault.index.sync(None, walked=walked)
        assert [h.title for h in vault.search("shellfish")] == ["Diet"]


def test_the_open_sweeps_the_temp_files_its_walk_passes(tmp_path: Path) -> None:
    root = tmp_path / "v"
    build(root)
    deep = root / "memories/users/alice/.memfs-tmp-abc123"
    deep.write_text("half a file a killed writer left")
    kept = root / "memories/users/alice/.notes-tmp"
    kept.write_text("not memfs's")
    with memfs.Vault.open(root, durable=False) as vault:
        assert not deep.exists() and kept.exists()
        assert vault.history.status() == ["?? memories/users/alice/.notes-tmp"]


@pytest.mark.parametrize("data", [
    b"", b"\xff", b"[]", b"{}", b'{"format": 2}', b"[" * 100_000,
    b'{"format":1,"segment":"S","doc_count":3,"docnums":[0],"paths":["a"],"mtimes":[1],"sizes":[2]}',
    b'{"format":1,"segment":"S","doc_count":3,"docnums":[0,1],"paths":["a"],"mtimes":[1],"sizes":[2],"digests":["x"]}',
    b'{"format":1,"segment":"S","doc_count":3,"docnums":[3],"paths":["a"],"mtimes":[1],"sizes":[2],"digests":["x"]}',
    b'{"format":1,"segment":"S","doc_count":3,"docnums":[0],"paths":[1],"mtimes":[1],"sizes":[2],"digests":["x"]}',
    b'{"format":1,"segment":"S","doc_count":3,"docnums":[0],"paths":["a"],"mtimes":["1"],"sizes":[2],"digests":["x"]}',
    b'{"format":1,"segment":"S","doc_count":3,"docnums":[true],"paths":["a"],"mtimes":[1],"sizes":[2],"digests":["x"]}',
    b'{"format":1,"segment":"T","doc_count":3,"docnums":[0],"paths":["a"],"mtimes":[1],"sizes":[2],"digests":["x"]}',
    b'{"format":1,"segment":"S","doc_count":4,"docnums":[0],"paths":["a"],"mtimes":[1],"sizes":[2],"digests":["x"]}',
])  # fmt: skip
def test_a_malformed_list_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        indexed.loads(data, "S", 3)


def test_a_list_reads_back_as_written() -> None:
    files = indexed.SegmentFiles("MAIN_x", 5, (0, 2, 4), ("a.md", "b/ç.md", "c.md"), (1, 3, 5), (2, 4, 6),
                                 ("d1", "", "d3"))  # fmt: skip
    back = indexed.loads(indexed.dumps(files), "MAIN_x", 5)
    assert back == files
    assert dict(back.live({2})) == {"a.md": (1, 2, "d1"), "c.md": (5, 6, "d3")}
    assert dict(back.live(())) == {"a.md": (1, 2, "d1"), "b/ç.md": (3, 4, ""), "c.md": (5, 6, "d3")}
    assert dict(back.live([0, 4])) == {"b/ç.md": (3, 4, "")}
