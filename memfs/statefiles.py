"""What the write engine and its collaborators share: memfs's records under ``.memfs/`` and bounded reads.

The records (``pending``, ``found``, ``own``, ``held``, ``seen-edits``) are small files in the vault
folder: read bounded (one too large is ignored, unread), written private (0600), in a folder that is
always private (0700). A file memfs wrote is recognised by its :data:`OwnStat`. Vault files are read
through the path gate, bounded by :func:`read_limit`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from . import _fs
from .errors import FileTooLargeError
from .indexing import MAX_INDEXED_BYTES, MAX_TRANSCRIPT_BYTES
from .layout import MAX_ATTACHMENT_BYTES, is_attachment, is_transcript

log = logging.getLogger(__name__)

OwnStat = tuple[int, int, int]  # (inode, size, mtime_ns): how memfs recognises a file it wrote
MAX_STATE_BYTES = 16 * 1024 * 1024  # a record under .memfs/ (pending, found, own, held) is never larger


def _stat(path: Path) -> OwnStat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def read_state(file: Path) -> bytes | None:
    """A record memfs keeps under ``.memfs/`` (None if absent); one too large to be memfs's is ignored, unread.

    Records are small (paths, stats); a huge one was planted (a received vault) or is garbage,
    and what it held is found again from the files.
    """
    try:
        return _fs.read_file(file, limit=MAX_STATE_BYTES)
    except FileTooLargeError as exc:
        log.warning("ignoring %s: %s", file, exc)
        return None


def private_folder(folder: Path) -> None:
    """Make ``.memfs/`` 0700, and 0700 again if it is anything else.

    It is memfs's own and never shared: the index, the journal and the salvage files hold what the
    memories and transcripts say.
    """
    _fs.make_folders(folder)
    with contextlib.suppress(OSError):  # another user's folder: theirs to fix
        if stat.S_IMODE(folder.stat().st_mode) != 0o700:  # a shared vault's setgid is inherited too
            os.chmod(folder, 0o700)


def read_limit(rel: str) -> int:
    """The most bytes memfs reads of the vault file ``rel``: a transcript's budget, else the size it indexes."""
    if is_attachment(rel):
        return MAX_ATTACHMENT_BYTES
    return MAX_TRANSCRIPT_BYTES if is_transcript(rel) else MAX_INDEXED_BYTES


def read_regular(root: Path, rel: str, *, own: bool = False) -> bytes | None:
    """The bytes of a regular vault file through the path gate, None if there is none.

    Bounded by :func:`read_limit` (FileTooLargeError, before any byte is read), except with
    ``own``: a transcript memfs wrote itself and is committing.

    Raises:
        LinkError: A folder on the way, or the file, is a symbolic link (never followed).
    """
    limit = None if own and is_transcript(rel) else read_limit(rel)
    found = _fs.read_vault_file(root, rel, limit=limit)
    return None if found is None else found[0]


def holding(lock: _fs.VaultLock) -> contextlib.AbstractContextManager[None]:
    """The vault lock for a ``with`` block: taken, or left as it is when this thread holds it already.

    A session's append takes the lock once around its whole change; the steps inside it (the
    write, its rewind block, the commit) run in that hold without taking the lock again.
    """
    return contextlib.nullcontext() if lock.held else lock.hold()
