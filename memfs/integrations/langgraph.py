"""memfs as a LangGraph store: long-term memory of a graph kept as Markdown files in a vault.

``MemfsStore`` is a LangGraph ``BaseStore``: pass it to ``graph.compile(store=...)`` or
``create_react_agent(..., store=...)`` and every ``put`` is a memory file, every batch one commit::

    from memfs import Vault
    from memfs.integrations.langgraph import MemfsStore

    store = MemfsStore(Vault.open("~/agent-memory"))
    store.put(("users", "alice"), "seats", {"text": "Alice prefers window seats."})
    store.search(("users",), query="window seats")

A namespace tuple is a folder (``("users", "alice")`` is ``memories/users/alice/``), a key a file
in it (``seats.md``; a key that is not a safe file name gets a slug and a hash, and the exact key
is in the front matter). The value is the front matter's ``langgraph.value``, whole; its text (the
``index`` fields, else its string fields) is the body, so a person reads it and memfs's search
finds it. ``ttl`` (minutes) becomes the memory's ``expires``: an expired item is no longer
returned, listed or searched, and ``vault.prune()`` archives it.

Search with a ``query`` is memfs's ranked search of the memory files (BM25F over titles, bodies
and tags) within the namespace prefix. An ``index`` configuration chooses which fields of a value
are its searchable text; its ``embed`` function is not called: the vault's search serves every
query.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        PutOp,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memfs.integrations.langgraph needs LangGraph: pip install 'memfs-vault[langgraph]'") from exc

from .. import lifecycle
from ..documents import Document, dumps, timestamp
from ..errors import DocumentError, FileTooLargeError, MemoryNotFoundError, PathError
from ..layout import MEMORIES_DIR
from ..paths import clean_relpath, slugify
from ..store import MemoryStore

if TYPE_CHECKING:
    from ..vault import Vault

__all__ = ["MemfsStore"]

_SAFE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
TRAILERS = {"Memfs-Tool": "langgraph"}
MAX_CANDIDATES = 1000  # a filtered search ranks at most this many hits before filtering


class MemfsStore(BaseStore):
    """A LangGraph ``BaseStore`` over the memory files of a memfs vault.

    Args:
        vault: The vault.
        index: LangGraph's ``IndexConfig``; its ``fields`` say which parts of a value are the text
            search finds (default: every string field). ``embed`` and ``dims`` are kept for a
            vault with semantic search and are not used now.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) for items put without one, and
            ``refresh_on_read`` (default True): a read moves an item's expiry on once a tenth of
            its ttl has passed (a read that refreshes is a commit).
    """

    supports_ttl = True

    def __init__(
        self, vault: Vault, *, index: Mapping[str, Any] | None = None, ttl: Mapping[str, Any] | None = None
    ) -> None:
        self.vault = vault
        self.index_config = dict(index) if index else None
        fields = (self.index_config or {}).get("fields") or ["$"]
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise ValueError(f"index fields must be a list of field paths, got {fields!r}")
        self.fields: list[str] = fields
        self.ttl_config = dict(ttl) if ttl else None  # type: ignore[assignment]

    # -- the two primitives --------------------------------------------------------------

    def batch(self, ops: Iterable[Any]) -> list[Any]:
        """Run LangGraph's operations in order; the reads see the store before the batch's writes.

        Every put and delete of the batch is one commit (the last put of a key wins).
        """
        ops = list(ops)
        results: list[Any] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        refresh: list[tuple[tuple[str, ...], str]] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[i] = self._get(op.namespace, op.key)
                if results[i] is not None and op.refresh_ttl:
                    refresh.append((op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
                if op.refresh_ttl:
                    refresh += [(item.namespace, item.key) for item in results[i]]
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            elif isinstance(op, PutOp):
                _check_namespace(op.namespace)
                puts[(tuple(op.namespace), op.key)] = op
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        if puts or refresh:
            self._write(list(puts.values()), [r for r in refresh if r not in puts])
        return results

    async def abatch(self, ops: Iterable[Any]) -> list[Any]:
        """:meth:`batch` in a worker thread (the vault's work is blocking file and git I/O)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- reads -------------------------------------------------------------------------------

    def _store(self, namespace: tuple[str, ...]) -> MemoryStore:
        # never a proposal: a store reads back what it wrote
        return self.vault.memories("/".join(_check_namespace(namespace)), writer="agent", propose=False)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        store = self._store(namespace)
        try:
            memory = store.get(file_name(key))
        except (MemoryNotFoundError, DocumentError, FileTooLargeError):  # a person's note past what memfs reads
            return None
        return self._item(namespace, memory.metadata, memory.body)

    def _item(self, namespace: tuple[str, ...], metadata: Mapping[str, Any], body: str) -> Item | None:
        record = metadata.get("langgraph")
        if not isinstance(record, dict) or not lifecycle.is_current(metadata):
            return None  # not an item LangGraph wrote (a person's note), or expired
        value = record.get("value")
        return Item(
            value=dict(value) if isinstance(value, dict) else {"text": body.rstrip("\n")},
            key=str(record.get("key")),
            namespace=namespace,
            created_at=_time(metadata.get("created")),
            updated_at=_time(metadata.get("updated")),
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = _check_namespace(op.namespace_prefix, allow_empty=True)
        want = op.offset + op.limit
        found: list[SearchItem] = []
        if op.query:
            k = want if not op.filter else MAX_CANDIDATES
            for hit in self.vault.search(op.query, k=k, namespace="/".join(prefix) or None):
                item = self._read(hit.path, score=hit.score)
                if item is not None and _matches(item.value, op.filter):
                    found.append(item)
        else:
            for rel in self.vault.engine.catalog.files(
                f"{MEMORIES_DIR}/{'/'.join(prefix)}/" if prefix else MEMORIES_DIR + "/"
            ):
                item = self._read(rel)
                if item is not None and _matches(item.value, op.filter):
                    found.append(item)
            found.sort(key=lambda item: item.updated_at, reverse=True)
        return found[op.offset : want]

    def _read(self, rel: str, *, score: float | None = None) -> SearchItem | None:
        parts = rel.split("/")
        if parts[0] != MEMORIES_DIR or not rel.endswith(".md"):
            return None
        try:
            doc = self.vault.read(rel)
        except (MemoryNotFoundError, DocumentError, PathError, FileTooLargeError):
            return None
        item = self._item(tuple(parts[1:-1]), doc.metadata, doc.body)
        if item is None:
            return None
        return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {tuple(ns.split("/")) for ns in self.vault.namespaces()}
        if op.match_conditions:
            found = {
                ns for ns in found if all(_namespace_matches(c.match_type, c.path, ns) for c in op.match_conditions)
            }
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- writes ------------------------------------------------------------------------------

    def _write(self, puts: list[PutOp], refresh: list[tuple[tuple[str, ...], str]]) -> None:
        count = len(puts) + len(refresh)
        message = f"langgraph: {count} change{'s' if count != 1 else ''}"
        with self.vault.batch(message, trailers=TRAILERS):
            for op in puts:
                store, name = self._store(op.namespace), file_name(op.key)
                if op.value is None:
                    if name in store:
                        store.delete(name, trailers=TRAILERS)
                    continue
                ttl = op.ttl if op.ttl is not None else (self.ttl_config or {}).get("default_ttl")
                self._put(store, name, op.namespace, op.key, dict(op.value), op.index, ttl)
            for namespace, key in refresh:
                self._refresh(self._store(namespace), file_name(key))

    def _put(
        self,
        store: MemoryStore,
        name: str,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Any,
        ttl: float | None,
    ) -> None:
        json.dumps(value)  # a clear TypeError now rather than a broken file later
        record: dict[str, Any] = {"key": key, "namespace": list(namespace), "value": value}
        metadata: dict[str, Any] = {"title": key, "langgraph": record}
        if ttl is not None:
            record["ttl"] = ttl
            metadata["expires"] = timestamp(datetime.now(timezone.utc) + timedelta(minutes=ttl))
        exists = name in store
        if exists:  # keep what memfs stamped (id, created) and keys a person added
            old = store.get(name).metadata
            metadata = {**{k: v for k, v in old.items() if k not in ("expires", "langgraph")}, **metadata}
        body = self._text(value, index) + "\n"
        store.write_text(name, dumps(Document.new(metadata, body)), create=not exists, trailers=TRAILERS)

    def _refresh(self, store: MemoryStore, name: str) -> None:
        if not (self.ttl_config or {}).get("refresh_on_read", True):
            return
        try:
            memory = store.get(name)
        except MemoryNotFoundError:
            return
        ttl = (memory.metadata.get("langgraph") or {}).get("ttl")
        if not isinstance(ttl, (int, float)) or "expires" not in memory.metadata:
            return
        new = datetime.now(timezone.utc) + timedelta(minutes=ttl)
        if new - _time(memory.metadata["expires"]) < timedelta(minutes=ttl / 10):
            return  # refreshed lately: no commit for every read
        store.update(name, metadata={"expires": timestamp(new)})

    def _text(self, value: dict[str, Any], index: Any) -> str:
        """The text of a value that search finds and a person reads: its indexed fields."""
        fields = self.fields if index is None or index is False else list(index)
        parts: list[str] = []
        for path in fields:
            if path == "$":
                strings = {k: v for k, v in value.items() if isinstance(v, str) and v.strip()}
                if len(strings) == 1:
                    parts.append(next(iter(strings.values())))
                else:
                    parts += [f"**{k}**: {v}" for k, v in strings.items()]
            else:
                parts += [t for t in get_text_at_path(value, path) if t.strip()]
        return "\n\n".join(parts) or json.dumps(value, ensure_ascii=False, sort_keys=True)


def file_name(key: str) -> str:
    """The file of a key: the key itself when it is a safe file name, else its slug and a hash."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"a LangGraph key must be a non-empty string, got {key!r}")
    if _SAFE_KEY.fullmatch(key):
        return f"{key}.md"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slugify(key, max_length=40) or 'item'}-{digest}.md"


def _check_namespace(namespace: Iterable[str], *, allow_empty: bool = False) -> tuple[str, ...]:
    labels = tuple(namespace)
    if not labels and not allow_empty:
        raise InvalidNamespaceError("a namespace needs at least one label")
    for label in labels:
        try:
            if not isinstance(label, str) or "/" in label:
                raise PathError(f"{label!r} is not one folder name")
            clean_relpath(label, what="namespace label")
        except PathError as exc:
            raise InvalidNamespaceError(
                f"namespace {labels!r}: {exc}; each label becomes a folder name (no '/', no leading '.')"
            ) from None
    return labels


def _namespace_matches(kind: str, path: tuple[str, ...], namespace: tuple[str, ...]) -> bool:
    if len(namespace) < len(path):
        return False
    if kind == "suffix":
        namespace, path = namespace[::-1], path[::-1]
    pairs = zip(namespace[: len(path)], path, strict=True)
    return all(p == "*" or n == p for n, p in pairs)


def _matches(value: Any, condition: Any) -> bool:
    """Whether ``value`` meets a LangGraph filter: equality, nested mappings, ``$eq $ne $gt $gte $lt $lte``."""
    if not condition:
        return True
    if isinstance(condition, Mapping):
        if any(str(k).startswith("$") for k in condition):
            return all(_compare(value, op, expected) for op, expected in condition.items())
        return isinstance(value, Mapping) and all(_matches(value.get(k), v) for k, v in condition.items())
    return bool(value == condition)


def _compare(value: Any, op: str, expected: Any) -> bool:
    if op == "$eq":
        return bool(value == expected)
    if op == "$ne":
        return bool(value != expected)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        a, b = float(value), float(expected)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
