"""The crash journal: a transaction half done by a killed process is finished by the next one.

Before a transaction first changes a file, its old bytes and mode and a digest of the new ones go
into ``.memfs/journal`` (with HEAD as the commit will start from it). A process killed in the middle
leaves the journal; the next transaction, in any process, rolls the files back, or forward if the
commit had landed (:meth:`Journal.recover`). A transaction that fails in the process puts its files
back the same way (:meth:`Journal.roll_back`). The :class:`~memfs.engine.WriteEngine` runs the
transactions and is given its journal.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _fs
from .errors import FileTooLargeError, LinkError
from .history import GitHistory
from .statefiles import read_regular

log = logging.getLogger(__name__)


@dataclass
class Transaction:
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


class Journal:
    """The crash journal of one vault (``.memfs/journal``): what a transaction changes, until it ends.

    Args:
        root: The vault folder.
        state_dir: Its ``.memfs/`` folder.
        history: The vault's git history (HEAD, and the bytes a commit holds).
        durable: fsync the journal as it grows, and the files put back.
        modes: The modes of files memfs creates (a file put back that had none recorded gets them).
        mark_pending: Told the vault paths a roll back put back (their index entries are stale).
        inside: Whether a path read back from the journal (outside input after a crash) is a plain
            vault path under the content folders: ``inside(root, rel)``.
    """

    def __init__(
        self,
        root: Path,
        state_dir: Path,
        history: GitHistory,
        *,
        durable: bool,
        modes: _fs.Modes,
        mark_pending: Callable[[Iterable[str]], None],
        inside: Callable[[Path, str], bool],
    ) -> None:
        self.root = root
        self.file = state_dir / "journal"
        self.history = history
        self.durable = durable
        self.modes = modes
        self.mark_pending = mark_pending
        self.inside = inside

    def roll_back(self, change: Transaction) -> None:
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
        self.end()
        with contextlib.suppress(OSError):  # the write already marked them; a full disk may refuse this
            self.mark_pending(change.contents)

    def _plain_folders(self, paths: Iterable[str]) -> set[Path]:
        """The folders of ``paths`` reached through no link (where temp files may be swept)."""
        folders = {_fs.split(rel)[0] for rel in paths}
        return {self.root / f for f in folders if not _fs.linked(self.root, f)}

    def remember(
        self, change: Transaction, rel: str, original: bytes | None, new: bytes | None, mode: int | None = None
    ) -> None:
        """Before a file changes: its old bytes and mode and a hash of the new ones, in memory and in the journal."""
        change.paths.add(rel)
        change.originals.setdefault(rel, original)
        if mode is not None and rel not in change.modes and change.originals[rel] is original:
            change.modes[rel] = mode
        records: list[dict[str, Any]] = []
        if not self.file.exists():
            # HEAD as the commit will start from it (a first guess, moved by compare-and-swap), and as
            # recovery compares with: a HEAD that moved since means the commit landed
            change.base = self.history.head_guess()
            records.append({"base": change.base[0]})
        encoded = None if original is None else base64.b64encode(original).decode()
        record: dict[str, Any] = {"path": rel, "original": encoded, "new": _digest(new)}
        if mode is not None and original is not None:
            record["mode"] = mode
        self._append(*records, record)

    def _append(self, *records: dict[str, Any]) -> None:
        fd = os.open(self.file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _fs.write_all(fd, "".join(json.dumps(record) + "\n" for record in records).encode())
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _as_committed(self, rel: str) -> bytes | None:
        data = read_regular(self.root, rel)
        return None if data is None else self.history.committed_form(data)

    def _holds(self, rel: str, wrote: bytes | None) -> bool:
        """True when the vault file ``rel`` still holds what memfs wrote (None: no file), through the gate.

        A link there now is never memfs's: it is left alone. Sizes are compared before reading.
        """
        return _fs.vault_file_holds(self.root, rel, wrote)

    def _landed(self, rel: str, digest: str | None) -> bool:
        """True if ``rel`` holds the bytes of this digest (None: no file); a link or a file too large does not."""
        try:
            return _digest(read_regular(self.root, rel)) == digest
        except (FileTooLargeError, LinkError):
            return False

    def _committed_now(self, rel: str, head: str | None) -> bool:
        try:
            return self._as_committed(rel) == self.history.bytes_at(rel, head)
        except (FileTooLargeError, LinkError):  # memfs never wrote that
            return False

    def end(self) -> None:
        """The transaction is over (committed, or rolled back): the journal, which holds old bytes, goes."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.file)

    def recover(self) -> None:
        """Finish a transaction a killed process left half done: forward if it committed, else back.

        Runs when the engine opens and before every transaction; the journal (which holds old bytes)
        is gone afterwards.
        """
        try:
            lines = self.file.read_bytes().splitlines()
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
            if (
                isinstance(record, dict)
                and isinstance(record.get("path"), str)
                and self.inside(self.root, record["path"])
            ):
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
            self.mark_pending(files)
        _fs.sweep_temp_files(self.root, folders=self._plain_folders(files))
        self.end()


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


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
