"""What the index gives back: search hits, message hits, skipped files, a sync's report, one look's stale files.

Plain values, shared by the index (:mod:`memfs.index`), what files become in it
(:mod:`memfs.indexing`), its reads (:mod:`memfs.searcher`) and the catalog above them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .lifecycle import CURRENT, Validity
from .semantic import VectorStore


@dataclass(frozen=True)
class Hit:
    """One search result.

    Attributes:
        path: The file's path relative to the vault (``memories/users/alice/x.md``).
        title: The memory's title.
        score: How well it answers the query; higher is better. The BM25F score of its words, or, in
            a search by meaning, that fused with the model's similarity (z-scores over the memories
            searched: 0 is average, and a hit may score below it).
        snippet: A short passage of the body with matched words in ``**bold**``.
        id: The memory's ``id`` (None for files without one).
        namespace: The namespace the memory belongs to.
        type: The memory's ``type``, if any.
        tags: The memory's tags.
        updated: When the memory last changed (ISO 8601, UTC).
        state: ``current``, ``superseded``, ``expired`` or ``future`` when searched
            (:mod:`memfs.lifecycle`); only ``current`` unless history was asked for.
        validity: What the memory's validity keys say (its dates, what replaced it).
        similarity: In a search by meaning, the cosine similarity of the memory and the query by
            the embedding model (comparable across queries of one model); None otherwise, or when
            the memory has not been embedded yet.
        linked_from: For a note brought along by ``follow_links``: the hit that links to it (its
            score is then 0 and it has no snippet); None for a hit of the query itself.
    """

    path: str
    title: str
    score: float
    snippet: str = ""
    id: str | None = None
    namespace: str = ""
    type: str | None = None
    tags: tuple[str, ...] = ()
    updated: str | None = None
    state: str = CURRENT
    validity: Validity = field(default_factory=Validity)
    similarity: float | None = None
    linked_from: str | None = None


@dataclass(frozen=True)
class Dense:
    """What a hybrid search compares besides words: the query's vector and the memories' (:mod:`memfs.semantic`).

    Attributes:
        vector: The query's unit vector.
        vectors: The memories' vectors, by the sha256 of their files.
        weight: The model's share of the fused score (default: :data:`memfs.semantic.SEMANTIC_WEIGHT`).
    """

    vector: Any
    vectors: VectorStore
    weight: float


@dataclass(frozen=True)
class MessageHit:
    """A message found by search.

    Attributes:
        session_id: The session's id, as given to ``vault.session()``.
        session: The transcript's path relative to the vault (``sessions/trip.md``).
        position: The message's 1-based position in its session.
        role: ``user``, ``assistant``, ``function_call``, ...
        score: The BM25 score; higher is better.
        snippet: A passage of the message with matched words in ``**bold**``.
        item: The stored item itself (with its own ``id`` if it had one).
        time: When the message was appended (ISO 8601), if recorded.
        date: When the conversation took place, as its transcript's front matter says (``date``,
            else ``created``): what a question asking "when" needs.
        day: The same as an ISO date (``2023-05-08``) when it reads as one.
    """

    session_id: str
    session: str
    position: int
    role: str
    score: float
    snippet: str
    item: dict[str, Any]
    time: str | None = None
    date: str | None = None
    day: str | None = None


@dataclass(frozen=True)
class Problem:
    """A file the index skipped, and why."""

    path: str
    reason: str


@dataclass
class SyncReport:
    """What a :meth:`SearchIndex.sync` changed."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    embedded: int = 0  # memories given a vector (a reindex with an embedding model)

    @property
    def changed(self) -> int:
        """How many index entries changed."""
        return len(self.added) + len(self.updated) + len(self.removed)

    def merged(self, later: SyncReport) -> SyncReport:
        """This report followed by ``later`` (of a pass that came after it), each path listed once."""
        out = SyncReport()
        for name in ("added", "updated", "removed"):
            setattr(out, name, list(dict.fromkeys(getattr(self, name) + getattr(later, name))))
        out.problems = list(dict.fromkeys(self.problems + later.problems))
        return out


Progress = Callable[[int, int], None]


_T = TypeVar("_T")


@dataclass(frozen=True)
class Found(Generic[_T]):
    """What one query of the index found, and which of those files changed since they were indexed.

    The hits of a ``stale`` file are left out of ``hits`` (:meth:`IndexReader.path_of` aside): the
    caller indexes those files again and asks again (:class:`memfs.catalog.Catalog`), so a
    changed file is ranked by what it says now and a deleted one is never returned.
    """

    hits: list[_T]
    stale: list[str] = field(default_factory=list)
