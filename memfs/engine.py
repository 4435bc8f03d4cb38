"""The write engine: every change to a vault's files, with its index and its git history.

Everything that changes a vault goes through one :class:`WriteEngine`: memory files (written
whole, atomically, one commit per change or per ``batch()``) and transcripts (appended to,
truncated, replaced, committed when their session's policy says). It holds the vault lock
(threads and processes) for the whole of a change, so no one sees a file memfs wrote before
git has it, and it keeps two records under ``.memfs/``:

- ``pending``: the vault paths written since the index last caught up. The next search in any
  process indexes exactly those, so a write never pays for a Whoosh commit.
- ``own``: the transcripts memfs itself wrote lately, with the file's stat after memfs's last
  write and whether that write is still uncommitted (a session whose commit policy is not "every
  turn"). A person's edit is a file that differs from git *and* from this record; memfs's own
  pending writes are never committed under a person's name. The stat also tells a session that a
  shorter file is memfs's own doing (another session object popped or cleared), and where memfs's
  last complete write ended, so that an append cut short by a killed writer is recognised and cut
  off (into ``.memfs/salvage/``) before the next one.

The :class:`~memfs.vault.Vault` front door, the memory store, sessions, the watcher and the
doctor all sit on this engine and use only its public methods.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import gc
import hashlib
import json
import logging
import math
import os
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _fs
from .documents import Document, dumps, load_bytes, timestamp
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ConflictMarkersError,
    ContentError,
    DocumentError,
    GitLockError,
    InvalidArgumentError,
    LinkError,
    MemoryNotFoundError,
    PathError,
    SearchIndexError,
)
from .history import DEFAULT_PERSON, GitHistory, Identity, has_conflict_markers
from .index import MAX_INDEXED_BYTES, Hit, MessageHit, Problem, Progress, SearchIndex, SyncReport
from .layout import CONTENT_DIRS, MEMORIES_DIR, STATE_DIR, VAULT_MARKER, is_memory, is_transcript, label
from .paths import clean_relpath
from .transcript import classify_tail, partial_heading

log = logging.getLogger(__name__)

MAX_CONTENT_BYTES = 1024 * 1024
DEFAULT_FRESHNESS = 2.0  # seconds: a file changed by hand is found by searches this much later at most
_GITIGNORE_LINES = (".memfs/", _fs.TEMP_PREFIX + "*")
_MARKER_TEXT = b"memfs vault: this file keeps memories/ in git, so a clone of a vault with no memories yet opens\n"

Stat = tuple[int, int, int]  # (inode, size, mtime_ns): how memfs recognises a file it wrote
OWN_KEPT = 64  # committed transcripts whose last write the own record keeps (besides every uncommitted one)


@dataclass
class _Rewind:
    """How to put a transcript back as it was when a :meth:`WriteEngine.rewinding` block began."""

    stat: Stat | None  # the file as memfs last left it inside the block (None: no file)
    existed: bool
    began: Stat | None
    low: int  # the bytes [0, low) are still as they were
    saved: bytes  # the bytes [low, size) as they were
    own: list[int] | None  # memfs's record of the file when the block began


@dataclass
class Change:
    """One commit's worth of changes in progress (a single write, or a whole ``batch()``)."""

    message: str
    paths: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    originals: dict[str, bytes | None] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)  # the permission bits of each original file
    contents: dict[str, bytes | None] = field(default_factory=dict)
    sha: str | None = None


class WriteEngine:
    """The lock, the transactions, the files, the pending queue and the commits of one vault.

    Args:
        root: The vault folder (it exists).
        author: Who writes through this engine (an agent by default).
        person: Who edits files by hand; None: the git identity configured when each of their
            edits is committed (see :attr:`person`).
        lock_timeout: Seconds to wait for the vault lock before raising LockTimeoutError.
        durable: fsync files and folders on every write.
        setup: Complete the vault's layout (``memories/`` and its marker, ``.gitignore``) and
            commit it; False leaves the folder and its history exactly as they are.
        freshness: See :attr:`freshness`.
    """

    def __init__(self, root: Path, *, author: Identity, person: Identity | None, lock_timeout: float,
                 durable: bool, setup: bool = True, freshness: float | None = DEFAULT_FRESHNESS) -> None:  # fmt: skip
        self.root = root
        self.author = author
        self._person = person
        self.durable = durable
        self.state_dir = root / STATE_DIR
        self.state_dir.mkdir(exist_ok=True)
        self._lock = _fs.VaultLock(self.state_dir / "lock", timeout=lock_timeout)
        self._pending_file = self.state_dir / "pending"
        self._found_file = self.state_dir / "found"  # edits by hand a search indexed, for the next commit
        self._own_file = self.state_dir / "own"
        self._journal = self.state_dir / "journal"
        self._held_file = self.state_dir / "held"
        self._seen_file = self.state_dir / "seen-edits"
        self.salvage_dir = self.state_dir / "salvage"
        self._change: Change | None = None
        self._rewinds: dict[str, _Rewind] = {}
        self._freshness: float | None = None
        with self._lock.hold():
            self.history = GitHistory(root, self.state_dir, lock_timeout=lock_timeout,
                                      holds_vault_lock=lambda: self._lock.held)  # fmt: skip
            self.recover()
            if setup:
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
            log.warning("could not update the search index on close: %s", str(exc))  # no traceback kept alive
        self.index.close()
        _close_leaked_files()
        self.history.close()

    @property
    def person(self) -> Identity:
        """Whose name a person's edits are committed under.

        The identity given at open; otherwise the ``user.name``/``user.email`` git has configured
        (repository, then global) at the moment of the commit, else ``person <person@memfs.invalid>``.
        """
        return self._person or self.history.configured_identity() or DEFAULT_PERSON

    def _ensure_layout(self) -> None:
        (self.root / MEMORIES_DIR).mkdir(exist_ok=True)
        busy = self.history.operation_in_progress()
        if busy is not None:  # a person's merge or rebase: change nothing until it is over
            return
        changed: dict[str, bytes] = {}
        marker = self.root / VAULT_MARKER
        if not marker.is_file():  # git keeps no empty folder: without it, a clone has no memories/
            _fs.atomic_write(marker, _MARKER_TEXT, durable=self.durable)
            changed[VAULT_MARKER] = _MARKER_TEXT
        ignore = self.root / ".gitignore"
        text = ignore.read_text("utf-8") if ignore.exists() else ""
        missing = [line for line in _GITIGNORE_LINES if line not in text.splitlines()]
        if missing:
            sep = "" if not text or text.endswith("\n") else "\n"
            text += sep + "".join(f"{line}\n" for line in missing)
            _fs.atomic_write(ignore, text.encode(), durable=self.durable)
            changed[".gitignore"] = text.encode()
        if changed:
            self.history.commit(changed, "vault: init", author=self.author, trailers={"Memfs-Op": "init"},
                                durable=self.durable)  # fmt: skip

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
        """One commit's worth of changes: committed on success, rolled back on any error.

        Before a file is first changed, its old bytes go into ``.memfs/journal``; a process
        killed mid-transaction leaves the journal, and the next transaction (in any process)
        rolls the files back, or forward if the commit had landed (:meth:`recover`).
        """
        with self._lock.hold():
            if self._change is not None:  # part of an enclosing batch
                yield self._change
                if not summary:
                    self._change.lines.append(message)
                for key, value in (trailers or {}).items():
                    self._change.trailers.setdefault(key, value)
                return
            self.history.check_can_commit()  # refuse before touching a file, not at the commit
            self.recover()
            change = self._change = Change(message, trailers=dict(trailers or {}))
            try:
                yield change
                body = change.message
                if summary and change.lines:
                    body += "\n\n" + "\n".join(f"- {line}" for line in change.lines)
                change.sha = self.commit(change.paths, body, change.trailers, contents=change.contents)
            except BaseException:
                self._roll_back(change)
                raise
            else:
                self._end_journal()
            finally:
                self._change = None

    def _roll_back(self, change: Change) -> None:
        """Put back the files a failed transaction changed, created ones first (frees room on a full disk).

        Only files that still hold what memfs wrote are put back: a save another program made
        since (or one memfs's compare-and-swap gave way to) is never overwritten.
        """
        for rel, wrote in sorted(change.contents.items(), key=lambda item: change.originals[item[0]] is not None):
            if self._holds(rel, wrote):
                _put_back(self.root, rel, change.originals[rel], change.modes.get(rel), durable=self.durable)
        _fs.sweep_temp_files(self.root, folders=self._plain_folders(change.originals))
        self._end_journal()
        with contextlib.suppress(OSError):  # the write already marked them; a full disk may refuse this
            self.mark_pending(change.contents)

    def _plain_folders(self, paths: Iterable[str]) -> set[Path]:
        """The folders of ``paths`` reached through no link (where temp files may be swept)."""
        folders = {_fs.split(rel)[0] for rel in paths}
        return {self.root / f for f in folders if not _fs.linked(self.root, f)}

    def _remember(self, change: Change, rel: str, original: bytes | None, new: bytes | None,
                  mode: int | None = None) -> None:  # fmt: skip
        """Before a file changes: its old bytes and mode and a hash of the new ones, in memory and in the journal."""
        change.paths.add(rel)
        change.originals.setdefault(rel, original)
        if mode is not None and rel not in change.modes and change.originals[rel] is original:
            change.modes[rel] = mode
        if not self._journal.exists():
            self._append_journal({"base": self.history.head()})
        encoded = None if original is None else base64.b64encode(original).decode()
        record: dict[str, Any] = {"path": rel, "original": encoded, "new": _digest(new)}
        if mode is not None and original is not None:
            record["mode"] = mode
        self._append_journal(record)

    def _append_journal(self, record: dict[str, Any]) -> None:
        fd = os.open(self._journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _fs.write_all(fd, (json.dumps(record) + "\n").encode())
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _as_committed(self, rel: str) -> bytes | None:
        data = self._regular(rel)
        return None if data is None else self.history.committed_form(data)

    def _regular(self, rel: str) -> bytes | None:
        """The bytes of the vault file ``rel`` through the path gate; None if there is no regular file.

        Raises:
            LinkError: A folder on the way, or the file, is a symbolic link.
        """
        found = _fs.read_file(self.root, rel)
        return None if found is None else found[0]

    def _holds(self, rel: str, wrote: bytes | None) -> bool:
        """True when the vault file ``rel`` still holds what memfs wrote (None: no file), through the gate.

        A link there now is never memfs's: it is left alone.
        """
        try:
            return self._regular(rel) == wrote
        except LinkError:
            return False

    def _end_journal(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._journal)

    def recover(self) -> None:
        """Finish a transaction a killed process left half done: forward if it committed, else back.

        Runs when the engine opens and before every transaction; the journal (which holds old bytes)
        is gone afterwards.
        """
        try:
            lines = self._journal.read_bytes().splitlines()
        except FileNotFoundError:
            return
        records: list[Any] = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                break  # the record being written when the process died: its file was not touched yet
        base = records[0].get("base") if records and isinstance(records[0], dict) else None
        files: dict[str, tuple[bytes | None, str | None]] = {}
        modes: dict[str, int] = {}
        for record in records[1:]:
            if isinstance(record, dict) and isinstance(record.get("path"), str) and _inside(self.root, record["path"]):
                original = record.get("original")
                old = base64.b64decode(original) if isinstance(original, str) else None
                if record["path"] not in files and isinstance(record.get("mode"), int):
                    modes[record["path"]] = record["mode"] & 0o7777
                files.setdefault(record["path"], (old, None))
                files[record["path"]] = (files[record["path"]][0], record.get("new"))
        head = self.history.head()
        if head != base and all(self._as_committed(rel) == self.history.bytes_at(rel, head) for rel in files):
            log.warning("a change interrupted after its commit (%s) was completed", head)
        else:
            log.warning("rolling back a change interrupted before its commit (%d files)", len(files))
            for rel, (original, new) in sorted(files.items(), key=lambda item: item[1][0] is not None):
                try:
                    landed = _digest(self._regular(rel)) == new
                except LinkError:  # a link there now is not memfs's bytes
                    landed = False
                if landed:  # memfs's bytes landed: take them back
                    _put_back(self.root, rel, original, modes.get(rel), durable=self.durable)
            self.mark_pending(files)
        _fs.sweep_temp_files(self.root, folders=self._plain_folders(files))
        self._end_journal()

    # -- whole files (memories) -------------------------------------------------------

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of a vault file (``rel`` is a vault path); MemoryNotFoundError if absent.

        Raises:
            LinkError: A folder on the way, or the file, is a symbolic link (never followed).
        """
        data = self._regular(rel)
        if data is None:
            raise MemoryNotFoundError(f"no file at {rel}")
        return data

    def folder(self, rel: str) -> contextlib.AbstractContextManager[int]:
        """The vault folder ``rel`` open for a ``with`` block, through the path gate (an fd for ``os.scandir``).

        Raises:
            LinkError: A folder on the way is a symbolic link.
            FileNotFoundError: There is no such folder.
        """
        return _fs.folder(self.root, rel)

    def is_file(self, rel: str) -> bool:
        """True when a regular file is at the vault path ``rel``.

        Raises:
            LinkError: A folder on the way, or the file, is a symbolic link.
        """
        return _fs.is_file(self.root, rel)

    def open_file(self, rel: str, flags: int = os.O_RDONLY) -> int:
        """``os.open`` of a vault file through the path gate (no link on the way); the caller closes the fd.

        Raises:
            LinkError: A folder on the way, or the file, is a symbolic link.
            FileNotFoundError: There is no such file.
        """
        return _fs.open_file(self.root, rel, flags)

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
        """Write a file atomically, mark it for the index and commit exactly the bytes written.

        The replace is a compare-and-swap with whatever else writes the file (a person's editor):
        the new file is swapped in atomically and the file it replaced is checked; if someone
        saved in between, the swap is undone, ConflictError is raised and their save stays.

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
            parent, name = _fs.split(rel)
            with self._folder(parent, create=create is not False, file=rel) as dfd:  # every step names the file here
                found = _fs.read_at(dfd, name, rel=rel)
                original, mode = found if found is not None else (None, None)
                if create is True and (original is not None or _fs.exists_at(dfd, name)):
                    raise AlreadyExistsError(f"{rel} already exists")
                if create is False and original is None:
                    raise MemoryNotFoundError(f"no file at {rel}")
                if expect is not None and original != expect:
                    raise ConflictError(f"{rel} changed since it was read; read it again and retry")
                _refuse_conflict_markers(rel, original)
                self._remember(change, rel, original, data, mode)
                self._swap_in(change, dfd, rel, data, original)
            self.mark_pending([rel])
        return change.sha

    @contextlib.contextmanager
    def _folder(self, rel: str, *, file: str, create: bool = False) -> Iterator[int]:
        """The open vault folder ``rel`` of ``file``, through the path gate (a missing one: MemoryNotFoundError)."""
        try:
            dfd = _fs.open_folder(self.root, rel, create=create)
        except (FileNotFoundError, NotADirectoryError):
            raise MemoryNotFoundError(f"no file at {file}") from None
        try:
            yield dfd
        finally:
            os.close(dfd)

    def _swap_in(self, change: Change, dfd: int, rel: str, data: bytes, original: bytes | None) -> None:
        """Put ``data`` at ``rel`` (in the open folder ``dfd``) if the file is still ``original`` (None: no file)."""
        name = _fs.split(rel)[1]
        tmp = _fs.write_temp_at(dfd, data, durable=self.durable)
        try:
            if original is None:
                try:
                    _fs.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # a create never overwrites
                except FileExistsError:
                    raise ConflictError(f"{rel} was created by someone else while memfs was writing it") from None
            elif _fs.exchange(tmp, name, dir_fd=dfd):
                replaced = _fs.read_at(dfd, tmp)
                if replaced is None or replaced[0] != original:  # a save landed between memfs's read and its replace
                    _fs.exchange(tmp, name, dir_fd=dfd)  # theirs back in place
                    stray = _fs.read_at(dfd, tmp)
                    if stray is not None and stray[0] != data:  # yet another save: never drop it
                        self._keep_conflict_copy(dfd, tmp, rel)
                    raise ConflictError(f"{rel} was saved by another program while memfs was writing it; "
                                        "read it again and retry")  # fmt: skip
            else:
                _fs.checkpoint("replace")
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            change.contents[rel] = data  # the file is memfs's now: a failure from here on puts it back
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
        if self.durable:
            _fs.fsync_fd(dfd)

    def _keep_conflict_copy(self, dfd: int, source: str, rel: str) -> None:
        stem, dot, suffix = rel.rpartition(".")
        copy = f"{stem}.conflict-{timestamp().replace(':', '')}-{os.getpid()}{dot}{suffix}"
        os.rename(source, _fs.split(copy)[1], src_dir_fd=dfd, dst_dir_fd=dfd)
        log.warning("kept a save that raced memfs's write of %s as %s", rel, _fs.split(copy)[1])
        self.mark_pending([copy])

    def delete(self, rel: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Delete a vault file and commit the deletion (a save that races it is kept, not deleted)."""
        with self._transaction(message, trailers) as change:
            parent, name = _fs.split(rel)
            with self._folder(parent, file=rel) as dfd:
                found = _fs.read_at(dfd, name, rel=rel)
                if found is None:
                    raise MemoryNotFoundError(f"no file at {rel}")
                original, mode = found
                _refuse_conflict_markers(rel, original)
                self._remember(change, rel, original, None, mode)
                aside = _fs.TEMP_PREFIX + name
                _fs.checkpoint("rename")
                os.rename(name, aside, src_dir_fd=dfd, dst_dir_fd=dfd)
                moved = _fs.read_at(dfd, aside)
                if moved is None or moved[0] != original:  # saved between the read and the rename: keep it
                    os.rename(aside, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    raise ConflictError(f"{rel} was saved by another program while memfs was deleting it")
                change.contents[rel] = None
                _fs.unlink(aside, dir_fd=dfd)
                if self.durable:
                    _fs.fsync_fd(dfd)
            self._prune_empty_dirs(parent)
            self.mark_pending([rel])
        return change.sha

    def move(self, src: str, dst: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Rename a vault file (never over an existing one) and commit the rename."""
        with self._transaction(message, trailers) as change:
            (src_dir, src_name), (dst_dir, dst_name) = _fs.split(src), _fs.split(dst)
            with self._folder(src_dir, file=src) as sfd:
                found = _fs.read_at(sfd, src_name, rel=src)
                if found is None:
                    raise MemoryNotFoundError(f"no file at {src}")
                data, mode = found
                if _fs.exists(self.root, dst):
                    raise AlreadyExistsError(f"cannot move {src} to {dst}: {dst} already exists")
                _refuse_conflict_markers(src, data)
                with self._folder(dst_dir, file=dst, create=True) as dfd:
                    self._remember(change, src, data, None, mode)
                    self._remember(change, dst, None, data)
                    _fs.link(src_name, dst_name, src_dir_fd=sfd, dst_dir_fd=dfd)  # link + unlink: never overwrites
                    change.contents[dst] = data
                    _fs.unlink(src_name, dir_fd=sfd)
                    change.contents[src] = None
                    if self.durable:
                        _fs.fsync_fd(dfd)
                        _fs.fsync_fd(sfd)
            self._prune_empty_dirs(src_dir)
            self.mark_pending([src, dst])
        return change.sha

    def restore(self, rel: str, rev: str, *, trailers: dict[str, str] | None = None) -> str | None:
        """Put ``rel`` back as it was at ``rev``, as a new commit (works for deleted and renamed files)."""
        data = self.history.show_following_renames(rel, rev)
        short = self.history.resolve(rev)[:10]
        self.commit_edits_first([rel])
        return self.write(rel, data.decode("utf-8"), message=f"restore: {label(rel)} to {short}",
                          trailers={"Memfs-Op": "restore", **(trailers or {})})  # fmt: skip

    def _prune_empty_dirs(self, folder: str) -> None:
        """Remove ``folder`` (a vault path under ``memories/``) and its parents while they are empty, via the gate."""
        while folder.startswith(MEMORIES_DIR + "/"):
            parent, name = _fs.split(folder)
            try:
                with _fs.folder(self.root, parent) as dfd:
                    os.rmdir(name, dir_fd=dfd)  # a link there is not a folder: rmdir refuses it
            except (OSError, LinkError):
                return
            folder = parent

    # -- files written in place (transcripts) ---------------------------------------------

    def append(self, rel: str, data: bytes, *, expect: tuple[int, int] | None = None) -> int:
        """Append ``data`` to an existing file, all or nothing; returns the file's new size.

        Not committed: the caller commits when its policy says (:meth:`commit`); until then
        the file is recorded as memfs's own uncommitted write. If anything fails (a short write
        then ``EFBIG``/``ENOSPC``, an I/O error, the record of the write), the file is cut back
        to where it was and the error raised: no part of ``data`` stays.

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
            self._rewind_check(rel)
            fd = _fs.open_file(self.root, rel, os.O_RDWR | os.O_APPEND)
            try:
                before = os.fstat(fd)
                if expect is not None and (before.st_ino, before.st_size) != expect:
                    raise ConflictError(f"{rel} changed since it was read; read it again")
                try:
                    _fs.write_all(fd, data)
                    if self.durable:
                        os.fdatasync(fd)
                    now = _stat(target)
                    if now is None or now[0] != before.st_ino:
                        raise ConflictError(f"{rel} was replaced by another program while memfs appended to it")
                    self.mark_pending([rel])
                    self._note_own([rel])
                except BaseException:
                    with contextlib.suppress(OSError):  # leave no partial entry behind
                        os.ftruncate(fd, before.st_size)
                        self._restamp_own(rel, (before.st_ino, before.st_size, before.st_mtime_ns))
                    raise
                finally:
                    self._rewind_wrote(rel, before.st_ino)
            finally:
                os.close(fd)
            return before.st_size + len(data)

    def truncate(self, rel: str, size: int) -> None:
        """Cut a file back to ``size`` bytes (the last entry of a transcript); not committed."""
        with self._lock.hold():
            self._rewind_check(rel)
            fd = _fs.open_file(self.root, rel, os.O_RDWR)
            try:
                self._rewind_cut(rel, fd, size)
                os.ftruncate(fd, size)
                if self.durable:
                    os.fsync(fd)
                self._rewind_wrote(rel, os.fstat(fd).st_ino)
            finally:
                os.close(fd)
            self._note_own([rel])
            self.mark_pending([rel])

    def replace(self, rel: str, data: bytes) -> None:
        """Write a whole file atomically (a new transcript); not committed."""
        with self._lock.hold():
            self._rewind_check(rel)
            target = self.root / rel
            if rel in self._rewinds and self._rewinds[rel].existed:
                fd = _fs.open_file(self.root, rel, os.O_RDONLY)
                try:
                    self._rewind_cut(rel, fd, 0)
                finally:
                    os.close(fd)
            _fs.write_file(self.root, rel, data, durable=self.durable)
            now = _stat(target)
            if now is not None:
                self._rewind_wrote(rel, now[0])
            self._note_own([rel])
            self.mark_pending([rel])

    def repair_tail(self, rel: str) -> Path | None:
        """Cut an interrupted append off the end of a transcript; the bytes go to ``.memfs/salvage/``.

        A writer killed in the middle of an append (or a crash, or a short write that could not be
        undone) leaves the start of an entry after the last complete one. It is recognised from
        the record of memfs's last write (same file; what follows the end of that write is whole
        entries and then one cut short), or without a record from a heading line cut short at the
        very end. Anything else after memfs's last write is a person's edit and stays: it is what
        the agent reads next. Whole entries after it (a writer killed after writing, before
        recording) are memfs's and are recorded as such.

        Returns:
            The salvage file holding the bytes cut off, or None if the tail was whole.
        """
        with self._lock.hold():
            try:
                fd = _fs.open_file(self.root, rel, os.O_RDWR)
            except (FileNotFoundError, NotADirectoryError, LinkError):
                return None
            try:
                st = os.fstat(fd)
                now = (st.st_ino, st.st_size, st.st_mtime_ns)
                record = self._own_record().get(rel)
                if record is not None and tuple(record[:3]) == now:
                    return None  # as memfs left it
                cut: int | None = None
                if record is not None and record[0] == st.st_ino and 0 < record[1] < st.st_size:
                    kind = classify_tail(os.pread(fd, st.st_size - record[1], record[1]))
                    if kind == "complete":
                        self._note_own([rel])
                        return None
                    if kind == "torn":
                        cut = record[1]
                if cut is None:
                    back = min(st.st_size, 16_384)
                    at = partial_heading(os.pread(fd, back, st.st_size - back))
                    if at is None:
                        return None
                    cut = st.st_size - back + at
                salvage = self._salvage(rel, os.pread(fd, st.st_size - cut, cut), cut)
                os.ftruncate(fd, cut)
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            log.warning("%s: cut off %d bytes of an interrupted append after byte %d (kept in %s)",
                        rel, st.st_size - cut, cut, salvage)  # fmt: skip
            if record is not None and cut == record[1]:
                self._restamp_own(rel, (record[0], record[1], record[2]))  # again what memfs last wrote
            if rel in self._rewinds:
                self._rewinds[rel] = self._rewind_base(rel)
            self.mark_pending([rel])
            return salvage

    def _salvage(self, rel: str, data: bytes, offset: int) -> Path:
        self.salvage_dir.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        base = f"{rel.replace('/', '__')}.{stamp}.{offset}"
        path = self.salvage_dir / f"{base}.torn"
        counter = 1
        while path.exists():
            counter += 1
            path = self.salvage_dir / f"{base}-{counter}.torn"
        _fs.atomic_write(path, data, durable=self.durable)
        return path

    def salvage_files(self) -> list[Path]:
        """The files holding bytes cut off transcripts after interrupted appends, oldest first."""
        try:
            return sorted(self.salvage_dir.iterdir(), key=lambda p: (p.stat().st_mtime_ns, p.name))
        except FileNotFoundError:
            return []

    @contextlib.contextmanager
    def rewinding(self, rel: str) -> Iterator[None]:
        """Put transcript ``rel`` back as it was if the block raises: its bytes and memfs's record of it.

        A session's append, pop or clear runs in one with the commit that follows, so a failed
        commit leaves the file as before and a retry duplicates nothing. Blocks nest (the outermost
        one decides). If something other than memfs changed the file inside the block, the rewind
        goes back only as far as that change, which is kept.
        """
        with self._lock.hold():
            if rel in self._rewinds:
                yield
                return
            self._rewinds[rel] = self._rewind_base(rel)
            try:
                yield
            except BaseException:
                self._rewind(rel, self._rewinds.pop(rel))
                raise
            finally:
                self._rewinds.pop(rel, None)

    def _rewind_base(self, rel: str) -> _Rewind:
        stat = _stat(self.root / rel)
        size = stat[1] if stat is not None else 0
        return _Rewind(stat, stat is not None, stat, size, b"", self._own_record().get(rel))

    def _rewind_check(self, rel: str) -> None:
        """Before memfs writes ``rel`` in a rewind block: start from a change someone else made."""
        rewind = self._rewinds.get(rel)
        if rewind is not None and _stat(self.root / rel) != rewind.stat:
            log.info("%s changed outside memfs during a write; a rewind goes back only to that change", rel)
            self._rewinds[rel] = self._rewind_base(rel)

    def _rewind_cut(self, rel: str, fd: int, size: int) -> None:
        rewind = self._rewinds.get(rel)
        if rewind is not None and size < rewind.low:
            rewind.saved = os.pread(fd, rewind.low - size, size) + rewind.saved
            rewind.low = size

    def _rewind_wrote(self, rel: str, inode: int) -> None:
        rewind = self._rewinds.get(rel)
        if rewind is not None:
            now = _stat(self.root / rel)
            if now is not None and now[0] == inode:
                rewind.stat = now
            else:  # the bytes went to a file someone replaced meanwhile
                self._rewinds[rel] = self._rewind_base(rel)

    def _rewind(self, rel: str, rewind: _Rewind) -> None:
        target = self.root / rel
        if _stat(target) != rewind.stat:
            log.warning("%s changed outside memfs during a failed write; it is left as it is", rel)
            return
        try:
            if not rewind.existed:
                _fs.remove_file(self.root, rel)
            else:
                fd = _fs.open_file(self.root, rel, os.O_WRONLY)
                try:
                    os.ftruncate(fd, rewind.low)
                    os.lseek(fd, rewind.low, os.SEEK_SET)
                    _fs.write_back(fd, rewind.saved)
                    if self.durable:
                        os.fsync(fd)
                finally:
                    os.close(fd)
            own = self._own_record()
            now = _stat(target)
            if rewind.own is None or now is None:
                own.pop(rel, None)
            elif rewind.began is not None and tuple(rewind.own[:3]) == rewind.began:
                own[rel] = [*now, rewind.own[3]]  # as memfs left it then, and committed or not as then
            else:
                own[rel] = rewind.own
            self._save_own(own)
            self.mark_pending([rel])
        except OSError as exc:
            log.error("could not put %s back after a failed write: %s", rel, exc)

    # -- commits ----------------------------------------------------------------------

    def commit(self, paths: Iterable[str], message: str, trailers: dict[str, str] | None = None,
               *, author: Identity | None = None, contents: Mapping[str, bytes | None] | None = None,
               ) -> str | None:  # fmt: skip
        """Commit ``paths``: with the bytes in ``contents``, else as they are on disk now (read once, here).

        Returns:
            The commit id; None if nothing differs from the last commit.
        """
        paths = sorted(set(paths))
        with self._lock.hold():
            given = contents or {}
            exact = {rel: given[rel] if rel in given else self._regular(rel) for rel in paths}
            sha = self.history.commit(exact, message, author=author or self.author, committer=self.author,
                                      trailers=trailers, durable=self.durable)  # fmt: skip
            self._forget_own(paths)
            return sha

    def own_uncommitted(self) -> dict[str, Stat]:
        """The files memfs changed and has not committed yet, with their stat after memfs's write."""
        return {rel: (v[0], v[1], v[2]) for rel, v in self._own_record().items() if v[3]}

    def last_write(self, rel: str) -> Stat | None:
        """The stat of transcript ``rel`` after memfs's last write of it (committed or not), if recorded.

        If the file's stat is this, the file is exactly as memfs left it, whichever process or
        session object wrote it.
        """
        record = self._own_record().get(rel)
        return (record[0], record[1], record[2]) if record is not None else None

    def _own_record(self) -> dict[str, list[int]]:
        """``{rel: [inode, size, mtime_ns, uncommitted]}``, least recently written first."""
        try:
            raw = json.loads(self._own_file.read_text("utf-8"))
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return {}
        if not isinstance(raw, dict):
            return {}
        return {k: [v[0], v[1], v[2], v[3] if len(v) == 4 else 1] for k, v in raw.items()
                if isinstance(k, str) and isinstance(v, list) and len(v) in (3, 4)
                and all(isinstance(x, int) for x in v)}  # fmt: skip

    def _note_own(self, paths: Iterable[str]) -> None:
        own = self._own_record()
        for rel in paths:
            seen = _stat(self.root / rel)
            own.pop(rel, None)  # to the end: the most recently written
            if seen is not None:
                own[rel] = [*seen, 1]
        self._save_own(own)

    def _restamp_own(self, rel: str, was: Stat) -> None:
        """The file is back to what memfs recorded as ``was``: record its new stat the same way."""
        own = self._own_record()
        entry = own.get(rel)
        now = _stat(self.root / rel)
        if entry is not None and tuple(entry[:3]) == was and now is not None:
            own[rel] = [*now, entry[3]]
            self._save_own(own)

    def _forget_own(self, paths: Iterable[str]) -> None:
        """After a commit: the files hold nothing uncommitted of memfs's (their last stat is kept)."""
        own = self._own_record()
        changed = False
        for rel in paths:
            entry = own.get(rel)
            if entry is not None and entry[3]:
                entry[3] = 0
                changed = True
        if changed:
            self._save_own(own)

    def _save_own(self, own: dict[str, list[int]]) -> None:
        # Derived state: losing it in a crash only means a pending write may be taken for a
        # person's edit, so it is written without fsync.
        committed = [rel for rel, v in own.items() if not v[3]]
        for rel in committed[: max(0, len(committed) - OWN_KEPT)]:
            del own[rel]
        tmp = self._own_file.with_name("own.new")
        self.state_dir.mkdir(exist_ok=True)  # .memfs/ may have been deleted: it is made again
        tmp.write_text(json.dumps(own), "utf-8")
        os.replace(tmp, self._own_file)

    def commit_edits_first(self, paths: Iterable[str]) -> None:
        """Before memfs changes ``paths``: commit a person's uncommitted edits of them, as theirs.

        So the change's own commit carries only that change, and the person's words stay in the
        history even when memfs deletes or replaces them. Files the current batch already
        changed are left out (that difference is the batch's own).
        """
        with self._lock.hold():
            done = self._change.paths if self._change is not None else set()
            todo = [p for p in paths if p not in done]
            if todo:
                self.commit_outside_edits(todo)

    def outside_edits(self) -> list[str]:
        """People's edits not committed yet, as vault paths.

        The Markdown files under ``memories/`` and ``sessions/`` that differ from the last commit,
        less those memfs wrote itself and will commit (a session's pending messages) unless they
        changed again since.
        """
        with self._lock.hold():
            changed = [p for p in self.history.changed(list(CONTENT_DIRS))
                       if _is_content(p) and not _fs.linked(self.root, p)]  # fmt: skip
            own = self.own_uncommitted()
            return [p for p in changed if p not in own or own[p] != _stat(self.root / p)]

    def commit_outside_edits(self, paths: Iterable[str] | None = None, *, message: str | None = None) -> str | None:
        """Commit those of ``paths`` that differ from the last commit, as the person's edit.

        With ``paths`` None, every edit :meth:`outside_edits` lists. Files memfs itself changed
        and has not committed yet (a session's pending messages) are not a person's edit and are
        left for their session to commit, unless the file changed again since memfs wrote it.
        Files over the indexing size limit are left uncommitted (a stray 50 MB paste should not
        enter the history); ``doctor`` reports them. Files holding git's conflict markers, and
        every edit while a person's merge, rebase, cherry-pick, revert or bisect is in progress,
        are held back (see :meth:`_hold_back`).

        Args:
            paths: Vault paths to consider, or None for all.
            message: The commit message; by default one naming the file or the number of files.
        """
        with self._lock.hold():
            if paths is None:
                for rel in filter(is_transcript, self.own_uncommitted()):  # an interrupted append is no one's edit
                    self.repair_tail(rel)
                changed = self.outside_edits()
                self._seen_file.unlink(missing_ok=True)
            else:
                candidates = sorted(set(paths) | self._held_back())
                for rel in filter(is_transcript, candidates):  # an interrupted append is no one's edit
                    self.repair_tail(rel)
                changed = self.history.changed(candidates) if candidates else []
                own = self.own_uncommitted()
                changed = [p for p in changed if p not in own or own[p] != _stat(self.root / p)]
            links = [p for p in changed if _fs.linked(self.root, p)]
            for rel in links:
                log.warning("not committing %s: a symbolic link, which memfs never follows", rel)
            changed = [p for p in changed if p not in links]
            too_big = [p for p in changed if _size(self.root / p) > MAX_INDEXED_BYTES]
            for rel in too_big:
                log.warning("not committing %s: larger than %d bytes", rel, MAX_INDEXED_BYTES)
            changed = [p for p in changed if p not in too_big]
            changed = self._hold_back(changed)
            if not changed:
                return None
            if message is None and len(changed) == 1:
                message = f"edit: {changed[0]} (changed outside memfs)"
            elif message is None:
                message = f"edit: {len(changed)} files changed outside memfs"
            return self.commit(changed, message, {"Memfs-Op": "reconcile"}, author=self.person)

    def _hold_back(self, changed: list[str]) -> list[str]:
        """Those of ``changed`` (a person's edits) that may be committed now.

        A file holding git's conflict markers is never committed as a person's edit, and nothing
        is while a merge, rebase, cherry-pick, revert or bisect is in progress (memfs's commit
        would land in the middle of it and touch git's conflict state). Those files are kept in
        ``.memfs/held`` and looked at again by every later call, so an edit made meanwhile is
        committed once the conflict or the operation is over, even if it does not change again.
        """
        marked = [rel for rel in changed if self._has_conflict_markers(rel)]
        for rel in marked:
            log.warning("not committing %s: it holds git's conflict markers; resolve the conflict first", rel)
        ready = [rel for rel in changed if rel not in marked]
        busy = self.history.operation_in_progress()
        if busy is not None and ready:
            log.warning("not committing %d files changed outside memfs: %s", len(ready), busy[1])
        held = sorted(marked + (ready if busy is not None else []))
        if held != sorted(self._held_back()):
            if held:
                tmp = self._held_file.with_name("held.new")
                tmp.write_text("".join(f"{rel}\n" for rel in held), "utf-8")
                os.replace(tmp, self._held_file)
            else:
                self._held_file.unlink(missing_ok=True)
        return [] if busy is not None else ready

    def _has_conflict_markers(self, rel: str) -> bool:
        try:
            data = self._regular(rel)
        except (OSError, LinkError):
            return False
        return data is not None and has_conflict_markers(data)

    def _held_back(self) -> set[str]:
        try:
            return set(filter(None, self._held_file.read_text("utf-8").splitlines()))
        except (FileNotFoundError, UnicodeDecodeError):
            return set()

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
            _close_leaked_files(exc)
            log.warning("search index failed to update (%s); rebuilding it from the files", str(exc))
            self.index.clear()
            try:
                return self.index.sync(None, progress=progress)
            except Exception as again:
                _close_leaked_files(again)
                raise again from None

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
        Those a pass with ``commit=False`` indexes (a read-only command's open) are noted under
        ``.memfs/``, so the next whole pass that commits still commits them, though the index
        already has them.
        """
        with self._lock.hold():
            if paths is None:
                for folder in CONTENT_DIRS:
                    _fs.sweep_temp_files(self.root / folder)
            report = self._sync_index(None if paths is None else sorted(set(paths)), progress)
            if paths is None:
                with contextlib.suppress(FileNotFoundError):
                    self._pending_file.write_bytes(b"")
            changed = report.added + report.updated + report.removed
            if not commit:
                self._note_seen(changed)
            elif paths is None:  # and the edits read-only opens and searches indexed already
                self.commit_outside_edits(changed + self._seen() + self.take_found_edits())
                self._seen_file.unlink(missing_ok=True)
            else:
                self.commit_outside_edits(changed)
            return report

    def _note_seen(self, paths: list[str]) -> None:
        """Note files indexed but not committed (possibly a person's edits), one line each."""
        if paths:
            with open(self._seen_file, "a", encoding="utf-8") as handle:
                handle.write("".join(f"{p}\n" for p in paths))

    def _seen(self) -> list[str]:
        """The files :meth:`_note_seen` noted, less any line that is not a content file's vault path."""
        try:
            lines = self._seen_file.read_text("utf-8", "replace").splitlines()
        except FileNotFoundError:
            return []
        return sorted({p for p in lines if _is_content(p)})

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


def _refuse_conflict_markers(rel: str, data: bytes | None) -> None:
    if data is not None and has_conflict_markers(data):
        raise ConflictMarkersError(f"{rel} holds git's conflict markers (<<<<<<<, =======, >>>>>>>) from a "
                                   "merge nobody resolved yet; memfs does not change it until a person "
                                   "resolves the conflict in the file", rel)  # fmt: skip


def _stat(path: Path) -> Stat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


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


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _put_back(root: Path, rel: str, original: bytes | None, mode: int | None, *, durable: bool) -> None:
    """Restore a file's old bytes and mode (None: remove it), through the path gate.

    In place when a full disk leaves no room for a temp file. ``mode`` None (a journal written
    before modes were recorded) gives the mode memfs writes new files with.
    """
    if original is None:
        _fs.remove_file(root, rel)
        return
    mode = 0o644 if mode is None else mode
    if _fs.read_file(root, rel) == (original, mode):
        return
    try:
        _fs.write_file(root, rel, original, mode=mode, durable=durable)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise
        _fs.overwrite_file(root, rel, original, mode=mode, durable=durable)


def _inside(root: Path, rel: str) -> bool:
    """True for a plain vault path under the content folders (a journal from a crash is outside input)."""
    parts = rel.split("/")
    return parts[0] in CONTENT_DIRS and len(parts) > 1 and all(p not in ("", ".", "..") for p in parts)


def _is_content(rel: str) -> bool:
    """True for a vault path memfs indexes: a Markdown file under a content folder, no hidden part."""
    parts = rel.split("/")
    return (len(parts) > 1 and parts[0] in CONTENT_DIRS and rel.endswith(".md")
            and all(p and not p.startswith(".") and "\\" not in p for p in parts))  # fmt: skip


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
