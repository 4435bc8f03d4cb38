"""Sessions: conversation history kept as Markdown transcripts in the vault.

:class:`MarkdownSession` implements the OpenAI Agents SDK ``Session`` protocol (async
``get_items``, ``add_items``, ``pop_item``, ``clear_session``) with the semantics of its
``SQLiteSession``, plus synchronous twins (``items``, ``append``, ``pop``, ``clear``) for code that
is not async. Appends write only the new entries, under the vault lock, with one ``write`` on an
``O_APPEND`` file; reads of the last N items read the file from its end.

An editor that saves by writing a new file and renaming it over the transcript while an agent
appends would silently drop the agent's messages. A session therefore remembers the entries it
appended lately; if the file on disk ends before the last of them, it appends the missing ones
again before anything else.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import transcript
from .conversation import ConversationManager, Decision, View, read_view
from .documents import timestamp
from .engine import WriteEngine, engine_of
from .errors import ConflictError, DocumentError, InvalidArgumentError, PathError, SessionError
from .index import MessageHit
from .layout import SESSIONS_DIR
from .paths import clean_relpath, slugify

log = logging.getLogger(__name__)

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
COMMIT_POLICIES = ("turn", "manual", "close")
RECOVERY_WINDOW = 1000  # how many of its latest entries a session can put back after a bad save


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
    """The front matter of a transcript, read from its first 16 KB; None if it is not one."""
    try:
        with open(root / rel, "rb") as handle:
            head = handle.read(16_384)
        parsed = transcript.parse(head, path=rel)
    except (OSError, DocumentError):
        return None
    meta = parsed.metadata
    keys: dict[str, Any] = meta["keys"] if isinstance(meta.get("keys"), dict) else {}
    return SessionInfo(str(meta.get("session_id", rel)), rel, keys, meta.get("created"))


def keys_id(keys: Mapping[str, Any]) -> str:
    """A session id derived from context keys: the same keys always give the same id."""
    if not isinstance(keys, Mapping) or not keys:
        raise InvalidArgumentError("keys must be a non-empty mapping of names to values")
    for name, value in keys.items():
        if not isinstance(name, str) or not isinstance(value, (str, int, float, bool)):
            raise InvalidArgumentError(f"keys must map strings to plain values, got {name!r}: {value!r}")
    canonical = json.dumps(dict(sorted(keys.items())), separators=(",", ":"), ensure_ascii=False)
    readable = "-".join(slugify(str(v), max_length=20) for _, v in sorted(keys.items()))[:60]
    return f"{readable}-{hashlib.sha256(canonical.encode()).hexdigest()[:10]}"


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
        self.session_id = session_id
        self.path = session_file(session_id, folder)
        self.keys = dict(keys or {})
        self.session_settings = session_settings
        self.commit_policy = commit
        self.metadata = dict(metadata or {})
        self.manager = manager
        self._last_n: int | None = None
        self._recent: dict[int, tuple[Any, ...]] = {}
        self._dirty = False
        self._last_commit = 0.0

    def __repr__(self) -> str:
        return f"MarkdownSession({self.session_id!r}, path={self.path!r})"

    @property
    def file(self) -> Path:
        """The transcript's absolute path."""
        return self.engine.root / self.path

    # -- the synchronous core ----------------------------------------------------

    def items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The items the model sees: the manager's view if one is attached, else :meth:`history`."""
        if self.manager is None:
            return self.history(limit)
        limit = self._resolve_limit(limit)
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
            fd = os.open(self.file, os.O_RDONLY)
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

        With a manager attached, its decision on the new view is recorded in the same commit.
        """
        items = list(items)
        for item in items:
            if not isinstance(item, Mapping):
                raise InvalidArgumentError(f"session items must be mappings, got {type(item).__name__}")
            json.dumps(item)  # a clear TypeError now rather than a broken file later
        if not items:
            return
        with self.engine.locked():
            self._ensure_file()
            now = timestamp()
            self._write_entries([(json.loads(json.dumps(item)), now) for item in items])
            if self.manager is not None:
                decision = self.manager.apply_management(self.view())
                if decision is not None:
                    self._write_decision(decision)
            self._changed(f"session: {self.session_id} +{len(items)} message{'s' if len(items) > 1 else ''}")

    def pop(self) -> dict[str, Any] | None:
        """Remove and return the last item (None if the session is empty); truncates the file."""
        with self.engine.locked():
            if not self.file.exists():
                return None
            self._write_entries([])  # put back what a bad save dropped before removing anything
            fd = os.open(self.file, os.O_RDONLY)
            try:
                entries, _ = _last_items(fd, 1)
            finally:
                os.close(fd)
            if not entries:
                return None
            self.engine.truncate(self.path, entries[-1].offset)
            self._last_n = entries[-1].n - 1
            self._recent.pop(entries[-1].n, None)
            self._changed(f"session: {self.session_id} -1 message")
            return entries[-1].item

    def clear(self) -> None:
        """Remove every item; the transcript keeps its front matter (and its history in git)."""
        with self.engine.locked():
            if not self.file.exists():
                return
            data = self.file.read_bytes()
            head = data[: transcript.parse(data, path=self.path).body_offset]
            self.engine.replace(self.path, head)
            self._last_n = 0
            self._recent.clear()
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

    def positions(self, count: int) -> list[int]:
        """The transcript positions of the last ``count`` items (for provenance: ``path#n``)."""
        if count <= 0 or not self.file.exists():
            return []
        fd = os.open(self.file, os.O_RDONLY)
        try:
            return [e.n for e in _last_items(fd, count)[0]]
        finally:
            os.close(fd)

    def search(self, query: str, k: int = 10) -> list[MessageHit]:
        """The messages of this session most relevant to ``query``."""
        return self.engine.search_messages(query, k=k, session=self.path)

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
        try:
            fd = os.open(self.file, os.O_RDONLY)
        except FileNotFoundError:
            return View()
        try:
            return read_view(fd)
        finally:
            os.close(fd)

    def apply_management(self) -> Decision | None:
        """Ask the manager for a decision on the current view and record it (what every append does)."""
        manager = self._manager()
        with self.engine.locked():
            decision = manager.apply_management(self.view())
            if decision is not None:
                self.record(decision)
            return decision

    def reduce_context(self, error: BaseException | None = None) -> Decision:
        """On a context overflow: ask the manager to free room and record its decision.

        Raises:
            ContextWindowOverflowError: The manager cannot free any more room.
        """
        manager = self._manager()
        with self.engine.locked():
            decision = manager.reduce_context(self.view(), error)
            self.record(decision)
            return decision

    def restore_manager(self) -> list[dict[str, Any]]:
        """Rebuild the manager's state from the transcript alone; returns the managed view."""
        return self._manager().restore(self.view())

    def record(self, decision: Decision) -> None:
        """Write a manager's decision into the transcript and commit it per the policy."""
        with self.engine.locked():
            self._ensure_file()
            self._write_decision(decision)
            self._changed(f"session: {self.session_id} {decision.kind}")

    # -- helpers ---------------------------------------------------------------------

    def _manager(self) -> ConversationManager:
        if self.manager is None:
            raise InvalidArgumentError(f"session {self.session_id!r} has no conversation manager")
        return self.manager

    def _write_decision(self, decision: Decision) -> None:
        self._write_entries([(decision.entry_item(), timestamp(), decision.kind, dict(decision.meta))])

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
        self.engine.replace(self.path, transcript.new_head(meta).encode("utf-8"))
        self._last_n = 0

    def _count(self) -> int:
        try:
            fd = os.open(self.file, os.O_RDONLY)
        except FileNotFoundError:
            return 0
        try:
            entries, _, _ = transcript.read_tail(fd, 1)
        finally:
            os.close(fd)
        return entries[-1].n if entries else 0

    def _write_entries(self, new: list[tuple[Any, ...]]) -> int:
        """Append entries after the last one on disk, first putting back any a bad save dropped.

        An editor that read the transcript before an append and saves after it (writing a new file
        and renaming it over) writes the file back without the new entries. The session remembers
        the entries it appended lately and puts back those the file no longer has. If the file is
        replaced while this runs, the engine refuses the append, and it is done again.
        """
        for _ in range(20):
            fd = os.open(self.file, os.O_RDONLY)
            try:
                before = os.fstat(fd)
                entries, _, _ = transcript.read_tail(fd, 1)
            finally:
                os.close(fd)
            on_disk = entries[-1].n if entries else 0
            lost: list[tuple[Any, ...]] = []
            if self._last_n is not None and on_disk < self._last_n:
                missing = range(on_disk + 1, self._last_n + 1)
                lost = [self._recent[n] for n in missing if n in self._recent]
                log.warning("%s: putting back %d messages that another program's save dropped%s", self.path,
                            len(lost), "" if len(lost) == len(missing) else f" ({len(missing) - len(lost)} "
                            "are too old to restore)")  # fmt: skip
            batch = lost + new
            data = b"".join(_render(entry, on_disk + 1 + i) for i, entry in enumerate(batch))
            if data:
                try:
                    self.engine.append(self.path, data, expect=(before.st_ino, before.st_size))
                except (ConflictError, FileNotFoundError):
                    log.warning("%s was replaced during an append; appending again", self.path)
                    self._ensure_file()
                    continue
            self._last_n = on_disk + len(batch)
            for i, entry in enumerate(batch):
                self._recent[on_disk + 1 + i] = entry
            for old in [n for n in self._recent if n <= self._last_n - RECOVERY_WINDOW]:
                del self._recent[old]
            return self._last_n
        raise SessionError(f"{self.path} keeps being replaced by another program; could not append")

    def _changed(self, message: str) -> None:
        self.engine.mark_pending([self.path])
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


def _render(entry: tuple[Any, ...], n: int) -> bytes:
    item, time_ = entry[0], entry[1]
    kind, meta = (entry[2], entry[3]) if len(entry) > 2 else ("item", None)
    return transcript.render_entry(item, n, time_, kind=kind, meta=meta)
