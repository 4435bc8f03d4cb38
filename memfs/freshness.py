"""Finding files changed behind memfs's back, cheaply, within a bounded delay, without a watcher.

A search must answer from the files as they are when it runs, even in a process that has been
open for hours while a person edits, deletes, renames and creates files by hand. inotify would
need a watcher; this module instead keeps, for every Markdown file under the content folders,
the ``(mtime_ns, size)`` it last saw and when it last looked, and for every folder the names it
last listed. :meth:`ChangeFinder.step` (called before each search) looks again at whatever it
has not looked at for ``delay`` seconds, plus a few more, and returns the paths that changed.

So a file is stat'ed about once per ``delay`` when searches are frequent, the work spreads
over the searches (the oldest checks come first), and a search that comes after a long quiet
spell looks at everything first. Folder mtimes are not trusted to skip a listing: an edit in
place does not change its folder, and a listing costs a fraction of the stats it saves
(measured in docs/benchmarks.md).
"""

from __future__ import annotations

import math
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path

from ._fs import TEMP_PREFIX
from .layout import CONTENT_DIRS

FileStamp = tuple[int, int]  # (mtime_ns, size)

EXTRA_CHECKS = 8  # looked at per search beyond what is due, so checks keep spreading out over time


def walk(root: Path, tops: Sequence[str] = CONTENT_DIRS) -> Iterator[tuple[str, FileStamp]]:
    """Every Markdown file under ``tops`` with its ``(mtime_ns, size)``, by vault path.

    Hidden names, memfs's temporary files and symbolic links are skipped: a link could point
    outside the vault.
    """
    for rel_dir, files, _ in _folders(root, tops):
        for name in sorted(files):
            yield f"{rel_dir}/{name}", files[name]


def _folders(
    root: Path, tops: Sequence[str], leftovers: list[str] | None = None
) -> Iterator[tuple[str, dict[str, FileStamp], set[str]]]:
    """Each folder under ``tops``, depth first: its Markdown files with their stat, and its sub-folder names.

    ``leftovers``, if given, gets the vault path of every temporary file of memfs's writers passed.
    """
    stack = list(reversed(tops))
    base = os.fspath(root)
    while stack:
        rel_dir = stack.pop()
        files, dirs = _list_stats(base, rel_dir, leftovers)
        if files is None:
            continue
        yield rel_dir, files, dirs
        stack.extend(f"{rel_dir}/{name}" for name in sorted(dirs, reverse=True))


def _list(root: Path | str, rel_dir: str) -> tuple[set[str] | None, set[str]]:
    """The Markdown file names and the sub-folder names of a folder (None: no such folder)."""
    files, dirs = _list_stats(os.fspath(root), rel_dir, None, stats=False)
    return None if files is None else set(files), dirs


def _list_stats(
    root: str, rel_dir: str, leftovers: list[str] | None, *, stats: bool = True
) -> tuple[dict[str, FileStamp] | None, set[str]]:
    """The Markdown files of a folder with their ``(mtime_ns, size)``, and its sub-folder names.

    None for a folder that is gone, not a folder or not readable; a file gone before its stat
    is left out. The stat is the directory entry's ``lstat`` (as :func:`file_stat`), without a
    path built in Python: a walk of 100,000 files is mostly this loop. Without ``stats`` the
    files map to a placeholder. Temporary files of memfs's writers are added to ``leftovers``
    (by vault path) if it is given.
    """
    files: dict[str, FileStamp] = {}
    dirs: set[str] = set()
    S_ISREG = stat.S_ISREG  # noqa: N806 - bound once, for the loop below
    try:
        with os.scandir(f"{root}/{rel_dir}") as entries:
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    if leftovers is not None and name.startswith(TEMP_PREFIX):
                        leftovers.append(f"{rel_dir}/{name}")
                    continue
                try:  # follow_symlinks=False: a link is neither a file nor a folder here
                    if name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        if not stats:
                            files[name] = _UNSEEN
                        elif S_ISREG((st := entry.stat(follow_symlinks=False)).st_mode):  # an lstat, as file_stat
                            files[name] = (st.st_mtime_ns, st.st_size)
                    elif entry.is_dir(follow_symlinks=False):
                        dirs.add(name)
                except OSError:  # gone while listing
                    continue
    except OSError:
        return None, dirs
    return files, dirs


_UNSEEN: FileStamp = (-1, -1)  # a file listed without its stat


def file_stat(root: Path | str, rel: str) -> FileStamp | None:
    """``(mtime_ns, size)`` of a regular file (not a link) at ``root / rel``; None if there is none."""
    try:
        st = os.stat(f"{os.fspath(root)}/{rel}", follow_symlinks=False)  # a pathlib join costs more than the stat
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_mtime_ns, st.st_size


class ChangeFinder:
    """What the files under the content folders looked like when last checked, and when that was.

    Safe to use from several threads (one at a time gets in).
    """

    def __init__(self, root: Path, tops: Sequence[str] = CONTENT_DIRS) -> None:
        self.root = root
        self._base = os.fspath(root)
        self.tops = tuple(tops)
        self._files: dict[str, FileStamp] = {}
        self._dirs: dict[str, tuple[set[str], set[str]]] = {}  # folder -> (file names, sub-folder names)
        self._when: dict[str, float] = {}  # file or folder ("a/b/" for folders) -> when last checked
        self._queue: deque[tuple[float, str]] = deque()  # oldest check first
        self.seeded = False
        self.delay = 2.0  # the bound the caller keeps; scan() spreads its checks over it
        #: How long the last step that looked at every file and folder took (seconds).
        self.full_check_seconds = 0.0
        self._new: list[str] = []  # files and folders first seen during the current step
        #: The temporary files of memfs's writers the last :meth:`scan` passed (vault paths): a
        #: writer killed mid-write leaves one, which whoever holds the vault lock may remove.
        self.leftovers: list[str] = []
        self.mutex = threading.RLock()

    def forget(self) -> None:
        """Drop everything known; the next use must :meth:`scan` first."""
        with self.mutex:
            self._forget()

    def _forget(self) -> None:
        self._files, self._dirs, self._when, self._queue = {}, {}, {}, deque()
        self.seeded = False

    def scan(self) -> dict[str, FileStamp]:
        """Look at every file now; returns ``{vault path: (mtime_ns, size)}`` and starts tracking them.

        The checks are recorded as made at times spread over the ``delay`` before now (a check
        recorded as older than it is is merely repeated sooner), so the next checks come a few
        at a time instead of all at once ``delay`` from now.
        """
        with self.mutex:
            return self._scan()

    def _scan(self) -> dict[str, FileStamp]:
        self._forget()
        started = time.monotonic()
        found: list[str] = []
        self.leftovers = []
        for rel_dir, files, dirs in _folders(self.root, self.tops, self.leftovers):
            self._dirs[rel_dir] = (set(files), dirs)
            found.append(rel_dir + "/")
            names = sorted(files)
            rels = [f"{rel_dir}/{name}" for name in names]
            self._files.update(zip(rels, [files[name] for name in names], strict=True))
            found += rels
        for top in self.tops:  # missing content folders are looked for again, too
            if top not in self._dirs:
                self._dirs[top] = (set(), set())
                found.append(top + "/")
        first, step = started - self.delay, self.delay / len(found)
        whens = [first + step * i for i in range(len(found))]
        self._when = dict(zip(found, whens, strict=True))
        self._queue = deque(zip(whens, found, strict=True))
        self.seeded = True
        return dict(self._files)

    def step(self, delay: float, *, extra: int = EXTRA_CHECKS) -> list[str] | None:
        """Check everything not checked in the last ``delay`` seconds, and ``extra`` more.

        Returns the vault paths of files created, changed or deleted since they were last
        checked (None before the first :meth:`scan`: everything must be looked at). After it
        returns, every file and folder has been checked within ``delay`` seconds of the call,
        so a change made ``delay`` seconds before the call is in the result or an earlier one.
        """
        with self.mutex:
            return self._step(delay, extra) if self.seeded else None

    def effective_delay(self, delay: float) -> float:
        """The delay a step keeps: ``delay``, or twice what looking at every file last took if that is more.

        When stat'ing every file takes longer than ``delay`` (100,000 files on a loaded machine),
        a check would find everything due again by the next search and every search would stat
        every file. The bound grows instead, so searches spend at most about half their time on
        this. 0 (every file before every search) is kept as asked.
        """
        return delay if delay <= 0 or not math.isfinite(delay) else max(delay, 2 * self.full_check_seconds)

    def _step(self, delay: float, extra: int) -> list[str]:
        started = time.monotonic()
        delay = self.effective_delay(delay)
        cutoff = started - delay
        when_of, queue, files, base = self._when, self._queue, self._files, self._base
        stat_, S_ISREG = os.stat, stat.S_ISREG  # noqa: N806 - bound once, for the loop below
        changed: set[str] = set()
        checked: list[str] = []
        self._new = []
        budget = extra
        try:
            while queue:
                when, key = queue[0]
                if when_of.get(key) != when:
                    queue.popleft()  # superseded by a later entry of the same key
                    continue
                if when > cutoff:
                    if budget <= 0:
                        break
                    budget -= 1
                queue.popleft()
                checked.append(key)
                if key[-1] == "/":
                    self._check_dir(key[:-1], changed)
                    continue
                try:  # _check_file, inlined: this line runs for every file every few seconds
                    st = stat_(f"{base}/{key}", follow_symlinks=False)
                except OSError:
                    st = None
                if st is None or not S_ISREG(st.st_mode) or files.get(key) != (st.st_mtime_ns, st.st_size):
                    self._check_file(key, changed)
        finally:
            if len(checked) >= len(when_of):  # everything was looked at: how long that takes now
                self.full_check_seconds = time.monotonic() - started
            self._requeue(checked, started, cutoff)
        return sorted(changed)

    def look(self, paths: Sequence[str]) -> list[str] | None:
        """Check these files now (events named them); returns those created, changed or deleted.

        For callers told of changes by file events: the cost is the files named, whatever the
        number of files tracked. A file not tracked yet is tracked from now on. Paths outside the
        content folders given, and hidden names, are not files of this finder and are skipped.
        None before the first :meth:`scan`.
        """
        with self.mutex:
            if not self.seeded:
                return None
            started = time.monotonic()
            changed: set[str] = set()
            self._new = []
            for rel in dict.fromkeys(paths):
                folder, _, name = rel.rpartition("/")
                if not name.endswith(".md") or name[0] == "." or not self._covers(folder):
                    continue
                known = rel in self._files
                self._check_file(rel, changed)
                if not known and rel in self._files:
                    self._track(rel)
                    if folder in self._dirs:  # so that its folder's next listing does not find it new
                        self._dirs[folder][0].add(name)
            self._requeue([], started, started)
            return sorted(changed)

    def sweep(self, count: int) -> list[str] | None:
        """Check the ``count`` files and folders looked at longest ago, however recently that was.

        A bounded share of a full check, for callers that events keep up to date: it catches what
        events missed (inotify drops them under load) within ``count`` per call, so a whole pass
        takes about ``len(self) / count`` calls. None before the first :meth:`scan`.
        """
        with self.mutex:
            return self._step(math.inf, count) if self.seeded else None

    def _covers(self, rel_dir: str) -> bool:
        """True when the folder ``rel_dir`` is one of the tops or under one, through no hidden name."""
        for top in self.tops:
            if rel_dir == top or rel_dir.startswith(top + "/"):
                return not any(part[0] == "." for part in rel_dir[len(top) :].split("/") if part)
        return False

    def _requeue(self, checked: list[str], started: float, cutoff: float) -> None:
        # The checks are recorded as made at times spread from the newest one still queued up to
        # the start of this call: never later than they were (an earlier time only brings the next
        # check forward), in time order, and spread out, so that checks made all at once (after
        # a quiet spell) come due a few at a time.
        when_of, queue = self._when, self._queue
        keep = [k for k in dict.fromkeys(checked + self._new) if k in when_of]
        low = max(queue[-1][0], cutoff) if queue else cutoff
        if not math.isfinite(low):  # a sweep that emptied the queue: nothing older to keep order with
            low = started
        for i, key in enumerate(keep, 1):
            when = low + (started - low) * i / len(keep)
            when_of[key] = when
            queue.append((when, key))

    def _check_file(self, rel: str, changed: set[str]) -> None:
        st = file_stat(self._base, rel)
        if st is None:
            if self._files.pop(rel, None) is not None:
                changed.add(rel)
            self._when.pop(rel, None)
            folder, _, name = rel.rpartition("/")
            if folder in self._dirs:  # so that its folder's next listing finds it new if it is back
                self._dirs[folder][0].discard(name)
        elif self._files.get(rel) != st:
            self._files[rel] = st
            changed.add(rel)

    def _check_dir(self, rel_dir: str, changed: set[str]) -> None:
        old_files, old_dirs = self._dirs.get(rel_dir, (set(), set()))
        listed, dirs = _list(self._base, rel_dir)
        files = listed or set()
        if listed is None and rel_dir not in self.tops:  # the folder is gone, and all below it
            self._dirs.pop(rel_dir, None)
            self._when.pop(rel_dir + "/", None)
            parent, _, name = rel_dir.rpartition("/")
            if parent in self._dirs:
                self._dirs[parent][1].discard(name)
        else:
            self._dirs[rel_dir] = (files, dirs)
            if rel_dir + "/" not in self._when:
                self._track(rel_dir + "/")
        for name in old_files - files:
            rel = f"{rel_dir}/{name}"
            if self._files.pop(rel, None) is not None:
                changed.add(rel)
            self._when.pop(rel, None)
        for name in files - old_files:  # new files (or files back again) are looked at right away
            rel = f"{rel_dir}/{name}"
            self._check_file(rel, changed)
            if rel in self._files:
                self._track(rel)
        for name in old_dirs ^ dirs:  # so are new and vanished sub-folders
            self._check_dir(f"{rel_dir}/{name}", changed)

    def _track(self, key: str) -> None:
        """Start tracking a new file or folder (just checked); queued at the end of the step."""
        self._when[key] = -math.inf
        self._new.append(key)

    def __len__(self) -> int:
        return len(self._files)
