"""Memories of one namespace: every rule of a memory file, in one place.

The store is built in three layers: :mod:`memfs.reader` reads (get, list, search, links, history,
near-duplicates), :mod:`memfs.filestore` changes any file or folder of the namespace (as a fact or
a proposal), and :class:`MemoryStore` here adds the rules of a memory and its writes.

:class:`MemoryStore` is the one way memfs writes a memory: the library, the agent tools and the
CLI all go through it. It names files (slugs, no two names that differ only in case), stamps
``id``, ``created`` and ``updated``, checks content and tags, keeps credentials out (see
:data:`ON_SECRET`), and commits through the write engine with trailers that say what happened.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from . import lifecycle, proposals
from .content import MAX_CONTENT_BYTES, check_text, parse_text, vouched
from .credentials import describe, find_secrets, redact, redact_value, report
from .dates import iso
from .documents import Document, dumps, load_bytes, loads, tags_of, timestamp
from .errors import (
    ContentError,
    DocumentError,
    DuplicateMemoryError,
    InvalidArgumentError,
    SecretError,
    ValidityError,
)
from .filestore import FileStore, _check_name
from .filestore import new_id as new_id
from .layout import label, name_in, namespace_prefix
from .paths import clean_memory_path, clean_relpath, slugify
from .phrasing import headline

# What other modules import from the store, defined where the store's reading half lives.
from .reader import PROVENANCE as PROVENANCE
from .reader import REVIEW_APPROVED as REVIEW_APPROVED
from .reader import REVIEW_PENDING as REVIEW_PENDING
from .reader import Memory as Memory
from .reader import Similar as Similar
from .reader import _check_text
from .reader import awaits_review as awaits_review
from .reader import case_twin as case_twin
from .reader import linked_hits as linked_hits

_RESERVED_KEYS = ("id", "created", "updated")
#: What a near-duplicate takes from the memory an add would have made (``add(if_similar="update")``):
#: where it came from, who wrote it, a review marker (an instruction stays held), and when it holds.
_ABSORBED = ("source", "provenance", "session", "review", "valid_from", "valid_until", "expires")

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


class MemoryStore(FileStore):
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
            final, doc = self._stamp(
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
            written = {} if doc is None else doc.metadata
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
                rel,
                final if doc is None else vouched(doc),
                message=f"memory: {op} {label(rel)}",
                create=create,
                expect=expect,
                trailers=doc_trailers,
            )
        return final

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
        return self._stamp(
            text,
            name=name,
            creating=creating,
            before=before,
            max_bytes=max_bytes,
            provenance=provenance,
            session=session,
            on_secret=on_secret,
            as_written=as_written,
        )[0]

    def _stamp(
        self,
        text: str,
        *,
        name: str,
        creating: bool,
        before: str | None,
        max_bytes: int,
        provenance: str | None,
        session: str | None,
        on_secret: str,
        as_written: bool,
    ) -> tuple[str, Document | None]:
        """:meth:`stamp`'s text and, for a memory, the document it is: the text is parsed once, here."""
        check_text(text, limit=max_bytes)
        where, who = f"{namespace_prefix(self.namespace)}{name}", self._who(provenance, session)
        if not name.endswith(".md"):
            return screen_text(text, on_secret, where=where, who=who), None
        doc = parse_text(text)
        if before is not None and not doc.has_front_matter and front_matter_lines(before):
            raise ContentError(
                "The edit would remove the closing --- of the front matter; keep the front matter's fences as they are."
            )
        if as_written:
            doc = screen_secrets(doc, on_secret, where=where, who=who)
            return dumps(doc), doc
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
        doc = screen_secrets(doc, on_secret, where=where, who=who)
        stamped = dumps(doc)
        if len(stamped.encode("utf-8")) > max_bytes:
            raise ContentError(f"The content with its front matter exceeds the limit of {max_bytes} bytes.")
        return stamped, doc

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
