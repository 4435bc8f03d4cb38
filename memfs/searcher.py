"""The reads of the index: memories and messages ranked, terms counted, a memory's path, the link table.

:class:`IndexReader` shares its :class:`~memfs.index.SearchIndex`'s lock and open searcher, and
keeps what it decodes from them per searcher (postings as numpy arrays, deletion and role masks,
the documents set aside by their dates, the vector rows of each segment), let go when the index
opens another searcher. A query returns what it found and which of those files changed since
they were indexed (:class:`~memfs.results.Found`); it never re-indexes anything itself.

Plain-word queries and flat ORs are scored straight from the postings (:meth:`IndexReader._rank`):
each segment's postings are decoded once into numpy arrays (:class:`_Postings`), so a question
of words found in most documents costs a few array operations per term rather than Python per
posting. Queries with other syntax (AND, NOT) go through Whoosh.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import numpy as np
from whoosh import qparser, query
from whoosh.codec.whoosh3 import W3Codec
from whoosh.matching import FilterMatcher
from whoosh.util.numeric import byte_to_length

from . import _fs
from .analysis import ANALYZER, MESSAGE_FIELDS, NON_SPACE, NOTE_FIELDS, WEIGHT_SCALE, WEIGHTING, WORD
from .dates import iso
from .documents import MAX_FRONT_MATTER_BYTES, body_of, normalize_time
from .errors import LinkError, QueryTooLongError, SearchIndexError
from .freshness import file_stat
from .index import SearchIndex
from .indexing import MAX_INDEXED_ENTRIES
from .items import text_of
from .layout import in_namespace, split_memory_path
from .lifecycle import CURRENT, Validity
from .notes import normalize_tag
from .results import Dense, Found, Hit, MessageHit, Problem
from .semantic import VectorSnapshot, VectorStore, z_scores

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4096  # a longer query is refused (QueryTooLongError)
MAX_QUERY_TERMS = 32  # the first this many distinct content words of a query are searched
SNIPPET_SCAN_CHARS = 16_384  # a snippet is taken from this much of a body at most ...
SNIPPET_MAX_MATCHES = 64  # ... and from its first this many matched words
COMMON_TERM_SHARE = 0.2  # a term in more than this share of documents is dropped ...
PRUNE_FROM_DOCS = 2000  # ... once the index is at least this large
CACHE_FROM_POSTINGS = 64  # a term's decoded postings in one segment are kept when at least this many ...
MAX_CACHED_POSTINGS = 8_000_000  # ... up to this many in all (8 bytes each), the least recently used dropped
_SYNTAX = re.compile(r"\b(?:AND|OR|NOT|ANDNOT|ANDMAYBE)\b|[():\"+\-]")
# A question that names someone is mostly answered by what that person said ("What did Ada
# research?" by Ada's "I'm looking into adoption agencies"), and a name is a weak term when its
# owner speaks half the turns, so a message whose speaker the question names scores this much more
# (a share of its score). Measured on LoCoMo, tuned leave-one-conversation-out (docs/benchmarks.md).
SPEAKER_BONUS = 0.4
# A question in the first person ("What is my homework accuracy?", "When did I move?") is the
# user asking about what they said, and what they said is in their own messages, while the
# assistant's replies repeat their words at length; so the user's messages score this much more
# (a share of their score) for such a question. No LoCoMo question is in the first person.
# Tuned on part of BEAM and measured on another part (docs/benchmarks.md).
USER_BONUS = 0.7
FIRST_PERSON = frozenset("i me my mine myself i'm i've i'd i'll".split())


class _Postings:
    """Decoded postings and field lengths of the open index's segments, as arrays, for :meth:`IndexReader._rank`.

    Walking postings through Whoosh costs about a microsecond of Python per posting, and a
    query of common words (the names of a vault about a few people) reads most documents' postings
    for each of its terms. A segment never changes once written (a deletion is only a mark beside
    it), so what was decoded from it stays true for as long as the segment exists: a term's
    document numbers and frequencies, and each document's field lengths. Scoring is then a few
    array operations per term whatever the number of postings. Entries are per segment, so a
    write (which adds a small segment, marks deletions, sometimes merges small segments) leaves
    the big segments' entries in place. Deleted documents are masked at query time.
    """

    def __init__(self) -> None:
        self._postings: dict[tuple[str, str, str], tuple[Any, Any]] = {}  # in use order, oldest first
        self._lengths: dict[tuple[str, str], Any] = {}
        self._size = 0  # postings held in ``_postings``

    def keep_only(self, segments: set[str]) -> None:
        """Forget what was decoded from segments not in ``segments`` (merged away, or another index)."""
        for gone in [key for key in self._postings if key[0] not in segments]:
            self._size -= len(self._postings.pop(gone)[0])
        for old in [key for key in self._lengths if key[0] not in segments]:
            del self._lengths[old]

    def postings(self, reader: Any, name: str, term: str) -> tuple[Any, Any]:
        """One segment's postings of ``(name, term)``: its document numbers and frequencies, deletions included."""
        key = (reader.segment().segment_id(), name, term)
        found = self._postings.pop(key, None)
        if found is None:
            found = _decode(reader, name, term)
            if len(found[0]) < CACHE_FROM_POSTINGS:
                return found
            self._size += len(found[0])
            while self._size > MAX_CACHED_POSTINGS and self._postings:
                self._size -= len(self._postings.pop(next(iter(self._postings)))[0])
        self._postings[key] = found  # now the most recently used
        return found

    def lengths(self, reader: Any, name: str) -> Any:
        """Each document's length in field ``name`` in one segment (as Whoosh stores it: approximated in a byte)."""
        key = (reader.segment().segment_id(), name)
        found = self._lengths.get(key)
        if found is None:
            found = self._lengths[key] = _LENGTHS[_length_bytes(reader, name, reader.doc_count_all())]
        return found


_LENGTHS = np.array([byte_to_length(b) if b else 0 for b in range(256)], dtype=np.float64)  # Whoosh's length byte


def _length_bytes(reader: Any, name: str, count: int) -> Any:
    """The length byte of each of a segment's ``count`` documents in field ``name`` (0 for none), as an array.

    Whoosh keeps them in a column file of one byte per document, up to the last document that
    has the field; reading the file whole replaces a Python call per document.
    """
    filename = W3Codec.column_filename(reader.segment(), f"_{name}_len")  # whoosh3's name for the lengths column
    data = b""
    if reader.storage().file_exists(filename):
        with contextlib.closing(reader.storage().open_file(filename)) as handle:
            data = handle.read()
    found = np.zeros(count, dtype=np.uint8)
    found[: len(data)] = np.frombuffer(data, dtype=np.uint8)[:count]
    return found


def _decode(reader: Any, name: str, term: str) -> tuple[Any, Any]:
    """The document numbers and frequencies of ``(name, term)`` in one segment, deleted documents included.

    Read a block of postings at a time from Whoosh's W3 leaf matcher (the codec of every memfs
    index), not a Python call per posting.
    """
    matcher = reader.postings(name, term)
    if isinstance(matcher, FilterMatcher):  # the segment's deletions: masked at query time instead
        matcher = matcher.child
    ids: list[Any] = []
    weights: list[Any] = []
    while matcher.is_active():
        matcher._read_ids()
        matcher._read_weights()
        ids.append(np.asarray(matcher._ids, dtype=np.int32))
        weights.append(np.asarray(matcher._weights, dtype=np.float32))
        matcher._next_block()
    if not ids:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
    return np.concatenate(ids), np.concatenate(weights)


class IndexReader:
    """Every read of a :class:`~memfs.index.SearchIndex`: search, message search, counts, lookups.

    One object may be used from several threads: it reads under the index's own lock.
    """

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self.root = index.root
        self._lock = index.lock  # Whoosh's readers are not thread-safe without mmap: the index's own lock
        self._searcher: Any = None  # the index's searcher the caches below were made for
        self._transcript_stats: dict[str, tuple[int, int] | None] = {}
        self._validities: _Validities | None = None  # of the open searcher: see _not_current
        self._decoded = _Postings()  # what _rank decoded from the open index's segments
        self._live: tuple[Any, Any] = (None, None)  # a searcher, and per document of it: not deleted
        self._users: tuple[Any, Any] = (None, None)  # a searcher, and per document of it: a user's message
        self._segment_digests: dict[str, list[str]] = {}  # per segment: each document's file sha256 (see _digests)
        self._rows_cache: dict[str, tuple[Any, int, Any]] = {}  # per segment: (vectors, their version, rows)

    def _reader(self) -> Any:
        """The index's open searcher (the caller holds the lock); what was kept of an earlier one is let go.

        Segments never change once written, so what was decoded of those still in the index is kept.
        """
        searcher = self.index.searcher()
        if searcher is not self._searcher:
            self._searcher = searcher
            self._transcript_stats = {}
            self._validities = None
            self._live = (None, None)
            self._users = (None, None)
            current = {seg.segment_id() for r, _ in searcher.reader().leaf_readers() if (seg := r.segment())}
            self._decoded.keep_only(current)
            self._segment_digests = {sid: d for sid, d in self._segment_digests.items() if sid in current}
            self._rows_cache = {sid: rows for sid, rows in self._rows_cache.items() if sid in current}
        return searcher

    def close(self) -> None:
        """Let go of the searcher and of everything kept of it (the index closes the searcher itself)."""
        with self._lock:
            self._searcher = None
            self._transcript_stats, self._validities = {}, None
            self._live, self._users = (None, None), (None, None)

    def problems(self) -> list[Problem]:
        """The files that were skipped: malformed, or larger than memfs reads."""
        with self._lock:
            reader = self._reader()
            return [Problem(f["path"], f.get("error", "")) for f in reader.documents(kind="invalid")]

    def validity_problems(self) -> list[Problem]:
        """Memories whose validity keys memfs cannot read (edited by hand); they are served, the keys ignored."""
        with self._lock:
            searcher = self._reader()
            docs = searcher.docs_for_query(query.Term("lifecycle", "unreadable"))
            found = [searcher.stored_fields(doc) for doc in docs]
        return sorted((Problem(f["path"], f.get("validity_error", "")) for f in found), key=lambda p: p.path)

    def partly_indexed(self) -> list[Problem]:
        """The transcripts whose older entries message search does not cover (over :data:`MAX_INDEXED_ENTRIES`)."""
        with self._lock:
            found = []
            for f in self._reader().documents(kind="transcript"):
                last = int(f.get("position") or 0)
                if last > MAX_INDEXED_ENTRIES:
                    found.append(
                        Problem(
                            f["path"],
                            f"{last:,} entries; message search covers the last "
                            f"{MAX_INDEXED_ENTRIES:,} (entries 1 to "
                            f"{last - MAX_INDEXED_ENTRIES:,} are not indexed)",
                        )
                    )
            return sorted(found, key=lambda p: p.path)

    def path_of(self, memory_id: str) -> Found[str] | None:
        """The path of the memory whose ``id`` is ``memory_id``, if indexed.

        ``stale`` names it too if its file changed since it was indexed (the caller indexes it
        again and looks once more).
        """
        with self._lock:
            stored = self._reader().document(id=memory_id)
        if not stored:
            return None
        rel = str(stored["path"])
        return Found([rel], [] if file_stat(self.root, rel) == tuple(stored["stat"][:2]) else [rel])

    def linked(self, field: str, key: str) -> list[str]:
        """The paths of the memories whose link-table ``field`` (``namekey``, ``linkkey``, ``haslinks``) holds ``key``.

        Read as the index has them: callers check each against its file (:mod:`memfs.links`).
        """
        with self._lock:
            try:
                searcher = self._reader()
                found = searcher.search(query.Term(field, key), limit=None, filter=query.Term("kind", "memory"))
                return sorted({str(hit["path"]) for hit in found})
            except Exception as exc:
                raise SearchIndexError(f"reading the link table failed ({exc.__class__.__name__}: {exc})") from exc

    # -- searching -------------------------------------------------------------

    def search(
        self,
        text: str,
        *,
        k: int = 10,
        namespace: str | None = None,
        type: str | None = None,
        tags: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        snippets: bool = True,
        history: bool = False,
        now: datetime | None = None,
        dense: Dense | None = None,
    ) -> Found[Hit]:
        """Rank memories for ``text`` with BM25F over title, body and tags (and by meaning, given ``dense``).

        ``text`` is read as natural language; Whoosh syntax (``AND``, ``OR``, ``NOT``,
        ``title:word``, parentheses) is honoured, and a query whose syntax is broken is
        searched as its plain words. Wildcards, fuzzy terms and ranges are never expanded.

        Every hit is checked against its file (a stat): a hit whose file is gone or changed since
        it was indexed is left out, its file named in :attr:`Found.stale` (the catalog indexes it
        again and asks again, so it is ranked by what the file says now).

        A query may be up to :data:`MAX_QUERY_CHARS` characters (QueryTooLongError beyond); its
        first :data:`MAX_QUERY_TERMS` distinct content words are searched, and its Whoosh syntax
        is honoured only in queries of at most three times as many words.
        ``namespace`` is an exact path prefix: a hit is a memory of that namespace or of a folder
        below it, found through whole-term filters and checked again against its path.

        Only memories current at ``now`` (the clock by default) are ranked: superseded, expired
        and future ones are set aside before the top ``k`` are chosen, so ``k`` current hits come
        back when there are that many (see :meth:`_not_current`). ``history=True`` ranks them all,
        each hit saying its ``state`` and ``validity``.

        With ``dense`` (the query's vector and the memories'), a query of plain words is ranked
        by its words and its meaning fused (:meth:`_hybrid`), and finds memories that share no
        word with it; a query with Whoosh syntax (AND, NOT, fields) is ranked by its words alone.
        """
        check_query(text)
        if k <= 0:
            return Found([])
        filters = [query.Term("kind", "memory")]
        if namespace:
            namespace = namespace.strip("/")
            filters.append(query.Term("ns", namespace))
        if type:
            filters.append(query.Term("type", type))
        filters += [query.Term("tag", normalize_tag(t)) for t in tags]
        if since or until:
            filters.append(query.TermRange("updated", normalize_time(since), normalize_time(until)))
        others = query.Or([query.Term("kind", kind) for kind in ("invalid", "message", "transcript")])
        found: list[tuple[dict[str, Any], float]] = []
        similar: dict[str, float | None] = {}
        with self._lock:
            try:
                searcher = self._reader()
                hidden, hidden_paths = (set(), []) if history else self._not_current(searcher, now)
                parsed = self._parse(text, ("title", "aliases", "body", "tags")) if _syntax(text) else None
                pairs = _or_pairs(parsed)
                if dense is not None and (pairs is not None or parsed is None):
                    ranked = self._hybrid(searcher, pairs or self._plain(text, searcher), k, filters[1:], hidden, dense)
                    found = [(stored, score) for stored, score, _ in ranked]
                    similar = {stored["path"]: near for stored, _, near in ranked}
                elif pairs is not None:  # a flat OR: Whoosh's ranking, scored from the postings
                    found = self._rank(searcher, pairs, k, filters[1:], hidden)
                elif parsed is not None:
                    aside = [query.Term("path", p) for p in hidden_paths]
                    if not history:
                        aside.append(query.Term("lifecycle", "superseded"))
                    mask = query.Or([others, *aside])
                    results = searcher.search(
                        parsed, limit=k, mask=mask, filter=query.And(filters) if len(filters) > 1 else None
                    )
                    found = [(r.fields(), r.score) for r in results]
                else:
                    pairs = self._plain(text, searcher)
                    if not pairs:
                        return Found([])
                    found = self._rank(searcher, pairs, k, filters[1:], hidden)
            except Exception as exc:
                raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
        if namespace:  # whatever the index returned, nothing from outside the scope
            found = [(s, score) for s, score in found if _in_scope(s, namespace)]
        stale = {s["path"] for s, _ in found if file_stat(self.root, s["path"]) != tuple(s["stat"][:2])}
        if stale:
            found = [(s, score) for s, score in found if s["path"] not in stale]
        stems = set(ANALYZER.stems(text))
        hits = [self._hit(stored, score, stems if snippets else None, now) for stored, score in found]
        hits = [replace(hit, similarity=similar.get(hit.path)) for hit in hits] if similar else hits
        return Found(hits, sorted(stale))

    def document_frequencies(self, text: str, *, namespaces: Sequence[str] = ()) -> tuple[int, dict[str, int]]:
        """How common ``text``'s terms are among the indexed memories: how many memories there are, and hold each.

        The terms are those a search looks for (stems, stop words left out, the first
        :data:`MAX_QUERY_TERMS`, in order); a memory holds a term in its title or its body.
        ``namespaces`` (exact prefixes, as in :meth:`search`) counts only the memories of those
        namespaces and the folders below them; none counts every memory. Deleted memories never count.
        """
        check_query(text)
        terms = list(dict.fromkeys(ANALYZER.stems(text)))[:MAX_QUERY_TERMS]
        with self._lock:
            try:
                searcher = self._reader()
                leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
                counted = self._live_docs(searcher, leaves) & self._holding(searcher, leaves, [("kind", "memory")])
                if namespaces:
                    counted &= self._holding(searcher, leaves, [("ns", ns.strip("/")) for ns in namespaces])
                held = {
                    t: int(np.count_nonzero(counted & self._holding(searcher, leaves, [("title", t), ("body", t)])))
                    for t in terms
                }
                return int(np.count_nonzero(counted)), held
            except Exception as exc:
                raise SearchIndexError(f"counting terms failed ({exc.__class__.__name__}: {exc})") from exc

    def _holding(self, searcher: Any, leaves: list[tuple[Any, int]], pairs: list[tuple[str, str]]) -> Any:
        """Per document of ``searcher``: True if it holds any of the ``(field, term)`` pairs, deleted ones too."""
        found = np.zeros(searcher.doc_count_all(), dtype=bool)
        for leaf, offset in leaves:
            for name, term in pairs:
                if (name, term) in leaf:
                    found[self._decoded.postings(leaf, name, term)[0] + offset] = True
        return found

    def _not_current(self, searcher: Any, now: datetime | None) -> tuple[set[int], list[str]]:
        """The documents not current at ``now``, and the paths of those set aside by their dates.

        Every ``superseded`` document is, and a ``timed`` one when its dates say so now (their
        paths are for a query Whoosh runs, whose mask needs terms).

        Only documents with validity keys are read (most memories have none), once per searcher
        (a stored-field read costs about 0.1 ms: read per search, they were most of its cost), and
        the dates are judged at the moment of the search, never at indexing: a memory that expired
        since it was indexed is set aside all the same.
        """
        if self._validities is None:
            superseded = set(searcher.docs_for_query(query.Term("lifecycle", "superseded")))
            timed = []
            for doc in searcher.docs_for_query(query.Term("lifecycle", "timed")):
                stored = searcher.stored_fields(doc)
                timed.append((doc, _validity(stored), stored["path"]))
            self._validities = (superseded, timed)
        superseded, timed = self._validities
        moment = iso(now or datetime.now(timezone.utc))
        hidden, paths = set(superseded), []
        for doc, held, path in timed:
            if held.state_at(moment) != CURRENT:
                hidden.add(doc)
                paths.append(path)
        return hidden, paths

    def search_messages(
        self,
        text: str,
        *,
        k: int = 10,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> Found[MessageHit]:
        """Rank conversation messages for ``text`` (all sessions, or one transcript path).

        A message is found by its own words and, weaker, by those of the two messages either
        side of it and of its session's date. ``since`` and ``until`` are ISO days
        (``2023-05-08``), compared with the session's date. Hits are checked against their
        transcript as :meth:`search` checks memories, and the query is bounded as there.
        """
        check_query(text)
        if k <= 0:
            return Found([])
        filters = [query.Term("kind", "message")] + ([query.Term("session", session)] if session else [])
        if since or until:
            filters.append(query.TermRange("day", since, until))
        with self._lock:
            try:
                searcher = self._reader()
                parsed = self._parse(text, MESSAGE_FIELDS) if _syntax(text) else None
                pairs = _or_pairs(parsed)
                if pairs is not None:  # a flat OR: Whoosh's ranking, scored from the postings
                    found = self._rank(searcher, pairs, k, filters[1:])
                elif parsed is not None:
                    found = [(r.fields(), r.score) for r in searcher.search(parsed, limit=k, filter=query.And(filters))]
                else:
                    terms = self._terms(text, searcher, "message")
                    pairs = [(f, t) for t in terms for f in MESSAGE_FIELDS]
                    found = self._rank(searcher, pairs, k, filters[1:], asked_by_user=first_person(text))
                if session:  # whatever the index returned, nothing from another transcript
                    found = [(s, score) for s, score in found if s.get("session") == session]
                indexed = {s["session"]: self._transcript_stat(s["session"]) for s, _ in found}
            except Exception as exc:
                raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
        stale = {rel for rel, st in indexed.items() if st is None or file_stat(self.root, rel) != st}
        if stale:
            found = [(s, score) for s, score in found if s["session"] not in stale]
        stems = set(ANALYZER.stems(text))
        hits = []
        for stored, score in found:
            item = json.loads(stored["item"])
            hits.append(
                MessageHit(
                    stored.get("session_id") or stored["session"],
                    stored["session"],
                    stored["position"],
                    stored.get("role", ""),
                    round(float(score), 4),
                    make_snippet(text_of(item), stems),
                    item,
                    stored.get("time"),
                    stored.get("date"),
                    stored.get("day"),
                )
            )
        return Found(hits, sorted(stale))

    def _rank(
        self,
        searcher: Any,
        pairs: list[tuple[str, str]],
        k: int,
        filters: list[Any],
        hidden: set[int] | None = None,
        *,
        asked_by_user: bool = False,
    ) -> list[tuple[dict[str, Any], float]]:
        """The top ``k`` documents for an OR of ``(field, term)`` pairs by BM25F, scored straight from the postings.

        The same scores and order as Whoosh's search of ``Or([Term(field, term), ...])`` under
        :data:`WEIGHTING` (tested against it), at a fraction of the cost: Whoosh's matcher tree
        spends several microseconds of Python per posting, here each term of each segment is a
        few array operations over postings decoded once (:class:`_Postings`). Only memories have
        ``title``, ``body`` and ``tags``, and only messages ``message`` and ``speaker``, so no
        filter by kind is needed; ``filters`` are Whoosh queries every hit must match, and no
        document of ``hidden`` is returned. A message whose ``speaker`` the query names scores
        :data:`SPEAKER_BONUS` more, and with ``asked_by_user`` a user's message :data:`USER_BONUS`
        more (Whoosh's own search, for queries with syntax, has neither rule).
        """
        leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
        scores, matched = self._scores(searcher, leaves, pairs)
        if asked_by_user and USER_BONUS:
            scores[self._user_docs(searcher)] *= 1 + USER_BONUS
        matched &= self._allowed(searcher, leaves, filters, hidden)
        best = _top(np.flatnonzero(matched), scores, k)
        return [(searcher.stored_fields(int(doc)), float(scores[doc])) for doc in best]

    def _scores(self, searcher: Any, leaves: list[tuple[Any, int]], pairs: list[tuple[str, str]]) -> tuple[Any, Any]:
        """BM25F of every document of ``searcher`` for an OR of ``(field, term)`` pairs, and which hold any of them."""
        reader = searcher.reader()
        total = reader.doc_count_all()
        scores = np.zeros(total)
        matched = np.zeros(total, dtype=bool)
        named = None  # messages said by someone the query names
        for name, term in dict.fromkeys(pairs):
            if (name, term) not in reader:
                continue
            k1 = WEIGHTING.K1 * (WEIGHT_SCALE if name == "message" else 1)
            b = WEIGHTING._field_B.get(name, WEIGHTING.B)
            avgfl = searcher.avg_field_length(name) or 1
            idf = searcher.idf(name, term)
            for leaf, offset in leaves:
                if (name, term) not in leaf:
                    continue
                docs, weights = self._decoded.postings(leaf, name, term)
                length = self._decoded.lengths(leaf, name)[docs]
                tf = weights.astype(np.float64)  # Whoosh keeps weights as 32-bit floats, and scores in 64 bits
                docs = docs + offset
                scores[docs] += idf * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * length / avgfl))
                matched[docs] = True
                if name == "speaker":
                    named = np.zeros(total, dtype=bool) if named is None else named
                    named[docs] = True
        if named is not None:
            scores[named] *= 1 + SPEAKER_BONUS
        return scores, matched

    def _allowed(
        self, searcher: Any, leaves: list[tuple[Any, int]], filters: list[Any], hidden: set[int] | None
    ) -> Any:
        """Per document of ``searcher``: live, not in ``hidden`` (not current: _not_current), matching ``filters``."""
        allowed = self._live_docs(searcher, leaves).copy()
        if hidden:
            allowed[np.fromiter(hidden, np.int64, len(hidden))] = False
        for f in filters:
            holds = np.zeros(len(allowed), dtype=bool)
            holds[np.fromiter(searcher.docs_for_query(f), np.int64)] = True
            allowed &= holds
        return allowed

    def _hybrid(
        self, searcher: Any, pairs: list[tuple[str, str]], k: int, filters: list[Any], hidden: set[int], dense: Dense
    ) -> list[tuple[dict[str, Any], float, float | None]]:
        """The top ``k`` memories by BM25F and the query's cosine similarity, fused (see :class:`Dense`).

        Every memory the filters allow is a candidate, whether or not it holds a word of the
        query. Each part is z-scored over those candidates (BM25F's scale depends on the query
        and the vault, a cosine's on the model; their spread over the same memories says how far
        above the rest a memory stands), then mixed ``(1 - w) * z(bm25f) + w * z(cosine)``. A
        memory with no vector yet (written since the last embedding) counts as average by meaning.
        Returned: the memories that hold a word of the query or are at least as similar as the average.
        """
        leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
        scores, matched = self._scores(searcher, leaves, pairs)
        allowed = self._allowed(searcher, leaves, filters, hidden)
        allowed &= self._holding(searcher, leaves, [("kind", "memory")])
        docs = np.flatnonzero(allowed)
        snapshot = dense.vectors.snapshot()  # rows and matrix as one whole: another thread may read more meanwhile
        rows = self._vector_rows(leaves, dense.vectors, snapshot)[docs]
        has = rows >= 0
        similarity = np.full(len(docs), np.nan)
        if has.any():
            # Every stored vector against the query, then the candidates' picked out: gathering the
            # candidates' rows first copied the matrix (15 MB at 10,000 memories). einsum, not `@`:
            # BLAS hands a product this size to its threads, asleep between searches, and waking
            # them cost 4-5 ms where the product itself is 0.7 ms on one core (bench/semantic_cost.py).
            similarity[has] = np.einsum("ij,j->i", snapshot.matrix, dense.vector)[rows[has]]
        by_meaning = np.zeros(len(docs))
        by_meaning[has] = z_scores(similarity[has])
        fused = np.full(searcher.doc_count_all(), -np.inf)
        fused[docs] = (1 - dense.weight) * z_scores(scores[docs]) + dense.weight * by_meaning
        shown = docs[matched[docs] | (has & (by_meaning >= 0))]
        best = _top(shown, fused, k)
        near = similarity[np.searchsorted(docs, best)]  # docs are in order: each hit's place among them
        return [
            (searcher.stored_fields(int(doc)), float(fused[doc]), None if np.isnan(sim) else float(sim))
            for doc, sim in zip(best, near, strict=True)
        ]

    def _vector_rows(self, leaves: list[tuple[Any, int]], vectors: VectorStore, snapshot: VectorSnapshot) -> Any:
        """Per document: the row of its file's vector in ``snapshot`` (of ``vectors``), or -1 (none, or no file's)."""
        parts = []
        for leaf, _ in leaves:
            segment = leaf.segment()
            if segment is None:  # an empty reader: no documents
                parts.append(np.full(leaf.doc_count_all(), -1, np.int64))
                continue
            sid = segment.segment_id()
            cached = self._rows_cache.get(sid)
            if cached is None or cached[0] is not vectors or cached[1] != snapshot.version:
                cached = (vectors, snapshot.version, snapshot.rows_of(self._digests(leaf)))
                self._rows_cache[sid] = cached
            parts.append(cached[2])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def _digests(self, leaf: Any) -> list[str]:
        """Per document of one segment: the sha256 of the memory file it indexed, or "" (messages, other files)."""
        segment = leaf.segment()
        sid = segment.segment_id()
        if sid not in self._segment_digests:
            listed = self.index.listed(leaf)
            digests = [""] * int(segment.doc_count_all())
            for docnum, digest in zip(listed.docnums, listed.digests, strict=True):
                digests[docnum] = digest
            self._segment_digests[sid] = digests
        return self._segment_digests[sid]

    def memory_digests(self) -> set[str]:
        """The sha256 of every file the index holds now (what vectors are kept for)."""
        return {str(stat[2]) for stat in self.index.known(None).values()}

    def unembedded(self, vectors: VectorStore) -> list[tuple[str, str]]:
        """The live memories whose file content has no vector in ``vectors`` yet: (vault path, sha256) each."""
        with self._lock:
            try:
                searcher = self._reader()
                leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
                memories = self._live_docs(searcher, leaves) & self._holding(searcher, leaves, [("kind", "memory")])
                missing = np.flatnonzero(memories & (self._vector_rows(leaves, vectors, vectors.snapshot()) < 0))
                if not len(missing):
                    return []
                found = []
                for leaf, offset in leaves:
                    if leaf.segment() is None:
                        continue
                    listed = self.index.listed(leaf)
                    local = set(
                        (missing[(missing >= offset) & (missing < offset + leaf.doc_count_all())] - offset).tolist()
                    )
                    found += [
                        (p, d)
                        for n, p, d in zip(listed.docnums, listed.paths, listed.digests, strict=True)
                        if n in local
                    ]
                return sorted(set(found))
            except Exception as exc:
                raise SearchIndexError(f"listing memories to embed failed ({exc.__class__.__name__}: {exc})") from exc

    def _live_docs(self, searcher: Any, leaves: list[tuple[Any, int]]) -> Any:
        """Per document of ``searcher``: True unless deleted (made once per searcher)."""
        if self._live[0] is not searcher:
            live = np.ones(searcher.doc_count_all(), dtype=bool)
            for leaf, offset in leaves:
                if leaf.has_deletions():
                    live[np.fromiter(leaf.deleted_docs_set, np.int64) + offset] = False
            self._live = (searcher, live)
        return self._live[1]

    def _user_docs(self, searcher: Any) -> Any:
        """Per document of ``searcher``: True for a message whose role is ``user`` (made once per searcher)."""
        if self._users[0] is not searcher:
            users = np.zeros(searcher.doc_count_all(), dtype=bool)
            users[np.fromiter(searcher.docs_for_query(query.Term("role", "user")), np.int64)] = True
            self._users = (searcher, users)
        return self._users[1]

    def _transcript_stat(self, rel: str) -> tuple[int, int] | None:
        """The ``(mtime_ns, size)`` a transcript was indexed at (cached until the searcher changes)."""
        if rel not in self._transcript_stats:
            stored = self._reader().document(path=rel)
            st = stored.get("stat") if stored else None
            self._transcript_stats[rel] = (int(st[0]), int(st[1])) if st else None
        return self._transcript_stats[rel]

    def _plain(self, text: str, searcher: Any) -> list[tuple[str, str]]:
        """The ``(field, term)`` pairs a query of plain words looks for in memories (none: no content word)."""
        terms = self._terms(text, searcher, "body")
        if not terms:
            return []
        words = WORD.findall(text.lower())[:MAX_QUERY_TERMS]
        return [(f, t) for t in terms for f in NOTE_FIELDS] + [("tags", w) for w in words]

    @staticmethod
    def _terms(text: str, searcher: Any, field: str) -> list[str]:
        """The query's terms, less those in so many documents of ``field`` that they cannot change the ranking."""
        terms = list(dict.fromkeys(ANALYZER.stems(text)))[:MAX_QUERY_TERMS]
        total = searcher.doc_count()
        if total >= PRUNE_FROM_DOCS and len(terms) > 1:
            rare = [t for t in terms if searcher.doc_frequency(field, t) < COMMON_TERM_SHARE * total]
            terms = rare or terms
        return terms

    def _parse(self, text: str, fields: tuple[str, ...]) -> Any:
        parser = qparser.MultifieldParser(list(fields), self._reader().schema, group=qparser.OrGroup)
        for plugin in (
            qparser.WildcardPlugin,
            qparser.FuzzyTermPlugin,
            qparser.RangePlugin,
            qparser.PhrasePlugin,
            qparser.BoostPlugin,
        ):
            parser.remove_plugin_class(plugin)
        try:
            parsed = parser.parse(text)
        except Exception as exc:  # a broken query is searched as plain words
            log.debug("query %r did not parse (%s); searching its words", text, exc)
            return None
        leaves = list(parsed.leaves()) if parsed is not None else []
        if not leaves or len(leaves) > 3 * MAX_QUERY_TERMS:
            return None
        if not all(type(leaf) is query.Term for leaf in leaves):
            return None
        return parsed

    def _hit(self, stored: dict[str, Any], score: float, stems: set[str] | None, now: datetime | None = None) -> Hit:
        snippet = make_snippet(self._body_start(stored["path"]), stems) if stems is not None else ""
        held = _validity(stored)
        return Hit(
            path=stored["path"],
            title=stored.get("title", ""),
            score=round(float(score), 4),
            snippet=snippet,
            id=stored.get("id"),
            namespace=stored.get("namespace", ""),
            type=stored.get("type"),
            tags=tuple(t for t in stored.get("tags", "").split(",") if t),
            updated=stored.get("updated"),
            state=held.state(now),
            validity=held,
        )

    def _body_start(self, rel: str) -> str:
        """The start of a memory's body, as much as a snippet looks at: only the file's head is read."""
        try:
            head = _fs.read_vault_head(self.root, rel, MAX_FRONT_MATTER_BYTES + 4 * SNIPPET_SCAN_CHARS + 16)
        except (OSError, LinkError):  # through the path gate: a link is not read
            return ""
        return body_of(head.decode("utf-8", "ignore")) if head else ""  # valid when indexed: not parsed again


def _top(found: Any, scores: Any, k: int) -> Any:
    """The ``k`` documents of ``found`` with the highest ``scores``, best first; ties in index order."""
    if len(found) > k:  # all that score at least the k-th best, so ties are broken as below
        found = found[scores[found] >= np.partition(scores[found], len(found) - k)[len(found) - k]]
    return found[np.lexsort((found, -scores[found]))][:k]


def _or_pairs(parsed: Any) -> list[tuple[str, str]] | None:
    """The ``(field, term)`` pairs of a parsed query that is only an OR of terms, for :meth:`IndexReader._rank`.

    None for anything else (AND, NOT, a boost): Whoosh's own search runs those.
    """
    if parsed is None:
        return None
    stack, pairs = [parsed], []
    while stack:
        node = stack.pop()
        if type(node) is query.Or and node.boost == 1:
            stack.extend(reversed(node.subqueries))
        elif type(node) is query.Term and node.boost == 1:
            pairs.append((node.fieldname, node.text))
        else:
            return None
    return pairs


def _syntax(text: str) -> bool:
    """True for a query Whoosh's parser reads: with syntax, and at most 3 x MAX_QUERY_TERMS words (it is slow)."""
    return bool(_SYNTAX.search(text)) and len(NON_SPACE.findall(text)) <= 3 * MAX_QUERY_TERMS


def check_query(text: Any) -> str:
    """``text`` if it is a query memfs searches; TypeError or QueryTooLongError (which never quotes it) if not."""
    if not isinstance(text, str):
        raise TypeError(f"query must be a string, got {text.__class__.__name__}")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryTooLongError(
            f"the query is {len(text):,} characters; memfs searches queries of up to "
            f"{MAX_QUERY_CHARS:,} (the first {MAX_QUERY_TERMS} distinct words count): "
            "search with fewer words"
        )
    return text


def _in_scope(stored: dict[str, Any], namespace: str) -> bool:
    """True when an indexed memory's path and namespace both lie in ``namespace`` (exact prefixes)."""
    path, own = str(stored.get("path", "")), str(stored.get("namespace", ""))
    return (
        in_namespace(path, namespace)
        and split_memory_path(path)[0] == own
        and (own == namespace or own.startswith(namespace + "/"))
    )


#: The documents of a searcher that are superseded, and those whose dates decide (doc, validity, path).
_Validities = tuple[set[int], list[tuple[int, Validity, str]]]


def _validity(stored: dict[str, Any]) -> Validity:
    """The validity a document stored (see ``Indexer._fields``); none for a memory without keys."""
    kept = stored.get("validity")
    if not kept:
        return Validity()
    start, end, superseded_by, supersedes, expires = kept
    return Validity(start, end, superseded_by, tuple(supersedes), bool(expires))


def first_person(text: str) -> bool:
    """Whether a question is in the first person ("my", "I'm"): the user asking about themselves."""
    return any(word.replace("’", "'") in FIRST_PERSON for word in WORD.findall(text.lower()))


def make_snippet(body: str, stems: set[str], *, width: int = 200) -> str:
    """The passage of ``body`` (about ``width`` characters) richest in ``stems``, words in bold.

    Bounded whatever the body: only its first :data:`SNIPPET_SCAN_CHARS` characters are looked
    at, the scan stops once :data:`SNIPPET_MAX_MATCHES` words matched (and the window after the
    last of them is read), each word is stemmed once, and the window richest in matches is found
    in one pass over the matches (two pointers), so the cost is linear in what was scanned.
    """
    scanned = body[:SNIPPET_SCAN_CHARS]
    words: list[str] = []
    ends: list[int] = []  # where each word ends, counted in the one-space-joined text
    matched: list[int] = []
    length = 0
    stopped = False  # words were left unscanned
    for found in NON_SPACE.finditer(scanned):
        if len(matched) >= SNIPPET_MAX_MATCHES and length > ends[matched[-1]] + width:
            stopped = True
            break
        word = found.group()
        if len(word) > width:  # one huge "word" is shown cut, never whole
            word = word[:width] + "…"
        if not stems.isdisjoint(_token_stems(word)):
            matched.append(len(words))
        length += len(word) + (1 if words else 0)
        words.append(word)
        ends.append(length)
    if not words:
        return ""
    start = _best_window(words, ends, matched, width)
    pieces: list[str] = []
    used = 0
    hits = set(matched)
    for i in range(start, len(words)):
        if used + len(words[i]) > width and pieces:
            break
        pieces.append(_bold(words[i]) if i in hits else words[i])
        used += len(words[i]) + 1
    more = start + len(pieces) < len(words) or stopped or NON_SPACE.search(body, len(scanned)) is not None
    return ("… " if start > 0 else "") + " ".join(pieces) + (" …" if more else "")


_TOKEN_STEMS: dict[str, tuple[str, ...]] = {}


MAX_CACHED_TOKENS = 50_000  # the cache is emptied when it holds this many (a snippet's words are at most ~200 chars)


def _token_stems(word: str) -> tuple[str, ...]:
    """The index terms of one white-space separated word, cached: snippets meet the same words again and again."""
    found = _TOKEN_STEMS.get(word)
    if found is None:
        if len(_TOKEN_STEMS) >= MAX_CACHED_TOKENS:
            _TOKEN_STEMS.clear()
        found = _TOKEN_STEMS[word] = tuple(ANALYZER.stems(word))
    return found


def _best_window(words: list[str], ends: list[int], matched: list[int], width: int) -> int:
    """The word a snippet starts at: a few words before the match that begins the richest window."""
    if not matched:
        return 0
    best, best_count, j = matched[0], 0, 0
    for a, i in enumerate(matched):  # matches in [i, j) fit in ``width`` characters from word i
        begin = ends[i] - len(words[i])
        j = max(j, a)
        while j < len(matched) and ends[matched[j]] <= begin + width:
            j += 1
        if j - a > best_count:
            best, best_count = i, j - a
    return max(0, best - 3)


def _bold(word: str) -> str:
    match = re.fullmatch(r"(\W*)(.*?)(\W*)", word)
    assert match is not None
    lead, core, trail = match.groups()
    return f"{lead}**{core}**{trail}" if core else word
