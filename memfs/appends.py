"""Transcripts written in place, with the record of memfs's own writes of them.

A session's transcript is appended to, truncated and replaced here (never through a transaction:
a commit follows when its session's policy says), all or nothing. Three records belong to it:

- ``.memfs/own``: the transcripts memfs itself wrote lately, with the file's stat after memfs's last
  write and whether that write is still uncommitted (a session whose commit policy is not "every
  turn"). A person's edit is a file that differs from git *and* from this record; memfs's own
  pending writes are never committed under a person's name. The stat also tells a session that a
  shorter file is memfs's own doing (another session object popped or cleared), and where memfs's
  last complete write ended, so that an append cut short by a killed writer is recognised and cut
  off before the next one.
- ``.memfs/salvage/``: the bytes of such an interrupted append, cut off the transcript.
- In memory, what this process appended lately to each transcript (:class:`Tail`), shared by every
  session object on it: the entries a person's editor dropped with a stale save are put back from it.

The :class:`~memfs.engine.WriteEngine` holds one :class:`Appends` (``engine.appends``) and commits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _fs
from .errors import ConflictError, LinkError
from .statefiles import OwnStat, _stat, holding, private_folder, read_state
from .transcript import classify_tail, partial_heading

log = logging.getLogger(__name__)

OWN_KEPT = 64  # committed transcripts whose last write the own record keeps (besides every uncommitted one)


@dataclass
class _Rewind:
    """How to put a transcript back as it was when a :meth:`Appends.rewinding` block began."""

    stat: OwnStat | None  # the file as memfs last left it inside the block (None: no file)
    existed: bool
    began: OwnStat | None
    low: int  # the bytes [0, low) are still as they were
    saved: bytes  # the bytes [low, size) as they were
    own: list[int] | None  # memfs's record of the file when the block began


@dataclass
class Tail:
    """What this process last wrote to one transcript, shared by every session object on it."""

    stat: OwnStat | None = None  # the file after this process's last write (None: none yet)
    n: int = 0  # the position of the last entry then
    entries: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # its latest entries, to put back

    def copy(self) -> Tail:
        """A copy to put back if a write fails."""
        return Tail(self.stat, self.n, dict(self.entries))


class Appends:
    """The transcripts of one vault written in place, and memfs's record of its own writes of them.

    Args:
        root: The vault folder.
        state_dir: Its ``.memfs/`` folder (``own`` and ``salvage/`` in it).
        lock: The vault lock (the engine's), held for every write.
        durable: fsync what is written.
        modes: The modes of files memfs creates.
        mark_pending: Told the vault paths written (their index entries must be brought up to date).
    """

    def __init__(
        self,
        root: Path,
        state_dir: Path,
        lock: _fs.VaultLock,
        *,
        durable: bool,
        modes: _fs.Modes,
        mark_pending: Callable[[Iterable[str]], None],
    ) -> None:
        self.root = root
        self.state_dir = state_dir
        self._lock = lock
        self.durable = durable
        self.modes = modes
        self.mark_pending = mark_pending
        self._own_file = self.state_dir / "own"
        self.salvage_dir = self.state_dir / "salvage"
        self._rewinds: dict[str, _Rewind] = {}
        # Transcripts written inside a rewind block and not fsynced yet: the commit that ends the
        # block fsyncs them with its own objects (one wait for the disk), else the block's end does.
        self.unsynced: set[str] = set()
        self._own_cache: tuple[OwnStat, dict[str, list[int]]] | None = None  # see _own_record
        self._tails: dict[str, Tail] = {}  # see tail

    def tail(self, rel: str) -> Tail:
        """What this process last appended to transcript ``rel``: every session object on it shares this one."""
        return self._tails.setdefault(rel, Tail())

    def append(self, rel: str, data: bytes, *, expect: tuple[int, int] | None = None) -> int:
        """Append ``data`` to an existing file, all or nothing; returns the file's new size.

        Not committed: the caller commits when its policy says (:meth:`WriteEngine.commit`); until then
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
        with holding(self._lock):
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
                    self.mark_pending([rel])
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
        with holding(self._lock):
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
            self.mark_pending([rel])

    def replace(self, rel: str, data: bytes) -> None:
        """Write a whole file atomically (a new transcript); not committed."""
        with holding(self._lock):
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
        with holding(self._lock):
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
        with holding(self._lock):
            if rel in self._rewinds:
                yield
                return
            self._rewinds[rel] = self._rewind_base(rel)
            try:
                yield
                self._sync_now(rel)  # not committed in the block: made durable before the block returns
            except BaseException:
                self.unsynced.discard(rel)
                self._rewind(rel, self._rewinds.pop(rel))
                raise
            finally:
                self._rewinds.pop(rel, None)

    def _sync_soon(self, rel: str, fd: int, *, data: bool = False) -> None:
        """A transcript was just written through ``fd``: fsync it now, or with the commit that ends its rewind block."""
        if not self.durable:
            return
        if rel in self._rewinds:
            self.unsynced.add(rel)
        elif data:
            os.fdatasync(fd)
        else:
            os.fsync(fd)

    def _sync_now(self, rel: str) -> None:
        if rel not in self.unsynced:
            return
        self.unsynced.discard(rel)
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
            self.mark_pending([rel])
        except OSError as exc:
            log.error("could not put %s back after a failed write: %s", rel, exc)

    def own_uncommitted(self) -> dict[str, OwnStat]:
        """The files memfs changed and has not committed yet, with their stat after memfs's write."""
        return {rel: (v[0], v[1], v[2]) for rel, v in self._own_record().items() if v[3]}

    def last_write(self, rel: str) -> OwnStat | None:
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
            raw = json.loads(read_state(self._own_file) or b"{}")
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

    def _restamp_own(self, rel: str, was: OwnStat, fd: int) -> None:
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

    def forget_own(self, paths: Iterable[str]) -> None:
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
        private_folder(self.state_dir)  # .memfs/ may have been deleted: it is made again
        _fs.write_private(tmp, json.dumps(own).encode("utf-8"))
        os.replace(tmp, self._own_file)
        seen = _stat(self._own_file)
        self._own_cache = None if seen is None else (seen, {k: list(v) for k, v in own.items()})
