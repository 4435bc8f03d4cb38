"""The write engine: every change to a vault's files, with its index and its git history.

Everything that changes a vault goes through one :class:`WriteEngine`: memory files (written
whole, atomically, one commit per change or per ``batch()``) and transcripts (appended to,
truncated, replaced, committed when their session's policy says). It holds the vault lock
(threads and processes) for the whole of a change, so no one sees a file memfs wrote before
git has it, and it keeps two records under ``.memfs/``:

- ``pending``: the vault paths written since the index last caught up. The next search in any
  process indexes exactly those, so a write never pays for a Whoosh commit.
- ``own``: the transcripts memfs itself changed and has not committed yet (a session whose
  commit policy is not "every turn"), with the file's stat after memfs's write. A person's edit
  is a file that differs from git *and* from this record; memfs's own pending writes are never
  committed under a person's name.

The :class:`~memfs.vault.Vault` front door, the memory store, sessions, the watcher and the
doctor all sit on this engine and use only its public methods.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _fs
from .documents import Document, dumps, load_bytes
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ContentError,
    DocumentError,
    GitLockError,
    InvalidArgumentError,
    MemoryNotFoundError,
    PathError,
    SearchIndexError,
)
from .history import GitHistory, Identity
from .index import MAX_INDEXED_BYTES, Hit, MessageHit, Problem, Progress, SearchIndex, SyncReport
from .layout import MEMORIES_DIR, STATE_DIR, is_memory, is_transcript, label
from .paths import clean_relpath

log = logging.getLogger(__name__)

MAX_CONTENT_BYTES = 1024 * 1024
DEFAULT_FRESHNESS = 2.0  # seconds: a file changed by hand is found by searches this much later at most
DEFAULT_PERSON = Identity("person", "person@memfs.invalid")
_GITIGNORE_LINES = (".memfs/", _fs.TEMP_PREFIX + "*")

Stat = tuple[int, int, int]  # (inode, size, mtime_ns): how memfs recognises a file it wrote


@dataclass
class Change:
    """One commit's worth of changes in progress (a single write, or a whole ``batch()``)."""

    message: str
    paths: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    originals: dict[str, bytes | None] = field(default_factory=dict)
    sha: str | None = None


class WriteEngine:
    """The lock, the transactions, the files, the pending queue and the commits of one vault.

    Args:
        root: The vault folder (it exists).
        author: Who writes through this engine (an agent by default).
        person: Who edits files by hand; None: the repository's git identity when there is one.
        lock_timeout: Seconds to wait for the vault lock before raising LockTimeoutError.
        durable: fsync files and folders on every write.
        freshness: See :attr:`freshness`.
    """

    def __init__(self, root: Path, *, author: Identity, person: Identity | None,
                 lock_timeout: float, durable: bool, freshness: float | None = DEFAULT_FRESHNESS) -> None:  # fmt: skip
        self.root = root
        self.author = author
        self.durable = durable
        self.state_dir = root / STATE_DIR
        self.state_dir.mkdir(exist_ok=True)
        self._lock = _fs.VaultLock(self.state_dir / "lock", timeout=lock_timeout)
        self._pending_file = self.state_dir / "pending"
        self._found_file = self.state_dir / "found"  # edits by hand a search indexed, for the next commit
        self._own_file = self.state_dir / "own"
        self._change: Change | None = None
        self._freshness: float | None = None
        with self._lock.hold():
            self.history = GitHistory(root, self.state_dir, lock_timeout=lock_timeout)
            self.person = person or self.history.configured_identity() or DEFAULT_PERSON
            self._ensure_layout()
            self.index = SearchIndex(root, self.state_dir / "index", lock_timeout=lock_timeout)
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
        """Index what is pending, then release the index and git helper processes."""
        try:
            self.flush_index()
        except Exception as exc:  # best effort: the next open catches up from file stats
            log.warning("could not update the search index on close: %s", exc)
        self.index.close()
        self.history.close()

    def _ensure_layout(self) -> None:
        (self.root / MEMORIES_DIR).mkdir(exist_ok=True)
        ignore = self.root / ".gitignore"
        text = ignore.read_text("utf-8") if ignore.exists() else ""
        missing = [line for line in _GITIGNORE_LINES if line not in text.splitlines()]
        if missing:
            sep = "" if not text or text.endswith("\n") else "\n"
            text += sep + "".join(f"{line}\n" for line in missing)
            _fs.atomic_write(ignore, text.encode(), durable=self.durable)
            self.history.commit([".gitignore"], "vault: init", author=self.author,
                                trailers={"Memfs-Op": "init"})  # fmt: skip

    # -- locking and transactions ------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the vault lock (re-entrant) for a ``with`` block."""
        with self._lock.hold():
            yield

    @contextlib.contextmanager
    def batch(self, message: str, *, trailers: dict[str, str] | None = None) -> Iterator[Change]:
        """Group many writes into one commit.

        If the block raises, every file it wrote is put back as it was and nothing is
        committed. Batches nest: the outermost one commits.
        """
        with self._transaction(message, trailers, summary=True) as change:
            yield change

    @contextlib.contextmanager
    def _transaction(self, message: str, trailers: dict[str, str] | None, *,
                     summary: bool = False) -> Iterator[Change]:  # fmt: skip
        """One commit's worth of changes: committed on success, rolled back on any error."""
        with self._lock.hold():
            if self._change is not None:  # part of an enclosing batch
                yield self._change
                if not summary:
                    self._change.lines.append(message)
                for key, value in (trailers or {}).items():
                    self._change.trailers.setdefault(key, value)
                return
            change = self._change = Change(message, trailers=dict(trailers or {}))
            try:
                yield change
                body = change.message
                if summary and change.lines:
                    body += "\n\n" + "\n".join(f"- {line}" for line in change.lines)
                change.sha = self.commit(change.paths, body, change.trailers)
            except BaseException:
                self._roll_back(change)
                raise
            finally:
                self._change = None

    def _roll_back(self, change: Change) -> None:
        for rel, original in change.originals.items():
            target = self.root / rel
            if original is None:
                target.unlink(missing_ok=True)
            else:
                _fs.atomic_write(target, original, durable=self.durable)
        self.mark_pending(change.originals)

    @staticmethod
    def _remember(change: Change, rel: str, original: bytes | None) -> None:
        change.paths.add(rel)
        change.originals.setdefault(rel, original)

    # -- whole files (memories) -------------------------------------------------------

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of a vault file (``rel`` is a vault path); MemoryNotFoundError if absent."""
        return self._existing(rel).read_bytes()

    def read(self, rel: str) -> Document:
        """Parse a vault file."""
        return load_bytes(self.read_bytes(rel), path=rel)

    def write(
        self,
        rel: str,
        content: Document | str,
        *,
        message: str,
        trailers: dict[str, str] | None = None,
        create: bool | None = None,
        expect: bytes | None = None,
    ) -> str | None:
        """Write a file atomically, mark it for the index and commit it.

        Args:
            rel: The vault path (already validated by the caller).
            content: A Document or the full text of the file.
            message: The commit message (or the batch line).
            trailers: Extra commit trailers.
            create: True: the file must not exist yet. False: it must exist. None: either.
            expect: The bytes the caller last read; if the file now differs, ConflictError.

        Returns:
            The commit id, or None inside a batch or when nothing changed.
        """
        data = check_content(dumps(content) if isinstance(content, Document) else content)
        with self._transaction(message, trailers) as change:
            target = self.root / rel
            original = target.read_bytes() if target.is_file() else None
            if create is True and (original is not None or target.exists()):
                raise AlreadyExistsError(f"{rel} already exists")
            if create is False and original is None:
                raise MemoryNotFoundError(f"no file at {rel}")
            if expect is not None and original != expect:
                raise ConflictError(f"{rel} changed since it was read; read it again and retry")
            self._remember(change, rel, original)
            _fs.atomic_write(target, data, durable=self.durable)
            self.mark_pending([rel])
        return change.sha

    def delete(self, rel: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Delete a vault file and commit the deletion."""
        with self._transaction(message, trailers) as change:
            target = self._existing(rel)
            self._remember(change, rel, target.read_bytes())
            target.unlink()
            if self.durable:
                _fs.fsync_dir(target.parent)
            self._prune_empty_dirs(target.parent)
            self.mark_pending([rel])
        return change.sha

    def move(self, src: str, dst: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Rename a vault file (never over an existing one) and commit the rename."""
        with self._transaction(message, trailers) as change:
            source = self._existing(src)
            target = self.root / dst
            if target.exists() or target.is_symlink():
                raise AlreadyExistsError(f"cannot move {src} to {dst}: {dst} already exists")
            target.parent.mkdir(parents=True, exist_ok=True)
            self._remember(change, src, source.read_bytes())
            self._remember(change, dst, None)
            os.link(source, target)  # link + unlink: never overwrites, unlike rename
            source.unlink()
            if self.durable:
                _fs.fsync_dir(target.parent)
                _fs.fsync_dir(source.parent)
            self._prune_empty_dirs(source.parent)
            self.mark_pending([src, dst])
        return change.sha

    def restore(self, rel: str, rev: str, *, trailers: dict[str, str] | None = None) -> str | None:
        """Put ``rel`` back as it was at ``rev``, as a new commit (works for deleted and renamed files)."""
        data = self.history.show_following_renames(rel, rev)
        short = self.history.resolve(rev)[:10]
        return self.write(rel, data.decode("utf-8"), message=f"restore: {label(rel)} to {short}",
                          trailers={"Memfs-Op": "restore", **(trailers or {})})  # fmt: skip

    def _existing(self, rel: str) -> Path:
        target = self.root / rel
        if target.is_symlink() or not target.is_file():
            raise MemoryNotFoundError(f"no file at {rel}")
        return target

    def _prune_empty_dirs(self, folder: Path) -> None:
        stop = self.root / MEMORIES_DIR
        while folder != stop and stop in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    # -- files written in place (transcripts) ---------------------------------------------

    def append(self, rel: str, data: bytes, *, expect: tuple[int, int] | None = None) -> int:
        """Append ``data`` to an existing file in one go; returns the file's new size.

        Not committed: the caller commits when its policy says (:meth:`commit`); until then
        the file is recorded as memfs's own uncommitted write.

        Args:
            rel: The vault path of the file.
            data: The bytes to add at its end.
            expect: ``(inode, size)`` the caller read the file at; if the file is another one
                now, or has another size, ConflictError and nothing is written.

        Raises:
            ConflictError: The file changed since the caller read it, or was replaced while
                the bytes were being written (they went to the replaced file: read again).
        """
        with self._lock.hold():
            target = self.root / rel
            fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
            try:
                before = os.fstat(fd)
                if expect is not None and (before.st_ino, before.st_size) != expect:
                    raise ConflictError(f"{rel} changed since it was read; read it again")
                try:
                    _fs.write_all(fd, data)
                    if self.durable:
                        os.fdatasync(fd)
                except BaseException:
                    with contextlib.suppress(OSError):  # leave no partial entry behind
                        os.ftruncate(fd, before.st_size)
                    raise
                size = before.st_size + len(data)
            finally:
                os.close(fd)
            try:
                now = os.stat(target)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_ino, now.st_dev) != (before.st_ino, before.st_dev):
                raise ConflictError(f"{rel} was replaced by another program while memfs appended to it")
            self._note_own([rel])
            self.mark_pending([rel])
            return size

    def truncate(self, rel: str, size: int) -> None:
        """Cut a file back to ``size`` bytes (the last entry of a transcript); not committed."""
        with self._lock.hold():
            fd = os.open(self.root / rel, os.O_RDWR | os.O_NOFOLLOW)
            try:
                os.ftruncate(fd, size)
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            self._note_own([rel])
            self.mark_pending([rel])

    def replace(self, rel: str, data: bytes) -> None:
        """Write a whole file atomically (a new or cleared transcript); not committed."""
        with self._lock.hold():
            _fs.atomic_write(self.root / rel, data, durable=self.durable)
            self._note_own([rel])
            self.mark_pending([rel])

    # -- commits ----------------------------------------------------------------------

    def commit(self, paths: Iterable[str], message: str, trailers: dict[str, str] | None = None,
               *, author: Identity | None = None) -> str | None:  # fmt: skip
        """Commit ``paths`` as they are on disk now; None if nothing differs from the last commit."""
        paths = sorted(set(paths))
        with self._lock.hold():
            sha = self.history.commit(paths, message, author=author or self.author,
                                      committer=self.author, trailers=trailers)  # fmt: skip
            self._forget_own(paths)
            return sha

    def own_uncommitted(self) -> dict[str, Stat]:
        """The files memfs changed and has not committed yet, with their stat after memfs's write."""
        try:
            raw = json.loads(self._own_file.read_text("utf-8"))
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return {}
        if not isinstance(raw, dict):
            return {}
        return {k: (v[0], v[1], v[2]) for k, v in raw.items()
                if isinstance(k, str) and isinstance(v, list) and len(v) == 3
                and all(isinstance(x, int) for x in v)}  # fmt: skip

    def _note_own(self, paths: Iterable[str]) -> None:
        own = self.own_uncommitted()
        for rel in paths:
            stat = _stat(self.root / rel)
            if stat is not None:
                own[rel] = stat
        self._save_own(own)

    def _forget_own(self, paths: Iterable[str]) -> None:
        own = self.own_uncommitted()
        if own and any(own.pop(rel, None) is not None for rel in list(paths)):
            self._save_own(own)

    def _save_own(self, own: dict[str, Stat]) -> None:
        # Derived state: losing it in a crash only means a pending write may be taken for a
        # person's edit, so it is written without fsync.
        tmp = self._own_file.with_name("own.new")
        self.state_dir.mkdir(exist_ok=True)  # .memfs/ may have been deleted: it is made again
        tmp.write_text(json.dumps(own), "utf-8")
        os.replace(tmp, self._own_file)

    def commit_outside_edits(self, paths: Iterable[str]) -> str | None:
        """Commit those of ``paths`` that differ from the last commit, as the person's edit.

        Files memfs itself changed and has not committed yet (a session's pending messages)
        are not a person's edit and are left for their session to commit, unless the file
        changed again since memfs wrote it. Files over the indexing size limit are left
        uncommitted (a stray 50 MB paste should not enter the history); ``doctor`` reports them.
        """
        with self._lock.hold():
            candidates = sorted(set(paths))
            changed = self.history.changed(candidates) if candidates else []
            own = self.own_uncommitted()
            changed = [p for p in changed if p not in own or own[p] != _stat(self.root / p)]
            too_big = [p for p in changed if _size(self.root / p) > MAX_INDEXED_BYTES]
            for rel in too_big:
                log.warning("not committing %s: larger than %d bytes", rel, MAX_INDEXED_BYTES)
            changed = [p for p in changed if p not in too_big]
            if not changed:
                return None
            if len(changed) == 1:
                message = f"edit: {changed[0]} (changed outside memfs)"
            else:
                message = f"edit: {len(changed)} files changed outside memfs"
            return self.commit(changed, message, {"Memfs-Op": "reconcile"}, author=self.person)

    # -- the index --------------------------------------------------------------------

    def mark_pending(self, paths: Iterable[str]) -> None:
        """Note vault paths whose index entries must be brought up to date before the next search."""
        self._append_paths(self._pending_file, paths)

    def _append_paths(self, file: Path, paths: Iterable[str]) -> None:
        lines = "".join(f"{p}\n" for p in paths).encode("utf-8")
        try:
            fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except FileNotFoundError:  # .memfs/ was deleted: it is derived state, made again
            self.state_dir.mkdir(exist_ok=True)
            fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
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
        try:
            raw = self._found_file.read_bytes()
        except FileNotFoundError:
            return []
        found = self._listed_paths(raw, self._found_file)
        with contextlib.suppress(FileNotFoundError), open(self._found_file, "r+b") as handle:
            handle.truncate(0)
        return found

    def flush_index(self) -> SyncReport:
        """Index every file written since the last search (by any process)."""
        try:
            if os.stat(self._pending_file).st_size == 0:
                return SyncReport()
        except FileNotFoundError:
            return SyncReport()
        with self._lock.hold():
            try:
                raw = self._pending_file.read_bytes()
            except FileNotFoundError:
                return SyncReport()
            report = self._sync_index(self._listed_paths(raw, self._pending_file))
            with contextlib.suppress(FileNotFoundError), open(self._pending_file, "r+b") as handle:
                handle.truncate(0)
            return report

    def _listed_paths(self, raw: bytes, file: Path) -> list[str]:
        """The vault paths listed in ``file`` (``.memfs/pending``, ``found``), each checked like any outside path.

        The file sits in the vault folder, so anyone may have written it: a line that is not
        UTF-8, not a clean relative path, or not a Markdown file under ``memories/`` or
        ``sessions/`` is ignored with a warning (the change check finds real changes anyway).
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
                log.warning("ignoring a line of %s that is not UTF-8: %r", file, line[:100])
                continue
            except PathError as exc:
                log.warning("ignoring a line of %s: %s", file, exc)
                continue
            found.add(rel)
        return sorted(found)

    def _sync_index(self, paths: Iterable[str] | None = None, progress: Progress | None = None) -> SyncReport:
        try:
            return self.index.sync(paths, progress=progress)
        except Exception as exc:  # the index is derived: rebuild it rather than fail a write
            if isinstance(exc, (KeyboardInterrupt, GitLockError)):
                raise
            log.warning("search index failed to update (%s); rebuilding it from the files", exc)
            self.index.clear()
            return self.index.sync(None, progress=progress)

    def _resync(self, paths: list[str]) -> None:
        """Index ``paths`` again now (files a search found changed since they were indexed)."""
        with self._lock.hold():
            self._sync_index(paths)
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
            with self._lock.hold():
                if not self.index.refresh():  # another process may have rebuilt it meanwhile
                    log.warning("search index at %s is unusable (%s); rebuilding it from the files",
                                self.index.folder, self.index.problem)  # fmt: skip
                    self.index.clear()
                    self._sync_index(None)
        self.flush_index()
        delay = 0.0 if full else self._freshness
        if delay is None:
            return
        changed = self.index.changes.step(delay)
        if changed is None:  # nothing looked at yet (opened without reconcile, or a new index)
            with self._lock.hold():
                if self.index.changes.step(delay) is None:
                    self._sync_index(None)
        elif changed and (outdated := self.index.outdated(changed)):  # not memfs's own writes, indexed already
            self._resync(outdated)

    def reconcile(self, paths: Iterable[str] | None = None, *, commit: bool = True,
                  progress: Progress | None = None) -> SyncReport:  # fmt: skip
        """Bring the index up to date with the files (all, or ``paths``), reading only changed ones.

        Files that changed on disk outside memfs (a person's editor, ``cp``, a crash between
        write and commit) are committed with the person's identity unless ``commit`` is False.
        """
        with self._lock.hold():
            if paths is None:
                _fs.sweep_temp_files(self.root / MEMORIES_DIR)
            report = self._sync_index(None if paths is None else sorted(set(paths)), progress)
            if paths is None:
                with contextlib.suppress(FileNotFoundError):
                    self._pending_file.write_bytes(b"")
            if commit:
                candidates = report.added + report.updated + report.removed
                if paths is None:  # and the edits searches indexed already
                    candidates += self.take_found_edits()
                self.commit_outside_edits(candidates)
            return report

    def reindex(self, *, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Update the index from the files; ``full=True`` rebuilds it from scratch."""
        with self._lock.hold():
            if full:
                self.index.clear()
            return self.reconcile(progress=progress)

    # -- reading through the index ------------------------------------------------------

    def search(self, query: str, **options: Any) -> list[Hit]:
        """Search memories as the files are now (see :meth:`catch_up` and :meth:`SearchIndex.search`)."""
        check_count("k", options.get("k", 10))
        self.catch_up()
        try:
            return self.index.search(query, resync=self._resync, **options)
        except SearchIndexError as exc:
            log.warning("%s; rebuilding the search index from the files", exc)
            with self._lock.hold():
                self.index.clear()
                self._sync_index(None)
            return self.index.search(query, resync=self._resync, **options)

    def search_messages(self, query: str, *, k: int = 10, session: str | None = None) -> list[MessageHit]:
        """Search the messages of every session (or of one transcript, by vault path)."""
        check_count("k", k)
        self.catch_up()
        return self.index.search_messages(query, k=k, session=session, resync=self._resync)

    def path_of(self, memory_id: str) -> str | None:
        """The vault path of the memory with this id, or None."""
        self.catch_up()
        for attempt in range(2):
            rel = self.index.path_of(memory_id, resync=self._resync)
            if rel is not None:
                try:
                    if str(self.read(rel).metadata.get("id")) == memory_id:
                        return rel
                except (MemoryNotFoundError, DocumentError):
                    pass
            if attempt == 0:
                self.catch_up(full=True)  # the id may have moved to a file changed by hand
        return None

    def problems(self) -> list[Problem]:
        """Files the index skipped as malformed."""
        self.catch_up()
        return self.index.problems()

    def files(self, prefix: str = "") -> list[str]:
        """The vault paths of the Markdown files under the content folders (links and hidden names skipped)."""
        return sorted(rel for rel, _ in self.index.scan() if rel.startswith(prefix))


def engine_of(owner: Any) -> WriteEngine:
    """The write engine behind a Vault (or the engine itself)."""
    engine = getattr(owner, "engine", owner)
    if not isinstance(engine, WriteEngine):
        raise InvalidArgumentError(f"expected a memfs Vault, got {type(owner).__name__}")
    return engine


def check_count(name: str, value: Any) -> int:
    """A non-negative integer argument such as ``k``, or InvalidArgumentError."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgumentError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def check_content(text: Any) -> bytes:
    """The UTF-8 bytes of text memfs will store as a file, or ContentError saying why not."""
    if not isinstance(text, str):
        raise ContentError(f"content must be text (str), got {type(text).__name__}")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ContentError("content is not valid Unicode text (it contains a lone surrogate)") from exc
    if len(data) > MAX_CONTENT_BYTES:
        raise ContentError(f"content is {len(data)} bytes; the limit is {MAX_CONTENT_BYTES} bytes")
    if "\x00" in text:
        raise ContentError("content contains NUL bytes; memories are Markdown text, not binary data")
    try:
        load_bytes(data)
    except DocumentError as exc:
        raise ContentError(f"content would be a malformed memory file: {exc.reason}") from exc
    return data


def _stat(path: Path) -> Stat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0

