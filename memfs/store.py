"""Memories of one namespace: add, get, update, delete, move, list, search, history, restore."""

from __future__ import annotations

import builtins
import os
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .documents import Document, load_bytes
from .errors import AlreadyExistsError, DocumentError, MemoryNotFound
from .history import Revision
from .index import Hit, normalize_time
from .paths import clean_memory_path, slugify
from .vault import label

if TYPE_CHECKING:
    from .vault import Vault

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RESERVED_KEYS = ("id", "created", "updated")


@dataclass(frozen=True)
class Memory:
    """One memory file, as read from disk.

    Attributes:
        namespace: The namespace it belongs to (``users/alice``).
        path: Its path inside the namespace (``window-seats.md``).
        metadata: The whole front matter, in file order.
        body: The Markdown body, byte for byte.
        title: The ``title`` key, else the first heading, else the file name.
    """

    namespace: str
    path: str
    metadata: dict[str, Any]
    body: str
    title: str

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
        return _tags(self.metadata.get("tags"))

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
    def vault_path(self) -> str:
        """The path relative to the vault (``memories/users/alice/window-seats.md``)."""
        return f"memories/{self.namespace}/{self.path}"


class MemoryStore:
    """The memories of one namespace of a vault. Get one with ``vault.memories("users/alice")``.

    A memory is named by its id (``mem_...``) or by its path inside the namespace
    (``window-seats.md``); every method that takes ``ref`` accepts either.
    """

    def __init__(self, vault: Vault, namespace: str) -> None:
        self.vault = vault
        self.namespace = namespace

    def __repr__(self) -> str:
        return f"MemoryStore({self.namespace!r})"

    # -- writing -------------------------------------------------------------

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
    ) -> Memory:
        """Store a new memory and commit it.

        Args:
            body: The memory's Markdown text.
            title: A short title; the file name is made from it (or from the body).
            tags: Tags for filtering and search.
            type: ``fact``, ``preference``, ``event``, ``instruction``, ``note``, ...
            path: An explicit file path inside the namespace instead of a slug of the title.
            metadata: More front-matter keys, kept in the given order.
            source: Provenance: where the memory was learned.

        Raises:
            AlreadyExistsError: ``path`` was given and a file is already there.
        """
        _check_text("body", body)
        tags = _check_tags(tags)
        extra = dict(metadata or {})
        for key in _RESERVED_KEYS:
            if key in extra:
                raise ValueError(f"{key!r} is maintained by memfs and cannot be set in metadata")
        now = _now()
        meta: dict[str, Any] = {"id": new_id()}
        for key, value in (("title", title), ("type", type)):
            if value is not None:
                meta[key] = _check_text(key, value)
        if tags:
            meta["tags"] = list(tags)
        meta.update(created=now, updated=now)
        if source is not None:
            meta["source"] = _check_text("source", source)
        meta.update(extra)
        doc = Document.new(meta, body if body.endswith("\n") or not body else body + "\n")
        with self.vault.locked():
            if path is None:
                rel = self._free_path(slugify(title or _first_line(body)))
                create = True
            else:
                rel = self._vault_path(path)
                create = True
            self.vault.write(rel, doc, message=f"memory: create {label(rel)}",
                             trailers={"Memfs-Op": "create", "Memfs-Id": meta["id"]}, create=create)  # fmt: skip
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
    ) -> Memory:
        """Change a memory's body and/or front matter; ``updated`` is bumped.

        Keys not mentioned keep their value, order and formatting. ``remove`` drops keys.
        """
        changes: dict[str, Any] = dict(metadata or {})
        for key in _RESERVED_KEYS[:2]:
            if key in changes:
                raise ValueError(f"{key!r} is maintained by memfs and cannot be changed")
        for key, value in (("title", title), ("type", type)):
            if value is not None:
                changes[key] = _check_text(key, value)
        if tags is not None:
            changes["tags"] = list(_check_tags(tags))
        if body is not None:
            _check_text("body", body)
        with self.vault.locked():
            rel = self._resolve(ref)
            raw = self.vault.read_bytes(rel)
            doc = load_bytes(raw, path=rel)
            if body is not None:
                doc = doc.with_body(body)
            doc = doc.with_metadata({**changes, "updated": _now()}, remove=remove)
            self.vault.write(rel, doc, message=f"memory: update {label(rel)}",
                             trailers=self._trailers("update", doc), create=False, expect=raw)  # fmt: skip
        return self._memory(rel, doc)

    def delete(self, ref: str) -> None:
        """Delete a memory (it stays in git history and can be restored)."""
        with self.vault.locked():
            rel = self._resolve(ref)
            self.vault.delete(rel, message=f"memory: delete {label(rel)}",
                              trailers={"Memfs-Op": "delete"})  # fmt: skip

    def move(self, ref: str, new_path: str) -> Memory:
        """Rename a memory inside the namespace; its id and content are kept."""
        with self.vault.locked():
            rel = self._resolve(ref)
            dest = self._vault_path(new_path)
            if dest == rel:
                return self.get(rel[len(self._prefix) :])
            self.vault.move(rel, dest, message=f"memory: move {label(rel)} -> "
                            f"{label(dest)}", trailers={"Memfs-Op": "move"})  # fmt: skip
            return self._memory(dest, self.vault.read(dest))

    def restore(self, ref: str, rev: str) -> Memory:
        """Bring a memory back as it was at revision ``rev``, as a new commit.

        ``ref`` may name a deleted memory by its path.
        """
        with self.vault.locked():
            rel = self._resolve(ref, allow_missing=True)
            self.vault.restore(rel, rev)
            return self._memory(rel, self.vault.read(rel))

    # -- reading -------------------------------------------------------------

    def get(self, ref: str) -> Memory:
        """The memory with this id or path; MemoryNotFound if there is none."""
        rel = self._resolve(ref)
        return self._memory(rel, self.vault.read(rel))

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, str):
            return False
        try:
            self._resolve(ref)
        except (MemoryNotFound, ValueError):
            return False
        return True

    def list(self, *, type: str | None = None, tag: str | None = None) -> builtins.list[Memory]:
        """Every memory of the namespace (sub-folders included), sorted by path.

        Malformed files are skipped (see ``vault.problems()``).
        """
        memories = []
        for rel, _ in sorted(self._scan()):
            try:
                memory = self._memory(rel, self.vault.read(rel))
            except (DocumentError, MemoryNotFound):
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
        since: str | None = None,
        until: str | None = None,
    ) -> builtins.list[Hit]:
        """Rank this namespace's memories for a natural-language query (BM25F).

        Args:
            query: What to look for, in words. Whoosh syntax (AND, OR, NOT, title:x) works;
                a query with broken syntax is searched as plain words.
            k: How many hits at most.
            type: Only memories of this type.
            tags: Only memories with all these tags.
            since: Only memories updated at or after this ISO 8601 time.
            until: Only memories updated at or before this ISO 8601 time.
        """
        return self.vault.search(query, k=k, namespace=self.namespace, type=type, tags=tags,
                                 since=since, until=until)  # fmt: skip

    def history(self, ref: str) -> builtins.list[Revision]:
        """The commits that changed this memory, newest first, followed across renames."""
        rel = self._resolve(ref, allow_missing=True)
        return self.vault.log(rel)

    def show(self, ref: str, rev: str) -> Memory:
        """The memory as it was at revision ``rev``."""
        rel = self._resolve(ref, allow_missing=True)
        data = self.vault._content_at(rel, rev)
        return self._memory(rel, load_bytes(data, path=rel))

    # -- helpers ---------------------------------------------------------------

    @property
    def _prefix(self) -> str:
        return f"memories/{self.namespace}/"

    def _vault_path(self, path: str) -> str:
        return self._prefix + clean_memory_path(path)

    def _resolve(self, ref: str, *, allow_missing: bool = False) -> str:
        if not isinstance(ref, str) or not ref:
            raise MemoryNotFound(f"a memory is named by its id or path, got {ref!r}")
        if ref.endswith(".md"):
            rel = self._vault_path(ref.removeprefix(self._prefix))
            if allow_missing or (self.vault.root / rel).is_file():
                return rel
            raise MemoryNotFound(f"no memory at {rel}; `memfs ls` lists what exists")
        found = self._find_id(ref)
        if found is None:
            raise MemoryNotFound(f"no memory with id {ref!r} in namespace {self.namespace!r}")
        return found

    def _find_id(self, memory_id: str) -> str | None:
        rel = self.vault.path_of(memory_id)
        return rel if rel is not None and rel.startswith(self._prefix) else None

    def _scan(self) -> Iterable[tuple[str, Any]]:
        return ((rel, st) for rel, st in self.vault.index.scan() if rel.startswith(self._prefix))

    def _free_path(self, slug: str) -> str:
        for n in range(1, 10_000):
            rel = self._prefix + (f"{slug}.md" if n == 1 else f"{slug}-{n}.md")
            if not os.path.lexists(self.vault.root / rel) and not _case_clash(self.vault.root / rel):
                return rel
        raise AlreadyExistsError(f"too many memories named {slug!r} in {self.namespace}")

    def _memory(self, rel: str, doc: Document) -> Memory:
        inner = rel[len(self._prefix) :]
        return Memory(self.namespace, inner, dict(doc.metadata), doc.body, doc.title(inner))

    def _trailers(self, op: str, doc: Document) -> dict[str, str]:
        trailers = {"Memfs-Op": op}
        if doc.metadata.get("id") is not None:
            trailers["Memfs-Id"] = str(doc.metadata["id"])
        return trailers


def new_id() -> str:
    """A new memory id: ``mem_`` and a ULID (time-ordered, 26 Crockford base32 characters)."""
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "mem_" + "".join(reversed(chars))


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _first_line(body: str) -> str:
    for line in body.splitlines():
        words = line.strip("# \t").split()
        if words:
            return " ".join(words[:8])
    return "memory"


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if isinstance(value, list):
        return tuple(str(t) for t in value if isinstance(t, (str, int, float)))
    return ()


def _check_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise TypeError("tags must be a list of strings, not one string")
    out = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or "," in tag:
            raise ValueError(f"a tag must be a non-empty string without commas, got {tag!r}")
        out.append(tag.strip())
    return tuple(out)


def _case_clash(target: os.PathLike[str]) -> bool:
    folder = os.path.dirname(target)
    name = os.path.basename(target).casefold()
    try:
        return any(entry.casefold() == name for entry in os.listdir(folder))
    except FileNotFoundError:
        return False
