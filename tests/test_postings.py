"""memfs's writer of a new segment writes what Whoosh's own writer writes, byte for byte.

memfs keeps a new segment's postings grouped by term and writes each term's blocks at once
(memfs.postings: ``_Writer``, ``_Pool``, ``_FieldWriter``); Whoosh keeps a tuple per posting and
writes them one by one. The same documents go through both (memfs's own indexing of a real vault:
memories, an empty body, transcripts whose messages carry their neighbours' words, weaker), and
the two indexes must read back the same: every term's statistics and postings (documents,
weights, values), every document's field lengths and stored fields, and the bytes of the
postings and of the term table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from whoosh.codec.whoosh3 import W3Codec
from whoosh.filedb.filestore import FileStorage
from whoosh.writing import SegmentWriter

import memfs
from memfs.analysis import WEIGHTING
from memfs.index import INDEX_NAME, _schema
from memfs.indexing import Indexer
from memfs.postings import _Codec, _Pool, _Writer, open_writer
from memfs.results import SyncReport

SHARED = "harbour"  # a word of every message: a term of several blocks (Whoosh writes 128 postings a block)


def fill(root: Path) -> list[str]:
    """A vault of memories and transcripts; the vault paths of its files."""
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        notes = vault.memories("users/alice")
        notes.add("Alice prefers window seats on long flights.", title="Window seats", tags=["travel"])
        notes.add("", title="Nothing said yet")  # an empty body, no tags
        notes.add("A quokka visited once.", title="Rare words", tags=["animals/marsupials"])  # quokka: one posting
        chat = vault.session("harbour-chat")
        chat.append(
            [
                {"role": "user" if i % 2 else "assistant", "content": f"the {SHARED} boat {i} sails at {i % 7} pm"}
                for i in range(300)
            ]
        )
        long = " ".join(f"word{i}" for i in range(200))  # a message long enough to stand alone
        vault.session("other").append(
            [
                {"role": "user", "content": "How long have you been doing yoga?"},
                {"role": "assistant", "content": "Three years now, at the harbour studio."},
                {"role": "user", "content": long},
                {"role": "assistant", "content": "ok"},
            ]
        )
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if not {".git", ".memfs"} & set(p.parts))


def build(root: Path, paths: list[str], folder: Path, make_writer: Any) -> Any:
    """A Whoosh index in ``folder`` of the vault's files, written by ``make_writer(ix)``."""
    folder.mkdir()
    ix = FileStorage(str(folder)).create_index(_schema(), indexname=INDEX_NAME)
    writer = make_writer(ix)
    indexer = Indexer(root, lambda rel: None)
    for rel in paths:
        st = (root / rel).stat()
        indexer.index_file(writer, rel, (st.st_mtime_ns, st.st_size), {}, SyncReport())
    writer.commit()
    return ix


def contents(ix: Any) -> dict[str, Any]:
    """Everything a reader of ``ix`` (one segment) reads back."""
    with ix.reader() as reader:
        terms = {}
        for fieldname in reader.indexed_field_names():
            for btext in reader.lexicon(fieldname):
                info = reader.term_info(fieldname, btext)
                matcher = reader.postings(fieldname, btext)
                postings = []
                while matcher.is_active():
                    postings.append((matcher.id(), matcher.weight(), matcher.value()))
                    matcher.next()
                stats = (info.weight(), info.doc_frequency(), info.min_length(), info.max_length())
                terms[fieldname, btext] = (*stats, info.max_weight(), info.min_id(), info.max_id(), postings)
        names = ix.schema.names()
        docs = [
            (reader.stored_fields(d), {f: reader.doc_field_length(d, f) for f in names})
            for d in range(reader.doc_count_all())
        ]
        (segment,) = ix._segments()
        storage = segment.open_compound_file(ix.storage) if segment.is_compound() else ix.storage
        files = {}
        for ext in (W3Codec.POSTS_EXT, W3Codec.TERMS_EXT):
            with segment.open_file(storage, ext) as f:
                files[ext] = f.read()
        return {"terms": terms, "docs": docs, "files": files}


def stock(ix: Any) -> Any:
    """Whoosh's own writer, pool and postings writer (a plain codec)."""
    return SegmentWriter(ix, codec=W3Codec())


@pytest.fixture(scope="module")
def vault_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], dict[str, Any]]:
    root = tmp_path_factory.mktemp("vault") / "v"
    paths = fill(root)
    return root, paths, contents(build(root, paths, root.parent / "stock", stock))


def test_the_vault_has_what_the_comparison_needs(vault_files: tuple[Path, list[str], dict[str, Any]]) -> None:
    _, _, expected = vault_files
    terms = expected["terms"]
    shared = terms["message", SHARED.encode()]
    assert shared[1] > 2 * 128  # three blocks
    assert {p[1] for p in shared[-1]} > {4.0}  # own words and neighbours' words, weaker (memfs.indexing)
    assert terms["body", b"quokka"][1] == 1  # a term of one posting (Whoosh's codec inlines none: limit 1)
    empty = [lengths for stored, lengths in expected["docs"] if stored.get("title") == "Nothing said yet"]
    assert len(empty) == 1 and not empty[0]["body"]  # an empty field
    assert terms["kind", b"message"][1] > 128  # an unscored field (no lengths) of several blocks


@pytest.mark.parametrize(
    "make_writer",
    [
        pytest.param(open_writer, id="memfs-writer"),
        pytest.param(lambda ix: SegmentWriter(ix, codec=_Codec()), id="whoosh-pool-memfs-postings"),
        pytest.param(lambda ix: _Writer(ix, codec=_Codec(), limitmb=0.01), id="pool-spilled-to-disk"),
    ],
)
def test_memfs_writes_the_segment_whoosh_writes(
    vault_files: tuple[Path, list[str], dict[str, Any]], tmp_path: Path, make_writer: Any
) -> None:
    root, paths, expected = vault_files
    got = contents(build(root, paths, tmp_path / "ix", make_writer))
    assert got["terms"].keys() == expected["terms"].keys()
    for key, value in expected["terms"].items():
        assert got["terms"][key] == value, key
    assert got["docs"] == expected["docs"]
    assert got["files"] == expected["files"]


def test_a_merge_of_segments_writes_what_whoosh_writes(tmp_path: Path) -> None:
    """Merged segments come to the pool a posting at a time (``add``), and out of document order."""
    root = tmp_path / "v"
    paths = fill(root)
    merged = []
    for name, make_writer in (("stock", stock), ("memfs", open_writer)):
        folder = tmp_path / name
        ix = build(root, paths[:2], folder, make_writer)
        for part in (paths[2:3], paths[3:]):
            writer = make_writer(ix)
            for rel in part:
                st = (root / rel).stat()
                Indexer(root, lambda rel: None).index_file(writer, rel, (st.st_mtime_ns, st.st_size), {}, SyncReport())
            writer.commit(merge=False)
        writer = make_writer(ix)
        writer.commit(optimize=True)  # every segment read back into the new one's pool
        merged.append(contents(ix))
    assert merged[0] == merged[1]


def test_postings_of_a_term_out_of_document_order_are_sorted_as_whoosh_sorts_them(tmp_path: Path) -> None:
    """A document that names a term twice (two weights), and postings added with lower numbers later."""
    indexes = []
    for name, make_writer in (("stock", stock), ("memfs", open_writer)):
        (tmp_path / name).mkdir()
        ix = FileStorage(str(tmp_path / name)).create_index(_schema(), indexname=INDEX_NAME)
        writer = make_writer(ix)
        writer.add_document(path="a", kind="message", message=[("tide", 8.0), ("tide", 2.0), ("moon", 4.0)])
        writer.add_document(path="b", kind="message", message=[("moon", 2.0)])
        writer.pool.add(("message", b"moon", 0, 6.0, b"\x00\x00\x00\x02"))  # as a merge would, after document 1
        writer.pool.add(("message", b"moon", 1, 1.0, b"\x00\x00\x00\x01"))
        writer.commit()
        indexes.append(contents(ix))
    assert indexes[0] == indexes[1]
    assert [p[0] for p in indexes[1]["terms"]["message", b"moon"][-1]] == [0, 0, 1, 1]


def test_memfs_pool_is_the_one_a_single_process_writer_uses(tmp_path: Path) -> None:
    (tmp_path / "ix").mkdir()
    ix = FileStorage(str(tmp_path / "ix")).create_index(_schema(), indexname=INDEX_NAME)
    writer = open_writer(ix)
    try:
        assert isinstance(writer, _Writer) and isinstance(writer.pool, _Pool)
    finally:
        writer.cancel()


def test_searches_rank_alike_over_both_indexes(
    vault_files: tuple[Path, list[str], dict[str, Any]], tmp_path: Path
) -> None:
    from whoosh import qparser

    root, paths, _ = vault_files
    ranked = []
    for name, make_writer in (("stock", stock), ("memfs", open_writer)):
        ix = build(root, paths, tmp_path / name, make_writer)
        parser = qparser.MultifieldParser(["message", "title", "body"], ix.schema, group=qparser.OrGroup)
        with ix.searcher(weighting=WEIGHTING) as searcher:
            ranked.append(
                [
                    [(hit.docnum, hit.score) for hit in searcher.search(parser.parse(q), limit=20)]
                    for q in ("harbour boat 7", "yoga years", "window seats", "word17 ok")
                ]
            )
    assert ranked[0] == ranked[1]
    assert all(ranked[0])


def by_document(ix: Any) -> dict[str, Any]:
    """Each document's stored fields, field lengths and postings, over every segment (numbering aside)."""
    docs: dict[str, Any] = {}
    with ix.reader() as reader:
        names = ix.schema.names()
        keys = {d: repr(sorted(reader.stored_fields(d).items())) for d in range(reader.doc_count_all())}
        for d, key in keys.items():
            assert key not in docs
            # a length of 0 reads as None from a segment with the field's lengths, 0 from one without
            docs[key] = {"lengths": {f: reader.doc_field_length(d, f) or 0 for f in names}, "postings": {}}
        for fieldname in reader.indexed_field_names():
            for btext in reader.lexicon(fieldname):
                matcher = reader.postings(fieldname, btext)
                while matcher.is_active():
                    posting = (matcher.weight(), matcher.value())
                    docs[keys[matcher.id()]]["postings"][fieldname, btext] = posting
                    matcher.next()
    return docs


def test_a_build_in_two_processes_writes_the_documents_whoosh_writes(
    vault_files: tuple[Path, list[str], dict[str, Any]], tmp_path: Path
) -> None:
    """Each process of a fresh build in two writes through memfs's writer (memfs.index: PARALLEL_FROM_DOCS)."""
    root, paths, _ = vault_files
    writers = []

    def two_processes(ix: Any) -> Any:
        writers.append(open_writer(ix, procs=2, multisegment=True, batchsize=50))
        return writers[-1]

    expected = by_document(build(root, paths, tmp_path / "stock", stock))
    ix = build(root, paths, tmp_path / "memfs", two_processes)
    (writer,) = writers
    tasks = {type(task).__name__ for task in writer.tasks}
    for queue in (writer.jobqueue, writer.resultqueue):  # their feeder threads end with them
        queue.close()
        queue.join_thread()
    assert len(ix._segments()) == 2
    assert tasks == {"_SubWriterTask"}
    assert by_document(ix) == expected


@pytest.mark.parametrize("value", [5, 2.5, {"a": 1}])
def test_a_value_whoosh_cannot_index_is_refused_as_whoosh_refuses_it(tmp_path: Path, value: Any) -> None:
    errors = []
    for name, make_writer in (("stock", stock), ("memfs", open_writer)):
        (tmp_path / name).mkdir()
        ix = FileStorage(str(tmp_path / name)).create_index(_schema(), indexname=INDEX_NAME)
        writer = make_writer(ix)
        with pytest.raises(ValueError) as caught:
            writer.add_document(path="a", title=value)
        errors.append(str(caught.value))
        writer.cancel()
    assert errors[0] == errors[1]
