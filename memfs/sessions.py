"""Sessions: conversation history kept as Markdown transcripts in the vault.

:class:`MarkdownSession` implements the OpenAI Agents SDK ``Session`` protocol (async
``get_items``, ``add_items``, ``pop_item``, ``clear_session``) with the semantics of its
``SQLiteSession``, plus synchronous twins (``items``, ``append``, ``pop``, ``clear``) for code that
is not async. Appends write only the new entries, under the vault lock, with one ``write`` on an
``O_APPEND`` file; reads of the last N items read the file from its end.

An editor that saves by writing a new file and renaming it over the transcript while an agent
appends would silently drop the agent's messages. The sessions of a process therefore remember the
entries they appended lately (in the engine's :class:`~memfs.appends.Appends`); if the file changed
since memfs last wrote it and ends before the last of them, the missing ones are appended again
before anything else. A file that is exactly as memfs last left it (``engine.appends`` records its
stat in ``.memfs/own``) and is shorter was popped or cleared by memfs itself, through any session object or process:
nothing is put back then.

Every append, pop and clear is all or nothing: it runs in a rewind block (``engine.appends``) with
the commit its policy calls for, so a failure anywhere leaves the file (and memfs's records of it)
as before. A conversation manager decides outside the vault lock (a summarizer calls a model); the
decision is recorded only if the view it was made on is still the file's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import time
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _fs, transcript
from .appends import Tail
from .conversation import ConversationManager, Decision, View, extend_view, items_needed, read_view
from .credentials import check_clean, find_secrets, redact_value, redact_values, report
from .documents import timestamp
from .engine import WriteEngine, engine_of
from .errors import ConflictError, DocumentError, InvalidArgumentError, PathError, SessionError
from .layout import SESSIONS_DIR
from .paths import clean_relpath, slugify
from .results import MessageHit
from .statefiles import OwnStat

log = logging.getLogger(__name__)

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
COMMIT_POLICIES = ("turn", "manual", "close")
RECOVERY_WINDOW = 1000  # how many of its latest entries a session can put back after a bad save
DECISION_ATTEMPTS = 3  # a manager decides again when the view changed under it, at most this often


def session_file(session_id: str, folder: str = "") -> str:
    """The vault path of a session's transcript.

    The id itself names the file when it is a safe file name; otherwise a slug and a hash of it
    do (the exact id is in the file's front matter, so the mapping is reversible).
    """
    if not isinstance(session_id, str) or not session_id:
        raise PathError(f"a session id must be a non-empty string, got {session_id!r}")
    if len(session_id) > 1000 or any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in session_id):
        raise PathError(f"a session id must be printable text of at most 1,000 characters, got {session_id[:50]!r}")
    if _SAFE_ID.fullmatch(session_id) and session_id.lower() not in ("con", "prn", "aux", "nul"):
        name = session_id
    else:
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        name = f"{slugify(session_id, max_length=40)}-{digest}"
    base = f"{SESSIONS_DIR}/{clean_relpath(folder.strip('/'), what='session folder')}" if folder else SESSIONS_DIR
    return f"{base}/{name}.md"


@dataclass(frozen=True)
class SessionInfo:
    """A session as listed by ``vault.sessions()``: its id, transcript path, keys and creation time."""

    session_id: str
    path: str
    keys: dict[str, Any]
    created: str | None


def read_info(root: Any, rel: str) -> SessionInfo | None:
    """The front matter of a transcript, read from its first 16 KB through the path gate; None if it is not one."""
    try:
        head = _fs.read_vault_head(Path(root), rel, 16_384)
        if head is None:
            return None
        parsed = transcript.parse(head, path=rel)
    except (OSError, DocumentError, PathError):  # PathError: a LinkError, never followed
        return None
    meta = parsed.metadata
    keys: dict[str, Any] = meta["keys"] if isinstance(meta.get("keys"), dict) else {}
    return SessionInfo(str(meta.get("session_id", rel)), rel, keys, meta.get("created"))


def keys_id(keys: Mapping[str, Any]) -> str:
    """A session id derived from context keys: the same keys always give the same id."""
    if not isinstance(keys, Mapping) or not keys:
        raise InvalidArgumentError("keys must be a non-empty mapping of names to values")
    _check_keys(keys)
    canonical = json.dumps(dict(sorted(keys.items())), separators=(",", ":"), ensure_ascii=False)
    readable = "-".join(slugify(str(v), max_length=20) for _, v in sorted(keys.items()))[:60]
    return f"{readable}-{hashlib.sha256(canonical.encode()).hexdigest()[:10]}"


def _check_keys(keys: Mapping[str, Any]) -> None:
    """Context keys as a transcript's front matter and file name may hold them: plain values, no credential."""
    for name, value in keys.items():
        check_clean("a context key's name", str(name))
        check_clean(f"the value of the context key {name!r}", str(value))
        if not isinstance(name, str) or not isinstance(value, (str, int, float, bool)):
            raise InvalidArgumentError(f"keys must map strings to plain values, got {name!r}: {value!r}")


class MarkdownSession:
    """A conversation stored as a transcript file in a vault; an OpenAI Agents ``Session``.

    Args:
        vault: The vault that holds the transcript (``vault.session(...)`` passes it).
        session_id: The session's id (any string; unsafe ones are mapped to a safe file name).
        keys: Context keys recorded in the front matter (``{"user_id": "alice"}``).
        folder: A sub-folder of ``sessions/`` for the file.
        session_settings: The SDK's ``SessionSettings``; its ``limit`` applies when
            ``get_items`` is called without one.
        commit: ``turn`` (default: every ``add_items``/``pop_item`` is a commit when it returns),
            a number of seconds (commit when the last commit is at least that old, and on close),
            ``close`` (one commit when the session closes) or ``manual`` (call :meth:`commit`).
        metadata: More front-matter keys for a new transcript (a title, the date of the talk).
        manager: A conversation manager (``memfs.conversation``): ``items``/``get_items`` then return
            its managed view, its decision after every append is recorded in the transcript, and
            :meth:`history` still returns everything.
    """

    def __init__(
        self,
        vault: Any,
        session_id: str,
        *,
        keys: Mapping[str, Any] | None = None,
        folder: str = "",
        session_settings: Any = None,
        commit: str | float = "turn",
        metadata: Mapping[str, Any] | None = None,
        manager: ConversationManager | None = None,
    ) -> None:
        if isinstance(commit, bool) or not (
            commit in COMMIT_POLICIES or (isinstance(commit, (int, float)) and commit > 0)
        ):
            raise InvalidArgumentError(
                f"commit must be one of {COMMIT_POLICIES} or a positive number of seconds, got {commit!r}"
            )
        self.engine: WriteEngine = engine_of(vault)
        # the id names the file and every commit; a key or a folder is a name too: none may hold a credential
        if isinstance(session_id, str):
            check_clean("the session id", session_id)
        if isinstance(folder, str):
            check_clean("the session folder", folder)
        self.session_id = session_id
        self.path = session_file(session_id, folder)
        self.keys = dict(keys or {})
        if self.keys:
            _check_keys(self.keys)
        for name in metadata or {}:
            check_clean("a front-matter key", str(name))
        self.session_settings = _settings(session_settings)
        self.commit_policy = commit
        self.metadata = redact_value(dict(metadata or {}))  # front matter is content: redacted, as messages are
        report(
            find_secrets(json.dumps(metadata or {}, default=str)),
            where=f"the front matter of {self.path}",
            who=f"session {session_id}",
        )
        self.manager = manager
        self._dirty = False
        self._last_commit = float("-inf")  # the first append under an interval policy is due at once

    def __repr__(self) -> str:
        return f"MarkdownSession({self.session_id!r}, path={self.path!r})"

    @property
    def file(self) -> Path:
        """The transcript's absolute path."""
        return self.engine.root / self.path

    # -- the synchronous core ----------------------------------------------------

    def items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The items the model sees: the managed view (:meth:`history` on a transcript no manager or compaction cut).

        Without a manager attached, the view is the one the transcript's own entries say (a
        compaction's, or a manager's of another process); with neither, every item.
        """
        limit = self._resolve_limit(limit)
        if self.manager is None:
            if limit == 0:
                return []
            cut = self._view(None if limit is None or limit < 0 else limit)
            if cut.removed == 0 and cut.summary is None and not cut.truncated:
                return self.history(limit)  # nothing cut: every item (and a word on unreadable entries)
            view = cut.items
        else:
            view = self.view().items
        if limit is None or limit < 0:
            return view
        return view[len(view) - limit :] if limit else []

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The latest ``limit`` items, in chronological order.

        As in ``SQLiteSession``: ``limit=None`` uses ``session_settings.limit`` (everything if that
        is unset too), ``limit=0`` returns nothing, a negative limit returns everything. Entries
        that a hand edit made unreadable are logged and skipped.
        """
        limit = self._resolve_limit(limit)
        if limit == 0:
            return []
        try:
            fd = self.engine.open_file(self.path)
        except FileNotFoundError:
            return []
        try:
            entries, problems = _last_items(fd, None if limit is None or limit < 0 else limit)
        finally:
            os.close(fd)
        for problem in problems:
            log.warning("%s: skipped an unreadable entry at byte %d: %s", self.path, problem.offset, problem.reason)
        return [e.item for e in entries]

    def append(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Add items at the end of the transcript (one write), then commit per the policy.

        All or nothing: if the write or the commit fails, the transcript is as before and the
        error is raised, so a retry does not duplicate anything. With a manager attached, its
        decision on the new view is recorded in the same write and commit; the manager decides
        outside the vault lock.
        """
        items = list(items)
        for item in items:
            if not isinstance(item, Mapping):
                raise InvalidArgumentError(f"session items must be mappings, got {type(item).__name__}")
            json.dumps(item)  # a clear TypeError now rather than a broken file later
        if not items:
            return
        now = timestamp()
        # credentials are redacted before anything is written: the raw text is kept nowhere (and scanned once)
        dumped = [json.dumps(item) for item in items]
        redacted, found = redact_values([json.loads(text) for text in dumped])
        entries: list[tuple[Any, ...]] = [(item, now) for item in redacted]
        report(found, where=self.path, who=f"session {self.session_id}")
        message = f"session: {self.session_id} +{len(items)} message{'s' if len(items) > 1 else ''}"
        manager = self.manager
        if manager is not None:
            for _ in range(DECISION_ATTEMPTS):
                view, stat = self._settled_view(items_needed(manager))
                decision = manager.apply_management(extend_view(view, [e[0] for e in entries]))
                try:
                    with self.engine.locked():
                        self._check_unchanged(view, stat, items_needed(manager))
                        with self._all_or_nothing():
                            self._ensure_file()
                            self._write_entries(entries + _decision_entries(decision, self.path), at=view.next_position)
                            self._changed(message)
                    return
                except ConflictError:  # the view changed under the decision
                    log.info("%s changed while its manager decided; deciding again", self.path)
                except BaseException:
                    manager.restore(view)  # the transcript is as it was, and so is the manager
                    raise
            log.warning("%s kept changing while its manager decided; appending without a decision", self.path)
        with self.engine.locked(), self._all_or_nothing():
            self._ensure_file()
            self._write_entries(entries)
            self._changed(message)
        if manager is not None:
            manager.restore(self._settled_view(items_needed(manager))[0])

    def pop(self) -> dict[str, Any] | None:
        """Remove and return the last item (None if the session is empty); truncates the file."""
        with self.engine.locked():
            if not self.file.exists():
                return None
            self._write_entries([])  # put back what a bad save dropped before removing anything
            with self._all_or_nothing():
                fd = self.engine.open_file(self.path)
                try:
                    entries, _ = _last_items(fd, 1)
                finally:
                    os.close(fd)
                if not entries:
                    return None
                self.engine.appends.truncate(self.path, entries[-1].offset)
                self._wrote(entries[-1].n - 1)
                self._changed(f"session: {self.session_id} -1 message")
                return entries[-1].item

    def clear(self) -> None:
        """Remove every item; the transcript keeps its front matter (and its history in git)."""
        with self.engine.locked():
            if not self.file.exists():
                return
            self.engine.appends.repair_tail(self.path)  # an interrupted append is kept in salvage, not dropped
            with self._all_or_nothing():
                data = self.engine.read_bytes(self.path)
                offset = transcript.body_offset(data)
                transcript.parse(data[:offset], path=self.path)  # a transcript's front matter, or DocumentError
                self.engine.appends.truncate(self.path, offset)
                self._wrote(0)
                self._changed(f"session: {self.session_id} cleared")

    def commit(self) -> str | None:
        """Commit the transcript now (for the ``manual``, ``close`` and interval policies)."""
        with self.engine.locked():
            self._dirty = False
            self._last_commit = time.monotonic()
            return self.engine.commit([self.path], f"session: {self.session_id}", self._trailers())

    def close(self) -> None:
        """Commit what the ``close`` or interval policy held back."""
        if self._dirty and self.commit_policy != "manual":
            self.commit()

    def __enter__(self) -> MarkdownSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def last_active(self) -> str | None:
        """When the newest entry was appended (ISO 8601), or None for a new session.

        Asked before this run appends, it is when the session was last active.
        """
        try:
            fd = self.engine.open_file(self.path)
        except FileNotFoundError:
            return None
        try:
            entries, _, _ = transcript.read_tail(fd, 1)
        finally:
            os.close(fd)
        return entries[-1].time if entries else None

    def positions(self, count: int) -> list[int]:
        """The transcript positions of the last ``count`` items (for provenance: ``path#n``)."""
        if count <= 0 or not self.file.exists():
            return []
        fd = self.engine.open_file(self.path)
        try:
            return [e.n for e in _last_items(fd, count)[0]]
        finally:
            os.close(fd)

    def search(self, query: str, k: int = 10) -> list[MessageHit]:
        """The messages of this session most relevant to ``query``."""
        return self.engine.catalog.search_messages(query, k=k, session=self.path)

    def context_for(self, query: str, *, relevant: int = 5, recent: int = 10) -> list[dict[str, Any]]:
        """Past messages relevant to ``query`` plus the recent window, without duplicates, in order."""
        window = self.items(recent) if recent > 0 else []
        total = self._count()
        first_recent = total - len(window) + 1
        found = {h.position: h.item for h in self.search(query, k=relevant) if h.position < first_recent}
        older = sorted(found.items())
        return [item for _, item in older] + window

    # -- the OpenAI Agents Session protocol --------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation history (the latest ``limit`` items, in order)."""
        return await asyncio.to_thread(self.items, limit)

    async def add_items(self, items: list[Any]) -> None:
        """Append items to the conversation history."""
        await asyncio.to_thread(self.append, items)

    async def pop_item(self) -> Any | None:
        """Remove and return the most recent item, or None if the session is empty."""
        return await asyncio.to_thread(self.pop)

    async def clear_session(self) -> None:
        """Remove every item of the session."""
        await asyncio.to_thread(self.clear)

    # -- conversation management ------------------------------------------------

    def view(self) -> View:
        """The managed view, rebuilt from the transcript (see :func:`memfs.conversation.read_view`)."""
        return self._view(None)

    def apply_management(self) -> Decision | None:
        """Ask the manager for a decision on the current view and record it (what every append does).

        The manager decides outside the vault lock; if the transcript changed meanwhile in a way
        that alters the view, it decides again (at most three times, then nothing is recorded).
        """
        manager = self._manager()
        for _ in range(DECISION_ATTEMPTS):
            view, stat = self._settled_view(items_needed(manager))
            decision = manager.apply_management(view)
            if decision is None:
                return None
            try:
                self._record_on(decision, view, stat, items_needed(manager))
                return decision
            except ConflictError:  # the view changed under the decision
                log.info("%s changed while its manager decided; deciding again", self.path)
        log.warning("%s kept changing while its manager decided; nothing recorded", self.path)
        manager.restore(self._settled_view(items_needed(manager))[0])
        return None

    def reduce_context(self, error: BaseException | None = None) -> Decision:
        """On a context overflow: ask the manager to free room and record its decision.

        As with :meth:`apply_management`, the manager decides outside the vault lock.

        Raises:
            ContextWindowOverflowError: The manager cannot free any more room.
            SessionError: The transcript kept changing while the manager decided.
        """
        manager = self._manager()
        for _ in range(DECISION_ATTEMPTS):
            view, stat = self._settled_view(None)
            decision = manager.reduce_context(view, error)
            try:
                self._record_on(decision, view, stat, None)
                return decision
            except ConflictError:  # the view changed under the decision
                log.info("%s changed while its manager decided; deciding again", self.path)
        manager.restore(self._settled_view(None)[0])
        raise SessionError(f"{self.path} kept changing while its manager decided; nothing was recorded")

    def replace_view(self, items: Sequence[Mapping[str, Any]], *, reason: str = "compaction") -> None:
        """Make ``items`` all the model sees from now on, in one write and one commit.

        The transcript keeps every item it held: an entry says the view starts after them
        (``messages before N are out of the model's view (compaction)``), then ``items`` follow
        it. This is what a compaction does (OpenAI's ``OpenAIResponsesCompactionSession`` calls
        it through ``_atomic_replace_items``); the verbatim history stays readable in the file.
        """
        items = [dict(item) for item in items]
        for item in items:
            json.dumps(item)
        now = timestamp()
        with self.engine.locked():
            if self.file.exists():
                self._write_entries([])  # torn tails cut, dropped entries put back first
            view = self._view(None)
            start = view.next_position + 1  # the entry below takes next_position, the items follow it
            removed = view.removed + view.skipped + len(view.positions)
            meta = {
                "start": start,
                "removed": removed,
                "drop_summary": view.summary is not None,
                "reason": reason,
                "manager": reason,
                "truncated": {},
            }
            decision = Decision("window", meta, f"Messages before {start} are out of the model's view ({reason}).")
            entries = _decision_entries(decision, self.path) + [(redact_value(item), now) for item in items]
            with self._all_or_nothing():
                self._ensure_file()
                self._write_entries(entries, at=view.next_position)
                self._changed(f"session: {self.session_id} {reason} ({len(items)} items in view)")
        if self.manager is not None:
            self.manager.restore(self.view())

    async def _atomic_replace_items(self, items: list[Any]) -> bool:
        """The OpenAI Agents SDK's hook for compaction: :meth:`replace_view`, one commit."""
        await asyncio.to_thread(self.replace_view, items)
        return True

    def restore_manager(self) -> list[dict[str, Any]]:
        """Rebuild the manager's state from the transcript alone; returns the managed view."""
        return self._manager().restore(self.view())

    def record(self, decision: Decision) -> None:
        """Write a manager's decision into the transcript and commit it per the policy."""
        with self.engine.locked(), self._all_or_nothing():
            self._ensure_file()
            self._write_decision(decision)
            self._changed(f"session: {self.session_id} {decision.kind}")

    # -- helpers ---------------------------------------------------------------------

    def _manager(self) -> ConversationManager:
        if self.manager is None:
            raise InvalidArgumentError(f"session {self.session_id!r} has no conversation manager")
        return self.manager

    def _write_decision(self, decision: Decision) -> None:
        self._write_entries(_decision_entries(decision, self.path))

    def _resolve_limit(self, limit: int | None) -> int | None:
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
            if isinstance(self.session_settings, Mapping):
                limit = self.session_settings.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise InvalidArgumentError(f"limit must be an integer or None, got {limit!r}")
        return limit

    def _ensure_file(self) -> None:
        if self.file.exists():
            return
        meta: dict[str, Any] = {"session_id": self.session_id, "created": timestamp()}
        if self.keys:
            meta["keys"] = self.keys
        meta.update({k: v for k, v in self.metadata.items() if k not in ("memfs", "session_id")})
        self.engine.appends.replace(self.path, transcript.new_head(meta).encode("utf-8"))
        self._wrote(0)

    def _count(self) -> int:
        try:
            fd = self.engine.open_file(self.path)
        except FileNotFoundError:
            return 0
        try:
            entries, _, _ = transcript.read_tail(fd, 1)
        finally:
            os.close(fd)
        return entries[-1].n if entries else 0

    def _tail(self) -> Tail:
        return self.engine.appends.tail(self.path)

    def _wrote(self, last_n: int, batch: Sequence[tuple[Any, ...]] = ()) -> None:
        """Remember this process's write: the last position now, and the entries it added."""
        tail = self._tail()
        first = last_n - len(batch) + 1
        for n in [n for n in tail.entries if n >= first]:
            del tail.entries[n]
        for i, entry in enumerate(batch):
            tail.entries[first + i] = entry
        for old in [n for n in tail.entries if n <= last_n - RECOVERY_WINDOW]:
            del tail.entries[old]
        tail.n = last_n
        tail.stat = self.engine.appends.last_write(self.path)

    @contextlib.contextmanager
    def _all_or_nothing(self) -> Iterator[None]:
        """The block's changes to the transcript (and the commit) happen whole or not at all."""
        tail = self._tail()
        saved, known = tail.copy(), self.engine.appends.last_write(self.path)
        try:
            with self.engine.appends.rewinding(self.path):
                yield
        except BaseException:
            tail.stat, tail.n, tail.entries = saved.stat, saved.n, saved.entries
            if saved.stat is not None and saved.stat == known:  # the rewind gave the file a new stat
                tail.stat = self.engine.appends.last_write(self.path)
            raise

    def _view(self, limit: int | None) -> View:
        try:
            fd = self.engine.open_file(self.path)
        except FileNotFoundError:
            return View()
        try:
            return read_view(fd, limit)
        finally:
            os.close(fd)

    def _settled_view(self, limit: int | None) -> tuple[View, OwnStat | None]:
        """The view once torn tails are cut and dropped entries put back, with the file's stat.

        The repairs need the vault lock, and a bounded view (``limit`` items) is read under it: a
        few entries from the end. The whole view a manager without a bound needs (a summarizer)
        costs as much as the session is long, so it is read once the lock is let go, and kept
        only if the file is still the one it was read from.
        """
        for _ in range(DECISION_ATTEMPTS):
            with self.engine.locked():
                if self.file.exists():
                    self._write_entries([])
                stat = _stat_of(self.file)
                if limit is not None:
                    return self._view(limit), stat
            view = self._view(None)
            if _stat_of(self.file) == stat:
                return view, stat
        with self.engine.locked():  # the file keeps changing: read it where it cannot
            if self.file.exists():
                self._write_entries([])
            return self._view(limit), _stat_of(self.file)

    def _check_unchanged(self, view: View, stat: OwnStat | None, limit: int | None) -> None:
        """ConflictError if the transcript's view is no longer ``view`` (read when the file was ``stat``).

        A whole view is not read again under the lock (that costs as much as the session is
        long): any change to the file means the manager decides again, on a view read outside it.
        """
        if _stat_of(self.file) == stat:
            return
        if limit is None:
            raise ConflictError(f"{self.path} changed while its manager decided")
        if self.file.exists():
            self._write_entries([])
        if _stat_of(self.file) != stat and self._view(limit) != view:
            raise ConflictError(f"{self.path} changed while its manager decided")

    def _record_on(self, decision: Decision, view: View, stat: OwnStat | None, limit: int | None) -> None:
        """Record a decision made on ``view``, unless the transcript no longer shows that view."""
        with self.engine.locked():
            self._check_unchanged(view, stat, limit)
            try:
                with self._all_or_nothing():
                    self._ensure_file()
                    self._write_entries(_decision_entries(decision, self.path), at=view.next_position)
                    self._changed(f"session: {self.session_id} {decision.kind}")
            except ConflictError:
                raise
            except BaseException:
                self._manager().restore(view)  # the transcript is as it was, and so is the manager
                raise

    def _write_entries(self, new: list[tuple[Any, ...]], *, at: int | None = None) -> int:
        """Append entries after the last one on disk, first putting back any a bad save dropped.

        A torn tail (an append cut short by a killed writer) is cut off first. An editor that read
        the transcript before an append and saves after it (writing a new file and renaming it
        over) writes the file back without the new entries: if the file is not as memfs last left
        it and ends before the last entry this process wrote, the entries this process remembers
        are put back. If the file is replaced while this runs, the engine refuses the append, and
        it is done again. With ``at``, the first new entry must take that position (else ConflictError).
        """
        tail = self._tail()
        for _ in range(20):
            current = _stat_of(self.file)
            record = self.engine.appends.last_write(self.path)
            if current is not None and current == tail.stat == record:
                on_disk, last = tail.n, b"\n\n"  # exactly as this process left it: nothing to read
            else:
                self.engine.appends.repair_tail(self.path)
                fd = self.engine.open_file(self.path)
                try:
                    st = os.fstat(fd)
                    entries, _, _ = transcript.read_tail(fd, 1)
                    last = os.pread(fd, 2, max(0, st.st_size - 2))
                finally:
                    os.close(fd)
                on_disk = entries[-1].n if entries else 0
                record = self.engine.appends.last_write(self.path)
                current = (st.st_ino, st.st_size, st.st_mtime_ns)
            known = record if record is not None else tail.stat
            lost: list[tuple[Any, ...]] = []
            if tail.stat is None or tail.stat != known:
                # another process wrote last (or none did): what this one remembers may be out of date
                tail.entries.clear()
                tail.n = on_disk
            elif current != known and on_disk < tail.n:  # changed since memfs wrote it, and shorter
                missing = range(on_disk + 1, tail.n + 1)
                lost = [tail.entries[n] for n in missing if n in tail.entries]
                log.warning(
                    "%s: putting back %d messages that another program's save dropped%s",
                    self.path,
                    len(lost),
                    "" if len(lost) == len(missing) else f" ({len(missing) - len(lost)} are too old to restore)",
                )
            # (a file exactly as memfs left it that is shorter was popped or cleared by memfs: nothing to put back)
            if at is not None and on_disk + 1 + len(lost) != at:
                raise ConflictError(f"{self.path} changed while its manager decided")
            batch = lost + new
            data = b"".join(_render(entry, on_disk + 1 + i) for i, entry in enumerate(batch))
            if data:
                try:
                    self.engine.appends.append(
                        self.path, transcript.separator(last) + data, expect=(current[0], current[1])
                    )
                except (ConflictError, FileNotFoundError):
                    log.warning("%s was replaced during an append; appending again", self.path)
                    self._ensure_file()
                    continue
            if data or tail.stat is None or tail.n != on_disk:
                self._wrote(on_disk + len(batch), batch)
            return on_disk + len(batch)
        raise SessionError(f"{self.path} keeps being replaced by another program; could not append")

    def _changed(self, message: str) -> None:
        # the write before it marked the transcript for the index (appends mark what they write)
        policy = self.commit_policy
        due = not isinstance(policy, str) and time.monotonic() - self._last_commit >= policy
        if policy == "turn" or due:
            self.engine.commit([self.path], message, self._trailers())
            self._last_commit = time.monotonic()
            self._dirty = False
        else:
            self._dirty = True

    def _trailers(self) -> dict[str, str]:
        return {"Memfs-Op": "session", "Memfs-Session": self.session_id}


def _settings(value: Any) -> Any:
    """Session settings as given, a dict (as ``SQLiteSession`` takes it) made the SDK's ``SessionSettings``.

    The Runner calls ``session.session_settings.resolve()``, so a dict is converted when the Agents
    SDK is installed; without it memfs reads the dict's ``limit`` itself.
    """
    if not isinstance(value, Mapping):
        return value
    unknown = sorted(set(value) - {"limit"})
    if unknown:
        raise InvalidArgumentError(
            f"session_settings takes only 'limit', got {unknown}; pass {{'limit': N}} or the SDK's SessionSettings"
        )
    limit = value.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise InvalidArgumentError(f"session_settings limit must be an integer or None, got {limit!r}")
    try:
        from agents.memory.session_settings import SessionSettings
    except ImportError:
        return dict(value)
    return SessionSettings(limit=limit)


def _last_items(fd: int, count: int | None) -> tuple[list[transcript.Entry], list[transcript.BrokenEntry]]:
    """The last ``count`` conversation items (all with None), reading back past manager entries."""
    if count is None:
        entries, problems, _ = transcript.read_tail(fd, None)
        return [e for e in entries if e.kind == "item"], problems
    want = count
    while True:
        entries, problems, _ = transcript.read_tail(fd, want)
        items = [e for e in entries if e.kind == "item"]
        if len(items) >= count or len(entries) < want or not entries or entries[0].n <= 1:
            return (items[-count:] if count else []), problems
        want *= 4


def _decision_entries(decision: Decision | None, path: str) -> list[tuple[Any, ...]]:
    """The transcript entry that records a manager's decision (none for no decision); a credential in it redacted."""
    if decision is None:
        return []
    item = decision.entry_item()
    report(find_secrets(json.dumps(item, default=str)), where=path, who=f"the conversation manager ({decision.kind})")
    return [(redact_value(item), timestamp(), decision.kind, dict(decision.meta))]


def _stat_of(path: Path) -> OwnStat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _render(entry: tuple[Any, ...], n: int) -> bytes:
    item, time_ = entry[0], entry[1]
    kind, meta = (entry[2], entry[3]) if len(entry) > 2 else ("item", None)
    return transcript.render_entry(item, n, time_, kind=kind, meta=meta)
