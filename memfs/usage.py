"""What was used when: derived state under ``.memfs/``, never committed.

Injection notes the memories it placed in a model's context; ranking and ``memfs prune`` read
when each was last used and how often. Committing every read would bury the history people
review under noise and make every search a write to git, so this lives beside the index in
``.memfs/used``: one line per use (``<time> <id>``), appended with one ``O_APPEND`` write (so
processes never interleave a line), and folded into one line per memory when it grows past
:data:`COMPACT_LINES`. Losing it loses only statistics: deleting ``.memfs/`` is always safe.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import _fs

USED_FILE = "used"
COMPACT_LINES = 20_000  # fold the log into one line per memory beyond this many lines
MAX_READ = 16 * 1024 * 1024  # a log larger than this (someone else's file) is not read
MAX_ID_CHARS = 200


@dataclass(frozen=True)
class Usage:
    """How a memory was used: ``count`` times, the last at ``last`` (ISO 8601 UTC)."""

    count: int
    last: str


class UsageLog:
    """The record of which memories were used when, in a vault's ``.memfs/`` folder."""

    def __init__(self, state_dir: Path) -> None:
        self.file = Path(state_dir) / USED_FILE

    def record(self, ids: Iterable[str | None], *, now: datetime | None = None) -> None:
        """Note that these memories were used now (ids that are None or not one short line are skipped).

        Never raises for a problem of the file (a read-only folder, a full disk): usage is a
        statistic, and a model's turn must not fail over it.
        """
        moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines = "".join(f"{moment} {i}\n" for i in ids if _plain_id(i))
        if not lines:
            return
        try:
            self.file.parent.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(self.file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                _fs.write_all(fd, lines.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:
            return
        self._compact_if_long()

    def read(self) -> dict[str, Usage]:
        """Every memory id recorded, with how often and when it was last used ({} without a record)."""
        usage: dict[str, Usage] = {}
        for line in self._lines():
            parts = line.split(" ")
            if len(parts) == 2:  # a use: "<time> <id>"
                moment, memory_id, count = parts[0], parts[1], 1
            elif len(parts) == 3 and parts[2].isdigit():  # folded: "<time> <id> <count>"
                moment, memory_id, count = parts[0], parts[1], int(parts[2])
            else:
                continue
            earlier = usage.get(memory_id)
            last = max(moment, earlier.last) if earlier else moment
            usage[memory_id] = Usage((earlier.count if earlier else 0) + count, last)
        return usage

    def _lines(self) -> list[str]:
        try:
            fd = os.open(self.file, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return []
        try:
            size = os.fstat(fd).st_size
            if size > MAX_READ:
                return []
            data = os.read(fd, size) if size else b""
        finally:
            os.close(fd)
        return data.decode("utf-8", "replace").splitlines()

    def _compact_if_long(self) -> None:
        lines = self._lines()
        if len(lines) <= COMPACT_LINES:
            return
        folded = "".join(f"{u.last} {i} {u.count}\n" for i, u in sorted(self.read().items()))
        try:
            _fs.atomic_write(self.file, folded.encode("utf-8"), durable=False)
        except OSError:
            return


def _plain_id(value: str | None) -> bool:
    return bool(value) and isinstance(value, str) and len(value) <= MAX_ID_CHARS and value.split() == [value]
