"""The search index: Whoosh, kept as a function of the files.

This is the only module that imports :mod:`whoosh`. The index lives under ``.memfs/index``
and is never the truth: it stores, per file, the ``(mtime_ns, size, sha256)`` it was built
from, so :meth:`SearchIndex.sync` brings it up to date from file stats alone, reading only
the files that changed. A missing, corrupt or outdated index is rebuilt from the files.

Speed comes from three choices, measured in docs/benchmarks.md: one analyzer pass in plain
Python (a regex, a stop list of ~170 English words, a cached Porter stemmer) instead of
Whoosh's chain of generators; no term positions; and queries that are a flat OR of the
question's content words, dropping words so common they cannot change the ranking.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from whoosh import fields, index, qparser, query
from whoosh.analysis import Analyzer, Token
from whoosh.lang.porter import stem as porter_stem

from . import transcript
from .documents import Document, load_bytes, normalize_time, tags_of, timestamp
from .errors import DocumentError, SearchIndexError
from .items import text_of
from .layout import CONTENT_DIRS, is_transcript, split_memory_path

log = logging.getLogger(__name__)

SCHEMA_VERSION = "3"
MAX_INDEXED_BYTES = 4 * 1024 * 1024
MAX_QUERY_TERMS = 32
COMMON_TERM_SHARE = 0.2  # a term in more than this share of documents is dropped ...
PRUNE_FROM_DOCS = 2000  # ... once the index is at least this large
PARALLEL_FROM_DOCS = 2000  # a fresh build this large uses two indexing processes
_SYNTAX = re.compile(r"\b(?:AND|OR|NOT|ANDNOT|ANDMAYBE)\b|[():\"+\-]")
_WORD = re.compile(r"\w+(?:['’]\w+)*")
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further get got had hadn't has
    hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his
    how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more
    most mustn't my myself no nor not now of off on once only or other ought our ours
    ourselves out over own really same shan't she she'd she'll she's should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was wasn't
    we we'd we'll we're we've were weren't what what's when when's where where's which while
    who who's whom why why's will with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves""".split()
)


class _ContentAnalyzer(Analyzer):  # type: ignore[misc]
    """Lowercase words, English stop words removed, Porter stems, in one pass."""

    def __init__(self) -> None:
        self._stems: dict[str, str] = {}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __getstate__(self) -> dict[str, Any]:
        return {}  # the schema is pickled into the index: keep the stem cache out of it

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._stems = {}

    def stems(self, text: str) -> Iterator[str]:
        """The index terms of ``text``, in order."""
        cache = self._stems
        for word in _WORD.findall(text.lower()):
            if word in STOP_WORDS:
                continue
            stemmed = cache.get(word)
            if stemmed is None:
                stemmed = cache[word] = porter_stem(word.replace("’", "'"))
            yield stemmed

    def __call__(self, value: str, positions: bool = False, chars: bool = False,
                 keeporiginal: bool = False, removestops: bool = True, start_pos: int = 0,
                 start_char: int = 0, tokenize: bool = True, mode: str = "",
                 **kwargs: Any) -> Iterator[Token]:  # fmt: skip
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for pos, text in enumerate(self.stems(value), start_pos):
            token.text, token.stopped, token.boost = text, False, 1.0
            if positions:
                token.pos = pos
            yield token


ANALYZER = _ContentAnalyzer()


def _schema() -> fields.Schema:
    return fields.Schema(
        path=fields.ID(unique=True, stored=True),
        kind=fields.ID(stored=True),
        ns=fields.KEYWORD(),
        namespace=fields.STORED(),
        id=fields.ID(stored=True),
        title=fields.TEXT(analyzer=ANALYZER, stored=True, phrase=False, field_boost=2.0),
        body=fields.TEXT(analyzer=ANALYZER, phrase=False),
        tags=fields.KEYWORD(lowercase=True, commas=True, scorable=True, stored=True, field_boost=1.5),
        type=fields.ID(stored=True),
        created=fields.ID(stored=True),
        updated=fields.ID(stored=True),
        stat=fields.STORED(),
        error=fields.STORED(),
        session=fields.ID(stored=True),
        session_id=fields.STORED(),
        position=fields.STORED(),
        role=fields.ID(stored=True),
        time=fields.ID(stored=True),
        item=fields.STORED(),
        checkpoints=fields.STORED(),
    )


@dataclass(frozen=True)
class Hit:
    """One search result.

    Attributes:
        path: The file's path relative to the vault (``memories/users/alice/x.md``).
        title: The memory's title.
        score: The BM25F score; higher is better.
        snippet: A short passage of the body with matched words in ``**bold**``.
        id: The memory's ``id`` (None for files without one).
        namespace: The namespace the memory belongs to.
        type: The memory's ``type``, if any.
        tags: The memory's tags.
        updated: When the memory last changed (ISO 8601, UTC).
    """

    path: str
    title: str
    score: float
    snippet: str = ""
    id: str | None = None
    namespace: str = ""
    type: str | None = None
    tags: tuple[str, ...] = ()
    updated: str | None = None


@dataclass(frozen=True)
class MessageHit:
    """A message found by search.

    Attributes:
        session_id: The session's id, as given to ``vault.session()``.
        session: The transcript's path relative to the vault (``sessions/trip.md``).
        position: The message's 1-based position in its session.
        role: ``user``, ``assistant``, ``function_call``, ...
        score: The BM25 score; higher is better.
        snippet: A passage of the message with matched words in ``**bold**``.
        item: The stored item itself (with its own ``id`` if it had one).
        time: When the message was appended (ISO 8601), if recorded.
    """

    session_id: str
    session: str
    position: int
    role: str
    score: float
    snippet: str
    item: dict[str, Any]
    time: str | None = None


@dataclass(frozen=True)
class Problem:
    """A file the index skipped, and why."""

    path: str
    reason: str


@dataclass
class SyncReport:
    """What a :meth:`SearchIndex.sync` changed."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def changed(self) -> int:
        """How many index entries changed."""
        return len(self.added) + len(self.updated) + len(self.removed)


Progress = Callable[[int, int], None]


class SearchIndex:
    """A Whoosh index over the Markdown files below ``root``'s content folders."""

    CONTENT_DIRS = CONTENT_DIRS

    def __init__(self, root: Path, folder: Path, *, lock_timeout: float = 30.0) -> None:
        self.root = root
        self.folder = folder
        self.lock_timeout = lock_timeout
        self._ix: Any = None
        self._searcher: Any = None
        self._open()

    # -- lifecycle -------------------------------------------------------------

    def _open(self) -> None:
        # Whoosh leaves files open when it fails on a damaged index; they are closed here,
        # quietly, before the index is rebuilt.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            problem = self._try_open()
            if problem:
                gc.collect()
        if problem == "":
            return
        if problem:
            log.warning("search index at %s is unusable (%s); rebuilding it from the files",
                        self.folder, problem)  # fmt: skip
        self._create()

    def _try_open(self) -> str | None:
        """Open the index: "" if it is fine, None if there is none, else what is wrong."""
        try:
            if (self.folder / "memfs-schema").read_text().strip() != SCHEMA_VERSION:
                return "its schema is outdated"
            self._ix = index.open_dir(str(self.folder))
            self._ix.doc_count()
            return ""
        except FileNotFoundError:
            return "it is incomplete" if self.folder.exists() else None
        except Exception as exc:  # Whoosh raises many types on damage; the files are the truth
            self._ix = None
            return f"{type(exc).__name__}: {exc}"

    def _create(self) -> None:
        self.close()
        tmp = self.folder.with_name(self.folder.name + ".new")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        index.create_in(str(tmp), _schema())
        (tmp / "memfs-schema").write_text(SCHEMA_VERSION)
        shutil.rmtree(self.folder, ignore_errors=True)
        os.replace(tmp, self.folder)
        self._ix = index.open_dir(str(self.folder))

    def close(self) -> None:
        """Close the searcher and the index."""
        searcher, self._searcher = self._searcher, None
        ix, self._ix = self._ix, None
        with contextlib.suppress(Exception):  # closing a damaged index must not fail
            if searcher is not None:
                searcher.close()
        with contextlib.suppress(Exception):
            if ix is not None:
                ix.close()

    def clear(self) -> None:
        """Drop every entry (the next full sync rebuilds it)."""
        self._create()

    def doc_count(self) -> int:
        """How many files are indexed (malformed ones included)."""
        return int(self._reader().doc_count())

    def _reader(self) -> Any:
        if self._searcher is None:
            self._searcher = self._ix.searcher()
        elif not self._searcher.up_to_date():
            # Not Searcher.refresh(): it reuses segment readers and so misses deletions
            # made since in those segments.
            old, self._searcher = self._searcher, None
            old.close()
            self._searcher = self._ix.searcher()
        return self._searcher

    # -- keeping it in step with the files -------------------------------------

    def sync(self, paths: Iterable[str] | None = None, *, progress: Progress | None = None) -> SyncReport:
        """Bring the index up to date with the files (all of them, or just ``paths``).

        Only files whose ``(mtime_ns, size)`` differ from what was indexed are read. Malformed
        files are recorded as problems and kept out of search results. The caller holds the
        vault lock.
        """
        known = self.known(None if paths is None else set(paths))
        on_disk = dict(self.scan()) if paths is None else {p: st for p in paths if (st := self._stat(p))}
        report = SyncReport()
        todo = [p for p, st in on_disk.items() if known.get(p, (None,))[:2] != st]
        gone = [p for p in known if p not in on_disk]
        if not todo and not gone:
            return report
        options: dict[str, Any] = {"timeout": self.lock_timeout, "limitmb": 128}
        if not known and len(todo) >= PARALLEL_FROM_DOCS and (os.cpu_count() or 1) > 1:
            # A build from scratch: two processes index halves into two segments (measured 1.4x on
            # 2 cores). Only for fresh builds: Whoosh's multiprocess writer merges updates poorly.
            options.update(procs=2, multisegment=True)
        writer = self._ix.writer(**options)
        try:
            for done, rel in enumerate(todo, 1):
                self._index_file(writer, rel, on_disk[rel], known, report)
                if progress is not None:
                    progress(done, len(todo))
            for rel in gone:
                writer.delete_by_term("path", rel)
                report.removed.append(rel)
            writer.commit()
        except BaseException:
            writer.cancel()
            raise
        return report

    def _index_file(self, writer: Any, rel: str, st: tuple[int, int],
                    known: dict[str, tuple[Any, ...]], report: SyncReport) -> None:  # fmt: skip
        try:
            data = (self.root / rel).read_bytes()
        except OSError as exc:
            log.warning("cannot read %s: %s", rel, exc)
            return
        sha = hashlib.sha256(data).hexdigest()
        if is_transcript(rel):
            self._index_transcript(writer, rel, st, data, sha, known.get(rel), report)
            return
        if known.get(rel, (None, None, None))[2] != sha:  # a touched file is not reported
            (report.updated if rel in known else report.added).append(rel)
        try:
            if len(data) > MAX_INDEXED_BYTES:
                raise DocumentError(rel, f"file is larger than {MAX_INDEXED_BYTES // 2**20} MiB; not indexed")
            doc = load_bytes(data, path=rel)
        except DocumentError as exc:
            log.warning("skipping malformed file: %s", exc)
            report.problems.append(Problem(rel, exc.reason))
            writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], sha), error=exc.reason)
            return
        # add_document when the path was never indexed: update_document would search for it first
        (writer.update_document if rel in known else writer.add_document)(**self._fields(rel, doc, st, sha))

    def _index_transcript(self, writer: Any, rel: str, st: tuple[int, int], data: bytes, sha: str,
                          known: tuple[Any, ...] | None, report: SyncReport) -> None:  # fmt: skip
        """Index a transcript's messages; after an append or a pop, only what changed.

        The transcript's own entry keeps digests of the file's prefix at its last entries and at
        its end: if the file still starts with one of them, only entries from there are re-read.
        """
        stored = dict(self._reader().document(path=rel) or {}) if known else {}
        start, first = None, 1
        for offset, (digest, n) in (stored.get("checkpoints") or {}).items():
            if offset <= len(data) and (start is None or offset > start):
                if hashlib.sha256(data[:offset]).hexdigest() == digest:
                    start, first = offset, n
        (report.updated if known else report.added).append(rel)
        try:
            if start is None:
                parsed = transcript.parse(data, path=rel)
                entries, problems = parsed.entries, parsed.problems
                session_id = str(parsed.metadata.get("session_id", rel))
            else:
                entries, problems = transcript.parse_entries(data, start)
                session_id = str(stored.get("session_id") or rel)
        except DocumentError as exc:
            report.problems.append(Problem(rel, exc.reason))
            writer.delete_by_term("session", rel)
            writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], sha), error=exc.reason)
            return
        if start is None:
            writer.delete_by_term("session", rel)
        else:
            for n in range(first, int(stored.get("position") or 0) + 1):
                writer.delete_by_term("path", f"{rel}#{n}")
        for problem in problems:
            report.problems.append(Problem(rel, f"byte {problem.offset}: {problem.reason}"))
        for entry in entries:
            if entry.kind == "item":
                role = str(entry.item.get("role") or entry.item.get("type") or "")
                writer.add_document(**_with_terms({
                    "path": f"{rel}#{entry.n}", "kind": "message", "session": rel, "session_id": session_id,
                    "namespace": "",
                    "title": role, "body": text_of(entry.item), "position": entry.n, "role": role,
                    "time": entry.time, "item": json.dumps(entry.item, ensure_ascii=False),
                }))  # fmt: skip
        last = entries[-1].n if entries else first - 1
        marks = [(e.offset, e.n) for e in entries[-8:]] + [(len(data), last + 1)]
        checkpoints = {off: (hashlib.sha256(data[:off]).hexdigest(), n) for off, n in marks}
        writer.update_document(path=rel, kind="transcript", stat=(st[0], st[1], sha), session_id=session_id,
                               checkpoints=checkpoints, position=last)  # fmt: skip

    def _fields(self, rel: str, doc: Document, st: tuple[int, int], sha: str) -> dict[str, Any]:
        meta = doc.metadata
        namespace = split_memory_path(rel)[0]
        mtime = datetime.fromtimestamp(st[0] / 1e9, timezone.utc)
        updated = normalize_time(meta.get("updated")) or timestamp(mtime)
        tags = tags_of(meta.get("tags"))
        return _with_terms({
            "path": rel, "kind": "memory", "namespace": namespace,
            "id": str(meta["id"]) if meta.get("id") is not None else None,
            "title": doc.title(rel), "body": doc.body, "tags": ",".join(tags),
            "type": str(meta["type"]) if meta.get("type") is not None else None,
            "created": normalize_time(meta.get("created")) or updated, "updated": updated,
            "stat": (st[0], st[1], sha),
        })  # fmt: skip

    def scan(self) -> Iterator[tuple[str, tuple[int, int]]]:
        """Every Markdown file under the content folders, with ``(mtime_ns, size)``.

        Hidden names, memfs's temporary files and symbolic links are skipped: a link could
        point outside the vault.
        """
        for top in self.CONTENT_DIRS:
            stack = [top]
            while stack:
                rel_dir = stack.pop()
                try:
                    entries = list(os.scandir(self.root / rel_dir))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                for entry in entries:
                    if entry.name.startswith(".") or entry.is_symlink():
                        continue
                    rel = f"{rel_dir}/{entry.name}"
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(rel)
                    elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        yield rel, (st.st_mtime_ns, st.st_size)

    def _stat(self, rel: str) -> tuple[int, int] | None:
        try:
            st = os.lstat(self.root / rel)
        except OSError:
            return None
        if not os.path.isfile(self.root / rel) or os.path.islink(self.root / rel):
            return None
        return st.st_mtime_ns, st.st_size

    def known(self, only: set[str] | None = None) -> dict[str, tuple[Any, ...]]:
        """The ``(mtime_ns, size, sha256)`` each indexed file (or each of ``only``) was built from."""
        reader = self._reader()
        if only is None:
            return {f["path"]: tuple(f["stat"]) for f in reader.all_stored_fields() if "stat" in f}
        known = {}
        for rel in only:
            stored = reader.document(path=rel)
            if stored and "stat" in stored:
                known[rel] = tuple(stored["stat"])
        return known

    def problems(self) -> list[Problem]:
        """The files that were skipped as malformed."""
        reader = self._reader()
        return [Problem(f["path"], f.get("error", "")) for f in
                reader.documents(kind="invalid")]  # fmt: skip

    def entries(self) -> dict[str, str]:
        """Every indexed path with the sha256 of the content it was built from."""
        return {f["path"]: f["stat"][2] for f in self._reader().all_stored_fields() if "stat" in f}

    def path_of(self, memory_id: str) -> str | None:
        """The path of the memory whose ``id`` is ``memory_id``, if indexed."""
        stored = self._reader().document(id=memory_id)
        return stored["path"] if stored else None

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
    ) -> list[Hit]:
        """Rank memories for ``text`` with BM25F over title, body and tags.

        ``text`` is read as natural language; Whoosh syntax (``AND``, ``OR``, ``NOT``,
        ``title:word``, parentheses) is honoured, and a query whose syntax is broken is
        searched as its plain words. Wildcards, fuzzy terms and ranges are never expanded.
        """
        if not isinstance(text, str):
            raise TypeError(f"query must be a string, got {text.__class__.__name__}")
        if k <= 0:
            return []
        filters = [query.Term("kind", "memory")]
        if namespace:
            filters.append(query.Term("ns", namespace.strip("/")))
        if type:
            filters.append(query.Term("type", type))
        filters += [query.Term("tags", t.lower()) for t in tags]
        if since or until:
            filters.append(query.TermRange("updated", normalize_time(since), normalize_time(until)))
        try:
            searcher = self._reader()
            q = self._query(text, searcher)
            if q is None:
                return []
            others = query.Or([query.Term("kind", kind) for kind in ("invalid", "message", "transcript")])
            results = searcher.search(q, limit=k, filter=query.And(filters) if len(filters) > 1 else None,
                                      mask=others)  # fmt: skip
            found = [(r.fields(), r.score) for r in results]
        except Exception as exc:
            raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
        stems = set(ANALYZER.stems(text))
        return [self._hit(stored, score, stems if snippets else None) for stored, score in found]

    def search_messages(self, text: str, *, k: int = 10, session: str | None = None) -> list[MessageHit]:
        """Rank conversation messages for ``text`` (all sessions, or one transcript path)."""
        if not isinstance(text, str):
            raise TypeError(f"query must be a string, got {text.__class__.__name__}")
        if k <= 0:
            return []
        filters = [query.Term("kind", "message")] + ([query.Term("session", session)] if session else [])
        try:
            searcher = self._reader()
            q = self._query(text, searcher)
            if q is None:
                return []
            found = [(r.fields(), r.score) for r in searcher.search(q, limit=k, filter=query.And(filters))]
        except Exception as exc:
            raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
        stems = set(ANALYZER.stems(text))
        hits = []
        for stored, score in found:
            item = json.loads(stored["item"])
            hits.append(MessageHit(stored.get("session_id") or stored["session"], stored["session"],
                                   stored["position"], stored.get("role", ""),
                                   round(float(score), 4), make_snippet(text_of(item), stems), item,
                                   stored.get("time")))  # fmt: skip
        return hits

    def _query(self, text: str, searcher: Any) -> Any:
        parsed = None
        if _SYNTAX.search(text):
            parsed = self._parse(text)
        if parsed is not None:
            return parsed
        terms = list(dict.fromkeys(ANALYZER.stems(text)))[:MAX_QUERY_TERMS]
        total = searcher.doc_count()
        if total >= PRUNE_FROM_DOCS and len(terms) > 1:
            rare = [t for t in terms if searcher.doc_frequency("body", t) < COMMON_TERM_SHARE * total]
            terms = rare or terms
        if not terms:
            return None
        return query.Or([query.Term(f, t) for t in terms for f in ("title", "body")] +
                        [query.Term("tags", w) for w in _WORD.findall(text.lower())[:MAX_QUERY_TERMS]])  # fmt: skip

    def _parse(self, text: str) -> Any:
        parser = qparser.MultifieldParser(["title", "body", "tags"], self._ix.schema, group=qparser.OrGroup)
        for plugin in (qparser.WildcardPlugin, qparser.FuzzyTermPlugin, qparser.RangePlugin,
                       qparser.PhrasePlugin, qparser.BoostPlugin):  # fmt: skip
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

    def _hit(self, stored: dict[str, Any], score: float, stems: set[str] | None) -> Hit:
        snippet = ""
        if stems is not None:
            try:
                doc = load_bytes((self.root / stored["path"]).read_bytes(), path=stored["path"])
                snippet = make_snippet(doc.body, stems)
            except (OSError, DocumentError):
                snippet = ""
        return Hit(
            path=stored["path"], title=stored.get("title", ""), score=round(float(score), 4),
            snippet=snippet, id=stored.get("id"), namespace=stored.get("namespace", ""),
            type=stored.get("type"), tags=tuple(t for t in stored.get("tags", "").split(",") if t),
            updated=stored.get("updated"),
        )  # fmt: skip


def _with_terms(fields_: dict[str, Any]) -> dict[str, Any]:
    """Fill in the unstored ``ns`` terms and drop empty values before indexing."""
    namespace = fields_.get("namespace") or ""
    parts = namespace.split("/") if namespace else []
    fields_["ns"] = " ".join("/".join(parts[: i + 1]) for i in range(len(parts))) or None
    return {k: v for k, v in fields_.items() if v is not None}


def make_snippet(body: str, stems: set[str], *, width: int = 200) -> str:
    """The passage of ``body`` (about ``width`` characters) richest in ``stems``, words in bold."""
    text = " ".join(body.split())
    if not text:
        return ""
    words = list(re.finditer(r"\S+", text))
    matched = [i for i, w in enumerate(words) if any(s in stems for s in ANALYZER.stems(w.group()))]
    start = 0
    if matched:
        best, best_count = matched[0], 0
        for i in matched:
            end_char = words[i].start() + width
            count = sum(1 for j in matched if i <= j and words[j].end() <= end_char)
            if count > best_count:
                best, best_count = i, count
        start = max(0, best - 3)
    pieces: list[str] = []
    length = 0
    hits = set(matched)
    for i in range(start, len(words)):
        word = words[i].group()
        if length + len(word) > width and pieces:
            break
        pieces.append(_bold(word) if i in hits else word)
        length += len(word) + 1
    prefix = "… " if start > 0 else ""
    suffix = " …" if start + len(pieces) < len(words) else ""
    return prefix + " ".join(pieces) + suffix


def _bold(word: str) -> str:
    match = re.fullmatch(r"(\W*)(.*?)(\W*)", word)
    assert match is not None
    lead, core, trail = match.groups()
    return f"{lead}**{core}**{trail}" if core else word
