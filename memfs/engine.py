"""The write engine: every change to a vault's files, with its index and its git history.

Everything that changes a vault goes through one :class:`WriteEngine`: memory files (written
whole, atomically, one commit per change or per ``batch()``) and transcripts (appended to,
truncated, replaced, committed when their session's policy says). It holds the vault lock
(threads and processes) for the whole of a change, so no one sees a file memfs wrote before
git has it. It keeps the lock, the transactions, the writes of whole files and the commits.

The rest of its state is held by collaborators it makes, one per record under ``.memfs/``
(docs/architecture.md has the table), each given what it needs (the lock, the history, where to
note the paths written), none importing the engine:

- :class:`~memfs.catalog.Catalog` (``engine.catalog``): the index and the vectors, the queues that
  keep them up with the files (``.memfs/pending``: every path a write changes, which the next search
  in any process indexes, so a write never pays for a Whoosh commit; ``found``, ``seen-edits``), and
  every read through them (search, message search, term frequencies, problems).
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
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from . import _fs
from .appends import Appends
from .catalog import DEFAULT_FRESHNESS, Catalog
from .content import MAX_CONTENT_BYTES as MAX_CONTENT_BYTES  # its home is content.py; callers import it here too
from .content import check_content as check_content  # sync checks what it merges with it
from .documents import Document, dumps, load_bytes, timestamp
from .edits import Edits
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ConflictMarkersError,
    InvalidArgumentError,
    LinkError,
    MemoryNotFoundError,
)
from .history import DEFAULT_PERSON, GitHistory, Identity, has_conflict_markers
from .indexing import MAX_INDEXED_BYTES
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
    is_content,
    label,
)
from .paths import is_plain
from .semantic import Embedder
from .statefiles import (
    OwnStat,
    holding,
    private_folder,
    read_limit,
    read_regular,
)

log = logging.getLogger(__name__)

#: Obsidian's window layout and caches (one person's, changed on every click) are never committed; its
#: shareable settings (``app.json``, plugins, themes) may be.
_GITIGNORE_LINES = (".memfs/", _fs.TEMP_PREFIX + "*", "**/.obsidian/workspace*.json", "**/.obsidian/cache")
_MARKER_TEXT = b"memfs vault: this file keeps memories/ in git, so a clone of a vault with no memories yet opens\n"


class WriteEngine:
    """The lock, the transactions, the files and the commits of one vault, and the collaborators that hold the rest.

    Args:
        root: The vault folder (it exists).
        author: Who writes through this engine (an agent by default).
        person: Who edits files by hand; None: the git identity configured when each of their
            edits is committed (see :attr:`person`).
        lock_timeout: Seconds to wait for the vault lock before raising LockTimeoutError.
        durable: fsync files and folders on every write.
        setup: Complete the vault's layout (``memories/`` and its marker, ``.gitignore``) and
            commit it; False leaves the folder and its history exactly as they are.
        freshness: Handed to the catalog (see :attr:`memfs.catalog.Catalog.freshness`).
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
        private_folder(self.state_dir)
        self._lock = _fs.VaultLock(self.state_dir / "lock", timeout=lock_timeout)
        self._change: Transaction | None = None
        with self._lock.hold():
            self.history = GitHistory(root, self.state_dir, lock_timeout=lock_timeout, shared=bool(shared))
            if shared is not None and shared != self.history.shared():
                self.history.share(shared)
            #: The modes of the files and folders memfs creates: private (0600 and 0700), or shared
            #: with the group (0660 and 2770) when the repository says ``core.sharedRepository``
            #: (``Vault.open(..., shared=True)``, ``memfs init --shared``); never wider than the umask.
            #: ``.memfs/`` is always private. A file memfs rewrites keeps its mode.
            self.modes = _fs.SHARED if self.history.shared() else _fs.PRIVATE
            #: The index, the vectors and their queues, and every read through them (search). Its
            #: queues first (recovering a transaction notes the paths it puts back for the index),
            #: its index once the files are whole again.
            self.catalog = Catalog(
                root,
                self.state_dir,
                lock=self._lock,
                history=self.history,
                read=self._regular,
                commit_edits=self.commit_outside_edits,
            )
            #: The crash journal (``.memfs/journal``).
            self.journal = Journal(
                root,
                self.state_dir,
                self.history,
                durable=durable,
                modes=self.modes,
                mark_pending=self.catalog.mark_pending,
                inside=_inside,
            )
            #: Transcripts written in place and the record of memfs's own writes (``.memfs/own``, ``salvage/``).
            self.appends = Appends(
                root,
                self.state_dir,
                self._lock,
                durable=durable,
                modes=self.modes,
                mark_pending=self.catalog.mark_pending,
            )
            #: People's edits, and those held back (``.memfs/held``).
            self.edits = Edits(root, self.state_dir, self.history, self._lock, self.appends, read_text=_read_text_file)
            self.journal.recover()
            if setup:
                self._ensure_layout()
            self.catalog.open(lock_timeout=lock_timeout, freshness=freshness, embedder=embedder)

    def close(self) -> None:
        """Index what is pending, then release the index and git helper processes."""
        self.catalog.close()
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
        with holding(self._lock):
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
        with holding(self._lock):
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
        return read_regular(self.root, rel, own=own)

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
        with holding(self._lock):
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
        with holding(self._lock):
            changed = self.edits.ready(paths, allow_secrets)
            if paths is None:
                self.catalog.forget_seen()
            if not changed:
                return None
            if message is None and len(changed) == 1:
                message = f"edit: {changed[0]} (changed outside memfs)"
            elif message is None:
                message = f"edit: {len(changed)} files changed outside memfs"
            return self.commit(changed, message, {"Memfs-Op": "reconcile"}, author=self.person)


def engine_of(owner: Any) -> WriteEngine:
    """The write engine behind a Vault (or the engine itself)."""
    engine = getattr(owner, "engine", owner)
    if not isinstance(engine, WriteEngine):
        raise InvalidArgumentError(f"expected a memfs Vault, got {type(owner).__name__}")
    return engine


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
