"""The index's files on disk: read only when memfs vouches for them, never mapped.

The key that signs every index this user's memfs builds (kept outside every vault) and Whoosh's
file storage reading only files of the signed list (into memory: a truncated segment cannot kill
the reader with SIGBUS). :mod:`memfs.index` writes and checks the signed list itself;
:mod:`memfs.postings` writes the segments.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import threading
from pathlib import Path
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.structfile import BufferFile

from .errors import SearchIndexError

log = logging.getLogger(__name__)

KEY_BYTES = 32


def state_home() -> Path:
    """The user's state folder: ``$XDG_STATE_HOME``, else ``~/.local/state``."""
    base = os.environ.get("XDG_STATE_HOME", "")
    return Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"


_keys: dict[str, bytes] = {}


_keys_lock = threading.Lock()


def index_key() -> bytes:
    """The key that signs the indexes this user's memfs builds (``<state home>/memfs/index-key``).

    It lives outside every vault, so an index copied in with a vault cannot carry a valid
    signature. Created on first use (0600); a key file owned by someone else or readable by
    others is replaced. If no key can be stored, a key for this process alone is used (with a
    warning): every index is then rebuilt once per process, which is slow but safe.
    """
    try:
        path = state_home() / "memfs" / "index-key"
    except RuntimeError:  # no home folder to be found
        path = Path("/nonexistent/memfs/index-key")
    with _keys_lock:
        key = _keys.get(str(path))
        if key is None:
            key = _keys[str(path)] = _load_key(path)
        return key


def _load_key(path: Path) -> bytes:
    replace = False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            data = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        if st.st_uid == os.geteuid() and not st.st_mode & 0o077 and len(data) == KEY_BYTES:
            return data
        log.warning("replacing the index key %s: it is not a private %d-byte file of this user", path, KEY_BYTES)
        replace = True
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("cannot read the index key %s (%s); making a new one", path, exc)
        replace = True
    key = secrets.token_bytes(KEY_BYTES)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            if replace:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)  # never over a key another process made meanwhile
        except FileExistsError:
            return _load_key(path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("cannot store an index key at %s (%s); indexes will be rebuilt by every process", path, exc)
    return key


def _read_fd(fd: int, size: int) -> bytes:
    # One read for any file under 1 GiB: joining chunks copies a segment of tens of MB once more
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 30))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class _Storage(FileStorage):  # type: ignore[misc]
    """Whoosh's file storage, reading only files memfs vouches for, into memory (never mmap).

    ``trusted`` names the files of the signed manifest with their size and sha256; files this
    object created itself (a writer's work in progress) are known by their inode. Listing
    shows Whoosh nothing else, so a planted table of contents is never even opened.
    """

    supports_mmap = False

    def __init__(self, path: str) -> None:
        super().__init__(path, supports_mmap=False)
        self.trusted: dict[str, tuple[int, str]] = {}
        self.own: dict[str, int] = {}
        self.cache: dict[tuple[str, str], bytes] = {}

    def list(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return [n for n in names if n in self.trusted or n in self.own]

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kwargs: Any) -> Any:
        f = super().create_file(name, excl, mode, **kwargs)
        os.fchmod(f.fileno(), 0o600)  # Whoosh creates files as the umask allows; the index is the owner's alone
        self.own[name] = os.fstat(f.fileno()).st_ino
        return f

    def lock(self, name: str) -> Any:
        path = self._fpath(name)
        with contextlib.suppress(FileExistsError):  # Whoosh would make its lock file as the umask allows
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        return super().lock(name)

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        super().rename_file(oldname, newname, safe)
        if oldname in self.own:
            self.own[newname] = self.own.pop(oldname)

    def delete_file(self, name: str) -> None:
        super().delete_file(name)
        self.own.pop(name, None)

    def temp_storage(self, name: str | None = None) -> Any:
        # a writer's scratch files, which only it writes and reads back
        return FileStorage(
            os.path.join(self.folder, name or f"{secrets.token_hex(8)}.tmp"), supports_mmap=False
        ).create()

    def open_file(self, name: str, **kwargs: Any) -> Any:
        entry = self.trusted.get(name)
        if entry is not None:
            if (name, entry[1]) not in self.cache:
                self.cache[name, entry[1]] = self.checked(name)
            return BufferFile(self.cache[name, entry[1]], name=name)
        data, inode = self.read(name)
        if self.own.get(name) != inode:
            raise SearchIndexError(f"index file {name} was not written by memfs; not reading it")
        return BufferFile(data, name=name)

    def checked(self, name: str) -> bytes:
        """The bytes of a file of the signed list, once they match it (not kept: see :meth:`open_file`)."""
        size, digest = self.trusted[name]
        data, _ = self.read(name, size)
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise SearchIndexError(f"index file {name} is not the one memfs wrote (damaged or replaced)")
        return data

    def read(self, name: str, size: int | None = None) -> tuple[bytes, int]:
        """The bytes and inode of a file of the folder (a link is refused); none read unless it has ``size`` bytes."""
        fd = os.open(self._fpath(name), os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            if size is not None and st.st_size != size:
                raise SearchIndexError(f"index file {name} is not the one memfs wrote ({st.st_size} bytes, not {size})")
            return _read_fd(fd, st.st_size), st.st_ino
        finally:
            os.close(fd)
