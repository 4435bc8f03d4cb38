"""Memories of one namespace: every rule of a memory file, in one place.

:class:`MemoryStore` is the one way memfs writes a memory: the library, the agent tools and the
CLI all go through it. It names files (slugs, no two names that differ only in case), stamps
``id``, ``created`` and ``updated``, checks content and tags, keeps credentials out (see
:data:`ON_SECRET`), and commits through the write engine with trailers that say what happened.
"""

from __future__ import annotations

import builtins
import os
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .credentials import describe, find_secrets, redact, redact_value
from .dates import iso_range
from .documents import Document, dumps, load_bytes, loads, normalize_time, tags_of, timestamp
from .engine import MAX_CONTENT_BYTES, WriteEngine, engine_of
from .errors import (
    AlreadyExistsError,
    ContentError,
    DocumentError,
    FileTooLargeError,
    InvalidArgumentError,
    MemoryNotFoundError,
    PathError,
    SecretError,
)
from .history import Revision
from .index import Hit
from .layout import in_namespace, label, memory_path, name_in, namespace_prefix
from .paths import clean_memory_path, clean_relpath, slugify

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RESERVED_KEYS = ("id", "created", "updated")

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
        """The tags, as a tuple of strings."""
        return tags_of(self.metadata.get("tags"))

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


class MemoryStore:
    """The memories of one namespace of a vault. Get one with ``vault.memories("users/alice")``.

    A memory is named by its id (``mem_...``) or by its name inside the namespace
    (``window-seats.md``); every method that takes ``ref`` accepts either.
    """

    def __init__(self, vault: Any, namespace: str) -> None:
        self.engine: WriteEngine = engine_of(vault)
        self.namespace = namespace

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
    ) -> Memory:
        """Store a new memory and commit it.

        Args:
            body: The memory's Markdown text.
            title: A short title; the file name is made from it (or from the body).
            tags: Tags for filtering and search.
            type: ``fact``, ``preference``, ``event``, ``instruction``, ``note``, ...
            path: An explicit name inside the namespace instead of a slug of the title.
            metadata: More front-matter keys, kept in the given order.
            source: Provenance: where the memory was learned.
            provenance: Who or what writes it (one of :data:`PROVENANCE`), recorded as ``provenance``.
            session: The session it is written in, recorded as ``session``.
            on_secret: ``redact``, ``refuse`` or ``allow`` a credential (see :data:`ON_SECRET`).

        Raises:
            AlreadyExistsError: ``path`` was given and a file is already there.
            SecretError: A credential with ``on_secret="refuse"``, or one in ``path``.
        """
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
        doc = screen_secrets(doc, on_secret)  # before the slug: a title's token must not become a name
        with self.engine.locked():
            if path is None:
                rel = self._free_path(slugify(doc.metadata.get("title") or _first_line(doc.body)))
            else:
                rel = self._vault_path(clean_memory_path(_check_name(path, on_secret)))
                self._check_case_clash(rel)
            self.engine.write(rel, doc, message=f"memory: create {label(rel)}",
                              trailers={"Memfs-Op": "create", "Memfs-Id": meta["id"]}, create=True)  # fmt: skip
        return self._memory(rel, doc)

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
            raw = self.engine.read_bytes(rel)
            doc = load_bytes(raw, path=rel)
            if body is not None:
                doc = doc.with_body(body)
            doc = doc.with_metadata({**changes, "updated": timestamp()}, remove=remove)
            doc = screen_secrets(doc, on_secret)
            self.engine.write(rel, doc, message=f"memory: update {label(rel)}",
                              trailers=_trailers("update", doc), create=False, expect=raw)  # fmt: skip
        return self._memory(rel, doc)

    def delete(self, ref: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete a memory (it stays in git history and can be restored)."""
        with self.engine.locked():
            rel = self.resolve(ref)
            self.engine.commit_edits_first([rel])
            self.engine.delete(rel, message=f"memory: delete {label(rel)}",
                               trailers={"Memfs-Op": "delete", **(trailers or {})})  # fmt: skip

    def move(self, ref: str, new_name: str, *, trailers: Mapping[str, str] | None = None) -> Memory:
        """Rename a memory inside the namespace; its id and content are kept."""
        with self.engine.locked():
            rel = self.resolve(ref)
            dest = self._vault_path(clean_memory_path(_check_name(new_name, "redact")))
            if dest == rel:
                return self._memory(rel, self.engine.read(rel))
            self._move_file(rel, dest, trailers)
            return self._memory(dest, self.engine.read(dest))

    def restore(self, ref: str, rev: str, *, trailers: Mapping[str, str] | None = None) -> Memory:
        """Bring a memory back as it was at revision ``rev``, as a new commit.

        ``ref`` may name a deleted memory by its name.
        """
        with self.engine.locked():
            rel = self.resolve(ref, allow_missing=True)
            self.restore_file(name_in(rel, self.namespace), rev, trailers=trailers)
            return self._memory(rel, self.engine.read(rel))

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
        """
        _check_policy(on_secret)
        rel = self._vault_path(clean_relpath(_check_name(name, on_secret)))
        with self.engine.locked():
            if create:
                self._check_case_clash(rel)
            final = self.stamp(text, name=name, creating=create, before=before, max_bytes=max_bytes,
                               provenance=provenance, session=session, on_secret=on_secret,
                               as_written=as_written)  # fmt: skip
            op = "create" if create else "update"
            if not create:
                self.engine.commit_edits_first([rel])
            doc_trailers = {"Memfs-Op": op, **(trailers or {})}
            self.engine.write(rel, final, message=f"memory: {op} {label(rel)}", create=create, expect=expect,
                              trailers=doc_trailers)  # fmt: skip
        return final

    def stamp(self, text: str, *, name: str = ".md", creating: bool, before: str | None = None,
              max_bytes: int = MAX_CONTENT_BYTES, provenance: str | None = None,
              session: str | None = None, on_secret: str = "redact", as_written: bool = False) -> str:  # fmt: skip
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
        if not name.endswith(".md"):
            return screen_text(text, on_secret)
        try:
            doc = loads(text)
        except DocumentError as exc:
            raise ContentError(f"The front matter would be invalid: {exc.reason}.") from None
        if before is not None and not doc.has_front_matter and front_matter_lines(before):
            raise ContentError("The edit would remove the closing --- of the front matter; keep the front "
                               "matter's fences as they are.")  # fmt: skip
        if as_written:
            return dumps(screen_secrets(doc, on_secret))
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
        stamped = dumps(screen_secrets(doc, on_secret))
        if len(stamped.encode("utf-8")) > max_bytes:
            raise ContentError(f"The content with its front matter exceeds the limit of {max_bytes} bytes.")
        return stamped

    def delete_file(self, name: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete any file of the namespace by name (a memory or not) and commit it."""
        rel = self._vault_path(clean_relpath(name))
        with self.engine.locked():
            self.engine.commit_edits_first([rel])
            self.engine.delete(rel, message=f"memory: delete {label(rel)}",
                               trailers={"Memfs-Op": "delete", **(trailers or {})})  # fmt: skip

    def delete_folder(self, name: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete a sub-folder of the namespace and every file in it, in one commit."""
        rel = self._vault_path(clean_relpath(name)) if name else memory_path(self.namespace)
        folder = self.engine.root / rel
        with self.engine.locked():
            files = self._files_under(rel)
            self.engine.commit_edits_first(files)
            message = f"memory: delete {label(rel)}/"
            with self.engine.batch(message, trailers={"Memfs-Op": "delete", **(trailers or {})}):
                for file_rel in files:
                    self.engine.delete(file_rel, message=f"memory: delete {label(file_rel)}")
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()

    def move_file(self, name: str, new_name: str, *, into: MemoryStore | None = None,
                  trailers: Mapping[str, str] | None = None) -> None:  # fmt: skip
        """Rename any file of the namespace (never over an existing one) and commit it.

        ``into`` moves it to another namespace of the same vault (``new_name`` is then a name there).
        """
        _check_name(new_name, "redact")
        rel, dest = self._vault_path(clean_relpath(name)), (into or self)._vault_path(clean_relpath(new_name))
        with self.engine.locked():
            if dest.casefold() != rel.casefold():
                self._check_case_clash(dest)
            self._move_file(rel, dest, trailers)

    def move_folder(self, name: str, new_name: str, *, into: MemoryStore | None = None,
                    trailers: Mapping[str, str] | None = None) -> None:  # fmt: skip
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
            with self.engine.batch(message, trailers={"Memfs-Op": "move", **(trailers or {})}):
                for file_rel in files:
                    moved = dest + file_rel[len(rel) :]
                    self.engine.move(file_rel, moved, message=f"memory: move {label(file_rel)}")

    def restore_file(self, name: str, rev: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Bring any file of the namespace back as it was at ``rev`` (a memory or not), as a new commit."""
        rel = self._vault_path(clean_relpath(name))
        with self.engine.locked():
            if not os.path.lexists(self.engine.root / rel):
                self._check_case_clash(rel)
            self.engine.restore(rel, rev, trailers=dict(trailers or {}))

    def _move_file(self, rel: str, dest: str, trailers: Mapping[str, str] | None) -> None:
        self.engine.commit_edits_first([rel])
        self.engine.move(rel, dest, message=f"memory: move {label(rel)} -> {label(dest)}",
                         trailers={"Memfs-Op": "move", **(trailers or {})})  # fmt: skip

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

    def list(self, *, type: str | None = None, tag: str | None = None) -> builtins.list[Memory]:
        """Every memory of the namespace (sub-folders included), sorted by name.

        Malformed files and files larger than memfs reads are skipped (see ``vault.problems()``).
        """
        memories = []
        for rel in self.engine.files(namespace_prefix(self.namespace)):
            try:
                memory = self._memory(rel, self.engine.read(rel))
            except (DocumentError, MemoryNotFoundError, FileTooLargeError):
                continue
            if type is not None and memory.type != type:
                continue
            if tag is not None and tag.lower() not in (t.lower() for t in memory.tags):
                continue
            memories.append(memory)
        return memories

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        type: str | None = None,
        tags: Iterable[str] = (),
        since: str | datetime | None = None,
        until: str | datetime | None = None,
    ) -> builtins.list[Hit]:
        """Rank this namespace's memories for a natural-language query (BM25F).

        Args:
            query: What to look for, in words. Whoosh syntax (AND, OR, NOT, title:x) works;
                a query with broken syntax is searched as plain words.
            k: How many hits at most.
            type: Only memories of this type.
            tags: Only memories with all these tags.
            since: Only memories updated at or after this time: a date or time (ISO 8601), ``2 days
                ago``, ``yesterday``... (:mod:`memfs.dates`), or a datetime.
            until: Only memories updated at or before this time (a date: to the end of that day).

        Raises:
            InvalidArgumentError: ``since`` or ``until`` is not a date, or they make an empty range.
        """
        since, until = iso_range(since, until)
        return self.engine.search(query, k=k, namespace=self.namespace, type=type, tags=list(tags),
                                  since=since, until=until)  # fmt: skip

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
        found = self.engine.path_of(ref)
        if found is None or not in_namespace(found, self.namespace):
            raise MemoryNotFoundError(f"no memory with id {ref!r} in namespace {self.namespace!r}")
        return found

    # -- helpers ---------------------------------------------------------------

    def _vault_path(self, name: str) -> str:
        return memory_path(self.namespace, name)

    def _free_path(self, slug: str) -> str:
        for n in range(1, 10_000):
            rel = self._vault_path(f"{slug}.md" if n == 1 else f"{slug}-{n}.md")
            if not os.path.lexists(self.engine.root / rel) and not case_twin(self.engine.root, rel):
                return rel
        raise AlreadyExistsError(f"too many memories named {slug!r} in {self.namespace}")

    def _check_case_clash(self, rel: str) -> None:
        twin = case_twin(self.engine.root, rel)
        if twin is not None:
            raise AlreadyExistsError(f"{twin} already exists there and differs only in case")

    def _files_under(self, rel: str) -> builtins.list[str]:
        found = []
        for folder, dirs, files in os.walk(self.engine.root / rel):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
            for file_name in files:
                full = os.path.join(folder, file_name)
                if not os.path.islink(full):
                    found.append(os.path.relpath(full, self.engine.root).replace(os.sep, "/"))
        return sorted(found)

    def _memory(self, rel: str, doc: Document) -> Memory:
        name = name_in(rel, self.namespace)
        return Memory(self.namespace, name, dict(doc.metadata), doc.body, doc.title(name))


def new_id() -> str:
    """A new memory id: ``mem_`` and a ULID (time-ordered, 26 Crockford base32 characters)."""
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "mem_" + "".join(reversed(chars))


def front_matter_lines(text: str) -> int:
    """How many lines the front matter of ``text`` takes (0 if none or unreadable)."""
    try:
        return loads(text).head.count("\n")
    except DocumentError:
        return 0


def screen_secrets(doc: Document, on_secret: str = "redact") -> Document:
    """``doc`` with the credentials in its body and front-matter values redacted (see :data:`ON_SECRET`).

    Values are redacted one by one, so the front matter stays the YAML it was (a placeholder at
    the start of a value is quoted by the dumper). A credential that is not in a value (a key's
    name) cannot be redacted that way: SecretError then, and nothing is written.

    Raises:
        SecretError: ``on_secret`` is ``refuse`` and there is a credential, or one is in a key.
    """
    text = dumps(doc)
    findings = [] if on_secret == "allow" else find_secrets(text)
    if not findings:
        return doc
    if on_secret == "refuse":
        raise _secret_error(findings)
    changes = {key: redact_value(value) for key, value in doc.metadata.items()}
    changes = {key: value for key, value in changes.items() if value != doc.metadata[key]}
    screened = doc.with_body(redact(doc.body)[0]).with_metadata(changes)
    left = find_secrets(dumps(screened))
    if left:
        raise SecretError(f"The front matter holds a credential ({describe(left)}) outside any value, where it "
                          "cannot be redacted; remove it and write again.", tuple(f.kind for f in left))  # fmt: skip
    return screened


def screen_text(text: str, on_secret: str = "redact") -> str:
    """A file's whole text (not a memory) with its credentials redacted, refused or kept."""
    findings = [] if on_secret == "allow" else find_secrets(text)
    if not findings:
        return text
    if on_secret == "refuse":
        raise _secret_error(findings)
    return redact(text)[0]


def _check_name(name: str, on_secret: str) -> str:
    """``name`` unless it holds a credential (a name cannot be redacted: it would name another file)."""
    findings = [] if on_secret == "allow" or not isinstance(name, str) else find_secrets(name)
    if findings:
        raise SecretError(f"The name holds a credential ({describe(findings)}); choose a name without it.",
                          tuple(f.kind for f in findings))  # fmt: skip
    return name


def _check_policy(on_secret: str) -> None:
    if on_secret not in ON_SECRET:
        raise InvalidArgumentError(f"on_secret must be one of {list(ON_SECRET)}, got {on_secret!r}")


def _secret_error(findings: builtins.list[Any]) -> SecretError:
    return SecretError(f"The text holds a credential ({describe(findings)}); memfs does not store it. "
                       "Remove it, or store the text with it replaced by [REDACTED].",
                       tuple(f.kind for f in findings))  # fmt: skip


def _trailers(op: str, doc: Document) -> dict[str, str]:
    trailers = {"Memfs-Op": op}
    if doc.metadata.get("id") is not None:
        trailers["Memfs-Id"] = str(doc.metadata["id"])
    return trailers


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
