"""The search index: Whoosh, kept as a function of the files.

This module and its parts are the only ones that import :mod:`whoosh`: :mod:`memfs.analysis` (words
into terms), :mod:`memfs.storage` (the files, read only when signed) and :mod:`memfs.searcher` (every
read: search, message search, counts); :mod:`memfs.indexing` (what a file becomes in the index) needs
no Whoosh of its own. The index itself keeps its files, segments and signed list, and its syncs. It
lives under ``.memfs/index`` and is never the truth: it stores, per file, the ``(mtime_ns, size, sha256)`` it was built
from, so :meth:`SearchIndex.sync` brings it up to date from file stats alone, reading only
the files that changed. A missing, corrupt or outdated index is rebuilt from the files.

The index cannot hurt the process that reads it. Whoosh pickles its schema, its segment list
and its stored fields, so an index folder someone else wrote (a vault copied or synced with its
``.memfs/``) could run code when opened. memfs therefore reads no index file it cannot vouch
for: after each commit it writes ``memfs-index.json`` into the folder, naming every file of the
index with its size and sha256, signed with an HMAC key kept outside the vault (in the user's
state folder, see :func:`memfs.storage.index_key`). A file is handed to Whoosh only after its bytes match the
signed list, and an index without a valid list is rebuilt from the files, unread. Files are read
into memory rather than mapped, so a segment truncated under a running process cannot kill it
with SIGBUS; the same list tells a long-lived reader when the index on disk is no longer the one
it opened (a random id per index, and Whoosh's generation within it).

A long sync (the first index of a big transcript, a rebuild) is built without the vault lock in
a private index beside this one (:meth:`SearchIndex.stage`), and published under the lock
(:meth:`SearchIndex.publish`): its segments join the index in one commit, or its folder replaces
the index, after whatever changed meanwhile is redone. So writers never wait for one.

Speed comes from three choices, measured in docs/benchmarks.md: one analyzer pass in plain
Python (a regex, a stop list of ~170 English words, possessives folded, a cached Snowball
stemmer) instead of Whoosh's chain of generators; no term positions; and queries that are a
flat OR of the question's content words, dropping words so common they cannot change the
ranking. Messages are indexed with their neighbours' words and scored straight from the
postings (:meth:`memfs.searcher.IndexReader._rank`), memories too: each segment's postings are
decoded once into numpy arrays, so a question of words found in most documents costs a few array
operations per term rather than Python per posting.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import shutil
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whoosh import fields
from whoosh.index import TOC, FileIndex
from whoosh.reading import SegmentReader
from whoosh.writing import MERGE_SMALL

from . import _fs, indexed
from .analysis import ANALYZER, WEIGHTING, WeightedText
from .errors import FileTooLargeError, LinkError, SearchIndexError
from .freshness import ChangeFinder, FileStamp, file_stat, walk
from .indexing import MAX_TRANSCRIPT_BYTES, Indexer, resume_point
from .layout import CONTENT_DIRS, is_transcript
from .postings import open_writer
from .results import Progress, SyncReport
from .storage import _Storage, index_key

log = logging.getLogger(__name__)

SCHEMA_VERSION = "9"  # 4: message fields; 5: ``ns`` holds exact namespace prefixes (an ID field); 6: lifecycle;
# 7: message terms indexed with their weights, neighbours weighed by the message's length;
# 8: a memory's ``description`` (Claude Code, Obsidian) searched with its body;
# 9: accents folded, CJK text in character pairs; a note's inline #tags and aliases (``tag``: each tag and
# the tags it nests under; ``aliases``) and the link table (``namekey``, ``linkkey``, ``haslinks``: memfs.links)
PARALLEL_FROM_DOCS = 2000  # a fresh build this large uses two indexing processes
STAGE_FROM_BYTES = 1024 * 1024  # an update reading this much is built outside the vault lock ...
STAGE_FROM_FILES = 200  # ... and so is one of this many files
ASIDE_KEPT_SECONDS = 3600  # an aside folder this old was left by a killed process: removed


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
        tag=fields.KEYWORD(commas=True),  # each tag and every tag it nests under, casefolded: for filters
        aliases=fields.TEXT(analyzer=ANALYZER, phrase=False, field_boost=2.0),  # searched like the title
        namekey=fields.ID(),  # the link table (memfs.links): the key a memory's links find it by ...
        linkkey=fields.KEYWORD(commas=True),  # ... the keys of the files its links name ...
        haslinks=fields.ID(),  # ... and "1" when it has any
        type=fields.ID(stored=True),
        created=fields.ID(stored=True),
        updated=fields.ID(stored=True),
        stat=fields.STORED(),
        error=fields.STORED(),
        session=fields.ID(stored=True),
        session_id=fields.STORED(),
        message=WeightedText(),  # a message's words and its neighbours', weighted (see _message_terms)
        speaker=fields.TEXT(analyzer=ANALYZER, phrase=False),  # who said a message, when known
        date=fields.STORED(),  # a message's session date, as its transcript writes it
        day=fields.ID(stored=True),  # the same as an ISO date, for since/until
        position=fields.STORED(),
        role=fields.ID(stored=True),
        time=fields.ID(stored=True),
        item=fields.STORED(),
        checkpoints=fields.STORED(),
        # ``superseded`` or ``timed`` (a validity that depends on the present), so a search can set
        # aside what is not current by reading only those documents (see IndexReader._not_current);
        # ``unreadable`` too for validity keys memfs would refuse to write (doctor reports them)
        lifecycle=fields.KEYWORD(),
        validity_error=fields.STORED(),
        validity=fields.STORED(),  # (start, end, superseded_by, supersedes, expires) of lifecycle.Validity
    )


INDEX_NAME = "MAIN"
MANIFEST = "memfs-index.json"
MAX_MANIFEST_BYTES = 1024 * 1024


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


@dataclass
class Staged:
    """Index work done without the vault lock, waiting for :meth:`SearchIndex.publish` under it.

    ``aside`` is a private index in a folder of its own next to the real one. ``fresh``: it holds
    every file and replaces the index; otherwise it holds the files ``paths`` named (None: any
    file) whose indexing reads a lot, and its segments join the index.
    """

    aside: SearchIndex
    fresh: bool
    paths: list[str] | None
    report: SyncReport
    built: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # the aside's known(), read without the lock
    as_built: set[str] = field(default_factory=set)  # set by publish: the files published as they were built

    def discard(self) -> None:
        """Drop the aside index and its folder."""
        self.aside.close()
        shutil.rmtree(self.aside.folder, ignore_errors=True)


class SearchIndex:
    """A Whoosh index over the Markdown files below ``root``'s content folders.

    Writers (:meth:`sync`, :meth:`clear`, :meth:`publish`) must hold the vault lock; readers
    need not, nor does :meth:`stage`, which builds a long job aside for :meth:`publish`. One
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
        #: Held by every read and write of this object: Whoosh's readers are not thread-safe without mmap.
        self.lock = threading.RLock()
        self._ix: Any = None
        self._storage: _Storage | None = None
        self._manifest: bytes | None = None  # the signed list the open index was verified against
        self._id = ""
        self._searcher: Any = None
        self._known_all: tuple[bytes | None, dict[str, tuple[Any, ...]]] | None = None  # known() of one manifest
        self._lists: dict[str, indexed.SegmentFiles] = {}  # what each segment indexed, by segment id
        self._unlisted: set[str] = set()  # segments whose list file is missing or unusable: written by the next sync
        self._differ_memo: tuple[Any, bytes | None, list[str]] | None = None  # (a walk, a manifest, what differs)
        self._open()

    # -- lifecycle -------------------------------------------------------------

    def _open(self) -> None:
        if self.refresh():
            return
        if self.folder.exists():
            log.warning("search index at %s is unusable (%s); rebuilding it from the files", self.folder, self.problem)
        self._create()

    def refresh(self) -> bool:
        """Make sure the index open here is the one on disk; False if there is none memfs can use.

        Cheap when nothing changed (one small file read and compared): called before every
        search. When another process committed or rebuilt the index, the new one is verified
        and opened. False when the folder is gone or its files are not the ones memfs signed
        (``problem`` says why); the caller rebuilds, holding the vault lock.
        """
        with self.lock:
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
        searcher = ix.searcher(weighting=WEIGHTING)  # reads every segment now, so damage shows here
        self._release()
        self._ix, self._storage, self._searcher, self._manifest = ix, storage, searcher, data
        current = {seg.segment_id() for r, _ in searcher.reader().leaf_readers() if (seg := r.segment())}
        self._lists = {sid: listed for sid, listed in self._lists.items() if sid in current}
        self._unlisted &= current
        if body["id"] != self._id:
            self._id = body["id"]
            self.changes.forget()  # another index: what was checked against the old one counts no more

    def _release(self) -> None:
        searcher, self._searcher = self._searcher, None
        self._ix, self._manifest = None, None
        with contextlib.suppress(Exception):  # closing a damaged index must not fail
            if searcher is not None:
                searcher.close()

    def _create(self) -> None:
        """A new empty index in place of whatever is there, with a new id."""
        with self.lock:
            self._release()
            tmp = self.folder.with_name(self.folder.name + ".new")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True, mode=0o700)
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
        segments = {seg.segment_id(): seg for seg in toc.segments}
        present = set(os.listdir(storage.folder))
        names = [
            n
            for n in present
            if not n.endswith(indexed.SUFFIX)
            and (n == f"_{INDEX_NAME}_{toc.generation}.toc" or n.split(".", 1)[0] in segments)
        ]
        files: dict[str, tuple[int, str]] = {}
        for name in names:
            if name in previous and name not in storage.own:  # an older segment: files never change
                files[name] = previous[name]
                continue
            data, _ = storage.read(name)
            files[name] = (len(data), hashlib.sha256(data).hexdigest())
            storage.cache[name, files[name][1]] = data
        for sid, segment in segments.items():  # each segment's list of files (memfs/indexed.py)
            name = indexed.name_of(sid)
            if name in previous and name in present and sid not in self._unlisted:
                files[name] = previous[name]  # written with its segment, which never changes
            else:
                files[name] = self._write_list(storage, segment, files)
        body = {
            "schema": SCHEMA_VERSION,
            "id": self._id,
            "generation": toc.generation,
            "files": {n: list(v) for n, v in sorted(files.items())},
        }
        data = _seal(body, index_key())
        tmp = os.path.join(storage.folder, MANIFEST + ".new")
        with open(tmp, "wb", opener=lambda path, flags: os.open(path, flags, 0o600)) as handle:
            handle.write(data)
        os.replace(tmp, os.path.join(storage.folder, MANIFEST))
        return data

    def _write_list(self, storage: _Storage, segment: Any, files: dict[str, tuple[int, str]]) -> tuple[int, str]:
        """Write the list of the files ``segment`` indexed beside it; its size and sha256, to be signed.

        Read from the segment's stored fields, through a storage that checks every file against
        ``files`` (what is about to be signed), unless this process has the list already.
        """
        sid = segment.segment_id()
        listed = self._lists.get(sid)
        if listed is None or listed.doc_count != segment.doc_count_all():
            check = _Storage(storage.folder)
            check.trusted, check.cache = files, storage.cache
            reader = SegmentReader(check, _schema(), segment)
            try:
                listed = self._lists[sid] = indexed.read_from(reader)
            finally:
                reader.close()
        data = indexed.dumps(listed)
        tmp = os.path.join(storage.folder, f".{secrets.token_hex(8)}{indexed.SUFFIX}")  # no segment's name
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, os.path.join(storage.folder, indexed.name_of(sid)))  # over whatever was there, link or not
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._unlisted.discard(sid)
        return len(data), hashlib.sha256(data).hexdigest()

    def close(self) -> None:
        """Close the searcher and the index."""
        with self.lock:
            self._release()

    def clear(self) -> None:
        """Drop every entry (the next full sync rebuilds it); the caller holds the vault lock."""
        self._create()

    def doc_count(self) -> int:
        """How many files are indexed (malformed ones included)."""
        with self.lock:
            return int(self.searcher().doc_count())

    def searcher(self) -> Any:
        """The open Whoosh searcher, opened first if need be; the caller holds :attr:`lock`."""
        if self._searcher is None:
            if self._ix is None and not self.refresh():
                raise SearchIndexError(f"the search index is unusable: {self.problem}")
            if self._searcher is None:
                self._searcher = self._ix.searcher(weighting=WEIGHTING)
        return self._searcher

    def _indexer(self) -> Indexer:
        """What each file becomes in this index (a transcript's own entry, read from it, says where to resume)."""
        return Indexer(self.root, lambda rel: self.searcher().document(path=rel))

    # -- keeping it in step with the files -------------------------------------

    def sync(
        self,
        paths: Iterable[str] | None = None,
        *,
        progress: Progress | None = None,
        known: dict[str, tuple[Any, ...]] | None = None,
        walked: dict[str, FileStamp] | None = None,
    ) -> SyncReport:
        """Bring the index up to date with the files (all of them, or just ``paths``).

        Only files whose ``(mtime_ns, size)`` differ from what was indexed are read. Malformed
        files are recorded as problems and kept out of search results. The caller holds the
        vault lock. A full sync also starts :attr:`changes` afresh from the files it saw.
        ``known`` is what :meth:`known` would return, when the caller has it already.

        ``walked`` is what :meth:`walk` returned just before the caller took the lock: a full
        sync then stats again only the files that walk found differing from the index (all of
        them if there are many); changes made after it are the next search's to find, since
        :attr:`changes` started from that walk.
        """
        with self.lock:
            if not self.refresh():
                raise SearchIndexError(f"the search index is unusable: {self.problem}")
            memo, self._differ_memo = self._differ_memo, None
            ours = known is None
            if known is None:
                known = self.known(None if paths is None else set(paths))
            differ = None
            if paths is None and walked is not None:
                same = ours and memo is not None and memo[0] is walked and memo[1] == self._manifest
                differ = memo[2] if same and memo is not None else _differing(walked, known)  # stage() compared them
            if paths is not None:
                on_disk = {p: st for p in paths if (st := self._stat(p))}
                gone = [p for p in known if p not in on_disk]
            elif differ is not None and len(differ) <= STAGE_FROM_FILES:  # those the walk found changed, again now
                on_disk = {p: st for p in differ if (st := self._stat(p))}
                gone = [p for p in differ if p in known and p not in on_disk]
            else:  # every file (many changed: a walk costs less than a check of each through _stat)
                on_disk = self.changes.scan()
                gone = [p for p in known if p not in on_disk]
            report = SyncReport()
            todo = [p for p, st in on_disk.items() if known.get(p, (None,))[:2] != st]
            if not todo and not gone:
                if self._unlisted:  # an index an older memfs made, or a list damaged: list its segments now
                    self._committed()
                return report
            options: dict[str, Any] = {"timeout": self.lock_timeout, "limitmb": 128}
            if not known and len(todo) >= PARALLEL_FROM_DOCS and (os.cpu_count() or 1) > 1:
                # A build from scratch: two processes index halves into two segments (measured 1.4x on
                # 2 cores). Only for fresh builds: Whoosh's multiprocess writer merges updates poorly.
                options.update(procs=2, multisegment=True)
            writer = open_writer(self._ix, **options)
            indexer = self._indexer()
            try:
                for done, rel in enumerate(todo, 1):
                    indexer.index_file(writer, rel, on_disk[rel], known, report)
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

    def walk(self) -> tuple[dict[str, FileStamp], list[str]]:
        """Stat every file now (no lock needed), for :meth:`stage` and :meth:`sync` to share.

        Returns the ``(mtime_ns, size)`` of every Markdown file under the content folders, and
        the vault paths of the temporary files of memfs's writers it passed. :attr:`changes`
        starts afresh from this walk.
        """
        found = self.changes.scan()
        return found, list(self.changes.leftovers)

    def _committed(self) -> None:
        """Sign what the writer just committed and open it."""
        assert self._storage is not None
        data = self._write_manifest(self._storage, dict(self._storage.trusted))
        self._adopt(data, _unseal(data, index_key()))

    # -- long jobs: built without the vault lock, published under it ------------

    def stage(
        self,
        paths: Iterable[str] | None = None,
        *,
        fresh: bool = False,
        progress: Progress | None = None,
        walked: dict[str, FileStamp] | None = None,
    ) -> Staged | None:
        """Do the expensive part of :meth:`sync` without the vault lock; :meth:`publish` finishes it.

        Reading, parsing and indexing files go into a private index in a folder beside this one,
        which no other process reads, so writers are not kept waiting meanwhile (a transcript of
        50,000 messages takes about half a minute). ``fresh`` builds a whole new index (a
        rebuild). Otherwise only the files ``paths`` names (None: every file) that are new or
        changed and must be read whole are built (a transcript whose new entries follow the
        indexed ones is left: that is quick under the lock), and None is returned when that is
        little work (under :data:`STAGE_FROM_BYTES` and :data:`STAGE_FROM_FILES`): the caller
        syncs under the lock as usual. ``walked``: what :meth:`walk` found just before, for a
        stage of every file. Needs no lock.
        """
        wanted = None if paths is None else list(paths)
        todo = None
        if not fresh:
            todo = self._heavy(wanted, walked)
            if not todo:
                return None
        folder = self.folder.with_name(f"{self.folder.name}.stage-{secrets.token_hex(8)}")
        try:
            aside = SearchIndex(self.root, folder, lock_timeout=self.lock_timeout)
        except BaseException:  # a full disk, say: leave nothing behind
            for leftover in (folder, folder.with_name(folder.name + ".new")):
                shutil.rmtree(leftover, ignore_errors=True)
            raise
        staged = Staged(aside, fresh, wanted, SyncReport())
        try:
            staged.report = aside.sync(todo, progress=progress)
            staged.built = aside.known()
        except BaseException:
            staged.discard()
            raise
        return staged

    def _heavy(self, paths: list[str] | None, walked: dict[str, FileStamp] | None = None) -> list[str]:
        """Those of ``paths`` (None: every file, as ``walked`` saw it) whose indexing reads them whole, if a lot."""
        if not self.refresh():
            return []  # the pass under the lock rebuilds it, and says so
        with self.lock:  # what is known, and of which index
            known, manifest = self.known(None if paths is None else set(paths)), self._manifest
            differ = _differing(walked, known) if paths is None and walked is not None else None
        if paths is not None:
            on_disk = {p: st for p in paths if (st := self._stat(p))}
        elif walked is None or differ is None:
            on_disk = dict(self.scan())
        else:  # only what differs can be work; sync() takes the same list up under the lock
            self._differ_memo = (walked, manifest, differ)
            on_disk = {p: walked[p] for p in differ if p in walked}
        heavy, size = [], 0
        for rel, st in on_disk.items():
            if known.get(rel, (None,))[:2] == st or (is_transcript(rel) and rel in known and self._resumes(rel, st[1])):
                continue
            heavy.append(rel)
            size += st[1]
        return heavy if size >= STAGE_FROM_BYTES or len(heavy) >= STAGE_FROM_FILES else []

    def _resumes(self, rel: str, size: int) -> bool:
        """True if transcript ``rel`` (``size`` bytes now) looks appended to since it was indexed.

        Judged without reading it (the file is not hashed twice): it is at least as long as when
        it was indexed. If the indexed part was rewritten after all, the sync under the lock
        reads it whole (rare: a person editing an old message while the session is appended to).
        """
        with self.lock:
            stored = dict(self.searcher().document(path=rel) or {})
        ends = [int(offset) for offset in (stored.get("checkpoints") or {})]
        return bool(ends) and max(ends) <= size

    def publish(self, staged: Staged, *, progress: Progress | None = None) -> SyncReport:
        """Make what :meth:`stage` built part of the index, redoing only what changed since (holding the vault lock).

        A file whose stat is still the one it was built from is published as built; a transcript
        appended to since is published with its new entries added after the built ones; any other
        file changed since is left to the caller's :meth:`sync` (or, for a fresh build, synced
        here). Files the index already holds as built (another process published the same work)
        are left as they are. A fresh build is brought up to date with every file, then replaces
        the index folder. The aside folder is gone afterwards, whatever happens.
        """
        with self.lock:
            try:
                if staged.fresh:
                    return self._publish_fresh(staged, progress)
                return self._publish_segments(staged)
            finally:
                staged.discard()

    def _publish_fresh(self, staged: Staged, progress: Progress | None) -> SyncReport:
        aside = staged.aside
        late = aside.sync(None, progress=progress, known=staged.built)  # stats only, and what changed meanwhile
        report = staged.report.merged(late)
        staged.as_built = set(staged.built) - {*late.added, *late.updated, *late.removed}
        changes = aside.changes  # it has just looked at every file
        changes.delay = self.changes.delay
        self._lists.update(aside._lists)  # the lists of its segments, as its commits wrote them
        aside.close()
        self._release()
        old = self.folder.with_name(f"{self.folder.name}.old-{secrets.token_hex(8)}")
        with contextlib.suppress(FileNotFoundError):
            os.rename(self.folder, old)  # searches finding no index meanwhile wait for the vault lock
        os.rename(aside.folder, self.folder)
        shutil.rmtree(old, ignore_errors=True)
        self._storage = None
        if not self.refresh():
            raise SearchIndexError(f"the new search index at {self.folder} cannot be opened: {self.problem}")
        self.changes = changes
        return report

    def _publish_segments(self, staged: Staged) -> SyncReport:
        aside, built, made = staged.aside, staged.report, staged.built
        if not self.refresh():
            raise SearchIndexError(f"the search index is unusable: {self.problem}")
        before = self.known(None) if len(made) > 100 else self.known(set(made))  # known(None) is cached
        keep: list[str] = []
        resume: dict[str, tuple[tuple[int, int], bytes, dict[str, Any]]] = {}
        drop: list[str] = []
        for rel, was in made.items():
            now = self._stat(rel)
            if rel in before and tuple(before[rel][:2]) == now:  # the index has it as it is (another publish)
                drop.append(rel)
            elif now == tuple(was[:2]):
                keep.append(rel)
            elif now is not None and is_transcript(rel) and (more := self._appended(aside, rel, was)):
                resume[rel] = (now, *more)
            else:
                drop.append(rel)
        report = SyncReport()
        for rel in keep + list(resume):
            if rel not in before:
                report.added.append(rel)
            elif is_transcript(rel) or before[rel][2] != made[rel][2]:  # a touched file is not reported
                report.updated.append(rel)
        staged.as_built = set(keep)
        report.problems = [p for p in built.problems if p.path in staged.as_built]
        if not keep and not resume:
            return report
        # The new entries of a transcript that grew, after the built ones. Its last built messages
        # are indexed again (their neighbours changed): what that replaces goes from the built
        # segments, so the plan is made first and replayed into the writer.
        plans: list[_Recorder] = []
        for rel, (st, data, stored) in resume.items():
            plan = _Recorder()
            self._indexer().index_transcript(
                plan, rel, st, data, hashlib.sha256(data).hexdigest(), made[rel], plan.report, stored=stored
            )
            plans.append(plan)
            report.problems += plan.report.problems
        segments = aside._segments_without(drop, list(resume), [d for plan in plans for d in plan.deletes])
        writer = open_writer(self._ix, timeout=self.lock_timeout, limitmb=128)
        moved: list[str] = []
        try:
            for rel in keep + list(resume):
                writer.delete_by_term("path", rel)
                writer.delete_by_term("session", rel)
            for plan in plans:
                plan.replay(writer)
            ids = {seg.segment_id() for seg in segments}
            self._lists.update((sid, listed) for sid, listed in aside._lists.items() if sid in ids)
            for name in sorted(os.listdir(aside.folder)):
                if name.split(".", 1)[0] in ids:
                    os.rename(aside.folder / name, self.folder / name)
                    moved.append(name)
            writer.commit(mergetype=lambda w, segs: MERGE_SMALL(w, segs) + segments)
        except BaseException:
            if not writer.is_closed:
                writer.cancel()
            for name in moved:
                with contextlib.suppress(OSError):
                    os.unlink(self.folder / name)
            raise
        self._committed()
        return report

    def _appended(self, aside: SearchIndex, rel: str, was: tuple[Any, ...]) -> tuple[bytes, dict[str, Any]] | None:
        """The bytes of transcript ``rel`` and its aside entry, if it only grew since ``aside`` indexed it."""
        try:
            found = _fs.read_vault_file(self.root, rel, limit=MAX_TRANSCRIPT_BYTES)
        except (OSError, FileTooLargeError, LinkError):
            return None
        if found is None:
            return None
        data = found[0]
        with aside.lock:
            stored = dict(aside.searcher().document(path=rel) or {})
        start, _ = resume_point(data, stored)
        return (data, stored) if start == was[1] else None

    def _segments_without(
        self, drop: list[str], heads: list[str], deletes: Sequence[tuple[str, str]] = ()
    ) -> list[Any]:
        """This (aside) index's segments, less ``drop``'s documents, ``heads``' entries and ``deletes``' terms.

        ``deletes`` are ``(field, value)`` terms of documents to leave out. Deletions live in the
        segment objects the table of contents holds, so the segments can
        join another index as they are.
        """
        if drop or heads or deletes:
            writer = open_writer(self._ix, timeout=self.lock_timeout)
            try:
                for rel in drop:
                    writer.delete_by_term("path", rel)
                    writer.delete_by_term("session", rel)
                for rel in heads:
                    writer.delete_by_term("path", rel)
                for field, value in deletes:
                    writer.delete_by_term(field, value)
                writer.commit(merge=False)
            except BaseException:
                if not writer.is_closed:
                    writer.cancel()
                raise
            self._committed()
        assert self._storage is not None
        toc = TOC.read(self._storage, INDEX_NAME, schema=_schema())
        return [seg for seg in toc.segments if seg.doc_count() > 0]

    def sweep_asides(self, older_than: float = ASIDE_KEPT_SECONDS) -> None:
        """Remove the aside folders (builds, replaced indexes) that killed processes left (holding the vault lock)."""
        now = time.time()
        for kind in ("stage", "old"):
            for path in self.folder.parent.glob(f"{self.folder.name}.{kind}-*"):
                with contextlib.suppress(OSError):
                    if now - path.stat().st_mtime > older_than:
                        shutil.rmtree(path, ignore_errors=True)

    def outdated(self, paths: Iterable[str]) -> list[str]:
        """Those of ``paths`` whose file is not what the index holds (changed, new or gone); no lock needed."""
        paths = list(paths)
        known = self.known(set(paths))
        return [rel for rel in paths if file_stat(self.root, rel) != (known[rel][:2] if rel in known else None)]

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
        """The ``(mtime_ns, size, sha256)`` each indexed file (or each of ``only``) was built from.

        All of them come from each segment's list of files (:mod:`memfs.indexed`), less the
        documents deleted since, rather than from every file's stored fields.
        """
        with self.lock:
            reader = self.searcher()
            if only is None:  # the files' own entries, not every message's; kept until the index changes
                if self._known_all is None or self._known_all[0] != self._manifest:
                    found: dict[str, tuple[Any, ...]] = {}
                    for leaf, _ in reader.reader().leaf_readers():
                        if (segment := leaf.segment()) is not None:
                            found.update(self.listed(leaf).live(segment.deleted_docs()))
                    self._known_all = (self._manifest, found)
                return dict(self._known_all[1])
            known = {}
            for rel in only:
                stored = reader.document(path=rel)
                if stored and "stat" in stored:
                    known[rel] = tuple(stored["stat"])
            return known

    def listed(self, leaf: Any) -> indexed.SegmentFiles:
        """The files the segment of ``leaf`` (a reader of one segment) indexed: its list file, else its stored fields.

        A list that is not signed (an index an older memfs made), not the bytes signed, or not
        this segment's is never used; the segment is then noted, so the next :meth:`sync`
        writes its list.
        """
        segment = leaf.segment()
        sid, count = segment.segment_id(), int(segment.doc_count_all())
        listed = self._lists.get(sid)
        if listed is not None and listed.doc_count == count:
            return listed
        name = indexed.name_of(sid)
        assert self._storage is not None
        try:
            if name not in self._storage.trusted:
                raise LookupError("none was signed")
            listed = indexed.loads(self._storage.checked(name), sid, count)
        except (LookupError, OSError, ValueError, SearchIndexError) as exc:
            level = logging.DEBUG if isinstance(exc, LookupError) else logging.WARNING
            log.log(level, "not using the list of files of index segment %s (%s); reading its stored fields", sid, exc)
            listed = indexed.read_from(leaf)
            self._unlisted.add(sid)
        self._lists[sid] = listed
        return listed

    def entries(self) -> dict[str, str]:
        """Every indexed path with the sha256 of the content it was built from."""
        with self.lock:
            return {f["path"]: f["stat"][2] for f in self.searcher().all_stored_fields() if "stat" in f}


def _differing(walked: dict[str, FileStamp], known: dict[str, tuple[Any, ...]]) -> list[str]:
    """The files ``walked`` saw with another ``(mtime_ns, size)`` than ``known``, then those of ``known`` it missed."""
    get = known.get
    return [p for p, (mtime, size) in walked.items() if (k := get(p)) is None or k[1] != size or k[0] != mtime] + [
        p for p in known if p not in walked
    ]


class _Recorder:
    """Stands in for a Whoosh writer: keeps the deletions and documents of one transcript's indexing, to replay."""

    def __init__(self) -> None:
        self.report = SyncReport()
        self.deletes: list[tuple[str, str]] = []
        self.documents: list[tuple[bool, dict[str, Any]]] = []  # (an update, the fields)

    def delete_by_term(self, name: str, value: str) -> None:
        self.deletes.append((name, value))

    def add_document(self, **fields_: Any) -> None:
        self.documents.append((False, fields_))

    def update_document(self, **fields_: Any) -> None:
        self.documents.append((True, fields_))

    def replay(self, writer: Any) -> None:
        """Do it all in ``writer``: the deletions, then the documents in order."""
        for name, value in self.deletes:
            writer.delete_by_term(name, value)
        for update, fields_ in self.documents:
            (writer.update_document if update else writer.add_document)(**fields_)
