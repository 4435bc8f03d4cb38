"""File-system primitives: atomic writes and the vault lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import LockTimeoutError

TEMP_PREFIX = ".memfs-tmp-"


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half.

    A temporary file in the same folder is written, flushed and fsynced, renamed over the
    target, and the folder is fsynced so the rename itself survives a crash. On any error
    the temporary file is removed and the original is untouched.
    """
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX)
    try:
        try:
            handle = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fdatasync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(folder)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``: ``os.write`` may write fewer than it was given."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


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


def sweep_temp_files(root: Path, *, older_than: float = 60.0) -> list[Path]:
    """Remove temporary files that a killed writer left behind under ``root``."""
    now = time.time()
    removed = []
    for tmp in root.rglob(TEMP_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime > older_than:
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
