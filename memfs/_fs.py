"""File-system primitives: the one seam for every change memfs makes on disk, and the vault lock.

Every operation that changes a vault (a write, an fsync, a rename, an unlink, a truncate, a git
command that writes) passes through :func:`checkpoint` first. In production that is one test of
a global; a test installs a :class:`FaultPlan` to make the N-th operation fail with ENOSPC or
EIO, write only part of its bytes, or kill the process there, the way SQLite's test VFS does, and
then checks that nothing acknowledged was lost and nothing unacknowledged was kept.

It is also the **path gate**: a file of the vault is reached through no symbolic link. A link
inside a vault can lead anywhere on the machine (a planted ``memories/users/alice/notes ->
/home/alice/.ssh``), so :func:`folder` opens a vault folder one component at a time, each
relative to the one before with ``O_NOFOLLOW | O_DIRECTORY``, and every read, write, rename and
delete then names its file relative to that open folder (``openat``, ``renameat2``, ``linkat``,
``unlinkat``), again with ``O_NOFOLLOW``. The check is made by the call that opens, not before
it: a link swapped in after any earlier look is refused (:class:`~memfs.errors.LinkError`), and
a folder renamed away after it was opened keeps receiving the write wherever it now is, never a
link's target.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import secrets
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import LinkError, LockTimeoutError

TEMP_PREFIX = ".memfs-tmp-"
FAULTS = ("enospc", "eio", "short", "full", "kill")
_ALLOCATING = ("create", "write", "mkdir", "git")  # what a full disk refuses; unlink, rename, truncate go on


@dataclass
class FaultPlan:
    """Where a test wants the file system to fail: the ``at``-th operation (1-based), and how.

    Attributes:
        at: Which operation fails, counting every checkpoint (or only those whose name starts
            with ``only``).
        fault: ``enospc`` or ``eio`` (the operation raises that OSError), ``short`` (a write
            writes half its bytes and then raises ENOSPC, like a disk filling up mid-write), ``full``
            (that operation and every later one that needs room fail with ENOSPC, as on a full
            disk, while removing and renaming still work), or ``kill`` (the process is killed
            with SIGKILL before the operation).
        only: Count only operations whose name starts with this (``write``, ``git``, ...).
        seen: The names of the operations counted so far (what a test can loop over).
    """

    at: int
    fault: str = "enospc"
    only: str = ""
    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}, got {self.fault!r}")

    @property
    def fired(self) -> bool:
        """True once the planned operation was reached."""
        return len(self.seen) >= self.at


_plan: FaultPlan | None = None


@contextlib.contextmanager
def faults(plan: FaultPlan) -> Iterator[FaultPlan]:
    """Install ``plan`` for a ``with`` block (tests only)."""
    global _plan
    previous, _plan = _plan, plan
    try:
        yield plan
    finally:
        _plan = previous


def checkpoint(op: str, size: int | None = None) -> int | None:
    """Called before every operation that changes the vault; returns a byte limit for a short write."""
    plan = _plan
    if plan is not None and plan.fired and plan.fault == "full" and op.startswith(_ALLOCATING):
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (the disk is still full at {op})")
    if plan is None or not op.startswith(plan.only) or plan.fired:
        return None
    plan.seen.append(op)
    if not plan.fired:
        return None
    if plan.fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if plan.fault == "short" and size:
        return size // 2
    code = errno.EIO if plan.fault == "eio" else errno.ENOSPC
    raise OSError(code, f"{os.strerror(code)} (fault injected at {op})")


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half.

    A temporary file in the same folder is written, flushed and fsynced, renamed over the
    target, and the folder is fsynced so the rename itself survives a crash. On any error
    the temporary file is removed and the original is untouched.
    """
    tmp = write_temp(path, data, durable=durable)
    try:
        checkpoint("replace")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


def write_temp(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """A new temporary file beside ``path`` holding ``data`` (fsynced when durable); the caller renames it."""
    folder = path.parent
    if not folder.is_dir():
        checkpoint("mkdir")
        folder.mkdir(parents=True, exist_ok=True)
    checkpoint("create")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX)
    try:
        try:
            write_all(fd, data)
            if durable:
                checkpoint("fsync")
                os.fdatasync(fd)
            os.fchmod(fd, 0o644)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``: ``os.write`` may write fewer than it was given."""
    view = memoryview(data)
    while view:
        limit = checkpoint("write", len(view))
        written = os.write(fd, view[:limit] if limit is not None else view)
        view = view[written:]
        if limit is not None:  # a fault planned as a short write: the disk is full after it
            raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (fault injected after a short write)")


def write_back(fd: int, data: bytes) -> None:
    """Write ``data`` at ``fd``'s position into room the same file just gave back (a rewind, a rollback).

    Counted as an ``overwrite``: a disk that is full still takes it, since the blocks are the ones
    the file freed a moment ago.
    """
    checkpoint("overwrite")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def unlink(path: Path | str, *, dir_fd: int | None = None) -> None:
    """Remove a file (through the fault seam); ``dir_fd``: ``path`` is a name in that open folder."""
    checkpoint("unlink")
    os.unlink(path, dir_fd=dir_fd)


def link(source: Path | str, target: Path | str, *, src_dir_fd: int | None = None,
         dst_dir_fd: int | None = None) -> None:  # fmt: skip
    """A new name for ``source``; fails if ``target`` exists (a create that never overwrites).

    With dir fds, both are names in those open folders, and a ``source`` that is a link is linked
    as the link itself, never followed.
    """
    checkpoint("link")
    os.link(source, target, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd, follow_symlinks=False)


def truncate(fd: int, size: int) -> None:
    """Cut the open file ``fd`` to ``size`` bytes (through the fault seam)."""
    checkpoint("truncate")
    os.ftruncate(fd, size)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: object = None


def exchange(a: Path | str, b: Path | str, *, dir_fd: int | None = None) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where not supported.

    After a swap, ``a`` holds what was at ``b``: the caller sees exactly which file it replaced,
    so a save by another program between reading and replacing cannot go unnoticed. With
    ``dir_fd``, both are names in that open folder.
    """
    global _renameat2
    checkpoint("exchange")
    if _renameat2 is None:
        try:
            function = ctypes.CDLL(None, use_errno=True).renameat2
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            _renameat2 = function
        except (AttributeError, OSError):
            _renameat2 = False
    if _renameat2 is False:
        return False
    at = _AT_FDCWD if dir_fd is None else dir_fd
    result = _renameat2(at, os.fsencode(a), at, os.fsencode(b), _RENAME_EXCHANGE)  # type: ignore[operator]
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False  # a file system (or kernel) without the exchange: the caller replaces instead
    raise OSError(code, f"{os.strerror(code)}: {a} <-> {b}")


def fsync_dir(folder: Path) -> None:
    """Make renames and unlinks in ``folder`` durable."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems refuse fsync on folders
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


# -- the path gate: no symbolic link below the vault root ----------------------------------------


def split(rel: str) -> tuple[str, str]:
    """A vault path as (its folder, its name): ``memories/a/x.md`` -> ``("memories/a", "x.md")``."""
    folder, _, name = rel.rpartition("/")
    return folder, name


@contextlib.contextmanager
def folder(root: Path, rel: str, *, create: bool = False) -> Iterator[int]:
    """The vault folder ``rel`` open for a ``with`` block (see :func:`open_folder`)."""
    fd = open_folder(root, rel, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_folder(root: Path, rel: str, *, create: bool = False) -> int:
    """An open fd of the vault folder ``rel`` ("" for the vault itself), reached through no link.

    Each component is opened relative to the one before with ``O_NOFOLLOW | O_DIRECTORY``, so
    no component below ``root`` can be a symbolic link, whenever it was put there. ``root``
    itself may be a link (a person's choice of where the vault lives). The caller closes the fd.

    Args:
        root: The vault folder.
        rel: A vault path of a folder, already checked as a relative path (no ``..``).
        create: Make missing folders (each one a ``mkdir`` at the fault seam).

    Raises:
        LinkError: A component is a symbolic link.
        FileNotFoundError: A folder is missing (and ``create`` is False).
        NotADirectoryError: A component is a file.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in rel.split("/") if rel else ():
            if part in ("", ".", ".."):
                raise LinkError(f"{rel}: not a plain vault path")
            try:
                inner = _open_component(fd, part, rel)
            except FileNotFoundError:
                if not create:
                    raise
                checkpoint("mkdir")
                with contextlib.suppress(FileExistsError):  # made meanwhile by another writer: opened below
                    os.mkdir(part, 0o755, dir_fd=fd)
                inner = _open_component(fd, part, rel)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_component(parent: int, part: str, rel: str) -> int:
    try:
        return os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and is_link_at(parent, part):
            raise LinkError(f"{rel} goes through a symbolic link ({part}), which memfs never follows") from None
        raise


def is_link_at(dir_fd: int, name: str) -> bool:
    """True when ``name`` in the open folder ``dir_fd`` is a symbolic link."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def exists_at(dir_fd: int, name: str) -> bool:
    """True when anything (a file, a folder, a link) is named ``name`` in the open folder ``dir_fd``."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def exists(root: Path, rel: str) -> bool:
    """True when anything is at the vault path ``rel`` (LinkError if a folder on the way is a link)."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            return exists_at(dfd, name)
    except (FileNotFoundError, NotADirectoryError):
        return False


def is_file(root: Path, rel: str) -> bool:
    """True when a regular file is at the vault path ``rel``; LinkError when a link is on the way or there."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if stat.S_ISLNK(st.st_mode):
        raise LinkError(f"{rel} is a symbolic link, which memfs never follows")
    return stat.S_ISREG(st.st_mode)


def open_at(dir_fd: int, name: str, flags: int, mode: int = 0o644, *, rel: str = "") -> int:
    """``os.open`` of ``name`` in an open folder, never following a link (LinkError if it is one)."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno in (errno.ENOTDIR, errno.EEXIST) and is_link_at(dir_fd, name)):
            raise LinkError(f"{rel or name} is a symbolic link, which memfs never follows") from None
        raise


def open_file(root: Path, rel: str, flags: int, mode: int = 0o644, *, create_folders: bool = False) -> int:
    """``os.open`` of the vault file ``rel`` through the gate: no link on the way, nor the file itself."""
    parent, name = split(rel)
    with folder(root, parent, create=create_folders) as dfd:
        return open_at(dfd, name, flags, mode, rel=rel)


def read_at(dir_fd: int, name: str, *, rel: str = "") -> tuple[bytes, int] | None:
    """The bytes and permission bits of regular file ``name`` in an open folder; None if there is none.

    A name that is a folder, a FIFO or a device reads as None (without blocking); a link raises
    LinkError.
    """
    try:
        fd = open_at(dir_fd, name, os.O_RDONLY | os.O_NONBLOCK, rel=rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)


def read_file(root: Path, rel: str) -> tuple[bytes, int] | None:
    """The bytes and permission bits of the vault file ``rel`` through the gate; None if there is none.

    Raises:
        LinkError: A folder on the way, or the file, is a symbolic link.
    """
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            return read_at(dfd, name, rel=rel)
    except (FileNotFoundError, NotADirectoryError):
        return None


def linked(root: Path, rel: str) -> bool:
    """True when a component of the vault path ``rel`` (a folder on the way, or the file) is a link."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            return is_link_at(dfd, name)
    except LinkError:
        return True
    except OSError:
        return False


def write_temp_at(dir_fd: int, data: bytes, *, durable: bool = True, mode: int = 0o644) -> str:
    """A new temporary file in an open folder holding ``data`` (fsynced when durable); its name."""
    checkpoint("create")
    while True:
        name = TEMP_PREFIX + secrets.token_hex(6)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=dir_fd)  # fmt: skip
            break
        except FileExistsError:
            continue
    try:
        try:
            write_all(fd, data)
            if durable:
                checkpoint("fsync")
                os.fdatasync(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    return name


def write_file(root: Path, rel: str, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Replace the vault file ``rel`` with ``data`` and exactly ``mode``, atomically, through the gate.

    As :func:`atomic_write`: readers see the old file or the new one. A missing folder is made; a
    link on the way (or at ``rel``) raises LinkError and nothing is written.
    """
    parent, name = split(rel)
    with folder(root, parent, create=True) as dfd:
        if is_link_at(dfd, name):
            raise LinkError(f"{rel} is a symbolic link, which memfs never follows")
        tmp = write_temp_at(dfd, data, durable=durable, mode=mode)
        try:
            checkpoint("replace")
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        if durable:
            fsync_fd(dfd)


def overwrite_file(root: Path, rel: str, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Write ``data`` over the vault file ``rel`` in place, with exactly ``mode``, through the gate.

    For putting old bytes back when a full disk leaves no room for a temp file: the bytes go into
    the blocks the file just gave back (:func:`write_back`).
    """
    fd = open_file(root, rel, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, 0)
        write_back(fd, data)
        os.fchmod(fd, mode)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def remove_file(root: Path, rel: str) -> None:
    """Remove the vault file ``rel`` through the gate (nothing if it is gone already)."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            unlink(name, dir_fd=dfd)
    except (FileNotFoundError, NotADirectoryError):
        pass


def fsync_fd(dir_fd: int) -> None:
    """Make renames and unlinks in an open folder durable (as :func:`fsync_dir`)."""
    try:
        os.fsync(dir_fd)
    except OSError as exc:  # some file systems refuse fsync on folders
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise


def sweep_temp_files(root: Path, *, older_than: float = 0.0, folders: set[Path] | None = None) -> list[Path]:
    """Remove temporary files a killed writer left behind (under ``root``, or only in ``folders``).

    Call it holding the vault lock: memfs's writers make temp files only under that lock, so
    any there then belongs to a dead process.
    """
    now = time.time()
    removed = []
    candidates = root.rglob(TEMP_PREFIX + "*") if folders is None else (
        tmp for folder in folders for tmp in folder.glob(TEMP_PREFIX + "*"))  # fmt: skip
    for tmp in candidates:
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime >= older_than:
                tmp.unlink()
                removed.append(tmp)
    return removed


class VaultLock:
    """A lock shared by the threads of this process and by other processes.

    Re-entrant within a thread. Between processes it is an ``flock`` on a file under
    ``.memfs/``, which the kernel releases when a process dies, so a crash never leaves
    the vault locked.
    """

    def __init__(self, path: Path, *, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextlib.contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the ``with`` block; raises LockTimeout if it cannot be had."""
        limit = self.timeout if timeout is None else timeout
        if not self._thread_lock.acquire(timeout=limit):
            raise LockTimeoutError(f"vault lock {self.path} is held by another thread for over {limit} s")
        try:
            if self._depth == 0:
                self._acquire_file(limit)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release_file()
        finally:
            self._thread_lock.release()

    @property
    def held(self) -> bool:
        """True if the current thread holds the lock."""
        return self._depth > 0 and self._thread_lock._is_owned()  # type: ignore[attr-defined]

    def _acquire_file(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        delay = 0.001
        fd = self._open_file()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise LockTimeoutError(
                        f"vault lock {self.path} is held by another process for over {limit} s"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
                continue
            if self._is_current(fd):
                self._fd = fd
                return
            os.close(fd)  # the lock file was deleted or replaced: lock the one in place now
            fd = self._open_file()

    def _open_file(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # its folder (.memfs/) was deleted: it holds derived state only
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def _is_current(self, fd: int) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (st.st_ino, st.st_dev) == (held.st_ino, held.st_dev)

    def _release_file(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
