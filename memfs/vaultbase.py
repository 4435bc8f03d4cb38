"""The vault below its faces: the engine, what it knows, its files, search, and the objects that work on it.

:class:`VaultBase` is the part of :class:`memfs.vault.Vault` that reads and commits through the
engine: a namespace's store, sessions, a watcher, search, the files and their history as git
has it. :class:`~memfs.vault.Vault` adds opening, review, undo, prune, purge, sync, import and export.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .changes import Changes, collect
from .dates import day_range, time_range
from .doctor import Finding, examine
from .documents import Document
from .engine import WriteEngine
from .errors import (
    InvalidArgumentError,
    MemoryNotFoundError,
    PathError,
)
from .history import GitHistory, Identity, Revision
from .index import SearchIndex
from .layout import (
    MEMORIES_DIR,
    is_transcript,
    split_memory_path,
)
from .paths import clean_memory_path, clean_namespace
from .reader import search_memories
from .results import Hit, MessageHit, Problem, Progress, SyncReport
from .sessions import MarkdownSession, SessionInfo, keys_id, read_info
from .settings import Settings
from .settings import load as load_settings
from .store import MemoryStore
from .usage import UsageLog
from .watch import Watcher


class VaultBase:
    """A memfs vault without its faces; see :class:`memfs.vault.Vault`, which users hold."""

    def __init__(self, engine: WriteEngine) -> None:
        self.engine = engine

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    # -- what the engine knows -------------------------------------------------------

    @property
    def root(self) -> Path:
        """The vault folder."""
        return self.engine.root

    @property
    def author(self) -> Identity:
        """Who writes through this vault object (an agent, unless told otherwise)."""
        return self.engine.author

    @property
    def person(self) -> Identity:
        """Whose name edits found on disk are committed under (now: git's config is read each time)."""
        return self.engine.person

    @property
    def durable(self) -> bool:
        """Whether writes are fsynced."""
        return self.engine.durable

    @property
    def freshness(self) -> float | None:
        """How stale a search may be about files changed by hand, in seconds (default 2).

        With no watcher running, a file created, edited, deleted or renamed by hand is found by
        every search that starts this long after the change (files not looked at for this long
        are stat'ed before a search). 0 checks every file before every search; None never
        checks (memfs's own writes are always seen). A hit is checked against its file whatever
        the setting. Set it on a long-lived vault: ``vault.freshness = 0.5``.
        """
        return self.engine.catalog.freshness

    @freshness.setter
    def freshness(self, value: float | None) -> None:
        self.engine.catalog.freshness = value

    @property
    def history(self) -> GitHistory:
        """The git repository behind the vault."""
        return self.engine.history

    @property
    def index(self) -> SearchIndex:
        """The search index (derived state under ``.memfs/``)."""
        return self.engine.catalog.index

    # -- factories -----------------------------------------------------------------------

    def memories(
        self, namespace: str, *, propose: bool | None = None, writer: str | None = None, session: str | None = None
    ) -> MemoryStore:
        """The memories of one namespace, such as ``users/alice``.

        ``propose=True`` makes every write through the store a proposal a person accepts or
        rejects (``memfs review``); ``False`` never; ``None`` follows the vault's review policy
        (``memfs.toml``) for ``writer`` (``agent``, ``extractor``, ``import``; None: a person).
        ``session``: the session writing, recorded on its proposals (see :class:`MemoryStore`).
        """
        return MemoryStore(self.engine, clean_namespace(namespace), propose=propose, writer=writer, session=session)

    def settings(self) -> Settings:
        """What the vault's ``memfs.toml`` says (defaults without one); SettingsError if it is malformed."""
        return load_settings(self.root)

    def resolve(self, ref: str) -> tuple[MemoryStore, str]:
        """The store and vault path of a memory named vault-wide: by id, or as ``users/alice/x.md``.

        A path is not checked for existence (it may name a deleted memory); an id must exist.

        Raises:
            PathError: The path is unsafe or not a Markdown file in a namespace folder.
            MemoryNotFoundError: No memory has that id.
        """
        if isinstance(ref, str) and (ref.endswith(".md") or "/" in ref):
            rel = MEMORIES_DIR + "/" + clean_memory_path(ref.removeprefix(MEMORIES_DIR + "/"))
            namespace, _ = split_memory_path(rel)
            if not namespace:
                raise PathError(f"{ref}: memories live in a namespace folder, like users/alice/x.md")
            return self.memories(namespace), rel
        found = self.engine.catalog.path_of(ref) if isinstance(ref, str) and ref else None
        if found is None:
            raise MemoryNotFoundError(f"no memory with id {ref!r}; `memfs ls` lists what exists")
        return self.memories(split_memory_path(found)[0]), found

    def namespaces(self) -> list[str]:
        """Every folder under ``memories/`` that holds memory files, sorted."""
        found = {split_memory_path(rel)[0] for rel in self.engine.catalog.files(MEMORIES_DIR + "/")}
        return sorted(found - {""})

    def session(
        self, session_id: str | None = None, *, keys: Mapping[str, Any] | None = None, **options: Any
    ) -> MarkdownSession:
        """A conversation stored as a transcript: by id, or by context keys (same keys, same session).

        Options go to :class:`memfs.MarkdownSession` (``folder``, ``session_settings``, ``commit``,
        ``manager``).
        """
        if session_id is None:
            if not keys:
                raise InvalidArgumentError("a session needs a session_id or keys")
            session_id = keys_id(keys)
        return MarkdownSession(self.engine, session_id, keys=keys, **options)

    def sessions(self, **keys: Any) -> list[SessionInfo]:
        """Every session in the vault whose context keys include ``keys``, by path."""
        found = []
        for rel in self.engine.catalog.files():
            if is_transcript(rel):
                info = read_info(self.root, rel)
                if info is not None and all(info.keys.get(k) == v for k, v in keys.items()):
                    found.append(info)
        return found

    def watch(self, **options: Any) -> Watcher:
        """Start a watcher that picks up edits made in an editor (see :class:`memfs.watch.Watcher`).

        Use it as a context manager: ``with vault.watch(): ...`` stops it on exit.
        """
        return Watcher(self.engine, **options).start()

    # -- searching -----------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        namespace: str | None = None,
        type: str | None = None,
        tags: Iterable[str] = (),
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        history: bool = False,
        semantic: bool | None = None,
        follow_links: int = 0,
    ) -> list[Hit]:
        """Search every current memory in the vault; see :meth:`MemoryStore.search` (dates: :mod:`memfs.dates`).

        ``history=True`` finds superseded, expired and future memories too (``Hit.state`` says which).
        ``semantic``: by words and meaning when the vault has a model (None), by words alone (False).
        ``follow_links=N`` brings up to N notes the hits link to (one hop), after them.
        """
        if namespace is not None:
            namespace = clean_namespace(namespace)
        return search_memories(
            self.engine,
            query,
            namespace=namespace,
            k=k,
            type=type,
            tags=tags,
            since=since,
            until=until,
            history=history,
            semantic=semantic,
            follow_links=follow_links,
        )

    @property
    def semantic(self) -> str | None:
        """The embedding model memory search ranks by meaning with (its ``model_id``), or None: by words alone."""
        vectors = self.engine.catalog.vectors
        return vectors.embedder.model_id if vectors is not None else None

    def document_frequencies(self, text: str, *, namespaces: Iterable[str] = ()) -> tuple[int, dict[str, int]]:
        """How common the words of ``text`` are among the vault's memories.

        Returns how many memories were counted, and each of ``text``'s terms (what search looks
        for: stems, stop words left out, the first 32 distinct ones, in order) with how many of
        them hold it in their title or body. ``namespaces`` counts only the memories of those
        namespaces and the folders below them; none counts them all. Injection's relevance floor
        weighs a question's words by it (a word few memories hold says more than a common one).
        """
        if isinstance(namespaces, (str, bytes)) or not isinstance(namespaces, Iterable):
            raise InvalidArgumentError(f"namespaces must be a list of namespaces, got {namespaces!r:.100}")
        return self.engine.catalog.document_frequencies(text, namespaces=[clean_namespace(ns) for ns in namespaces])

    def search_messages(
        self,
        query: str,
        *,
        k: int = 10,
        session: str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
    ) -> list[MessageHit]:
        """Search the messages of every session (or of one transcript, by vault path).

        ``since`` and ``until`` (the syntax of :mod:`memfs.dates`) keep messages whose session
        took place within those days (``MessageHit.day``); one whose date reads as no day is left out then.
        """
        first, last = day_range(since, until)
        return self.engine.catalog.search_messages(query, k=k, session=session, since=first, until=last)

    def path_of(self, memory_id: str) -> str | None:
        """The vault path of the memory with this id, or None."""
        return self.engine.catalog.path_of(memory_id)

    # -- usage -----------------------------------------------------------------------------------

    @property
    def usage(self) -> UsageLog:
        """What was used when (injection records it): derived state under ``.memfs/``, never committed."""
        return UsageLog(self.engine.state_dir)

    # -- files and transactions ---------------------------------------------------------------

    def problems(self) -> list[Problem]:
        """Files the index skipped as malformed."""
        return self.engine.catalog.problems()

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """Hold the vault lock (re-entrant) for a ``with`` block."""
        return self.engine.locked()

    def read(self, path: str) -> Document:
        """Parse the vault file at ``path`` (a vault path)."""
        return self.engine.read(path)

    def read_bytes(self, path: str) -> bytes:
        """The bytes of the vault file at ``path``."""
        return self.engine.read_bytes(path)

    def reconcile(
        self, paths: Iterable[str] | None = None, *, commit: bool = True, progress: Progress | None = None
    ) -> SyncReport:
        """Bring the index (and git, unless ``commit=False``) up to date with files changed by hand."""
        return self.engine.catalog.reconcile(paths, commit=commit, progress=progress)

    def commit(self, message: str | None = None, *, allow_secrets: Iterable[str] = ()) -> str | None:
        """Commit every edit made outside memfs and not committed yet, as the person's.

        An edit that brings in a credential is left uncommitted (``engine.held_secrets`` says
        where; ``doctor`` lists it), unless its vault path is in ``allow_secrets``.

        Returns:
            The commit id, or None when there was nothing to commit.
        """
        if message is not None and (not isinstance(message, str) or not message.strip()):
            raise InvalidArgumentError(f"a commit message must be non-empty text, got {message!r}")
        if isinstance(allow_secrets, str):
            raise InvalidArgumentError("allow_secrets must be a list of vault paths, not one string")
        with self.engine.locked():
            self.engine.catalog.reconcile(commit=False)
            return self.engine.commit_outside_edits(None, message=message, allow_secrets=allow_secrets)

    def outside_edits(self) -> list[str]:
        """The vault paths of edits made outside memfs and not committed yet."""
        return self.engine.edits.outside_edits()

    def reindex(self, *, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Update the index from the files (``full=True``: rebuild it from scratch), and embed every memory.

        With an embedding model, every memory without a vector is embedded (``SyncReport.embedded``
        says how many), outside the vault lock; ``full=True`` also drops the vectors of contents no
        longer in the vault.
        """
        report = self.engine.catalog.reindex(full=full, progress=progress)
        report.embedded, _ = self.engine.catalog.embed(budget=None, compact=full)
        return report

    def doctor(self) -> list[Finding]:
        """Check the index against the files, git's state and malformed files."""
        return examine(self.engine)

    # -- history -----------------------------------------------------------------------------

    def log(
        self,
        path: str | None = None,
        *,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        **options: Any,
    ) -> list[Revision]:
        """Commits touching ``path`` (a vault path, followed across renames) or the vault.

        ``since`` and ``until`` take the syntax of :mod:`memfs.dates` (``2026-11-01``, ``2 days
        ago``...); other options go to :meth:`GitHistory.log` (``author``, ``limit``, ``grep``).
        """
        start, stop = time_range(since, until)
        return self.engine.history.log(path, since=_git_time(start), until=_git_time(stop), **options)

    def changes(
        self,
        since: str | datetime,
        *,
        namespace: str | None = None,
        diff: bool = False,
        limit: int = 500,
        skip_session: str | None = None,
    ) -> Changes:
        """What changed since ``since`` (a date or time in memfs's syntax, or a revision), by who changed it.

        ``namespace`` keeps the memories of that namespace (and those under it); otherwise every
        memory and transcript counts. ``diff`` adds each file's diff. ``skip_session`` leaves out
        what that session wrote. Groups, and how a commit is placed in one: :mod:`memfs.changes`.
        """
        prefix = MEMORIES_DIR + "/" + clean_namespace(namespace) + "/" if namespace else ""
        return collect(self.engine.history, since, prefix=prefix, diff=diff, limit=limit, skip_session=skip_session)

    def show(self, path: str, rev: str) -> bytes:
        """The bytes of ``path`` at revision ``rev``."""
        return self.engine.history.show(path, rev)

    def diff(self, path: str | None, rev_a: str, rev_b: str | None = None) -> str:
        """A unified diff from ``rev_a`` to ``rev_b`` (or to the files on disk)."""
        return self.engine.history.diff(path, rev_a, rev_b)


def _git_time(moment: datetime | None) -> str | None:
    # a form git reads exactly one way, whatever its approxidate makes of other text
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S +0000") if moment else None
