"""Watching a vault for people's edits: index them at once, commit them under their name.

This is the only module that imports :mod:`watchdog` (when a watcher starts). Events are only hints: for every path an
event names, the watcher re-reads the file from disk after a short quiet period (so an editor's
save, however many events it makes, is one change), updates the index, and after a longer quiet
period commits what differs from the last commit with the person's identity. memfs's own writes
are committed before they are visible to the watcher (the vault lock covers file and commit), or
recorded as memfs's own (``.memfs/own``, :class:`~memfs.appends.Appends`) until their session
commits them, so they are never mistaken for a person's. Events can be lost under load (inotify
drops them silently), so a full stat scan runs periodically and whenever a burst is too large to track.

With an embedding model, the memories that have no vector yet are embedded while the watcher is
idle (:data:`EMBED_STEP_SECONDS` at a time, events first), so a person's new notes are searchable by
meaning before anyone searches, and no search pays for embedding them.

With ``sync_every``, a second thread syncs the vault through a git remote (:mod:`memfs.sync`)
that often, and soon after any commit (memfs's, the watcher's, another process's), debounced; a
sync that fails is logged and tried again later, backing off, and never stops the watcher.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from .credentials import secret_advice
from .engine import WriteEngine, engine_of
from .errors import InvalidArgumentError, MemfsError, SyncError
from .layout import CONTENT_DIRS, is_attachment
from .sync import sync

WATCHED_DIRS = CONTENT_DIRS

log = logging.getLogger(__name__)

#: Editor artefacts and memfs's own temporary files, never memories.
_IGNORED_SUFFIXES = ("~", ".swp", ".swx", ".swo", ".tmp", ".vsctmp", ".crswap", ".part", ".bak")

Listener = Callable[[str, list[str]], None]

#: Seconds of embedding per idle turn of a watcher (or an MCP server's look for changes): short
#: enough that an event, a stop or a call waits little for it, long enough to embed a batch of facts.
EMBED_STEP_SECONDS = 0.5


def _wanted_events() -> list[type[Any]]:
    """The watchdog events memfs acts on: what can change a file's content or where it is.

    Given to each ``schedule`` call, they become inotify's mask, so the kernel does not report
    a file opened or closed after reading. Those came from memfs's own reads (a search reads
    each hit's file, its freshness check lists folders) and from every reader of the vault, and
    each cost two watchdog threads a wake-up and the GIL, only to be dropped here.
    """
    from watchdog import events

    return [
        events.FileCreatedEvent,
        events.FileModifiedEvent,
        events.FileDeletedEvent,
        events.FileMovedEvent,
        events.FileClosedEvent,
        events.DirCreatedEvent,
        events.DirDeletedEvent,
        events.DirMovedEvent,
    ]


def embed_some(vault: Any) -> bool:
    """Embed a vault's memories that have no vector yet, for :data:`EMBED_STEP_SECONDS`; whether more wait.

    What a long-lived process (a watcher, an MCP server) does while idle. A failure (the model, a
    full disk, a vectors folder gone wrong) is a warning and stops this round: the next change
    starts another, and a search embeds or falls back to words by itself, so the process never
    stops for derived state, and a model that keeps failing is not asked again in a loop.
    """
    try:
        done, left = engine_of(vault).catalog.embed(budget=EMBED_STEP_SECONDS)
    except Exception as exc:
        log.warning("embedding in the background stopped: %s", str(exc) or exc.__class__.__name__)
        return False
    return done > 0 and left > 0


def ignored(name: str) -> bool:
    """True for names that are editor or memfs scratch files, not memories."""
    return name.startswith((".", "#")) or name == "4913" or name.endswith(_IGNORED_SUFFIXES)


class Watcher:
    """Keeps a vault's index and history in step with edits made outside memfs.

    Use ``vault.watch()`` (a context manager), or :meth:`start` and :meth:`stop`.

    Args:
        vault: The vault to watch.
        index_delay: Seconds of quiet on a path before it is re-read and indexed.
        commit_delay: Seconds of quiet in the whole vault before edits are committed.
        rescan_interval: Seconds between full stat scans that catch events the OS dropped.
        storm_threshold: A burst touching more paths than this is absorbed as one full scan.
        polling: Poll the file system instead of using native events (network drives, some
            containers); chosen automatically when native watching cannot start.
        on_change: Called as ``on_change(kind, paths)`` with kind ``indexed``, ``committed``,
            ``synced``, ``problem``, or ``held`` (an edit left uncommitted for a credential: each
            entry is "path: why, and how to allow it"); for logs and the CLI.
        sync_every: Seconds between syncs with ``remote`` (None: no sync). A commit makes the
            next sync come sooner, ``sync_debounce`` seconds after the last one.
        remote: The git remote to sync with.
        sync_debounce: Seconds of no new commit before a commit triggers a sync.
    """

    def __init__(
        self,
        vault: Any,
        *,
        index_delay: float = 0.2,
        commit_delay: float = 2.0,
        rescan_interval: float = 60.0,
        storm_threshold: int = 500,
        polling: bool = False,
        on_change: Listener | None = None,
        sync_every: float | None = None,
        remote: str = "origin",
        sync_debounce: float = 5.0,
    ) -> None:
        for name, value in (
            ("index_delay", index_delay),
            ("commit_delay", commit_delay),
            ("rescan_interval", rescan_interval),
            ("sync_debounce", sync_debounce),
        ):
            if not isinstance(value, (int, float)) or value < 0:
                raise InvalidArgumentError(f"{name} must be a non-negative number of seconds, got {value!r}")
        if not isinstance(storm_threshold, int) or storm_threshold < 1:
            raise InvalidArgumentError(f"storm_threshold must be a positive integer, got {storm_threshold!r}")
        self.engine: WriteEngine = engine_of(vault)
        self.index_delay = float(index_delay)
        self.commit_delay = max(float(commit_delay), float(index_delay))
        self.rescan_interval = float(rescan_interval)
        self.storm_threshold = storm_threshold
        self.polling = polling
        self.on_change = on_change
        self._folders = [self.engine.root / name for name in WATCHED_DIRS]
        self._wake = threading.Condition()
        self._dirty: set[str] = set()
        self._full_scan = False
        self._rewatch = False
        self._uncommitted: set[str] = set()
        self._last_event = 0.0
        self._stopping = False
        self._embed_due = self.engine.catalog.vectors is not None  # what waited while nobody watched
        self._observer: Any = None
        self._thread: threading.Thread | None = None
        if sync_every is not None and (
            isinstance(sync_every, bool) or not isinstance(sync_every, (int, float)) or sync_every <= 0
        ):
            raise InvalidArgumentError(f"sync_every must be a positive number of seconds or None, got {sync_every!r}")
        self.sync_every = None if sync_every is None else float(sync_every)
        if self.sync_every is not None and remote not in self.engine.history.remotes():  # retrying could never help
            raise SyncError(
                f"no remote named {remote!r} to sync with; add one with `git remote add {remote} URL`, "
                "or watch without sync"
            )
        self.remote = remote
        self.sync_debounce = float(sync_debounce)
        self._syncer: threading.Thread | None = None
        self._sync_stop = threading.Event()

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> Watcher:
        """Start watching (returns self)."""
        if self._thread is not None:
            raise RuntimeError("this watcher is already running")
        for folder in self._folders:
            self.engine.make_folders(folder.relative_to(self.engine.root).as_posix())
        self._observer = self._start_observer()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="memfs-watcher", daemon=True)
        self._thread.start()
        if self.sync_every is not None:
            self._sync_stop.clear()
            self._syncer = threading.Thread(target=self._sync_loop, name="memfs-sync", daemon=True)
            self._syncer.start()
        return self

    def _start_observer(self) -> list[Any]:
        # One observer per folder: watchdog 7 mixes up the callbacks of two watches that share an
        # observer when a folder is moved into one of them. watchdog is imported here, not at the
        # top, so that ``import memfs`` stays light for programs that never watch.
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        handler = _Handler(self)
        observers: list[Any] = []
        try:
            for folder in self._folders:
                observer = PollingObserver(timeout=1.0) if self.polling else Observer()
                observer.schedule(
                    handler,  # type: ignore[arg-type]  # duck-typed
                    str(folder),
                    recursive=True,
                    event_filter=_wanted_events(),
                )
                observer.start()
                observers.append(observer)
            return observers
        except OSError as exc:  # inotify watch or instance limit: poll instead
            for observer in observers:
                observer.stop()
                observer.join()
            if self.polling:
                raise
            log.warning("native file watching failed (%s); polling instead", exc)
            self.polling = True
            return self._start_observer()

    def _watch_again(self) -> None:
        """Watch the folders afresh after a folder moved in.

        Some watchdog versions (6.x, which Strands Agents pins) do not watch the sub-folders of a
        folder moved into the tree, and miss files created there later.
        """
        handler = _Handler(self)
        for observer, folder in zip(self._observer, self._folders, strict=True):
            observer.unschedule_all()
            observer.schedule(handler, str(folder), recursive=True, event_filter=_wanted_events())

    def stop(self) -> None:
        """Stop watching, after indexing and committing what was already seen."""
        if self._thread is None:
            return
        if self._syncer is not None:
            self._sync_stop.set()
            self._syncer.join()
            self._syncer = None
        # The worker first: it may schedule watches again (a folder moved in), and a watch scheduled
        # on an observer that is stopping starts an emitter thread nobody stops.
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join()
        self._thread = None
        for observer in self._observer:
            observer.stop()
        for observer in self._observer:
            observer.join()
        self.flush()

    def __enter__(self) -> Watcher:
        if self._thread is None:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """True while the watcher thread runs."""
        return self._thread is not None

    # -- events ----------------------------------------------------------------

    def note(self, path: str, *, is_directory: bool = False) -> None:
        """Record that ``path`` (absolute) may have changed."""
        try:
            rel = Path(path).relative_to(self.engine.root).as_posix()
        except ValueError:
            return
        parts = rel.split("/")
        if parts[0] not in WATCHED_DIRS or any(ignored(p) for p in parts[1:]):
            return
        with self._wake:
            if is_directory:
                self._full_scan = True  # a folder moved in or out: its files made no events
                self._rewatch = not self.polling
            elif rel.endswith(".md") or is_attachment(rel):
                self._dirty.add(rel)
                if len(self._dirty) > self.storm_threshold:
                    self._full_scan = True
            else:
                return
            self._last_event = time.monotonic()
            self._wake.notify()

    # -- work ------------------------------------------------------------------

    def _run(self) -> None:
        next_rescan = time.monotonic() + self.rescan_interval
        while True:
            with self._wake:
                if self._stopping:
                    return
                now = time.monotonic()
                quiet = now - self._last_event
                if self._dirty or self._full_scan:
                    wait = self.index_delay - quiet
                elif self._uncommitted:
                    wait = self.commit_delay - quiet
                elif self._embed_due:
                    wait = 0.0
                else:
                    wait = next_rescan - now
                if wait > 0:
                    self._wake.wait(min(wait, 1.0))
                    continue
            try:
                if time.monotonic() >= next_rescan and not self._dirty and not self._uncommitted:
                    next_rescan = time.monotonic() + self.rescan_interval
                    with self._wake:
                        self._full_scan = True
                self._step()
            except Exception:  # the watcher must outlive a bad moment; the next scan catches up
                log.exception("memfs watcher failed to process changes; will retry")
                time.sleep(min(self.index_delay or 0.1, 1.0))

    def _step(self) -> None:
        with self._wake:
            dirty, full, rewatch = self._dirty, self._full_scan, self._rewatch
            self._dirty, self._full_scan, self._rewatch = set(), False, False
            quiet = time.monotonic() - self._last_event
        if rewatch:
            self._watch_again()
        if full or dirty:
            with self.engine.locked():
                report = self.engine.catalog.reconcile(None if full else _notes(dirty), commit=False)
                touched = report.added + report.updated + report.removed
                # a full scan finds only what the index missed: searches may have indexed the rest
                self._uncommitted.update(touched + self.engine.catalog.take_found_edits() if full else dirty)
            if touched:
                self._tell("indexed", touched)
            if report.problems:
                self._tell("problem", [f"{p.path}: {p.reason}" for p in report.problems])
            self._embed_due = self.engine.catalog.vectors is not None
        elif self._uncommitted and quiet >= self.commit_delay:
            self._commit()
        elif self._embed_due:
            self._embed_due = embed_some(self.engine)

    def _commit(self) -> None:
        paths, self._uncommitted = sorted(self._uncommitted), set()
        with self.engine.locked():
            self.engine.catalog.reconcile(_notes(paths), commit=False)  # a file replaced after it was indexed
            sha = self.engine.commit_outside_edits(paths)
            held = dict(self.engine.held_secrets)
        if held:  # a credential an edit brought in: said once per look, with how to allow it
            self._tell("held", [f"{rel}: {secret_advice(rel, found)}" for rel, found in sorted(held.items())])
        if sha:
            self._tell("committed", [p for p in paths if os.path.lexists(self.engine.root / p)] or paths)

    def flush(self) -> None:
        """Index and commit everything seen so far, now (also what ``stop`` does last)."""
        with self._wake:
            dirty, full = self._dirty, self._full_scan
            self._dirty, self._full_scan = set(), False
        if full or dirty:
            with self.engine.locked():
                report = self.engine.catalog.reconcile(None if full else _notes(dirty), commit=False)
                touched = report.added + report.updated + report.removed
                self._uncommitted.update(touched + self.engine.catalog.take_found_edits() if full else dirty)
        if self._uncommitted:
            self._commit()

    # -- sync ----------------------------------------------------------------------------

    def _sync_loop(self) -> None:
        """Sync every ``sync_every`` seconds, and ``sync_debounce`` seconds after the last new commit."""
        assert self.sync_every is not None
        every = self.sync_every
        failures = 0
        due = time.monotonic()  # a first sync at once: catch up with what happened while not watching
        seen = self._head_mark()
        changed_at: float | None = None
        while not self._sync_stop.wait(min(1.0, max(0.0, due - time.monotonic()))):
            mark = self._head_mark()
            if mark != seen:
                seen, changed_at = mark, time.monotonic()
            now = time.monotonic()
            if changed_at is not None and now - changed_at >= self.sync_debounce:
                due, changed_at = min(due, now), None
            if now < due:
                continue
            try:
                report = sync(self.engine, self.remote)
            except (MemfsError, OSError) as exc:
                failures += 1
                wait = min(every * 2**failures, max(every, 600.0))
                # with a listener, what it is told is the report: logged as well, a problem would show twice
                (log.debug if self.on_change else log.warning)(
                    "sync with %s failed (%s); trying again in %.0f s", self.remote, exc, wait
                )
                self._tell("problem", [f"sync with {self.remote} failed: {exc}"])
                due = time.monotonic() + wait
                continue
            except Exception:  # a bug must not stop the watcher either
                failures += 1
                log.exception("sync with %s failed", self.remote)
                due = time.monotonic() + min(every * 2**failures, max(every, 600.0))
                continue
            failures = 0
            seen = self._head_mark()  # the sync's own commit is no reason to sync again
            due = time.monotonic() + every
            if report.received or report.pushed:
                self._tell("synced", report.received or [f"pushed to {self.remote}"])
            if report.conflicts:
                self._tell(
                    "problem",
                    [f"{c.path}: conflict with {self.remote}, theirs kept as {c.copy}" for c in report.conflicts],
                )

    def _head_mark(self) -> tuple[int, int] | None:
        """Cheap sign that a commit happened: the stat of git's HEAD reflog (no git process)."""
        try:
            info = os.stat(self.engine.history.git_dir / "logs" / "HEAD")
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def _tell(self, kind: str, paths: list[str]) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(kind, paths)
        except Exception:  # a listener's bug must not stop the watcher
            log.exception("memfs watcher listener failed")


class FileEvents:
    """Which Markdown files under some folders changed, as the OS's file events tell it: hints only.

    For a process that must notice changes in a large vault without looking at every file
    (``memfs mcp``'s change notifications): the cost follows the changes, not the number of
    files. Events are hints: the caller checks the files they name, and keeps a slow sweep for
    events the OS dropped. Native events only: where they cannot start, :meth:`start` says so
    and the caller polls with its own :class:`memfs.freshness.ChangeFinder`, which polls better
    than watchdog's polling observer (it spreads its checks and needs no second copy of the tree).

    Args:
        root: The vault folder.
        folders: Vault paths of the folders to watch (their sub-folders included); those missing
            when watching starts are watched through their nearest existing parent in the vault.
    """

    def __init__(self, root: Path, folders: list[str]) -> None:
        self.root = root
        self.folders = tuple(folders)
        self._named: set[str] = set()
        self._folders_moved = False
        self._mutex = threading.Lock()
        self._observers: list[Any] = []

    def start(self) -> bool:
        """Start watching; False (and nothing running) when native events cannot start."""
        from watchdog.observers import Observer

        handler = _EventHandler(self)
        try:
            for folder in self._existing():  # one observer per folder, as for the Watcher
                observer = Observer()
                observer.schedule(
                    handler,  # type: ignore[arg-type]
                    str(self.root / folder),
                    recursive=True,
                    event_filter=_wanted_events(),
                )
                observer.start()
                self._observers.append(observer)
        except OSError as exc:  # inotify watch or instance limit, a folder gone meanwhile
            log.info("native file events unavailable (%s); polling instead", exc)
            self.stop()
            return False
        return bool(self._observers)

    def _existing(self) -> list[str]:
        """The folders to schedule: each one or its nearest existing parent, none inside another."""
        found: list[str] = []
        for folder in self.folders:
            while folder and not (self.root / folder).is_dir():
                folder = folder.rpartition("/")[0]
            if not folder:
                raise OSError("no folder of the vault to watch")
            found.append(folder)
        return [f for f in dict.fromkeys(found) if not any(f.startswith(other + "/") for other in found)]

    def stop(self) -> None:
        """Stop watching (safe to call twice)."""
        observers, self._observers = self._observers, []
        for observer in observers:
            observer.stop()
        for observer in observers:
            observer.join()

    def take(self) -> tuple[list[str], bool]:
        """The vault paths named since the last call, and whether a folder came, went or moved.

        A folder moved in or out makes no event for the files in it: the caller must look at
        everything when the second value is True.
        """
        with self._mutex:
            named, moved = sorted(self._named), self._folders_moved
            self._named, self._folders_moved = set(), False
        return named, moved

    def note(self, path: str, *, is_directory: bool) -> None:
        """Record an event's path (absolute) if it is a file or folder under the watched folders."""
        try:
            rel = Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return
        if not any(rel == f or rel.startswith(f + "/") for f in self.folders):
            return
        if any(ignored(part) for part in rel.split("/")):
            return
        with self._mutex:
            if is_directory:
                self._folders_moved = True
            elif rel.endswith(".md"):
                self._named.add(rel)


class _EventHandler:
    """Receives watchdog's events for :class:`FileEvents`."""

    def __init__(self, events: FileEvents) -> None:
        self.events = events

    def dispatch(self, event: Any) -> None:
        if event.event_type in ("opened", "closed_no_write") or (event.is_directory and event.event_type == "modified"):
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path:
                self.events.note(os.fsdecode(path), is_directory=event.is_directory)


class _Handler:
    """Receives watchdog's events (an observer calls ``dispatch`` with each) and notes their paths."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: Any) -> None:
        if event.event_type in ("opened", "closed_no_write") or (
            event.is_directory and event.event_type == "modified"  # a file inside changed: has its own event
        ):
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path:
                self.watcher.note(os.fsdecode(path), is_directory=event.is_directory)


def _notes(paths: Iterable[str]) -> list[str]:
    """The paths the index reads (attachments are committed, never indexed as text)."""
    return sorted(p for p in paths if not is_attachment(p))
