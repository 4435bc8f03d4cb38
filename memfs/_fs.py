"""File-system primitives: the one seam for every change memfs makes on disk, and the vault lock.

Files and folders are private unless the vault is shared: a new file is 0600 and a new folder
0700 (:data:`PRIVATE`), or 0660 and 2770 in a vault shared with a group (:data:`SHARED`), and
never wider than the umask allows. A file that is replaced keeps the mode it had.

Every operation that changes a vault (a write, an fsync, a rename, an unlink, a truncate, a git
command that writes) passes through :func:`checkpoint` first. In production that is one test of
a global; a test installs a :class:`FaultPlan` to make the N-th operation fail with ENOSPC or
EIO, write only part of its bytes, or kill the process there, the way SQLite's test VFS does, and
then checks that nothing acknowledged was lost and nothing unacknowledged was kept.

Reads are bounded: :func:`read_file` looks at a file's size (``fstat``) before it reads a byte
and refuses one over the caller's limit, so a 2 GiB sparse file dropped into a vault costs a
stat, not the process's memory (:func:`read_vault_file` does the same through the gate).

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import FileTooLargeError, LinkError, LockTimeoutError
from .paths import is_plain

TEMP_PREFIX = ".memfs-tmp-"
FAULTS = ("enospc", "eio", "short", "full", "kill", "stall")
_ALLOCATING = ("create", "write", "mkdir", "git")  # what a full disk refuses; unlink, rename, truncate go on
_WRITING = ("write", "overwrite")  # a stall's first write; later ones too, but for room just freed (full)
_STALLS_BEFORE_SPINNING = 100


@dataclass
class FaultPlan:
    """Where a test wants the file system to fail: the ``at``-th operation (1-based), and how.

    Attributes:
        at: Which operation fails, counting every checkpoint (or only those whose name starts
            with ``only``).
        fault: ``enospc`` or ``eio`` (the operation raises that OSError), ``short`` (a write
            writes half its bytes and then raises ENOSPC, like a disk filling up mid-write), ``full``
            (that operation and every later one that needs room fail with ENOSPC, as on a full
            disk, while removing and renaming still work), ``stall`` (that write, and later ones
            as a full disk refuses them, write nothing: ``os.write`` returns 0, as some full or FUSE
            file systems answer, instead of raising), or ``kill`` (the process is killed with
            SIGKILL before the operation).
        only: Count only operations whose name starts with this (``write``, ``git``, ...).
        seen: The names of the operations counted so far (what a test can loop over).
        stalls: How many writes a ``stall`` answered with 0 bytes written.
    """

    at: int
    fault: str = "enospc"
    only: str = ""
    seen: list[str] = field(default_factory=list)
    stalls: int = 0

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}, got {self.fault!r}")

    @property
    def fired(self) -> bool:
        """True once the planned operation was reached."""
        return len(self.seen) >= self.at


_plan: FaultPlan | None = None


@dataclass(frozen=True)
class Modes:
    """The modes memfs gives the files and folders it creates, before the umask takes its bits away.

    Attributes:
        file: A new file's mode (0600: only the owner reads and writes it).
        folder: A new folder's mode (0700; 2770 for a group: the setgid bit keeps new files in the
            folder's group).
    """

    file: int = 0o600
    folder: int = 0o700

    def new_file(self) -> int:
        """The mode of a new file: :attr:`file` less the umask's bits."""
        return self.file & ~umask() & 0o777

    def new_folder(self) -> int:
        """The mode of a new folder: :attr:`folder` less the umask's bits (setgid kept)."""
        return self.folder & ~umask() & 0o7777


PRIVATE = Modes()
SHARED = Modes(0o660, 0o2770)


def umask() -> int:
    """The process's umask, read without changing it.

    ``os.umask`` can only be read by setting it, which races with every thread creating a file
    meanwhile; Linux shows it in ``/proc/self/status``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:  # no /proc (or a kernel before 4.7): set it and put it back at once
        current = os.umask(0o077)
        os.umask(current)
    return current


_umask_lock = threading.Lock()


def make_folders(folder: Path, modes: Modes = PRIVATE) -> None:
    """Create ``folder`` and any missing parents, each with ``modes.folder`` (less the umask)."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    mode = modes.new_folder()
    for new in reversed(missing):
        try:
            os.mkdir(new, mode & 0o777)
        except FileExistsError:
            continue  # made meanwhile by another writer: its mode is theirs
        if mode & ~0o777:  # mkdir drops the setgid bit it is given
            os.chmod(new, mode)


def mode_for(path: Path, modes: Modes = PRIVATE) -> int:
    """The mode a write of ``path`` gives it: the mode it has (a rewrite keeps it), else a new file's."""
    try:
        st = os.lstat(path)
    except OSError:
        return modes.new_file()
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else modes.new_file()


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
    if plan is not None and plan.fired and plan.fault == "stall" and op.startswith("write"):
        plan.stalls += 1
        if plan.stalls > _STALLS_BEFORE_SPINNING:  # a loop that retries a write which wrote nothing
            raise RuntimeError(f"{op} was retried {plan.stalls} times after writes that wrote nothing")
        return 0
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
    if plan.fault == "stall" and op.startswith(_WRITING):
        plan.stalls += 1
        return 0
    code = errno.EIO if plan.fault == "eio" else errno.ENOSPC
    raise OSError(code, f"{os.strerror(code)} (fault injected at {op})")


def atomic_write(path: Path, data: bytes, *, durable: bool = True, modes: Modes = PRIVATE) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half.

    A temporary file in the same folder is written, flushed and fsynced, renamed over the
    target, and the folder is fsynced so the rename itself survives a crash. On any error
    the temporary file is removed and the original is untouched. The file keeps its mode; a new
    one gets ``modes.file`` (see :func:`mode_for`).
    """
    tmp = write_temp(path, data, durable=durable, modes=modes)
    try:
        checkpoint("replace")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


def write_private(path: Path, data: bytes) -> None:
    """Replace the state file ``path``'s content with ``data``; a new file is the owner's alone (0600)."""
    # state under .memfs/, written as before (no fault point of its own): only its mode is new
    with open(path, "wb", opener=lambda name, flags: os.open(name, flags, 0o600)) as handle:
        handle.write(data)


def write_temp(path: Path, data: bytes, *, durable: bool = True, modes: Modes = PRIVATE) -> Path:
    """A new temporary file beside ``path`` holding ``data`` (fsynced when durable); the caller renames it.

    It has the mode ``path`` will have: the one ``path`` has now, else a new file's (``modes``);
    missing folders are made with ``modes.folder``.
    """
    folder = path.parent
    if not folder.is_dir():
        checkpoint("mkdir")
        make_folders(folder, modes)
    mode = mode_for(path, modes)
    checkpoint("create")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX)
    try:
        _fill(fd, data, mode=mode, durable=durable)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def _fill(fd: int, data: bytes, *, mode: int, durable: bool) -> None:
    """Write ``data`` to a new temporary file, fsync it when durable, give it ``mode``, and close it."""
    try:
        write_all(fd, data)
        if durable:
            checkpoint("fsync")
            os.fdatasync(fd)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of ``data`` to ``fd``: ``os.write`` may write fewer than it was given.

    A write that writes nothing of what is left raises ENOSPC: a file system that answers 0 (full,
    FUSE) would otherwise be asked again forever, with the vault lock held.
    """
    view = memoryview(data)
    while view:
        limit = checkpoint("write", len(view))
        written = os.write(fd, view[:limit] if limit is not None else view)
        if not written:
            raise _no_progress(len(view))
        view = view[written:]
        if limit:  # a fault planned as a short write: the disk is full after it
            raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (fault injected after a short write)")


def write_back(fd: int, data: bytes) -> None:
    """Write ``data`` at ``fd``'s position into room the same file just gave back (a rewind, a rollback).

    Counted as an ``overwrite``: a disk that is full still takes it, since the blocks are the ones
    the file freed a moment ago.
    """
    view = memoryview(data)
    while view:
        limit = checkpoint("overwrite")
        written = os.write(fd, view[:limit] if limit is not None else view)
        if not written:
            raise _no_progress(len(view))
        view = view[written:]


def _no_progress(size: int) -> OSError:
    """A write that wrote nothing of a non-empty buffer: the disk is full (retrying would spin forever)."""
    return OSError(
        errno.ENOSPC,
        f"{os.strerror(errno.ENOSPC)} (a write of {size} bytes wrote nothing; the file system takes no more)",
    )


def read_file(path: Path | str, *, limit: int | None, name: str | None = None) -> bytes | None:
    """The bytes of a regular file, or None if there is none (a symbolic link reads as none).

    The size is checked (``fstat`` of the open file) before anything is read, and no more than
    ``limit`` bytes are ever read, so a huge or sparse file costs a stat.

    Args:
        path: The file.
        limit: The most bytes to read (None: no limit, for files memfs wrote itself).
        name: How errors name the file (its vault path); ``path`` by default.

    Raises:
        FileTooLargeError: The file is larger than ``limit`` (or grew past it while read).
    """
    fd = _open_regular(path)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        if limit is not None and st.st_size > limit:
            raise FileTooLargeError(name or os.fspath(path), st.st_size, limit)
        data = _read_up_to(fd, st.st_size if limit is None else limit + 1, to_end=limit is None, expect=st.st_size)
        if limit is not None and len(data) > limit:  # it grew since the stat
            raise FileTooLargeError(name or os.fspath(path), os.fstat(fd).st_size, limit)
        return data
    finally:
        os.close(fd)


def read_head(path: Path | str, size: int) -> bytes | None:
    """At most the first ``size`` bytes of a regular file; None if there is none (a link reads as none)."""
    fd = _open_regular(path)
    if fd is None:
        return None
    try:
        return _read_up_to(fd, size)
    finally:
        os.close(fd)


def _open_regular(path: Path | str) -> int | None:
    """A descriptor open for reading on a regular file, never through a final link; None if there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)  # a FIFO's open never waits
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def _read_up_to(fd: int, size: int, *, to_end: bool = False, expect: int | None = None) -> bytes:
    """``size`` bytes from ``fd``, fewer at its end; ``to_end``: on to the end, however far that is.

    ``expect`` is the size ``fstat`` gave: that much (and one byte more, to see the end) is read
    in one call, which costs a tenth of reading it in pieces and joining them (one buffer of the
    right size instead of several, each faulted into memory page by page).
    """
    chunks = []
    if expect is not None and expect > 0:
        first = os.read(fd, expect + 1 if to_end else min(size, expect + 1))
        if len(first) <= expect or (not to_end and len(first) >= size):
            return first
        chunks.append(first)
        size -= len(first)
    while size > 0 or to_end:
        chunk = os.read(fd, min(size, 1 << 20) if size > 0 else 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def holds(path: Path | str, data: bytes | None) -> bool:
    """True if ``path`` is a regular file of exactly these bytes (``data`` None: there is no such file).

    Sizes are compared first, so a file someone made huge is never read.
    """
    if data is None:
        try:
            return not stat.S_ISREG(os.lstat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return True
    try:
        return read_file(path, limit=len(data)) == data
    except FileTooLargeError:
        return False


def unlink(path: Path | str, *, dir_fd: int | None = None) -> None:
    """Remove a file (through the fault seam); ``dir_fd``: ``path`` is a name in that open folder."""
    checkpoint("unlink")
    os.unlink(path, dir_fd=dir_fd)


def link(
    source: Path | str, target: Path | str, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None
) -> None:
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
def folder(root: Path, rel: str, *, create: bool = False, modes: Modes = PRIVATE) -> Iterator[int]:
    """The vault folder ``rel`` open for a ``with`` block (see :func:`open_folder`)."""
    fd = open_folder(root, rel, create=create, modes=modes)
    try:
        yield fd
    finally:
        os.close(fd)


def open_folder(root: Path, rel: str, *, create: bool = False, modes: Modes = PRIVATE) -> int:
    """An open fd of the vault folder ``rel`` ("" for the vault itself), reached through no link.

    Each component is opened relative to the one before with ``O_NOFOLLOW | O_DIRECTORY``, so
    no component below ``root`` can be a symbolic link, whenever it was put there. ``root``
    itself may be a link (a person's choice of where the vault lives). The caller closes the fd.

    Args:
        root: The vault folder.
        rel: A vault path of a folder, already checked as a relative path (no ``..``).
        create: Make missing folders (each one a ``mkdir`` at the fault seam).
        modes: The vault's modes: a folder made gets ``modes.folder`` less the umask.

    Raises:
        LinkError: A component is a symbolic link.
        FileNotFoundError: A folder is missing (and ``create`` is False).
        NotADirectoryError: A component is a file.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in rel.split("/") if rel else ():
            if not is_plain(part):
                raise LinkError(f"{rel}: not a plain vault path")
            try:
                inner = _open_component(fd, part, rel)
            except FileNotFoundError:
                if not create:
                    raise
                checkpoint("mkdir")
                mode = modes.new_folder()
                try:
                    os.mkdir(part, mode & 0o777, dir_fd=fd)
                except FileExistsError:  # made meanwhile by another writer (its mode is theirs): opened below
                    inner = _open_component(fd, part, rel)
                else:
                    inner = _open_component(fd, part, rel)
                    if mode & ~0o777:  # mkdir drops the setgid bit it is given
                        os.fchmod(inner, mode)
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


def mode_at(dir_fd: int, name: str, modes: Modes = PRIVATE) -> int:
    """The mode a write of ``name`` in an open folder gives it: the one it has, else a new file's."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return modes.new_file()
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else modes.new_file()


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


def open_at(dir_fd: int, name: str, flags: int, mode: int = 0o600, *, rel: str = "") -> int:
    """``os.open`` of ``name`` in an open folder, never following a link (LinkError if it is one)."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno in (errno.ENOTDIR, errno.EEXIST) and is_link_at(dir_fd, name)):
            raise LinkError(f"{rel or name} is a symbolic link, which memfs never follows") from None
        raise


def open_file(
    root: Path, rel: str, flags: int, mode: int = 0o600, *, create_folders: bool = False, modes: Modes = PRIVATE
) -> int:
    """``os.open`` of the vault file ``rel`` through the gate: no link on the way, nor the file itself.

    Folders it makes (``create_folders``) get ``modes.folder``; a file it creates gets ``mode``.
    """
    parent, name = split(rel)
    with folder(root, parent, create=create_folders, modes=modes) as dfd:
        return open_at(dfd, name, flags, mode, rel=rel)


def read_at(dir_fd: int, name: str, *, limit: int | None, rel: str = "") -> tuple[bytes, int] | None:
    """The bytes and permission bits of regular file ``name`` in an open folder; None if there is none.

    A name that is a folder, a FIFO or a device reads as None (without blocking); a link raises
    LinkError. Bounded as :func:`read_file`: the size is checked (``fstat``) before a byte is read.

    Raises:
        FileTooLargeError: The file is larger than ``limit`` (or grew past it while read).
    """
    try:
        fd = open_at(dir_fd, name, os.O_RDONLY | os.O_NONBLOCK, rel=rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if limit is not None and st.st_size > limit:
            raise FileTooLargeError(rel or name, st.st_size, limit)
        data = _read_up_to(fd, st.st_size if limit is None else limit + 1, to_end=limit is None, expect=st.st_size)
        if limit is not None and len(data) > limit:  # it grew since the stat
            raise FileTooLargeError(rel or name, os.fstat(fd).st_size, limit)
        return data, stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)


def read_vault_file(root: Path, rel: str, *, limit: int | None) -> tuple[bytes, int] | None:
    """The bytes and permission bits of the vault file ``rel`` through the gate; None if there is none.

    Every read of a vault file comes here: no link on the way, and the size checked before reading.

    Args:
        root: The vault folder.
        rel: The file's vault path.
        limit: The most bytes to read (None: no limit, for files memfs wrote itself).

    Raises:
        LinkError: A folder on the way, or the file, is a symbolic link.
        FileTooLargeError: The file is larger than ``limit``.
    """
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            return read_at(dfd, name, limit=limit, rel=rel)
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_vault_head(root: Path, rel: str, size: int) -> bytes | None:
    """At most the first ``size`` bytes of the vault file ``rel`` through the gate; None if there is none."""
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            fd = open_at(dfd, name, os.O_RDONLY | os.O_NONBLOCK, rel=rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return _read_up_to(fd, size)
    finally:
        os.close(fd)


def vault_file_holds(root: Path, rel: str, data: bytes | None) -> bool:
    """True if the vault file ``rel`` holds exactly ``data`` (None: there is no file), through the gate.

    Sizes are compared first, so a file someone made huge is never read; a link holds nothing.
    """
    parent, name = split(rel)
    try:
        with folder(root, parent) as dfd:
            return holds_at(dfd, name, data)
    except (FileNotFoundError, NotADirectoryError):
        return data is None
    except LinkError:
        return False


def holds_at(dir_fd: int, name: str, data: bytes | None) -> bool:
    """True if ``name`` in an open folder is a regular file of exactly ``data`` (None: there is none).

    The size is checked before reading, so a file someone made huge is never read; a link holds
    nothing (it is never memfs's).
    """
    try:
        found = read_at(dir_fd, name, limit=None if data is None else len(data))
    except (FileTooLargeError, LinkError):
        return False
    if data is None:
        return found is None and not exists_at(dir_fd, name)
    return found is not None and found[0] == data


#: What :func:`link_in` finds: a symbolic link (a folder on the way, or the file), or a file with other hard links.
SYMBOLIC_LINK, HARD_LINK = "symbolic link", "hard link"


def link_in(root: Path, rel: str) -> str | None:
    """The link the vault path ``rel`` meets, walked through the gate: :data:`SYMBOLIC_LINK`, :data:`HARD_LINK` or None.

    Each component is looked at without following it (a folder on the way is then opened with
    ``O_NOFOLLOW``, relative to the one before): a symbolic link anywhere, or a regular file with
    other hard links, is named; the walk ends at the first component that is missing or not a
    folder. For a caller that refuses such a path before it starts (the memory tools); whatever
    changes afterwards, every open goes through :func:`open_folder` again.
    """
    parts = rel.split("/")
    if not is_plain(rel):
        raise LinkError(f"{rel}: not a plain vault path")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for depth, part in enumerate(parts, 1):
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                return None
            if stat.S_ISLNK(st.st_mode):
                return SYMBOLIC_LINK
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                return HARD_LINK
            if not stat.S_ISDIR(st.st_mode) or depth == len(parts):
                return None
            try:
                inner = _open_component(fd, part, rel)
            except LinkError:  # swapped for a link since the stat
                return SYMBOLIC_LINK
            except (FileNotFoundError, NotADirectoryError):
                return None
            os.close(fd)
            fd = inner
        return None
    finally:
        os.close(fd)


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


def write_temp_at(dir_fd: int, data: bytes, *, mode: int, durable: bool = True) -> str:
    """A new temporary file in an open folder holding ``data`` (fsynced when durable); its name.

    ``mode`` is the file's exact mode: the caller's choice (the replaced file's, or a new file's
    from the vault's :class:`Modes`), never a default wider than the vault's.
    """
    checkpoint("create")
    while True:
        name = TEMP_PREFIX + secrets.token_hex(6)
        try:
            fd = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
            )
            break
        except FileExistsError:
            continue
    try:
        _fill(fd, data, mode=mode, durable=durable)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    return name


def write_file(
    root: Path, rel: str, data: bytes, *, mode: int | None = None, durable: bool = True, modes: Modes = PRIVATE
) -> None:
    """Replace the vault file ``rel`` with ``data`` and exactly ``mode``, atomically, through the gate.

    As :func:`atomic_write`: readers see the old file or the new one. ``mode`` None: the mode the
    file has (a rewrite keeps it), else a new file's (``modes``). A missing folder is made (with
    ``modes.folder``); a link on the way (or at ``rel``) raises LinkError and nothing is written.
    """
    parent, name = split(rel)
    with folder(root, parent, create=True, modes=modes) as dfd:
        if is_link_at(dfd, name):
            raise LinkError(f"{rel} is a symbolic link, which memfs never follows")
        mode = mode_at(dfd, name, modes) if mode is None else mode
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


def overwrite_file(root: Path, rel: str, data: bytes, *, mode: int, durable: bool = True) -> None:
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


def fsync_together(fds: Sequence[int]) -> None:
    """Fsync every file of ``fds``, all at once; returns when each one is on disk.

    A journaling file system commits the fsyncs that wait together in one journal commit, so the
    files of one commit (a transcript's new entry, its blob, the trees, the commit object) cost
    about one wait for the disk instead of one each (about 5 ms apiece on the 2-core machine;
    docs/benchmarks.md). Each file's guarantee is its own fsync's: nothing is weakened. The
    waiting threads live only for the call.

    Raises:
        OSError: The first fsync that failed (the others were still waited for).
    """
    for _ in fds:
        checkpoint("fsync")
    if len(fds) <= 1:
        for fd in fds:
            os.fsync(fd)
        return
    failed: list[OSError] = []

    def sync(fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            failed.append(exc)

    waiters = [threading.Thread(target=sync, args=(fd,), name="memfs-fsync", daemon=True) for fd in fds[1:]]
    for waiter in waiters:
        waiter.start()
    sync(fds[0])
    for waiter in waiters:
        waiter.join()
    if failed:
        raise failed[0]


def sweep_temp_files(root: Path, *, older_than: float = 0.0, folders: set[Path] | None = None) -> list[Path]:
    """Remove temporary files a killed writer left behind (under ``root``, or only in ``folders``).

    Call it holding the vault lock: memfs's writers make temp files only under that lock, so
    any there then belongs to a dead process.
    """
    now = time.time()
    removed = []
    candidates = (
        root.rglob(TEMP_PREFIX + "*")
        if folders is None
        else (tmp for folder in folders for tmp in folder.glob(TEMP_PREFIX + "*"))
    )
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
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # its folder (.memfs/) was deleted: it holds derived state only
            make_folders(self.path.parent)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)

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
