"""The search index: Whoosh, kept as a function of the files.

This is the only module that imports :mod:`whoosh`. The index lives under ``.memfs/index``
and is never the truth: it stores, per file, the ``(mtime_ns, size, sha256)`` it was built
from, so :meth:`SearchIndex.sync` brings it up to date from file stats alone, reading only
the files that changed. A missing, corrupt or outdated index is rebuilt from the files.

The index cannot hurt the process that reads it. Whoosh pickles its schema, its segment list
and its stored fields, so an index folder someone else wrote (a vault copied or synced with its
``.memfs/``) could run code when opened. memfs therefore reads no index file it cannot vouch
for: after each commit it writes ``memfs-index.json`` into the folder, naming every file of the
index with its size and sha256, signed with an HMAC key kept outside the vault (in the user's
state folder, see :func:`index_key`). A file is handed to Whoosh only after its bytes match the
signed list, and an index without a valid list is rebuilt from the files, unread. Files are read
into memory rather than mapped, so a segment truncated under a running process cannot kill it
with SIGBUS; the same list tells a long-lived reader when the index on disk is no longer the one
it opened (a random id per index, and Whoosh's generation within it).

Speed comes from three choices, measured in docs/benchmarks.md: one analyzer pass in plain
Python (a regex, a stop list of ~170 English words, a cached Porter stemmer) instead of
Whoosh's chain of generators; no term positions; and queries that are a flat OR of the
question's content words, dropping words so common they cannot change the ranking.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from whoosh import fields, qparser, query
from whoosh.analysis import Analyzer, Token
from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.structfile import BufferFile
from whoosh.index import TOC, FileIndex
from whoosh.lang.porter import stem as porter_stem

from . import _fs, transcript
from .documents import Document, load_bytes, normalize_time, tags_of, timestamp
from .errors import DocumentError, LinkError, SearchIndexError
from .freshness import ChangeFinder, file_stat, walk
from .items import text_of
from .layout import CONTENT_DIRS, in_namespace, is_transcript, split_memory_path

log = logging.getLogger(__name__)

SCHEMA_VERSION = "4"  # 4: ``ns`` holds exact namespace prefixes (an ID field), no longer split at spaces
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
        ns=fields.ID(),  # the namespace and each of its ancestors, each one whole term (see _with_terms)
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


INDEX_NAME = "MAIN"
MANIFEST = "memfs-index.json"
MAX_MANIFEST_BYTES = 1024 * 1024
KEY_BYTES = 32


def state_home() -> Path:
    """The user's state folder: ``$XDG_STATE_HOME``, else ``~/.local/state``."""
    base = os.environ.get("XDG_STATE_HOME", "")
    return Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"


_keys: dict[str, bytes] = {}
_keys_lock = threading.Lock()


def index_key() -> bytes:
    """The key that signs the indexes this user's memfs builds (``<state home>/memfs/index-key``).

    It lives outside every vault, so an index copied in with a vault cannot carry a valid
    signature. Created on first use (0600); a key file owned by someone else or readable by
    others is replaced. If no key can be stored, a key for this process alone is used (with a
    warning): every index is then rebuilt once per process, which is slow but safe.
    """
    try:
        path = state_home() / "memfs" / "index-key"
    except RuntimeError:  # no home folder to be found
        path = Path("/nonexistent/memfs/index-key")
    with _keys_lock:
        key = _keys.get(str(path))
        if key is None:
            key = _keys[str(path)] = _load_key(path)
        return key


def _load_key(path: Path) -> bytes:
    replace = False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            data = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        if st.st_uid == os.geteuid() and not st.st_mode & 0o077 and len(data) == KEY_BYTES:
            return data
        log.warning("replacing the index key %s: it is not a private %d-byte file of this user", path, KEY_BYTES)
        replace = True
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("cannot read the index key %s (%s); making a new one", path, exc)
        replace = True
    key = secrets.token_bytes(KEY_BYTES)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            if replace:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)  # never over a key another process made meanwhile
        except FileExistsError:
            return _load_key(path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("cannot store an index key at %s (%s); indexes will be rebuilt by every process", path, exc)
    return key


def _seal(body: dict[str, Any], key: bytes) -> bytes:
    payload = json.dumps(body, sort_keys=True, separators=(",", ":"))
    mac = hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()
    return json.dumps({"index": body, "hmac": mac}, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _unseal(data: bytes, key: bytes) -> dict[str, Any]:
    """The body of a signed manifest, or SearchIndexError saying why it is not one memfs wrote."""
    try:
        outer = json.loads(data.decode("utf-8"))
        body, mac = outer["index"], outer["hmac"]
        payload = json.dumps(body, sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        raise SearchIndexError(f"its {MANIFEST} is unreadable ({type(exc).__name__})") from None
    expected = hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()
    if not isinstance(mac, str) or not hmac.compare_digest(mac, expected):
        raise SearchIndexError("it was not built by memfs for this user (a .memfs/ copied or synced from elsewhere?)")
    if not isinstance(body, dict) or not isinstance(body.get("id"), str) or not isinstance(body.get("files"), dict):
        raise SearchIndexError(f"its {MANIFEST} is malformed")
    if body.get("schema") != SCHEMA_VERSION:
        raise SearchIndexError("its schema is outdated")
    checked: dict[str, Any] = body
    return checked


def _read_fd(fd: int, size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class _Storage(FileStorage):  # type: ignore[misc]
    """Whoosh's file storage, reading only files memfs vouches for, into memory (never mmap).

    ``trusted`` names the files of the signed manifest with their size and sha256; files this
    object created itself (a writer's work in progress) are known by their inode. Listing
    shows Whoosh nothing else, so a planted table of contents is never even opened.
    """

    supports_mmap = False

    def __init__(self, path: str) -> None:
        super().__init__(path, supports_mmap=False)
        self.trusted: dict[str, tuple[int, str]] = {}
        self.own: dict[str, int] = {}
        self.cache: dict[tuple[str, str], bytes] = {}

    def list(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return [n for n in names if n in self.trusted or n in self.own]

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kwargs: Any) -> Any:
        f = super().create_file(name, excl, mode, **kwargs)
        self.own[name] = os.fstat(f.fileno()).st_ino
        return f

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        super().rename_file(oldname, newname, safe)
        if oldname in self.own:
            self.own[newname] = self.own.pop(oldname)

    def delete_file(self, name: str) -> None:
        super().delete_file(name)
        self.own.pop(name, None)

    def temp_storage(self, name: str | None = None) -> Any:
        # a writer's scratch files, which only it writes and reads back
        return FileStorage(os.path.join(self.folder, name or f"{secrets.token_hex(8)}.tmp"),
                           supports_mmap=False).create()  # fmt: skip

    def open_file(self, name: str, **kwargs: Any) -> Any:
        entry = self.trusted.get(name)
        if entry is not None and (name, entry[1]) in self.cache:
            return BufferFile(self.cache[name, entry[1]], name=name)
        data, inode = self.read(name)
        if entry is not None:
            if len(data) != entry[0] or hashlib.sha256(data).hexdigest() != entry[1]:
                raise SearchIndexError(f"index file {name} is not the one memfs wrote (damaged or replaced)")
            self.cache[name, entry[1]] = data
        elif self.own.get(name) != inode:
            raise SearchIndexError(f"index file {name} was not written by memfs; not reading it")
        return BufferFile(data, name=name)

    def read(self, name: str) -> tuple[bytes, int]:
        """The bytes and inode of a file of the folder (a link is refused)."""
        fd = os.open(self._fpath(name), os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            return _read_fd(fd, st.st_size), st.st_ino
        finally:
            os.close(fd)


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
Resync = Callable[[list[str]], object]  # re-indexes the given vault paths (holding the vault lock)
VERIFY_ATTEMPTS = 8  # a query runs again (after re-indexing) while its hits are found stale, this often at most


class SearchIndex:
    """A Whoosh index over the Markdown files below ``root``'s content folders.

    Writers (:meth:`sync`, :meth:`clear`) must hold the vault lock; readers need not. One
    object may be used from several threads.
    """

    CONTENT_DIRS = CONTENT_DIRS

    def __init__(self, root: Path, folder: Path, *, lock_timeout: float = 30.0) -> None:
        self.root = root
        self.folder = folder
        self.lock_timeout = lock_timeout
        self.changes = ChangeFinder(root, CONTENT_DIRS)
        self.problem = ""  # why the index on disk was last found unusable
        self._real_root = os.path.realpath(root)
        self._lock = threading.RLock()  # Whoosh's readers are not thread-safe without mmap
        self._ix: Any = None
        self._storage: _Storage | None = None
        self._manifest: bytes | None = None  # the signed list the open index was verified against
        self._id = ""
        self._searcher: Any = None
        self._transcript_stats: dict[str, tuple[int, int] | None] = {}
        self._open()

    # -- lifecycle -------------------------------------------------------------

    def _open(self) -> None:
        if self.refresh():
            return
        if self.folder.exists():
            log.warning("search index at %s is unusable (%s); rebuilding it from the files",
                        self.folder, self.problem)  # fmt: skip
        self._create()

    def refresh(self) -> bool:
        """Make sure the index open here is the one on disk; False if there is none memfs can use.

        Cheap when nothing changed (one small file read and compared): called before every
        search. When another process committed or rebuilt the index, the new one is verified
        and opened. False when the folder is gone or its files are not the ones memfs signed
        (``problem`` says why); the caller rebuilds, holding the vault lock.
        """
        with self._lock:
            try:
                with open(self.folder / MANIFEST, "rb") as handle:
                    data = handle.read(MAX_MANIFEST_BYTES + 1)
            except FileNotFoundError:
                self.problem = "it is missing" if not self.folder.exists() else "it is incomplete"
                return False
            except OSError as exc:
                self.problem = f"{type(exc).__name__}: {exc}"
                return False
            if data == self._manifest:
                return True
            try:
                if len(data) > MAX_MANIFEST_BYTES:
                    raise SearchIndexError(f"its {MANIFEST} is too large")
                self._adopt(data, _unseal(data, index_key()))
            except Exception as exc:  # Whoosh raises many types on damage; the files are the truth
                self.problem = str(exc) if isinstance(exc, SearchIndexError) else f"{type(exc).__name__}: {exc}"
                self._release()
                return False
            return True

    def _adopt(self, data: bytes, body: dict[str, Any]) -> None:
        """Open the index a verified manifest describes, reading (and checking) what is not cached."""
        storage = _Storage(str(self.folder))
        files = body["files"]
        storage.trusted = {str(n): (int(v[0]), str(v[1])) for n, v in files.items()}
        if self._storage is not None:  # segment files never change: keep what was read
            cache = self._storage.cache
            storage.cache = {k: v for k, v in cache.items() if storage.trusted.get(k[0], (0, ""))[1] == k[1]}
        ix = FileIndex(storage, schema=_schema(), indexname=INDEX_NAME)  # the schema is never unpickled
        searcher = ix.searcher()  # reads every segment now, so damage shows here
        self._release()
        self._ix, self._storage, self._searcher, self._manifest = ix, storage, searcher, data
        if body["id"] != self._id:
            self._id = body["id"]
            self.changes.forget()  # another index: what was checked against the old one counts no more

    def _release(self) -> None:
        searcher, self._searcher = self._searcher, None
        self._ix, self._manifest = None, None
        self._transcript_stats = {}
        with contextlib.suppress(Exception):  # closing a damaged index must not fail
            if searcher is not None:
                searcher.close()

    def _create(self) -> None:
        """A new empty index in place of whatever is there, with a new id."""
        with self._lock:
            self._release()
            tmp = self.folder.with_name(self.folder.name + ".new")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            storage = _Storage(str(tmp))
            FileIndex.create(storage, _schema(), INDEX_NAME)
            self._id = secrets.token_hex(16)
            self._write_manifest(storage, {})
            shutil.rmtree(self.folder, ignore_errors=True)
            os.replace(tmp, self.folder)
            self._storage = None
            self.changes.forget()
            if not self.refresh():
                raise SearchIndexError(f"the new search index at {self.folder} cannot be opened: {self.problem}")

    def _write_manifest(self, storage: _Storage, previous: dict[str, tuple[int, str]]) -> bytes:
        """Sign the files of the newest table of contents (run by the writer, after its commit)."""
        toc = TOC.read(storage, INDEX_NAME, schema=_schema())
        segments = {seg.segment_id() for seg in toc.segments}
        names = [n for n in os.listdir(storage.folder)
                 if n == f"_{INDEX_NAME}_{toc.generation}.toc" or n.split(".", 1)[0] in segments]  # fmt: skip
        files: dict[str, tuple[int, str]] = {}
        for name in names:
            if name in previous and name not in storage.own:  # an older segment: files never change
                files[name] = previous[name]
                continue
            data, _ = storage.read(name)
            files[name] = (len(data), hashlib.sha256(data).hexdigest())
            storage.cache[name, files[name][1]] = data
        body = {"schema": SCHEMA_VERSION, "id": self._id, "generation": toc.generation,
                "files": {n: list(v) for n, v in sorted(files.items())}}  # fmt: skip
        data = _seal(body, index_key())
        tmp = os.path.join(storage.folder, MANIFEST + ".new")
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, os.path.join(storage.folder, MANIFEST))
        return data

    def close(self) -> None:
        """Close the searcher and the index."""
        with self._lock:
            self._release()

    def clear(self) -> None:
        """Drop every entry (the next full sync rebuilds it); the caller holds the vault lock."""
        self._create()

    def doc_count(self) -> int:
        """How many files are indexed (malformed ones included)."""
        with self._lock:
            return int(self._reader().doc_count())

    def _reader(self) -> Any:
        if self._searcher is None:
            if self._ix is None and not self.refresh():
                raise SearchIndexError(f"the search index is unusable: {self.problem}")
            if self._searcher is None:
                self._searcher = self._ix.searcher()
        return self._searcher

    # -- keeping it in step with the files -------------------------------------

    def sync(self, paths: Iterable[str] | None = None, *, progress: Progress | None = None) -> SyncReport:
        """Bring the index up to date with the files (all of them, or just ``paths``).

        Only files whose ``(mtime_ns, size)`` differ from what was indexed are read. Malformed
        files are recorded as problems and kept out of search results. The caller holds the
        vault lock. A full sync also starts :attr:`changes` afresh from the files it saw.
        """
        with self._lock:
            if not self.refresh():
                raise SearchIndexError(f"the search index is unusable: {self.problem}")
            known = self.known(None if paths is None else set(paths))
            on_disk = self.changes.scan() if paths is None else {p: st for p in paths if (st := self._stat(p))}
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
            self._committed()
            return report

    def _committed(self) -> None:
        """Sign what the writer just committed and open it."""
        assert self._storage is not None
        data = self._write_manifest(self._storage, dict(self._storage.trusted))
        self._adopt(data, _unseal(data, index_key()))

    def outdated(self, paths: Iterable[str]) -> list[str]:
        """Those of ``paths`` whose file is not what the index holds (changed, new or gone); no lock needed."""
        paths = list(paths)
        known = self.known(set(paths))
        return [rel for rel in paths if file_stat(self.root, rel) != (known[rel][:2] if rel in known else None)]

    def _index_file(self, writer: Any, rel: str, st: tuple[int, int],
                    known: dict[str, tuple[Any, ...]], report: SyncReport) -> None:  # fmt: skip
        try:
            found = _fs.read_file(self.root, rel)  # through the path gate: a link swapped in is not read
        except (OSError, LinkError) as exc:
            log.warning("cannot read %s: %s", rel, exc)
            return
        if found is None:
            return
        data = found[0]
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
        return walk(self.root, self.CONTENT_DIRS)

    def _stat(self, rel: str) -> tuple[int, int] | None:
        """The stat of a vault file named from outside (the pending list), or None.

        None unless it is a regular file reached through no symbolic link.
        """
        parent = os.path.dirname(rel)
        if os.path.realpath(os.path.join(self._real_root, parent)) != os.path.join(self._real_root, parent):
            return None
        return file_stat(self.root, rel)

    def known(self, only: set[str] | None = None) -> dict[str, tuple[Any, ...]]:
        """The ``(mtime_ns, size, sha256)`` each indexed file (or each of ``only``) was built from."""
        with self._lock:
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
        with self._lock:
            reader = self._reader()
            return [Problem(f["path"], f.get("error", "")) for f in
                    reader.documents(kind="invalid")]  # fmt: skip

    def entries(self) -> dict[str, str]:
        """Every indexed path with the sha256 of the content it was built from."""
        with self._lock:
            return {f["path"]: f["stat"][2] for f in self._reader().all_stored_fields() if "stat" in f}

    def path_of(self, memory_id: str, *, resync: Resync | None = None) -> str | None:
        """The path of the memory whose ``id`` is ``memory_id``, if indexed.

        With ``resync``, a file that changed since it was indexed is handed to it (to be
        indexed again) and looked up once more.
        """
        for attempt in range(2):
            with self._lock:
                stored = self._reader().document(id=memory_id)
            if not stored:
                return None
            if resync is None or file_stat(self.root, stored["path"]) == tuple(stored["stat"][:2]):
                break
            if attempt == 0:
                resync([stored["path"]])
        return str(stored["path"])

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
        resync: Resync | None = None,
    ) -> list[Hit]:
        """Rank memories for ``text`` with BM25F over title, body and tags.

        ``text`` is read as natural language; Whoosh syntax (``AND``, ``OR``, ``NOT``,
        ``title:word``, parentheses) is honoured, and a query whose syntax is broken is
        searched as its plain words. Wildcards, fuzzy terms and ranges are never expanded.

        Every hit is checked against its file (a stat): a hit whose file is gone is never
        returned, and one whose file changed since it was indexed is handed to ``resync`` (which
        indexes it again) and the query runs again, so it is ranked by what the file says now.
        Without ``resync``, such hits are left out.

        ``namespace`` is an exact path prefix: a hit is a memory of that namespace or of a folder
        below it, found through whole-term filters and checked again against its path.
        """
        if not isinstance(text, str):
            raise TypeError(f"query must be a string, got {text.__class__.__name__}")
        if k <= 0:
            return []
        filters = [query.Term("kind", "memory")]
        if namespace:
            namespace = namespace.strip("/")
            filters.append(query.Term("ns", namespace))
        if type:
            filters.append(query.Term("type", type))
        filters += [query.Term("tags", t.lower()) for t in tags]
        if since or until:
            filters.append(query.TermRange("updated", normalize_time(since), normalize_time(until)))
        others = query.Or([query.Term("kind", kind) for kind in ("invalid", "message", "transcript")])
        found: list[tuple[dict[str, Any], float]] = []
        for attempt in range(VERIFY_ATTEMPTS):
            with self._lock:
                try:
                    searcher = self._reader()
                    q = self._query(text, searcher)
                    if q is None:
                        return []
                    results = searcher.search(q, limit=k, filter=query.And(filters) if len(filters) > 1 else None,
                                              mask=others)  # fmt: skip
                    found = [(r.fields(), r.score) for r in results]
                except Exception as exc:
                    raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
            if namespace:  # whatever the index returned, nothing from outside the scope
                found = [(s, score) for s, score in found if _in_scope(s, namespace)]
            stale = {s["path"] for s, _ in found if file_stat(self.root, s["path"]) != tuple(s["stat"][:2])}
            if not stale:
                break
            if resync is None or attempt == VERIFY_ATTEMPTS - 1:
                found = [(s, score) for s, score in found if s["path"] not in stale]
                break
            resync(sorted(stale))
        stems = set(ANALYZER.stems(text))
        return [self._hit(stored, score, stems if snippets else None) for stored, score in found]

    def search_messages(self, text: str, *, k: int = 10, session: str | None = None,
                        resync: Resync | None = None) -> list[MessageHit]:  # fmt: skip
        """Rank conversation messages for ``text`` (all sessions, or one transcript path).

        Hits are checked against their transcript as :meth:`search` checks memories.
        """
        if not isinstance(text, str):
            raise TypeError(f"query must be a string, got {text.__class__.__name__}")
        if k <= 0:
            return []
        filters = [query.Term("kind", "message")] + ([query.Term("session", session)] if session else [])
        found: list[tuple[dict[str, Any], float]] = []
        for attempt in range(VERIFY_ATTEMPTS):
            with self._lock:
                try:
                    searcher = self._reader()
                    q = self._query(text, searcher)
                    if q is None:
                        return []
                    found = [(r.fields(), r.score) for r in searcher.search(q, limit=k, filter=query.And(filters))]
                    if session:  # whatever the index returned, nothing from another transcript
                        found = [(s, score) for s, score in found if s.get("session") == session]
                    indexed = {s["session"]: self._transcript_stat(s["session"]) for s, _ in found}
                except Exception as exc:
                    raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
            stale = {rel for rel, st in indexed.items() if st is None or file_stat(self.root, rel) != st}
            if not stale:
                break
            if resync is None or attempt == VERIFY_ATTEMPTS - 1:
                found = [(s, score) for s, score in found if s["session"] not in stale]
                break
            resync(sorted(stale))
        stems = set(ANALYZER.stems(text))
        hits = []
        for stored, score in found:
            item = json.loads(stored["item"])
            hits.append(MessageHit(stored.get("session_id") or stored["session"], stored["session"],
                                   stored["position"], stored.get("role", ""),
                                   round(float(score), 4), make_snippet(text_of(item), stems), item,
                                   stored.get("time")))  # fmt: skip
        return hits

    def _transcript_stat(self, rel: str) -> tuple[int, int] | None:
        """The ``(mtime_ns, size)`` a transcript was indexed at (cached until the searcher changes)."""
        if rel not in self._transcript_stats:
            stored = self._reader().document(path=rel)
            st = stored.get("stat") if stored else None
            self._transcript_stats[rel] = (int(st[0]), int(st[1])) if st else None
        return self._transcript_stats[rel]

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
                found = _fs.read_file(self.root, stored["path"])
                doc = load_bytes(found[0] if found else b"", path=stored["path"])
                snippet = make_snippet(doc.body, stems)
            except (OSError, DocumentError, LinkError):
                snippet = ""
        return Hit(
            path=stored["path"], title=stored.get("title", ""), score=round(float(score), 4),
            snippet=snippet, id=stored.get("id"), namespace=stored.get("namespace", ""),
            type=stored.get("type"), tags=tuple(t for t in stored.get("tags", "").split(",") if t),
            updated=stored.get("updated"),
        )  # fmt: skip


def _in_scope(stored: dict[str, Any], namespace: str) -> bool:
    """True when an indexed memory's path and namespace both lie in ``namespace`` (exact prefixes)."""
    path, own = str(stored.get("path", "")), str(stored.get("namespace", ""))
    return in_namespace(path, namespace) and split_memory_path(path)[0] == own and (
        own == namespace or own.startswith(namespace + "/"))  # fmt: skip


def _with_terms(fields_: dict[str, Any]) -> dict[str, Any]:
    """Fill in the unstored ``ns`` terms and drop empty values before indexing."""
    fields_["ns"] = namespace_terms(fields_.get("namespace") or "") or None
    return {k: v for k, v in fields_.items() if v is not None}


def namespace_terms(namespace: str) -> list[str]:
    """The ``ns`` terms of a memory in ``namespace``: the namespace and each of its ancestors, whole.

    ``x users/alice`` gives ``["x users", "x users/alice"]``. Whoosh indexes a list given to a field
    as exactly these terms, one per item, without running any tokeniser over them, so a filter on
    ``users/alice`` matches a memory only if its namespace is ``users/alice`` or lies below it:
    no space, punctuation, case or Unicode in a folder name can make a namespace match another.
    """
    parts = namespace.split("/") if namespace else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


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
