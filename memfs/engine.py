"""The write engine: every change to a vault's files, with its index and its git history.

Everything that changes a vault goes through one :class:`WriteEngine`: memory files (written
whole, atomically, one commit per change or per ``batch()``) and transcripts (appended to,
truncated, replaced, committed when their session's policy says). It holds the vault lock
(threads and processes) for the whole of a change, so no one sees a file memfs wrote before
git has it. Every path it writes goes to the vault's :class:`~memfs.catalog.Catalog`
(``.memfs/pending``), whose next search in any process indexes exactly those, so a write never
pays for a Whoosh commit. It keeps this record under ``.memfs/``:

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
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _fs
from .catalog import DEFAULT_FRESHNESS, Catalog
from .credentials import find_secrets, secret_advice
from .documents import Document, dumps, load_bytes, timestamp
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ConflictMarkersError,
    ContentError,
    DocumentError,
    FileTooLargeError,
    InvalidArgumentError,
    LinkError,
    MemfsError,
    MemoryNotFoundError,
)
from .history import DEFAULT_PERSON, GitHistory, Identity, has_conflict_markers
from .indexing import MAX_INDEXED_BYTES, MAX_TRANSCRIPT_BYTES
from .layout import (
    ARCHIVE_DIR,
    CONFLICTS_DIR,
    CONTENT_DIRS,
    MAX_ATTACHMENT_BYTES,
    MEMORIES_DIR,
    PROPOSALS_DIR,
    STATE_DIR,
    TOMBSTONES,
    VAULT_MARKER,
    is_attachment,
    is_content,
    is_transcript,
    label,
)
from .records import private_folder as _private_folder
from .records import read_state as _read_state
from .records import write_private as _write_private
from .semantic import Embedder
from .transcript import classify_tail, partial_heading

log = logging.getLogger(__name__)

MAX_CONTENT_BYTES = 1024 * 1024
#: Obsidian's window layout and caches (one person's, changed on every click) are never committed; its
#: shareable settings (``app.json``, plugins, themes) may be.
_GITIGNORE_LINES = (".memfs/", _fs.TEMP_PREFIX + "*", "**/.obsidian/workspace*.json", "**/.obsidian/cache")
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
    merge: str | None = None  # another history this commit joins (a sync)
    base: tuple[str | None, str | None] | None = None  # HEAD and its tree when the journal began


class WriteEngine:
    """The lock, the transactions, the files and the commits of one vault; its catalog is :attr:`catalog`.

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
        shared: True: share the vault with its group from now on; False: make it private from now
            on; None: as its repository's ``core.sharedRepository`` says (see :attr:`modes`).
    """

    def __init__(
        self,
        root: Path,
        *,
        author: Identity,
        person: Identity | None,
        lock_timeout: float,
        durable: bool,
        setup: bool = True,
        freshness: float | None = DEFAULT_FRESHNESS,
        shared: bool | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.root = root
        self.author = author
        self._person = person
        self.durable = durable
        self.state_dir = root / STATE_DIR
        _private_folder(self.state_dir)
        self._lock = _fs.VaultLock(self.state_dir / "lock", timeout=lock_timeout)
        self._own_file = self.state_dir / "own"
        self._journal = self.state_dir / "journal"
        self._held_file = self.state_dir / "held"
        #: The edits the last :meth:`commit_outside_edits` left uncommitted for a credential: (kind, line) each.
        self.held_secrets: dict[str, list[tuple[str, int]]] = {}
        self.salvage_dir = self.state_dir / "salvage"
        self._change: Change | None = None
        self._rewinds: dict[str, _Rewind] = {}
        # Transcripts written inside a rewind block and not fsynced yet: the commit that ends the
        # block fsyncs them with its own objects (one wait for the disk), else the block's end does.
        self._unsynced: set[str] = set()
        self._own_cache: tuple[Stat, dict[str, list[int]]] | None = None  # see _own_record
        with self._lock.hold():
            self.history = GitHistory(root, self.state_dir, lock_timeout=lock_timeout, shared=bool(shared))
            if shared is not None and shared != self.history.shared():
                self.history.share(shared)
            #: The modes of the files and folders memfs creates: private (0600 and 0700), or shared
            #: with the group (0660 and 2770) when the repository says ``core.sharedRepository``
            #: (``Vault.open(..., shared=True)``, ``memfs init --shared``); never wider than the umask.
            #: ``.memfs/`` is always private. A file memfs rewrites keeps its mode.
            self.modes = _fs.SHARED if self.history.shared() else _fs.PRIVATE
            #: The index, the vectors and their queues, and every read through them (search).
            self.catalog = Catalog(
                root,
                self.state_dir,
                lock=self._lock,
                history=self.history,
                read=self._regular,
                commit_edits=self.commit_outside_edits,
                lock_timeout=lock_timeout,
                freshness=freshness,
                embedder=embedder,
            )
            self.recover()
            if setup:
                self._ensure_layout()

    def close(self) -> None:
        """Index what is pending, then release the index and git helper processes."""
        self.catalog.close()
        self.history.close()

    @property
    def person(self) -> Identity:
        """Whose name a person's edits are committed under.

        The identity given at open; otherwise the ``user.name``/``user.email`` git has configured
        (repository, then global) at the moment of the commit, else ``person <person@memfs.invalid>``.
        """
        return self._person or self.history.configured_identity() or DEFAULT_PERSON

    def make_folders(self, rel: str) -> None:
        """Create a folder of the vault (and its parents) with the vault's folder mode."""
        _fs.make_folders(self.root / rel, self.modes)

    def _ensure_layout(self) -> None:
        self.make_folders(MEMORIES_DIR)
        busy = self.history.operation_in_progress()
        if busy is not None:  # a person's merge or rebase: change nothing until it is over
            return
        changed: dict[str, bytes] = {}
        marker = self.root / VAULT_MARKER
        if not marker.is_file():  # git keeps no empty folder: without it, a clone has no memories/
            _fs.atomic_write(marker, _MARKER_TEXT, durable=self.durable, modes=self.modes)
            changed[VAULT_MARKER] = _MARKER_TEXT
        ignore = self.root / ".gitignore"
        text = ignore.read_text("utf-8") if ignore.exists() else ""
        missing = [line for line in _GITIGNORE_LINES if line not in text.splitlines()]
        if missing:
            sep = "" if not text or text.endswith("\n") else "\n"
            text += sep + "".join(f"{line}\n" for line in missing)
            _fs.atomic_write(ignore, text.encode(), durable=self.durable, modes=self.modes)
            changed[".gitignore"] = text.encode()
        if changed:
            self.history.commit(
                changed, "vault: init", author=self.author, trailers={"Memfs-Op": "init"}, durable=self.durable
            )

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
    def _transaction(self, message: str, trailers: dict[str, str] | None, *, summary: bool = False) -> Iterator[Change]:
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
                change.sha = self.commit(
                    change.paths, body, change.trailers, contents=change.contents, merge=change.merge, base=change.base
                )
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
                _put_back(
                    self.root, rel, change.originals[rel], change.modes.get(rel), modes=self.modes, durable=self.durable
                )
        _fs.sweep_temp_files(self.root, folders=self._plain_folders(change.originals))
        self._end_journal()
        with contextlib.suppress(OSError):  # the write already marked them; a full disk may refuse this
            self.catalog.mark_pending(change.contents)

    def _plain_folders(self, paths: Iterable[str]) -> set[Path]:
        """The folders of ``paths`` reached through no link (where temp files may be swept)."""
        folders = {_fs.split(rel)[0] for rel in paths}
        return {self.root / f for f in folders if not _fs.linked(self.root, f)}

    def _remember(
        self, change: Change, rel: str, original: bytes | None, new: bytes | None, mode: int | None = None
    ) -> None:
        """Before a file changes: its old bytes and mode and a hash of the new ones, in memory and in the journal."""
        change.paths.add(rel)
        change.originals.setdefault(rel, original)
        if mode is not None and rel not in change.modes and change.originals[rel] is original:
            change.modes[rel] = mode
        records: list[dict[str, Any]] = []
        if not self._journal.exists():
            # HEAD as the commit will start from it (a first guess, moved by compare-and-swap), and as
            # recovery compares with: a HEAD that moved since means the commit landed
            change.base = self.history.head_guess()
            records.append({"base": change.base[0]})
        encoded = None if original is None else base64.b64encode(original).decode()
        record: dict[str, Any] = {"path": rel, "original": encoded, "new": _digest(new)}
        if mode is not None and original is not None:
            record["mode"] = mode
        self._append_journal(*records, record)

    def _append_journal(self, *records: dict[str, Any]) -> None:
        fd = os.open(self._journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _fs.write_all(fd, "".join(json.dumps(record) + "\n" for record in records).encode())
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _as_committed(self, rel: str) -> bytes | None:
        data = self._regular(rel)
        return None if data is None else self.history.committed_form(data)

    def _regular(self, rel: str, *, own: bool = False) -> bytes | None:
        """The bytes of the vault file ``rel`` through the path gate, bounded; None if there is no regular file.

        Raises:
            LinkError: A folder on the way, or the file, is a symbolic link.
            FileTooLargeError: The file is larger than memfs reads (:func:`read_limit`).
        """
        return _read_regular(self.root, rel, own=own)

    def _holds(self, rel: str, wrote: bytes | None) -> bool:
        """True when the vault file ``rel`` still holds what memfs wrote (None: no file), through the gate.

        A link there now is never memfs's: it is left alone. Sizes are compared before reading.
        """
        return _fs.vault_file_holds(self.root, rel, wrote)

    def _landed(self, rel: str, digest: str | None) -> bool:
        """True if ``rel`` holds the bytes of this digest (None: no file); a link or a file too large does not."""
        try:
            return _digest(self._regular(rel)) == digest
        except (FileTooLargeError, LinkError):
            return False

    def _committed_now(self, rel: str, head: str | None) -> bool:
        try:
            return self._as_committed(rel) == self.history.bytes_at(rel, head)
        except (FileTooLargeError, LinkError):  # memfs never wrote that
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
        if head != base and all(self._committed_now(rel, head) for rel in files):
            log.warning("a change interrupted after its commit (%s) was completed", head)
            self.history.index_as_at_head(files)  # the process may have died before refreshing it
        else:
            log.warning("rolling back a change interrupted before its commit (%d files)", len(files))
            for rel, (original, new) in sorted(files.items(), key=lambda item: item[1][0] is not None):
                if self._landed(rel, new):  # memfs's bytes landed: take them back
                    _put_back(self.root, rel, original, modes.get(rel), modes=self.modes, durable=self.durable)
            self.catalog.mark_pending(files)
        _fs.sweep_temp_files(self.root, folders=self._plain_folders(files))
        self._end_journal()

    # -- whole files (memories) -------------------------------------------------------

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of a vault file (``rel`` is a vault path); MemoryNotFoundError if absent.

        Raises:
            FileTooLargeError: The file is larger than memfs reads (:func:`read_limit`); it was
                not read (its size comes from a stat).
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
        exact: bool = False,
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
            exact: Write ``content``'s bytes as they are. By default a file that has only CRLF line
                endings keeps them (a person's Windows editor); an old version put back (undo,
                restore) is the bytes it had, whatever endings the file has now.

        Returns:
            The commit id, or None inside a batch or when nothing changed.
        """
        data = check_content(dumps(content) if isinstance(content, Document) else content)
        with self._transaction(message, trailers) as change:
            parent, name = _fs.split(rel)
            with self._folder(parent, create=create is not False, file=rel) as dfd:  # every step names the file here
                found = _fs.read_at(dfd, name, limit=read_limit(rel), rel=rel)
                original, mode = found if found is not None else (None, None)
                if create is True and (original is not None or _fs.exists_at(dfd, name)):
                    raise AlreadyExistsError(f"{rel} already exists")
                if create is False and original is None:
                    raise MemoryNotFoundError(f"no file at {rel}")
                if expect is not None and original != expect:
                    raise ConflictError(f"{rel} changed since it was read; read it again and retry")
                _refuse_conflict_markers(rel, original)
                data = data if exact else _line_endings_of(original, data)
                self._remember(change, rel, original, data, mode)
                self._swap_in(change, dfd, rel, data, original)
            self.catalog.mark_pending([rel])
        return change.sha

    @contextlib.contextmanager
    def _folder(self, rel: str, *, file: str, create: bool = False) -> Iterator[int]:
        """The open vault folder ``rel`` of ``file``, through the path gate (a missing one: MemoryNotFoundError).

        Folders it makes get the vault's modes.
        """
        try:
            dfd = _fs.open_folder(self.root, rel, create=create, modes=self.modes)
        except (FileNotFoundError, NotADirectoryError):
            raise MemoryNotFoundError(f"no file at {file}") from None
        try:
            yield dfd
        finally:
            os.close(dfd)

    def _swap_in(self, change: Change, dfd: int, rel: str, data: bytes, original: bytes | None) -> None:
        """Put ``data`` at ``rel`` (in the open folder ``dfd``) if the file is still ``original`` (None: no file).

        The new file keeps the mode of the one it replaces; a new one gets the vault's modes.
        """
        name = _fs.split(rel)[1]
        tmp = _fs.write_temp_at(dfd, data, durable=self.durable, mode=_fs.mode_at(dfd, name, self.modes))
        try:
            if original is None:
                try:
                    _fs.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # a create never overwrites
                except FileExistsError:
                    raise ConflictError(f"{rel} was created by someone else while memfs was writing it") from None
            elif _fs.exchange(tmp, name, dir_fd=dfd):
                if not _fs.holds_at(dfd, tmp, original):  # a save landed between memfs's read and its replace
                    _fs.exchange(tmp, name, dir_fd=dfd)  # theirs back in place
                    if not _fs.holds_at(dfd, tmp, None) and not _fs.holds_at(dfd, tmp, data):  # yet another save
                        self._keep_conflict_copy(dfd, tmp, rel)  # never drop it
                    raise ConflictError(
                        f"{rel} was saved by another program while memfs was writing it; read it again and retry"
                    )
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
        self.catalog.mark_pending([copy])

    def delete(self, rel: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Delete a vault file and commit the deletion (a save that races it is kept, not deleted)."""
        with self._transaction(message, trailers) as change:
            parent, name = _fs.split(rel)
            with self._folder(parent, file=rel) as dfd:
                found = _fs.read_at(dfd, name, limit=read_limit(rel), rel=rel)
                if found is None:
                    raise MemoryNotFoundError(f"no file at {rel}")
                original, mode = found
                _refuse_conflict_markers(rel, original)
                self._remember(change, rel, original, None, mode)
                aside = _fs.TEMP_PREFIX + name
                _fs.checkpoint("rename")
                os.rename(name, aside, src_dir_fd=dfd, dst_dir_fd=dfd)
                if not _fs.holds_at(dfd, aside, original):  # saved between the read and the rename: keep it
                    os.rename(aside, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    raise ConflictError(f"{rel} was saved by another program while memfs was deleting it")
                change.contents[rel] = None
                _fs.unlink(aside, dir_fd=dfd)
                if self.durable:
                    _fs.fsync_fd(dfd)
            self._prune_empty_dirs(parent)
            self.catalog.mark_pending([rel])
        return change.sha

    def move(self, src: str, dst: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Rename a vault file (never over an existing one) and commit the rename."""
        with self._transaction(message, trailers) as change:
            (src_dir, src_name), (dst_dir, dst_name) = _fs.split(src), _fs.split(dst)
            with self._folder(src_dir, file=src) as sfd:
                found = _fs.read_at(sfd, src_name, limit=read_limit(src), rel=src)
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
            self.catalog.mark_pending([src, dst])
        return change.sha

    def restore(self, rel: str, rev: str, *, trailers: dict[str, str] | None = None) -> str | None:
        """Put ``rel`` back as it was at ``rev``, as a new commit (works for deleted and renamed files)."""
        data = self.history.show_following_renames(rel, rev)
        short = self.history.resolve(rev)[:10]
        self.commit_edits_first([rel])
        return self.write(
            rel,
            data.decode("utf-8"),
            message=f"restore: {label(rel)} to {short}",
            trailers={"Memfs-Op": "restore", **(trailers or {})},
            exact=not self.history.converts_line_endings(),
        )

    def integrate(
        self,
        files: Mapping[str, tuple[bytes | None, bytes | None]],
        *,
        merge: str,
        message: str,
        trailers: dict[str, str] | None = None,
    ) -> str | None:
        """Write what a sync decided and commit it joined to ``merge``'s history, all or nothing.

        Every file is written through the path gate, as any other write.

        Args:
            files: Vault path -> (the bytes memfs expects on disk now, the bytes to put there);
                None on either side means no file. A file that is not as expected (a person saved
                it since the sync looked) stops the whole change with ConflictError.
            merge: The commit of the other side's history.
            message: The commit message.
            trailers: Extra commit trailers.

        Returns:
            The commit HEAD ends at (``merge`` itself after a fast-forward), or None if nothing changed.
        """
        with self._transaction(message, trailers) as change:
            change.merge = merge
            for rel, (expected, data) in sorted(files.items()):
                if not _inside(self.root, rel):
                    raise InvalidArgumentError(f"{rel} is not a path a sync may write")
                self._integrate_one(change, rel, expected, data)
            self.catalog.mark_pending(rel for rel in files if is_content(rel))
        return change.sha

    def _integrate_one(self, change: Change, rel: str, expected: bytes | None, data: bytes | None) -> None:
        """Put ``data`` at ``rel`` (None: remove it) if the file is still ``expected``, in its open folder."""
        parent, name = _fs.split(rel)
        try:
            dfd = _fs.open_folder(self.root, parent, create=data is not None, modes=self.modes)
        except (FileNotFoundError, NotADirectoryError):  # no folder, so no file (and none to write)
            if expected is not None:
                raise ConflictError(f"{rel} changed while the sync was merging; sync again") from None
            self._remember(change, rel, None, None)
            change.contents[rel] = None
            return
        try:
            found = _fs.read_at(dfd, name, limit=read_limit(rel), rel=rel)
            original, mode = found if found is not None else (None, None)
            if original != expected or (original is None and _fs.exists_at(dfd, name)):
                raise ConflictError(f"{rel} changed while the sync was merging; sync again")
            self._remember(change, rel, original, data, mode)
            if data is None:
                if original is not None:
                    _fs.checkpoint("unlink")
                    os.unlink(name, dir_fd=dfd)
                    if self.durable:
                        _fs.fsync_fd(dfd)
                change.contents[rel] = None
            else:
                self._swap_in(change, dfd, rel, data, original)
        finally:
            os.close(dfd)
        if data is None:
            self._prune_empty_dirs(parent)

    def _prune_empty_dirs(self, folder: str) -> None:
        """Remove ``folder`` (under ``memories/`` or ``proposals/``) and its empty parents, via the gate."""
        while folder.startswith((MEMORIES_DIR + "/", PROPOSALS_DIR + "/")):
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
                    self._sync_soon(rel, fd, data=True)
                    now = _stat(target)
                    if now is None or now[0] != before.st_ino:
                        raise ConflictError(f"{rel} was replaced by another program while memfs appended to it")
                    self.catalog.mark_pending([rel])
                    self._note_own([rel])
                except BaseException:
                    with contextlib.suppress(OSError):  # leave no partial entry behind
                        os.ftruncate(fd, before.st_size)
                        self._restamp_own(rel, (before.st_ino, before.st_size, before.st_mtime_ns), fd)
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
                self._sync_soon(rel, fd)
                self._rewind_wrote(rel, os.fstat(fd).st_ino)
            finally:
                os.close(fd)
            self._note_own([rel])
            self.catalog.mark_pending([rel])

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
            _fs.write_file(self.root, rel, data, durable=self.durable, modes=self.modes)  # a rewrite keeps its mode
            now = _stat(target)
            if now is not None:
                self._rewind_wrote(rel, now[0])
            self._note_own([rel])
            self.catalog.mark_pending([rel])

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
                if record is not None and cut == record[1]:
                    self._restamp_own(rel, (record[0], record[1], record[2]), fd)  # again what memfs last wrote
            finally:
                os.close(fd)
            log.warning(
                "%s: cut off %d bytes of an interrupted append after byte %d (kept in %s)",
                rel,
                st.st_size - cut,
                cut,
                salvage,
            )
            if rel in self._rewinds:
                self._rewinds[rel] = self._rewind_base(rel)
            self.catalog.mark_pending([rel])
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
                self._sync_now(rel)  # not committed in the block: made durable before the block returns
            except BaseException:
                self._unsynced.discard(rel)
                self._rewind(rel, self._rewinds.pop(rel))
                raise
            finally:
                self._rewinds.pop(rel, None)

    def _sync_soon(self, rel: str, fd: int, *, data: bool = False) -> None:
        """A transcript was just written through ``fd``: fsync it now, or with the commit that ends its rewind block."""
        if not self.durable:
            return
        if rel in self._rewinds:
            self._unsynced.add(rel)
        elif data:
            os.fdatasync(fd)
        else:
            os.fsync(fd)

    def _sync_now(self, rel: str) -> None:
        if rel not in self._unsynced:
            return
        self._unsynced.discard(rel)
        try:
            fd = _fs.open_file(self.root, rel, os.O_RDONLY)
        except FileNotFoundError:  # removed meanwhile (a person): nothing of it to make durable
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

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
            self.catalog.mark_pending([rel])
        except OSError as exc:
            log.error("could not put %s back after a failed write: %s", rel, exc)

    # -- commits ----------------------------------------------------------------------

    def commit(
        self,
        paths: Iterable[str],
        message: str,
        trailers: dict[str, str] | None = None,
        *,
        author: Identity | None = None,
        contents: Mapping[str, bytes | None] | None = None,
        merge: str | None = None,
        base: tuple[str | None, str | None] | None = None,
    ) -> str | None:
        """Commit ``paths``: with the bytes in ``contents``, else as they are on disk now (read once, here).

        ``base``: HEAD and its tree as read when the change began, a first guess (see ``GitHistory.commit``).

        Returns:
            The commit id; None if nothing differs from the last commit.
        """
        paths = sorted(set(paths))
        with self._lock.hold():
            given = contents or {}
            exact = {rel: given[rel] if rel in given else self._regular(rel, own=True) for rel in paths}
            unsynced = [rel for rel in paths if rel in self._unsynced and exact[rel] is not None]
            fds: list[int] = []
            try:
                fds += [_fs.open_file(self.root, rel, os.O_RDONLY) for rel in unsynced]
                sha = self.history.commit(
                    exact,
                    message,
                    author=author or self.author,
                    committer=self.author,
                    trailers=trailers,
                    durable=self.durable,
                    merge=merge,
                    base=base,
                    also=fds,
                )
            finally:
                for fd in fds:
                    os.close(fd)
            self._unsynced.difference_update(unsynced)
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
        """``{rel: [inode, size, mtime_ns, uncommitted]}``, least recently written first (a copy).

        Parsed again only when the file is not the one this engine last read or wrote (another
        process wrote it): a transcript's append asks for it several times.
        """
        seen = _stat(self._own_file)
        if seen is not None and self._own_cache is not None and self._own_cache[0] == seen:
            return {k: list(v) for k, v in self._own_cache[1].items()}
        try:
            raw = json.loads(_read_state(self._own_file) or b"{}")
        except (ValueError, UnicodeDecodeError):
            return {}
        if not isinstance(raw, dict):
            return {}
        own = {
            k: [v[0], v[1], v[2], v[3] if len(v) == 4 else 1]
            for k, v in raw.items()
            if isinstance(k, str) and isinstance(v, list) and len(v) in (3, 4) and all(isinstance(x, int) for x in v)
        }
        self._own_cache = None if seen is None else (seen, {k: list(v) for k, v in own.items()})
        return own

    def _note_own(self, paths: Iterable[str]) -> None:
        own = self._own_record()
        for rel in paths:
            seen = _stat(self.root / rel)
            own.pop(rel, None)  # to the end: the most recently written
            if seen is not None:
                own[rel] = [*seen, 1]
        self._save_own(own)

    def _restamp_own(self, rel: str, was: Stat, fd: int) -> None:
        """The file open as ``fd`` is back to what memfs recorded as ``was``: record its new stat the same way.

        Only while ``rel`` still names that file: if another program renamed a new file over it,
        the record stays what memfs last wrote, so the next append sees the file was replaced
        (and puts back what the replacement dropped) instead of taking it for memfs's own.
        """
        own = self._own_record()
        entry = own.get(rel)
        st = os.fstat(fd)
        now = (st.st_ino, st.st_size, st.st_mtime_ns)
        if entry is not None and tuple(entry[:3]) == was and _stat(self.root / rel) == now:
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
        _private_folder(self.state_dir)  # .memfs/ may have been deleted: it is made again
        _write_private(tmp, json.dumps(own).encode("utf-8"))
        os.replace(tmp, self._own_file)
        seen = _stat(self._own_file)
        self._own_cache = None if seen is None else (seen, {k: list(v) for k, v in own.items()})

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
            changed = [
                p
                for p in self.history.changed(list(CONTENT_DIRS))
                if (is_content(p) or is_attachment(p)) and not _fs.linked(self.root, p)
            ]
            own = self.own_uncommitted()
            return [p for p in changed if p not in own or own[p] != _stat(self.root / p)]

    def commit_outside_edits(
        self, paths: Iterable[str] | None = None, *, message: str | None = None, allow_secrets: Iterable[str] = ()
    ) -> str | None:
        """Commit those of ``paths`` that differ from the last commit, as the person's edit.

        With ``paths`` None, every edit :meth:`outside_edits` lists. Files memfs itself changed
        and has not committed yet (a session's pending messages) are not a person's edit and are
        left for their session to commit, unless the file changed again since memfs wrote it.
        Files over the indexing size limit are left uncommitted (a stray 50 MB paste should not
        enter the history); ``doctor`` reports them. Files holding git's conflict markers, and
        every edit while a person's merge, rebase, cherry-pick, revert or bisect is in progress,
        are held back (see :meth:`_hold_back`), and so are files an edit gave a credential (see
        :meth:`new_secrets`) unless named in ``allow_secrets``.

        Args:
            paths: Vault paths to consider, or None for all.
            message: The commit message; by default one naming the file or the number of files.
            allow_secrets: Vault paths whose credentials the person commits deliberately.
        """
        with self._lock.hold():
            if paths is None:
                for rel in filter(is_transcript, self.own_uncommitted()):  # an interrupted append is no one's edit
                    self.repair_tail(rel)
                changed = self.outside_edits()
                self.catalog.forget_seen()
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
            too_big = [p for p in changed if _size(self.root / p) > read_limit(p)]
            for rel in too_big:
                log.warning(
                    "not committing %s: larger than the %d bytes memfs commits of such a file", rel, read_limit(rel)
                )
            changed = [p for p in changed if p not in too_big]
            changed = self._hold_back(changed, set(allow_secrets))
            if not changed:
                return None
            if message is None and len(changed) == 1:
                message = f"edit: {changed[0]} (changed outside memfs)"
            elif message is None:
                message = f"edit: {len(changed)} files changed outside memfs"
            return self.commit(changed, message, {"Memfs-Op": "reconcile"}, author=self.person)

    def _hold_back(self, changed: list[str], allow_secrets: set[str] | None = None) -> list[str]:
        """Those of ``changed`` (a person's edits) that may be committed now.

        A file holding git's conflict markers is never committed as a person's edit, and nothing
        is while a merge, rebase, cherry-pick, revert or bisect is in progress (memfs's commit
        would land in the middle of it and touch git's conflict state). A file the edit gave a
        credential is not committed either (git keeps every version for good; once there it takes
        a purge), unless it is in ``allow_secrets``. Those files are kept in ``.memfs/held`` and
        looked at again by every later call, so an edit made meanwhile is committed once the
        conflict, the operation or the credential is gone, even if it does not change again.
        """
        told = set(self._held_back())  # held by an earlier call: said then (and `memfs doctor` lists it)
        marked = [rel for rel in changed if self._has_conflict_markers(rel)]
        for rel in marked:
            (log.debug if rel in told else log.warning)(
                "not committing %s: it holds git's conflict markers; resolve the conflict first", rel
            )
        secret = {}
        for rel in changed:
            found = [] if rel in marked or rel in (allow_secrets or ()) else self.new_secrets(rel)
            if found:
                secret[rel] = found
                (log.debug if rel in told else log.warning)("not committing %s: %s", rel, secret_advice(rel, found))
        self.held_secrets = secret
        marked += list(secret)
        ready = [rel for rel in changed if rel not in marked]
        busy = self.history.operation_in_progress()
        if busy is not None and ready:
            log.warning("not committing %d files changed outside memfs: %s", len(ready), busy[1])
        held = sorted(marked + (ready if busy is not None else []))
        if held != sorted(self._held_back()):
            if held:
                tmp = self._held_file.with_name("held.new")
                _write_private(tmp, "".join(f"{rel}\n" for rel in held).encode("utf-8"))
                os.replace(tmp, self._held_file)
            else:
                self._held_file.unlink(missing_ok=True)
        return [] if busy is not None else ready

    def new_secrets(self, rel: str) -> list[tuple[str, int]]:
        """The credentials the file at ``rel`` holds that its last commit does not: (kind, line).

        Line 0 stands for the file's name (a new file named after a token). A line holding
        ``memfs:allow-secret`` is skipped (the person's deliberate choice), and so is a credential
        the last commit already has (committed deliberately before, with ``allow_secrets``): only
        what an edit brings in is reported.
        """
        text = _read_text_file(self.root, rel)
        named = find_secrets(rel)
        findings = [] if text is None else find_secrets(text, allow_marked=True)
        if not findings and not named:
            return []
        try:
            committed: str | None = self.history.show(rel, "HEAD").decode("utf-8", "replace")
        except MemfsError:  # a new file, or no commit yet
            committed = None
        found = [(f.kind, 0) for f in named] if committed is None else []
        text, committed = text or "", committed or ""
        return found + [(f.kind, f.line(text)) for f in findings if text[f.start : f.end] not in committed]

    def _has_conflict_markers(self, rel: str) -> bool:
        """True if the file holds git's conflict markers; False for a link or one too large (never committed)."""
        try:
            data = self._regular(rel)
        except (OSError, LinkError, FileTooLargeError):
            return False
        return data is not None and has_conflict_markers(data)

    def _held_back(self) -> set[str]:
        try:
            return set(filter(None, (_read_state(self._held_file) or b"").decode("utf-8").splitlines()))
        except UnicodeDecodeError:
            return set()


def engine_of(owner: Any) -> WriteEngine:
    """The write engine behind a Vault (or the engine itself)."""
    engine = getattr(owner, "engine", owner)
    if not isinstance(engine, WriteEngine):
        raise InvalidArgumentError(f"expected a memfs Vault, got {type(owner).__name__}")
    return engine


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
        raise ConflictMarkersError(
            f"{rel} holds git's conflict markers (<<<<<<<, =======, >>>>>>>) from a "
            "merge nobody resolved yet; memfs does not change it until a person "
            "resolves the conflict in the file",
            rel,
        )


def _line_endings_of(original: bytes | None, data: bytes) -> bytes:
    """``data`` with CRLF line endings if the file it replaces has only those (a Windows checkout, an editor's save).

    A file memfs leaves with mixed endings would show as such in the person's editor, and git
    with ``core.safecrlf`` refuses to add it (the conversion could not be undone).
    """
    if not original or b"\r\n" not in original or original.count(b"\n") != original.count(b"\r\n"):
        return data
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _stat(path: Path) -> Stat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def read_limit(rel: str) -> int:
    """The most bytes memfs reads of the vault file ``rel``: a transcript's budget, else the size it indexes."""
    if is_attachment(rel):
        return MAX_ATTACHMENT_BYTES
    return MAX_TRANSCRIPT_BYTES if is_transcript(rel) else MAX_INDEXED_BYTES


def _read_regular(root: Path, rel: str, *, own: bool = False) -> bytes | None:
    """The bytes of a regular vault file through the path gate, None if there is none.

    Bounded by :func:`read_limit` (FileTooLargeError, before any byte is read), except with
    ``own``: a transcript memfs wrote itself and is committing.

    Raises:
        LinkError: A folder on the way, or the file, is a symbolic link (never followed).
    """
    limit = None if own and is_transcript(rel) else read_limit(rel)
    found = _fs.read_vault_file(root, rel, limit=limit)
    return None if found is None else found[0]


def _read_text_file(root: Path, rel: str) -> str | None:
    """A vault file's text (at most the indexing limit) through the gate, or None: never a link, never a FIFO."""
    try:
        head = _fs.read_vault_head(root, rel, MAX_INDEXED_BYTES + 1)
    except (OSError, LinkError):
        return None
    return None if head is None else head.decode("utf-8", "replace")


def _put_back(
    root: Path, rel: str, original: bytes | None, mode: int | None, *, modes: _fs.Modes, durable: bool
) -> None:
    """Restore a file's old bytes and mode (None: remove it), through the path gate.

    In place when a full disk leaves no room for a temp file. ``mode`` None (a journal written
    before modes were recorded) gives the mode the vault gives new files (``modes``).
    """
    if original is None:
        _fs.remove_file(root, rel)
        return
    mode = modes.new_file() if mode is None else mode
    with contextlib.suppress(FileTooLargeError):  # bounded: a file grown past the old bytes is not them
        if _fs.read_vault_file(root, rel, limit=len(original)) == (original, mode):
            return
    try:
        _fs.write_file(root, rel, original, mode=mode, durable=durable, modes=modes)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise
        _fs.overwrite_file(root, rel, original, mode=mode, durable=durable)


def _inside(root: Path, rel: str) -> bool:
    """True for a plain vault path under the content folders (a journal from a crash is outside input)."""
    if rel == TOMBSTONES:
        return True
    parts = rel.split("/")
    return (
        parts[0] in (*CONTENT_DIRS, CONFLICTS_DIR, ARCHIVE_DIR, PROPOSALS_DIR)
        and len(parts) > 1
        and all(p not in ("", ".", "..") for p in parts)
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
