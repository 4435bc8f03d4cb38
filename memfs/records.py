"""The small records memfs keeps under ``.memfs/``: read bounded, written private, the folder kept 0700.

The write engine and the catalog each own records there (docs/architecture.md, "Who owns which
file under .memfs/"); these are the rules every record follows, so they are written once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from . import _fs
from .errors import FileTooLargeError

log = logging.getLogger(__name__)

MAX_STATE_BYTES = 16 * 1024 * 1024  # a record under .memfs/ (pending, found, own, held) is never larger


def write_private(path: Path, data: bytes) -> None:
    """Replace the state file ``path``'s content with ``data``; a new file is the owner's alone (0600)."""
    # derived state, written as before (no fault point of its own): only its mode is new
    with open(path, "wb", opener=lambda name, flags: os.open(name, flags, 0o600)) as handle:
        handle.write(data)


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
