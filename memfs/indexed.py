"""What the search index was built from, segment by segment, in a file beside each segment.

Every file the index holds (a memory, a transcript, a malformed file) has one document that
stores the ``(mtime_ns, size, sha256)`` of the bytes it was built from. Opening a vault compares
those with the files on disk, so that edits made while it was closed are found. Reading them
from Whoosh's stored fields unpickles every document: about 10 µs of CPU a file, a second at
100,000, several on a busy machine.

So each segment gets a small JSON file of its own (``<segment id>.files``) naming the document
number, the vault path and that stat of each of its files. A segment never changes once written
(deletions live in the table of contents), so neither does its list: it is written once, when
the index commit that made the segment signs its files (the list is one of them, with its size
and sha256, in the HMAC-signed ``memfs-index.json``), and an open reads these lists instead of
the stored fields, leaving out the documents deleted since. A list that is missing, unsigned,
not the one signed, or not describing its segment is never used: the stored fields are read
instead (the old speed), and the list is written again by the next commit to the index or the
next sync of every file (an open).

This module is the format and its checks; :mod:`memfs.index` reads and writes the files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

SUFFIX = ".files"
FORMAT = 1
FILE_KINDS = ("memory", "invalid", "transcript")  # the documents that stand for a whole file

IndexedStamp = tuple[Any, ...]  # (mtime_ns, size, sha256) as the index stored it


@dataclass(frozen=True)
class SegmentFiles:
    """The files one segment indexed, in columns: document numbers (within the segment), vault paths, stats.

    Documents deleted when the list was made are left out; later deletions are the table of
    contents' to say (:meth:`live`). Columns, so that a segment of 100,000 files becomes a dict
    or a set without a line of Python per file.
    """

    segment: str
    doc_count: int  # the segment's documents, deleted ones included: a list of another segment does not fit
    docnums: tuple[int, ...]
    paths: tuple[str, ...]
    mtimes: tuple[int, ...]
    sizes: tuple[int, ...]
    digests: tuple[str, ...]

    def live(self, deleted: Iterable[int]) -> Iterator[tuple[str, IndexedStamp]]:
        """``(path, (mtime_ns, size, sha256))`` of each listed file whose document is not in ``deleted``."""
        gone = set(deleted)
        pairs = zip(self.paths, zip(self.mtimes, self.sizes, self.digests, strict=True), strict=True)
        return pairs if not gone else (pair for d, pair in zip(self.docnums, pairs, strict=True) if d not in gone)


def name_of(segment: str) -> str:
    """The file name of a segment's list: Whoosh's prefix for the segment, so it is deleted with it."""
    return segment + SUFFIX


def read_from(reader: Any) -> SegmentFiles:
    """The list of a segment, from its stored fields (``reader``: Whoosh's reader of that one segment)."""
    segment = reader.segment()
    docnums = sorted(
        d for kind in FILE_KINDS if ("kind", kind) in reader for d in reader.postings("kind", kind).all_ids()
    )
    found = []
    for docnum in docnums:
        stored = reader.stored_fields(docnum)
        if "stat" in stored and "path" in stored:
            mtime, size, digest = stored["stat"]
            found.append((docnum, str(stored["path"]), int(mtime), int(size), str(digest)))
    columns = tuple(zip(*found, strict=True)) if found else ((), (), (), (), ())
    return SegmentFiles(segment.segment_id(), int(segment.doc_count_all()), *columns)


def dumps(files: SegmentFiles) -> bytes:
    """The bytes of a segment's list file."""
    body = {
        "format": FORMAT,
        "segment": files.segment,
        "doc_count": files.doc_count,
        "docnums": list(files.docnums),
        "paths": list(files.paths),
        "mtimes": list(files.mtimes),
        "sizes": list(files.sizes),
        "digests": list(files.digests),
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def loads(data: bytes, segment: str, doc_count: int) -> SegmentFiles:
    """A segment's list from its file's bytes, checked against the segment it must describe.

    Raises:
        ValueError: The bytes are not a list of this segment (another segment's, another format,
            malformed).
    """
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"unreadable ({type(exc).__name__})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ValueError("not a list of this format")
    if body.get("segment") != segment or body.get("doc_count") != doc_count:
        raise ValueError("the list of another segment")
    columns: list[list[Any]] = []
    for key in ("docnums", "paths", "mtimes", "sizes", "digests"):
        column = body.get(key)
        if not isinstance(column, list):
            raise ValueError(f"no {key}")
        columns.append(column)
    if len({len(c) for c in columns}) != 1:
        raise ValueError("columns of different lengths")
    docnums, paths, mtimes, sizes, digests = columns
    kinds = (int, str, int, int, str)  # exactly: a bool is no document number
    if any(column and set(map(type, column)) != {kind} for column, kind in zip(columns, kinds, strict=True)):
        raise ValueError("malformed entries")
    if docnums and (min(docnums) < 0 or max(docnums) >= doc_count):
        raise ValueError("a document number outside the segment")
    return SegmentFiles(segment, doc_count, *map(tuple, columns))
