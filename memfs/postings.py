"""A new segment of the search index, written as Whoosh writes it, a term at a time.

Whoosh's writer keeps a tuple per posting (with type checks), sorts them all at commit and writes
them one call chain per posting: most of the cost of a first index of transcripts. memfs's writer
(:func:`open_writer`) keeps a new segment's postings grouped by term as documents are added
(:class:`_Pool`) and writes each term's blocks at once (:class:`_FieldWriter`). What it writes is
Whoosh's, byte for byte: the same blocks, statistics, term table, lengths and stored fields
(tests/test_postings.py builds the same vault through both and compares them). Its codec
also names segments from :mod:`secrets` (:class:`_Codec`).
"""

from __future__ import annotations

import functools
import operator
import pickle
import secrets
import struct
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from whoosh.codec.base import OutOfOrderError
from whoosh.codec.whoosh3 import (
    LENGTHS_COLUMN,
    WHOOSH3_HEADER_MAGIC,
    W3Codec,
    W3FieldWriter,
    W3PerDocReader,
    W3Segment,
    W3TermInfo,
    _lenfield,
)
from whoosh.fields import FieldType
from whoosh.system import pack_ushort
from whoosh.util.numeric import byte_to_length, length_to_byte
from whoosh.writing import PostingPool, SegmentWriter


class _Codec(W3Codec):  # type: ignore[misc]
    """Whoosh's codec, except that a new segment's name comes from the OS, not from :mod:`random`.

    Whoosh names segments with ``random.choice``: a program that seeds :mod:`random` (for
    reproducible runs; Hypothesis does it before every example) would name its next segment
    like an earlier run did, and Whoosh's commit then fails on the name clash (the index was
    rebuilt from the files each time). The segment keeps a plain codec, so the pickled segment
    list names only Whoosh's classes.
    """

    def new_segment(self, storage: Any, indexname: str) -> Any:
        return W3Segment(W3Codec(), indexname, segid="".join(secrets.choice(_SEGMENT_CHARS) for _ in range(16)))

    def field_writer(self, storage: Any, segment: Any) -> Any:
        return _FieldWriter(self, storage, segment)


def open_writer(ix: Any, **options: Any) -> Any:
    """A writer of the Whoosh index ``ix`` (``options`` are Whoosh's), writing through memfs's codec.

    The writer keeps the new segment's postings grouped by term (:class:`_Writer`); with
    ``procs`` above 1, Whoosh's writer in several processes does, each process through
    :class:`_Writer` (:func:`_mp_writer`).
    """
    if options.get("procs", 1) > 1:
        return _mp_writer()(ix, codec=_Codec(), **options)
    return _Writer(ix, codec=_Codec(), **options)


class _FieldWriter(W3FieldWriter):  # type: ignore[misc]
    """Whoosh's postings writer, writing each term's blocks at once rather than a posting at a time.

    Whoosh writes a posting through three calls, with type checks and a look-up of the
    document's field length (to bound each block's scores) each time, most of the cost of
    indexing transcripts. The bytes written are Whoosh's: the same blocks of
    ``blocklimit`` postings, pickled and compressed the same way, with the same statistics
    (:class:`W3TermInfo` adds up each block as Whoosh's writer would have it).
    """

    def add_postings(self, schema: Any, lengths: Any, items: Any) -> None:
        if self._codec._inlinelimit > 1:  # Whoosh's own inlining (not memfs's codec): its way, a posting at a time
            super().add_postings(schema, _Lengths(lengths) if lengths else lengths, items)
            return
        columns = _Lengths(lengths) if lengths else None
        fields = items.fields() if isinstance(items, _Sorted) else _fields_of(items)
        for fieldname, terms in fields:
            self.start_field(fieldname, schema[fieldname])
            column = columns.column(fieldname) if columns is not None else None
            fixedsize = self._format.fixed_value_size()
            for btext, postings in terms:
                self._write_term(btext, postings, column, fixedsize)
            self.finish_field()

    def _write_term(
        self,
        btext: bytes,
        postings: list[_Posting],
        column: list[int | None] | None,
        fixedsize: int | None,
    ) -> None:
        """Write one term's postings as :class:`whoosh.codec.whoosh3.W3PostingsWriter` does, and its entry."""
        limit, level = self._codec._blocklimit, self._codec._compression
        terminfo = W3TermInfo()
        start = self._postfile.tell()
        out = [WHOOSH3_HEADER_MAGIC]
        count = len(postings)
        for at in range(0, count, limit):
            docs, weights, values = zip(*postings[at : at + limit], strict=True)
            block = _Block(docs, weights, column)
            terminfo.add_block(block)
            kept = [v for v in values if v]  # Whoosh keeps no empty value
            if fixedsize is None or fixedsize < 0:
                packed: Any = tuple(kept)
            else:
                packed = b"".join(kept) if fixedsize else None
            data = pickle.dumps((block.deltas(), block.packed_weights(), packed), 2)
            if level:
                data = zlib.compress(data, level)
            info = pickle.dumps(block.info(level), 2)
            size = len(info) + len(data)
            out += [_INT.pack(size if at + limit < count else -size), info, data]
        written = b"".join(out)
        self._postfile.write(written)
        terminfo.set_extent(start, len(written))
        self._tindex.add(pack_ushort(self._fieldid) + btext, terminfo.to_bytes())


class _Writer(SegmentWriter):  # type: ignore[misc]
    """Whoosh's writer of a new segment, keeping its postings grouped by term as documents come (:class:`_Pool`).

    A document is added as Whoosh adds it (the same per-document values, lengths and stored
    fields); only its postings go into their terms' lists instead of one tuple each.
    """

    def __init__(self, ix: Any, **kwargs: Any) -> None:
        super().__init__(ix, **kwargs)
        self.pool = _Pool(self._tempstorage, self.newsegment, limitmb=kwargs.get("limitmb", 128))
        # Whoosh's own way for a schema with a field that indexes itself (numbers, booleans) or
        # has a spelling graph: none of memfs's
        self._plain = all(
            type(field).index is FieldType.index and not field.separate_spelling() for _, field in self.schema.items()
        )

    def add_document(self, **fields: Any) -> None:
        if not self._plain:
            super().add_document(**fields)
            return
        self._check_state()
        perdocwriter = self.perdocwriter
        schema = self.schema
        docnum = self.docnum
        docboost = self._doc_boost(fields)
        fieldnames = sorted(name for name in fields if not name.startswith("_"))
        self._check_fields(schema, fieldnames)
        perdocwriter.start_doc(docnum)
        try:
            for fieldname in fieldnames:
                value = fields.get(fieldname)
                if value is None:
                    continue
                field = schema[fieldname]
                length = 0
                if field.indexed:  # what FieldType.index hands Whoosh's writer, its words not yet UTF-8
                    if not field.format or not isinstance(value, (str, list, tuple)):
                        list(field.index(value))  # its error
                    words = field.format.word_values(value, field.analyzer, mode="index")
                    boost = self._field_boost(fields, fieldname, docboost)
                    length = self.pool.add_field(fieldname, docnum, words, boost, field.scorable)
                if field.vector:
                    items = field.vector.word_values(value, field.analyzer, mode="index")
                    perdocwriter.add_vector_items(fieldname, field, sorted((t, w, v) for t, _, w, v in items))
                customval = fields.get(f"_stored_{fieldname}", value)
                perdocwriter.add_field(fieldname, field, customval if field.stored else None, length)
                if field.column_type and customval is not None:
                    perdocwriter.add_column_value(fieldname, field.column_type, field.to_column_value(customval))
        except Exception:
            perdocwriter.cancel_doc()
            raise
        perdocwriter.finish_doc()
        self._added = True
        self.docnum += 1


@functools.cache
def _mp_writer() -> Any:
    """Whoosh's writer in several processes, each of which writes through :class:`_Writer`.

    Made at first use: :mod:`whoosh.multiproc` brings :mod:`multiprocessing`, which ``import memfs``
    does not need.
    """
    from whoosh.multiproc import MpWriter, SubWriterTask, finish_subsegment

    class _SubWriterTask(SubWriterTask):  # type: ignore[misc]
        """Whoosh's process of a writer in several processes: its ``run``, writing through :class:`_Writer`."""

        def run(self) -> None:
            ix = self.storage.open_index(self.indexname)
            writer = self.writer = _Writer(ix, _lk=False, **self.kwargs)
            while self.running:
                jobinfo = self.jobqueue.get()
                if jobinfo is None:
                    break
                self._process_file(*jobinfo)
            if not self.running:
                writer.cancel()
            elif self.multisegment:
                self.resultqueue.put((None, writer.pool.fieldnames, writer._finalize_segment()), timeout=5)
            else:
                self.resultqueue.put(finish_subsegment(writer, self.kwargs.get("k", 64)), timeout=5)

    class _MpWriter(MpWriter):  # type: ignore[misc]
        def __init__(self, ix: Any, **kwargs: Any) -> None:
            super().__init__(ix, **kwargs)
            self.pool = _Pool(self._tempstorage, self.newsegment, limitmb=kwargs.get("limitmb", 128))

        def _new_task(self) -> Any:
            task = _SubWriterTask(
                self.storage, self.indexname, self.jobqueue, self.resultqueue, self.subargs, self.multisegment
            )
            self.tasks.append(task)
            task.start()
            return task

    return _MpWriter


_Posting = tuple[int, float, bytes | None]  # a document of a term, its weight and its value (Whoosh's bytes)
_Terms = list[tuple[bytes, list[_Posting]]]  # a field's terms, sorted, with their postings
_POSTING_BYTES = 160  # about what Whoosh's pool counts a posting as: the pool goes to disk where Whoosh's did


class _Pool(PostingPool):  # type: ignore[misc]
    """Whoosh's pool of a new segment's postings, kept grouped by field and term as they are added.

    Whoosh keeps a tuple per posting and sorts them all at the end; here a term's postings come
    in document order (documents are numbered as they are added), so only fields and terms are
    sorted, and a term whose postings did not come in order is sorted as Whoosh would. Past
    Whoosh's memory limit the pool is written to a sorted run on disk, and the runs are merged,
    as Whoosh's are.
    """

    def __init__(self, tempstore: Any, segment: Any, limitmb: int = 128) -> None:
        super().__init__(tempstore, segment, limitmb=limitmb)
        self.groups: dict[str, dict[bytes, list[_Posting]]] = {}
        self.disordered: set[tuple[str, bytes]] = set()
        self.count = 0

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        fieldname, btext, docnum, weight, vbytes = item
        terms = self.groups.get(fieldname)
        if terms is None:
            terms = self.groups[fieldname] = {}
            self.fieldnames.add(fieldname)
        postings = terms.get(btext)
        if postings is None:
            terms[btext] = [(docnum, weight, vbytes)]
        else:
            if docnum <= postings[-1][0]:
                self.disordered.add((fieldname, btext))
            postings.append((docnum, weight, vbytes))
        self.count += 1
        if self.count * _POSTING_BYTES > self.limit:
            self.save()

    def add_field(self, fieldname: str, docnum: int, words: Iterable[Any], boost: float, scorable: bool) -> int:
        """Add one document's postings of a field (its format's ``(word, frequency, weight, vbytes)``); its length."""
        terms = self.groups.get(fieldname)
        if terms is None:
            terms = self.groups[fieldname] = {}
            self.fieldnames.add(fieldname)
        length = added = 0
        for word, frequency, weight, vbytes in words:
            if scorable:
                length += frequency
            btext = word.encode("utf-8")
            postings = terms.get(btext)
            if postings is None:
                terms[btext] = [(docnum, weight * boost, vbytes)]
            else:
                if docnum <= postings[-1][0]:  # a term twice in a document
                    self.disordered.add((fieldname, btext))
                postings.append((docnum, weight * boost, vbytes))
            added += 1
        self.count += added
        if self.count * _POSTING_BYTES > self.limit:
            self.save()
        return length

    def save(self) -> None:
        self.current += [
            (fieldname, btext, *posting)
            for fieldname, terms in self.groups.items()
            for btext, postings in terms.items()
            for posting in postings
        ]
        self.groups, self.disordered, self.count = {}, set(), 0
        super().save()

    def iter_postings(self) -> Any:
        if self.runs:  # the pool went to disk: merged as Whoosh merges it (this pool's last run with them)
            return super().iter_postings()
        return _Sorted(self.groups, self.disordered)


class _Sorted:
    """The postings of a :class:`_Pool` in Whoosh's order: by field, term, document (then weight, value)."""

    def __init__(self, groups: dict[str, dict[bytes, list[_Posting]]], disordered: set[tuple[str, bytes]]) -> None:
        self._groups = groups
        self._disordered = disordered

    def fields(self) -> Iterator[tuple[str, _Terms]]:
        """Each field's terms with their postings."""
        for fieldname in sorted(self._groups):
            terms = self._groups[fieldname]
            disordered = {btext for name, btext in self._disordered if name == fieldname}
            yield fieldname, [(t, sorted(terms[t]) if t in disordered else terms[t]) for t in sorted(terms)]

    def __iter__(self) -> Iterator[tuple[str, bytes, int, float, bytes | None]]:
        for fieldname, terms in self.fields():
            for btext, postings in terms:
                for posting in postings:
                    yield (fieldname, btext, *posting)


_INT = struct.Struct("!i")  # a block's length, as Whoosh's StructFile.write_int packs it


class _Block:
    """A block of one term's postings (at most ``blocklimit``), with the statistics Whoosh keeps of it.

    The length and weight bounds are Whoosh's: a zero length is not counted (no length is
    None), and the highest weight is the first weight above every earlier one, from 0.
    """

    def __init__(self, docs: Sequence[int], weights: Sequence[float], column: list[int | None] | None) -> None:
        self._ids = array("I", docs)
        self._weights = array("f", weights)  # what Whoosh stores and sums: single precision
        top = max(weights)
        self._maxweight = top if top > 0 else max((w for w in weights if w > 0), default=0)  # (NaN first: not > 0)
        if column is None:
            lengths: list[int] = []
        elif max(docs) < len(column):
            lengths = list(filter(None, map(column.__getitem__, docs)))
        else:
            lengths = [n for n in (column[d] if d < len(column) else 0 for d in docs) if n]
        self._minlength = min(lengths) if lengths else None
        self._maxlength = max(0, max(lengths)) if lengths else 0

    def __len__(self) -> int:
        return len(self._ids)

    def min_id(self) -> int:
        return int(self._ids[0])

    def max_id(self) -> int:
        return int(self._ids[-1])

    def min_length(self) -> int | None:
        return self._minlength

    def max_length(self) -> int:
        return self._maxlength

    def max_weight(self) -> float:
        return self._maxweight

    def deltas(self) -> tuple[int, ...]:
        ids = self._ids
        return (ids[0], *map(operator.sub, ids[1:], ids))

    def packed_weights(self) -> Any:
        weights = self._weights
        if weights.count(1.0) == len(weights):
            return None
        first = weights[0]
        return first if weights.count(first) == len(weights) else tuple(weights)

    def info(self, level: int) -> tuple[Any, ...]:
        return (
            len(self._ids),
            self._ids[-1],
            self._maxweight,
            level,
            length_to_byte(self._minlength),
            length_to_byte(self._maxlength),
        )


def _fields_of(
    items: Iterable[tuple[str, bytes, int, float, bytes | None]],
) -> Iterator[tuple[str, _Terms]]:
    """Whoosh's sorted stream of postings as each field's terms and their postings, checked as Whoosh checks it."""
    lastfn: str | None = None
    lasttext: bytes | None = None
    terms: _Terms = []
    postings: list[_Posting] = []
    for fieldname, btext, docnum, weight, value in items:
        if fieldname != lastfn:
            if lastfn is not None:
                if fieldname < lastfn:
                    raise OutOfOrderError(f"Field {lastfn!r} .. {fieldname!r}")
                yield lastfn, terms
            lastfn, lasttext, terms = fieldname, None, []
        elif lasttext and btext < lasttext:
            raise OutOfOrderError(f"Term {lastfn}:{lasttext!r} .. {fieldname}:{btext!r}")
        if docnum == -1:  # Whoosh's mark of a word for a spelling graph, never a posting
            continue
        if btext != lasttext:
            postings = []
            terms.append((btext, postings))
            lasttext = btext
        postings.append((docnum, weight, value))
    if lastfn is not None:
        yield lastfn, terms


class _Lengths:
    """A segment's field lengths, each field's read into a list the first time it is asked for."""

    def __init__(self, lengths: Any) -> None:
        self._lengths = lengths
        self._fields: dict[str, list[int | None]] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: int = 0) -> int | None:
        column = self.column(fieldname)
        return column[docnum] if docnum < len(column) else default

    def column(self, fieldname: str) -> list[int | None]:
        """The length of field ``fieldname`` in each document of the segment."""
        column = self._fields.get(fieldname)
        if column is None:
            column = self._fields[fieldname] = self._read(fieldname)
        return column

    def _read(self, fieldname: str) -> list[int | None]:
        lengths, count = self._lengths, self._lengths.doc_count_all()
        if not isinstance(lengths, W3PerDocReader):
            return [lengths.doc_field_length(doc, fieldname) for doc in range(count)]
        # what W3PerDocReader.doc_field_length answers, its column looked for once, not once per document
        reader = lengths._cached_reader(_lenfield(fieldname), LENGTHS_COLUMN)
        if reader is None:
            return [0] * count
        return [byte_to_length(b) if b else None for b in (reader[doc] for doc in range(count))]


_SEGMENT_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"  # what Whoosh's own segment names use
