"""Purge: remove a file's content or a text from every commit of a vault's history.

memfs never rewrites history, with this one deliberate exception. ``delete`` keeps every version
in git (that is what makes ``undo`` and ``restore`` work); a purge is for what must not be kept at
all: a credential pasted into a chat, a memory someone asked to have forgotten. Under the vault
lock it:

1. **Rewrites** every commit reachable from any ref of the repository (branches, tags, the stash and
   its entries, a detached HEAD, remote-tracking refs), parents first, through git's object store:
   each commit is read with ``git cat-file --batch`` and written again with the same authors, dates
   and messages. For a path, every version of the file (followed across renames, both ways) is
   removed from the trees, and so is any other file that held exactly the same bytes. For a text,
   every occurrence (also its JSON-escaped and slug forms) is replaced by ``[PURGED]`` in files,
   file names, commit messages and trailers; transcript entries keep exact byte lengths and memory
   front matter stays valid YAML. Commits left empty are dropped; commit ids named in messages
   (``Memfs-Undoes``) are mapped to the new ones. In a vault inside a larger repository only the
   vault's paths change (every later commit still gets a new id).
2. **Moves the refs** in one ``update-ref`` transaction that checks each old value.
3. **Brings the files along**: git's index, memfs's private index and the working tree follow the
   new history (a purged file is deleted; a text is replaced, uncommitted changes included).
4. **Keeps a tombstone**: SHA-256 hashes of every purged file version and text (never the content)
   are committed in ``.memfs-tombstones``, so a later sync from a clone that still has them can
   refuse them (:func:`is_purged`).
5. **Handles remotes**: it says which configured remotes still hold the old history and pushes
   nothing, unless asked to force-push the rewritten branches and tags (``rewrite_remotes``).
6. **Forgets**: reflogs expire, unreachable objects are pruned (``git gc --prune=now``), the
   objects that held the content are checked to be gone, and the search index is rebuilt from
   the files.

Every step can be repeated: if a purge stops half-way (a git lock, a crash), running it again
finishes the job.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from . import _fs
from .documents import dumps, load_bytes
from .engine import WriteEngine
from .errors import DocumentError, HistoryError, InvalidArgumentError, LinkError, NotFoundError, PurgeError
from .gitstore import ObjectReader, ObjectWriter
from .history import ZERO_SHA, GitHistory
from .layout import MEMORIES_DIR, SESSIONS_DIR, STATE_DIR, TOMBSTONES, label
from .paths import slugify

PLACEHOLDER = "[PURGED]"
MIN_TEXT_CHARS = 4

_PLACEHOLDER = PLACEHOLDER.encode("ascii")
_TEMP_REFS = "refs/memfs-purge/"
_TREE = b"40000"
_GITLINK = b"160000"
_SIGNATURE_HEADERS = (b"gpgsig", b"gpgsig-sha256", b"mergetag")
# A transcript entry's heading, as memfs.transcript writes it.
_ENTRY = re.compile(rb"^## [^\n]*?<!-- memfs:entry (\{[^\n]*\}) -->[ \t]*\r?\n", re.MULTILINE)
_HEX = re.compile(rb"(?<![0-9A-Za-z])[0-9a-f]{7,64}(?![0-9A-Za-z])")
_TAG_SIGNATURE = re.compile(rb"-----BEGIN (?:PGP SIGNATURE|SSH SIGNATURE|SIGNED MESSAGE)-----.*\Z", re.S)
# Files git keeps in the (per-worktree) git folder while a person's operation is in progress.
_OPERATIONS = {
    "MERGE_HEAD": "a merge",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or `git am`",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "sequencer": "a cherry-pick or revert",
    "BISECT_LOG": "a bisect",
}
# memfs's own markup: a text inside one of these would break every file that has it (keys of
# front matter and of transcript entries are never changed, but their headings and JSON are text).
_MARKUP = (
    "<!-- memfs:entry ",
    " -->",
    "memfs: transcript/1",
    "session_id",
    "created",
    "updated",
    "title",
    "tags",
    "type",
    "source",
    "Memfs-",
    "[PURGED]",
    "---",
    "```json memfs:item",
    "user",
    "assistant",
    "system",
    "role",
    "content",
    "message",
    "memory",
    "item",
    "kind",
    "meta",
    "keys",
    "name",
    "arguments",
    "call_id",
    "function",
    "text",
    "summary",
)


@dataclass(frozen=True)
class PurgedCommit:
    """A commit whose id a purge changes.

    Attributes:
        old: Its id before the purge.
        new: Its id after; None when it is dropped (it changed nothing but what was purged).
        change: ``content`` (its files, message or authors change), ``dropped``, or ``parent``
            (only the ids of its parents change).
        date: The author date, ISO 8601.
        subject: The first line of its message, as it is after the purge.
    """

    old: str
    new: str | None
    change: Literal["content", "dropped", "parent"]
    date: str
    subject: str


@dataclass(frozen=True)
class RemoteState:
    """What a configured remote holds after a purge.

    Attributes:
        name: The remote's name (its URL is never shown: it may hold credentials).
        stale: Its refs that still hold the old history, as far as this repository knows
            (from the remote-tracking refs, or from a fetch when rewriting remotes).
        rewritten: Its refs force-pushed with the new history.
        error: Why a fetch or push failed, if one did.
    """

    name: str
    stale: tuple[str, ...] = ()
    rewritten: tuple[str, ...] = ()
    error: str | None = None


@dataclass
class PurgeReport:
    """What a purge did (or, for a dry run, would do).

    Attributes:
        dry_run: True when nothing was changed.
        target: ``path`` or ``text``.
        purged_paths: For a path: every vault path the file had, and any other path that held
            the same bytes. For a text: empty (the names may carry the text).
        commits: Every commit whose id changes, oldest first.
        refs: Each ref that moves, with its new id (None: deleted).
        versions: How many distinct file versions (blobs) were removed or rewritten.
        files: Files of the working tree deleted or rewritten (their names after the purge).
        remotes: Every configured remote and what it still holds.
        tombstone: The commit that recorded the tombstone hashes, if one was made.
        leftovers: Ids of objects that held the content and are still in the object store after
            pruning (an alternate object store, a ``.keep`` pack, the same bytes outside the vault).
        outside: For a text in a vault inside a larger repository: the repository's own files
            (outside the vault, at the tip of a branch or tag) that hold it too; a purge leaves them.
        seconds: How long it took.
    """

    dry_run: bool
    target: Literal["path", "text"]
    purged_paths: list[str] = field(default_factory=list)
    commits: list[PurgedCommit] = field(default_factory=list)
    refs: dict[str, str | None] = field(default_factory=dict)
    versions: int = 0
    files: list[str] = field(default_factory=list)
    remotes: list[RemoteState] = field(default_factory=list)
    tombstone: str | None = None
    leftovers: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> list[PurgedCommit]:
        """The commits whose content changes or that are dropped (not those only re-parented)."""
        return [c for c in self.commits if c.change != "parent"]


# -- the tombstone -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tombstones:
    """The hashes of what was purged from a vault: file versions and texts, never their content.

    ``.memfs-tombstones`` holds one entry a line: ``blob <sha256 of the file's bytes>`` or
    ``text <sha256 of the text's UTF-8 bytes> <its length in bytes>``; ``#`` starts a comment.
    """

    blobs: frozenset[str] = frozenset()
    texts: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, data: bytes) -> Tombstones:
        """Read the entries of a tombstone file (unknown lines are ignored)."""
        blobs, texts = set(), set()
        for line in data.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "blob" and _is_sha256(parts[1]):
                blobs.add(parts[1])
            elif len(parts) >= 3 and parts[0] == "text" and _is_sha256(parts[1]) and parts[2].isdigit():
                texts.add((parts[1], int(parts[2])))
        return cls(frozenset(blobs), frozenset(texts))

    def render(self) -> bytes:
        """The file's bytes: a header, then the entries sorted."""
        lines = [
            "# memfs tombstones: SHA-256 hashes of what was purged from this vault's history, never the",
            "# content itself. A sync must not bring back a file version or a text listed here.",
            "# blob <sha256 of the bytes of a purged file version>",
            "# text <sha256 of a purged text's UTF-8 bytes> <its length in bytes>",
            *sorted(f"blob {h}" for h in self.blobs),
            *sorted(f"text {h} {n}" for h, n in self.texts),
        ]
        return ("\n".join(lines) + "\n").encode("utf-8")

    def __or__(self, other: Tombstones) -> Tombstones:
        return Tombstones(self.blobs | other.blobs, self.texts | other.texts)

    def holds_blob(self, data: bytes) -> bool:
        """True if these exact bytes are a purged file version."""
        return hashlib.sha256(data).hexdigest() in self.blobs

    def holds_text(self, text: str) -> bool:
        """True if ``text`` is exactly a purged text."""
        data = text.encode("utf-8")
        return (hashlib.sha256(data).hexdigest(), len(data)) in self.texts

    def find_text(self, data: bytes) -> bool:
        """True if a purged text occurs anywhere in ``data``.

        Only hashes are kept, so every window of each purged text's length is hashed: the cost
        is about one SHA-256 of a short string per byte of ``data`` (~1 s per MiB in CPython).
        """
        for length in sorted({n for _, n in self.texts}):
            wanted = {bytes.fromhex(h) for h, n in self.texts if n == length}
            view = memoryview(data)
            for start in range(len(data) - length + 1):
                if hashlib.sha256(view[start : start + length]).digest() in wanted:
                    return True
        return False

    def is_purged(self, data: bytes | str) -> bool:
        """True if ``data`` (a blob's bytes, or a text) is or contains something purged."""
        if isinstance(data, str):
            return self.holds_text(data) or self.find_text(data.encode("utf-8"))
        return self.holds_blob(data) or self.find_text(data)


def tombstones(owner: Any) -> Tombstones:
    """The tombstones of a vault (a Vault, its engine, or its folder): the file on disk and at HEAD."""
    if isinstance(owner, (str, os.PathLike)):
        root = Path(owner)
        found = Tombstones()
    else:
        engine = owner.engine if hasattr(owner, "engine") else owner
        if not isinstance(engine, WriteEngine):
            raise InvalidArgumentError(f"expected a memfs Vault or a folder, got {type(owner).__name__}")
        root = engine.root
        try:
            found = Tombstones.parse(engine.history.show(TOMBSTONES, "HEAD"))
        except NotFoundError:
            found = Tombstones()
    with contextlib.suppress(OSError):
        found = found | Tombstones.parse((root / TOMBSTONES).read_bytes())
    return found


def is_purged(owner: Any, data: bytes | str) -> bool:
    """Was ``data`` purged from this vault? For a sync deciding what it may bring back.

    Args:
        owner: A Vault, its engine, or the vault's folder.
        data: A blob's bytes (purged if they are a purged file version, or contain a purged
            text), or a text (purged if it is, or contains, a purged text).
    """
    return tombstones(owner).is_purged(data)


# -- what is purged --------------------------------------------------------------------------------


class _Rule:
    """What a purge removes: decisions on names, blobs, messages; shared by both kinds."""

    position_free = False  # trees can be rewritten by id alone, wherever they sit
    kind: Literal["path", "text"]

    def visits(self, folder: str) -> bool:
        return True

    def name(self, name: bytes) -> bytes:
        return name

    def path(self, rel: str) -> str:
        return rel

    def message(self, data: bytes) -> bytes:
        return data

    def person(self, data: bytes) -> bytes:
        return data


class _PathRule(_Rule):
    kind: Literal["path", "text"] = "path"

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.lineage: set[str] = {rel}
        self.blobs: set[str] = set()  # every version the file ever had (blob ids)
        self.elsewhere: set[str] = set()  # other paths that held one of those versions
        self.folders: set[str] = {""}
        self.prefix = ""
        self.empty_blob = ""
        self._forms: list[bytes] = []

    def prepare(self, history: GitHistory, extra: list[str], empty_blob: str) -> None:
        """Find the file's names across renames and every version it had, in every ref's history.

        ``extra`` are commits no ref names (the stash's older entries).
        """
        self.prefix, self.empty_blob = history.prefix, empty_blob
        out = history.plumbing(
            "log",
            "--all",
            "-m",
            "-M",
            "--full-history",
            "--raw",
            "-z",
            "--no-abbrev",
            "--format=",
            "--stdin",
            "--",
            self.prefix or ".",
            input="".join(f"{c}\n" for c in extra),
            env={"GIT_NO_REPLACE_OBJECTS": "1"},
            check=False,
        )
        pairs, renames = _raw_changes(out, self.prefix)
        grown = True
        while grown:
            grown = False
            for a, b in renames:
                if (a in self.lineage) != (b in self.lineage):
                    self.lineage |= {a, b}
                    grown = True
        self.blobs = {oid for p, oid in pairs if p in self.lineage and oid != ZERO_SHA and set(oid) != {"0"}}
        sweep = self.blobs - {empty_blob}
        self.elsewhere = {p for p, oid in pairs if oid in sweep} - self.lineage
        for rel in self.lineage | self.elsewhere:
            parts = rel.split("/")
            self.folders.update("/".join(parts[:i]) + "/" for i in range(1, len(parts)))
        forms = {f for rel in self.lineage for f in (self.prefix + rel, rel, label(rel))}
        self._forms = sorted((f.encode("utf-8") for f in forms), key=len, reverse=True)

    def visits(self, folder: str) -> bool:
        return folder in self.folders

    def drops(self, rel: str, oid: str) -> bool:
        """True if the entry at vault path ``rel`` holding blob ``oid`` goes."""
        return rel in self.lineage or (oid in self.blobs and oid != self.empty_blob)

    def message(self, data: bytes) -> bytes:
        for form in self._forms:
            data = data.replace(form, _PLACEHOLDER)
        return data


class _TextRule(_Rule):
    position_free = True
    kind: Literal["path", "text"] = "text"

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or len(text.strip()) < MIN_TEXT_CHARS:
            raise InvalidArgumentError(f"the text to purge must have at least {MIN_TEXT_CHARS} characters")
        if "\x00" in text:
            raise InvalidArgumentError("the text to purge contains a NUL character")
        if any(text in markup for markup in _MARKUP):
            raise InvalidArgumentError(
                f"{text!r} is part of memfs's own markup (front matter keys, transcript headings); purging it "
                "would break every file. Purge a longer, specific text."
            )
        self.text = text
        forms = {text}
        for _ in range(2):  # JSON-escaped, and escaped twice (tool-call arguments are JSON in JSON)
            for form in list(forms):
                for ascii_only in (False, True):
                    escaped = json.dumps(form, ensure_ascii=ascii_only)[1:-1]
                    forms |= {escaped, escaped.replace(">", "\\u003e")}
        slug = slugify(text, max_length=len(text) + 1)
        if len(slug) >= 8 and slug != "memory":
            forms.add(slug)  # the form the text takes in a file name made from a title
        self.forms = sorted(forms, key=len, reverse=True)
        self.variants = [f.encode("utf-8") for f in self.forms]

    def hit(self, data: bytes) -> bool:
        return any(v in data for v in self.variants)

    def scrub(self, data: bytes) -> bytes:
        for variant in self.variants:
            data = data.replace(variant, _PLACEHOLDER)
        return data

    def scrub_str(self, text: str) -> str:
        for form in self.forms:
            text = text.replace(form, PLACEHOLDER)
        return text

    def deep(self, value: Any) -> Any:
        """``value`` (parsed YAML or JSON) with the text replaced in every string (keys stay)."""
        if isinstance(value, str):
            return self.scrub_str(value)
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        if isinstance(value, dict):
            return {k: self.deep(v) for k, v in value.items()}
        return value

    def name(self, name: bytes) -> bytes:
        return self.scrub(name) if self.hit(name) else name

    def path(self, rel: str) -> str:
        return "/".join(self.scrub_str(part) for part in rel.split("/"))

    def message(self, data: bytes) -> bytes:
        return self.scrub(data) if self.hit(data) else data

    def person(self, data: bytes) -> bytes:
        return self.scrub(data) if self.hit(data) else data

    def blob(self, data: bytes) -> bytes:
        """A file's bytes with the text replaced, keeping transcripts and front matter well-formed."""
        if not self.hit(data):
            return data
        if b"<!-- memfs:entry " in data:
            new = self._transcript(data)
        elif data.startswith((b"---", b"\xef\xbb\xbf---")):
            new = self._document(data)
        else:
            new = self.scrub(data)
        return self.scrub(new) if self.hit(new) else new  # a YAML comment, a hand-broken entry

    def _document(self, data: bytes) -> bytes:
        plain = self.scrub(data)
        try:
            old = load_bytes(data)
        except DocumentError:
            return plain
        want = self.deep(old.metadata)
        with contextlib.suppress(DocumentError):
            if load_bytes(plain).metadata == want:
                return plain  # the front matter still means the same: keep every byte as written
        try:  # "[PURGED]" at the start of a plain YAML value would be a list: write the changed keys anew
            changes = {k: v for k, v in want.items() if old.metadata[k] != v}
            doc = old.with_metadata(changes)
            return dumps(doc.with_body(self.scrub_str(old.body))).encode("utf-8")
        except (DocumentError, ValueError, TypeError):
            return plain

    def _transcript(self, data: bytes) -> bytes:
        first = _ENTRY.search(data)
        if first is None:
            return self.scrub(data)
        head = data[: first.start()]
        out = [self._document(head) if self.hit(head) else head]
        pos = first.start()
        while pos < len(data):
            match = _ENTRY.match(data, pos)
            if match is None:
                break
            try:
                record = json.loads(match.group(1).decode("utf-8"))
                length = record["len"]
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                break
            if not isinstance(length, int) or length < 0:
                break
            end = match.end() + length
            if data[end : end + 2] != b"\n\n":
                break  # edited by hand: the rest is scrubbed as plain text below
            heading, body = data[pos : match.end()], data[match.end() : end]
            if self.hit(heading) or self.hit(body):
                body = self.scrub(body)
                record = self.deep(record)
                record["len"] = len(body)  # the entry's byte length stays exact
                comment = json.dumps(record, ensure_ascii=False, separators=(", ", ": ")).replace(">", "\\u003e")
                opening, closing = data[pos : match.start(1)], data[match.end(1) : match.end()]
                heading = self.scrub(opening) + comment.encode("utf-8") + closing
            out.append(heading + body + b"\n\n")
            pos = end + 2
        out.append(self.scrub(data[pos:]))
        return b"".join(out)


# -- rewriting -------------------------------------------------------------------------------------


class _Rewriter:
    """Writes the purged history: commits parents first, trees and blobs once each (memoised)."""

    def __init__(self, reader: ObjectReader, writer: ObjectWriter, rule: _Rule, prefix: str) -> None:
        self.reader, self.writer, self.rule = reader, writer, rule
        self.prefix_parts = [p.encode("utf-8") for p in prefix.strip("/").split("/")] if prefix else []
        self.id_bytes = 32 if writer.algorithm == "sha256" else 20
        self.empty_tree = writer.id_of("tree", b"")
        self.empty_blob = writer.id_of("blob", b"")
        self.commits: dict[str, str | None] = {}
        self.trees: dict[str, str | None] = {}
        self.blobs: dict[str, str] = {}
        self.tags: dict[str, str | None] = {}
        self.purged: dict[str, str] = {}  # old blob id -> sha256 of its bytes
        self.old_tree: dict[str, str] = {}
        self.new_tree: dict[str, str] = {}
        self.changes: list[PurgedCommit] = []
        self.known: list[str] = []
        self.parsed: dict[str, list[tuple[bytes, bytes, str]]] = {}

    # trees and blobs

    def root_tree(self, oid: str) -> str:
        new = self._along(oid, 0)
        return self.writer.write("tree", b"") if new is None else new

    def _along(self, oid: str, depth: int) -> str | None:
        if depth == len(self.prefix_parts):
            return self.vault_tree(oid, "")
        key = f"{oid}@{depth}"
        if key not in self.trees:
            entries = self.entries(oid)
            result: str | None = oid
            for i, (mode, name, sub) in enumerate(entries):
                if name == self.prefix_parts[depth] and mode == _TREE:
                    new = self._along(sub, depth + 1)
                    if new != sub:
                        rest = entries[:i] + ([(mode, name, new)] if new else []) + entries[i + 1 :]
                        result = self.writer.write("tree", _format_tree(rest)) if rest else None
                    break
            self.trees[key] = result
        return self.trees[key]

    def vault_tree(self, oid: str, folder: str) -> str | None:
        key = oid if self.rule.position_free else f"{oid}:{folder}"
        if key in self.trees:
            return self.trees[key]
        entries = self.entries(oid)
        out: list[tuple[bytes, bytes, str, bool]] = []
        changed = False
        for mode, name, sub in entries:
            rel = folder + name.decode("utf-8", "surrogateescape")
            new: str | None
            if mode == _TREE:
                new = self.vault_tree(sub, rel + "/") if self.rule.visits(rel + "/") else sub
            elif mode == _GITLINK:
                new = sub
            else:
                new = self.blob(sub, rel)
            new_name = self.rule.name(name)
            if new is None:
                changed = True
                continue
            changed = changed or new != sub or new_name != name
            out.append((mode, new_name, new, new_name != name))
        result = oid if not changed else (self.writer.write("tree", _format_tree(_unique(out))) if out else None)
        self.trees[key] = result
        return result

    def blob(self, oid: str, rel: str) -> str | None:
        """The blob that replaces ``oid`` at vault path ``rel``; None when the entry goes."""
        rule = self.rule
        if isinstance(rule, _PathRule):
            return None if rule.drops(rel, oid) else oid
        assert isinstance(rule, _TextRule)
        if oid not in self.blobs:
            data = self.read(oid, "blob")
            new = rule.blob(data)
            if new != data:
                self.purged[oid] = hashlib.sha256(data).hexdigest()
                self.blobs[oid] = self.writer.write("blob", new)
            else:
                self.blobs[oid] = oid
        return self.blobs[oid]

    # commits and tags

    def rewrite_commits(self, lines: Iterable[str]) -> None:
        """Rewrite the commits of ``rev-list --topo-order --reverse --parents`` lines."""
        pairs = [line.split() for line in lines if line.strip()]
        self.known = sorted(p[0] for p in pairs)
        for sha, *parents in pairs:
            headers, message = _split_object(self.read(sha, "commit"))
            tree = next(v for k, v in headers if k == b"tree").decode("ascii")
            self.old_tree[sha] = tree
            new_tree = self.root_tree(tree)
            new_parents: list[str] = []
            for parent in parents:
                mapped = self.commits.get(parent, parent)
                if mapped is not None and mapped not in new_parents:
                    new_parents.append(mapped)
            new_message = self.map_ids(self.rule.message(message))
            new_headers = [(k, self.rule.person(v) if k in (b"author", b"committer") else v) for k, v in headers]
            if new_tree == tree and new_parents == parents and new_message == message and new_headers == headers:
                self.commits[sha] = sha
                self.new_tree[sha] = tree
                continue
            date = _date(dict(headers).get(b"author", b""))
            subject = new_message.split(b"\n", 1)[0].decode("utf-8", "replace")
            before = self.old_tree.get(parents[0], "") if parents else self.empty_tree
            after = self.new_tree.get(new_parents[0], "") if new_parents else self.empty_tree
            if len(parents) <= 1 and tree != before and new_tree == after:  # it held only what went
                self.commits[sha] = new_parents[0] if new_parents else None
                self.changes.append(PurgedCommit(sha, None, "dropped", date, subject))
                continue
            new = self.writer.write("commit", _join_commit(new_headers, new_tree, new_parents, new_message))
            self.commits[sha] = new
            self.new_tree[new] = new_tree
            content = new_message != message or new_headers != headers
            if not content and new_tree != tree:  # its own change held what went, or it inherits it?
                content = self.touches(tree, self.old_tree.get(parents[0]) if parents else None)
            self.changes.append(PurgedCommit(sha, new, "content" if content else "parent", date, subject))

    def touches(self, tree: str, parent: str | None) -> bool:
        """True if what a commit changed (its tree against its parent's) involves what is purged."""
        return self._diff_touches(self._vault_part(tree), self._vault_part(parent), "")

    def _vault_part(self, tree: str | None) -> str | None:
        for part in self.prefix_parts:
            if tree is None:
                return None
            tree = next((oid for mode, name, oid in self.entries(tree) if name == part and mode == _TREE), None)
        return tree

    def _diff_touches(self, a: str | None, b: str | None, folder: str) -> bool:
        if a == b:
            return False
        mine = {name: (mode, oid) for mode, name, oid in self.entries(a)} if a else {}
        theirs = {name: (mode, oid) for mode, name, oid in self.entries(b)} if b else {}
        for name in mine.keys() | theirs.keys():
            x, y = mine.get(name), theirs.get(name)
            if x == y:
                continue
            rel = folder + name.decode("utf-8", "surrogateescape")
            if self.rule.name(name) != name:
                return True
            trees = [side[1] if side and side[0] == _TREE else None for side in (x, y)]
            if any(trees) and self.rule.visits(rel + "/") and self._diff_touches(trees[0], trees[1], rel + "/"):
                return True
            for side in (x, y):
                if side and side[0] not in (_TREE, _GITLINK) and self.blob(side[1], rel) != side[1]:
                    return True
        return False

    def entries(self, tree: str) -> list[tuple[bytes, bytes, str]]:
        """A tree's entries, parsed (cached: a commit's tree is looked at again by its children)."""
        if tree not in self.parsed:
            if len(self.parsed) > 50_000:
                self.parsed.clear()
            self.parsed[tree] = _parse_tree(self.read(tree, "tree"), self.id_bytes)
        return self.parsed[tree]

    def map_ids(self, message: bytes) -> bytes:
        """Commit ids in a message (full or abbreviated, unambiguous) replaced by their new ids."""
        if not self.known or not _HEX.search(message):
            return message

        def swap(match: re.Match[bytes]) -> bytes:
            token = match.group(0).decode("ascii")
            i = bisect.bisect_left(self.known, token)
            if i >= len(self.known) or not self.known[i].startswith(token):
                return match.group(0)
            if i + 1 < len(self.known) and self.known[i + 1].startswith(token):
                return match.group(0)  # ambiguous
            new = self.commits.get(self.known[i])
            return match.group(0) if new is None else new[: len(token)].encode("ascii")

        return _HEX.sub(swap, message)

    def rewrite_object(self, oid: str, kind: str) -> str | None:
        """The object that replaces ``oid`` (what a ref points at); None when it goes."""
        if kind == "commit":
            return self.commits.get(oid, oid)
        if kind == "tree":
            return self.root_tree(oid)
        if kind == "blob":
            return self.blob(oid, "")
        if kind != "tag":
            return oid
        if oid not in self.tags:
            headers, message = _split_object(self.read(oid, "tag"))
            fields = dict(headers)
            target = fields.get(b"object", b"").decode("ascii")
            new_target = self.rewrite_object(target, fields.get(b"type", b"commit").decode("ascii"))
            new_message = self.map_ids(self.rule.message(message))
            new_headers = [(k, self.rule.person(v) if k == b"tagger" else v) for k, v in headers]
            if new_target is None:
                self.tags[oid] = None
            elif new_target == target and new_message == message and new_headers == headers:
                self.tags[oid] = oid
            else:
                new_headers = [(k, new_target.encode("ascii") if k == b"object" else v) for k, v in new_headers]
                self.tags[oid] = self.writer.write(
                    "tag", _join_object(new_headers, _TAG_SIGNATURE.sub(b"", new_message))
                )
        return self.tags[oid]

    def read(self, oid: str, kind: str) -> bytes:
        found, data = self.reader.read(oid)
        if found != kind:
            raise HistoryError(f"git object {oid} is a {found}, expected a {kind}")
        return data


# -- the purge -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    name: str
    oid: str
    kind: str


def purge(
    engine: WriteEngine,
    path: str | None = None,
    *,
    text: str | None = None,
    rewrite_remotes: bool = False,
    dry_run: bool = False,
) -> PurgeReport:
    """Remove a file's content (``path``, a vault path) or a text from the vault's whole history.

    See the module's documentation for every step. The caller (``Vault.purge``) has checked the
    path; this holds the vault lock throughout.

    Raises:
        InvalidArgumentError: Neither or both of ``path`` and ``text``, or a text too short.
        NotFoundError: The path is in neither the history nor the folder.
        PurgeError: An operation in progress, linked worktrees, or a shallow clone.
    """
    if (path is None) == (text is None):
        raise InvalidArgumentError("purge takes a path or a text (one of them)")
    rule: _Rule = _PathRule(path) if path is not None else _TextRule(str(text))
    started = time.monotonic()
    with engine.locked():
        if not dry_run:
            engine.recover()  # a crashed write's journal holds old bytes: finish it before rewriting
        job = _Purge(engine, rule, dry_run=dry_run, rewrite_remotes=rewrite_remotes)
        try:
            report = job.run()
        finally:
            job.drop_temporary_refs()
    report.seconds = time.monotonic() - started
    return report


class _Purge:
    def __init__(self, engine: WriteEngine, rule: _Rule, *, dry_run: bool, rewrite_remotes: bool) -> None:
        self.engine = engine
        self.history = engine.history
        self.rule = rule
        self.dry = dry_run
        self.rewrite_remotes = rewrite_remotes and not dry_run
        self.prefix = self.history.prefix
        self.report = PurgeReport(dry_run=dry_run, target=rule.kind)
        self.fetched = False

    def git(self, *args: str, input: str | None = None, check: bool = True, env: dict[str, str] | None = None) -> str:
        return self.history.plumbing(*args, input=input, check=check, env=env)

    def run(self) -> PurgeReport:
        self.check_repository()
        remotes = self.git("remote").split()
        failed = self.fetch(remotes) if self.rewrite_remotes else {}
        refs = self.refs()
        stash = self.stash()
        extra = sorted({s for s, _ in stash})  # commits only the stash's reflog names
        with self.history.object_writer(dry=self.dry) as writer:
            return self.rewrite(writer, remotes, failed, refs, stash, extra)

    def rewrite(
        self,
        writer: ObjectWriter,
        remotes: list[str],
        failed: dict[str, str],
        refs: list[_Ref],
        stash: list[tuple[str, str]],
        extra: list[str],
    ) -> PurgeReport:
        rule = self.rule
        if isinstance(rule, _PathRule):
            rule.prepare(self.history, extra, writer.id_of("blob", b""))
            if not rule.blobs and not os.path.lexists(self.engine.root / rule.rel) and not self.interrupted():
                raise NotFoundError(f"{label(rule.rel)} is in neither this vault's history nor its folder")
            self.report.purged_paths = sorted(rule.lineage | rule.elsewhere)
        with self.history.object_reader() as reader:
            rw = _Rewriter(reader, writer, rule, self.prefix)
            # Every ref (tags peeled, nested or not; refs to trees and blobs are skipped), and the stash.
            lines = self.git(
                "rev-list",
                "--all",
                "--topo-order",
                "--reverse",
                "--parents",
                "--stdin",
                input="".join(f"{c}\n" for c in extra),
                env={"GIT_NO_REPLACE_OBJECTS": "1"},
                check=False,
            )
            rw.rewrite_commits(lines.splitlines())
            moved = {r.name: new for r in refs if (new := rw.rewrite_object(r.oid, r.kind)) != r.oid}
            if isinstance(rule, _PathRule):
                for oid in rule.blobs - {rw.empty_blob}:
                    rw.purged[oid] = hashlib.sha256(rw.read(oid, "blob")).hexdigest()
            self.report.commits = rw.changes
            local = {n: v for n, v in moved.items() if not n.startswith(("refs/remotes/", _TEMP_REFS))}
            self.report.refs = dict(local)
            self.report.versions = len(rw.purged)
            tracking = self.tracking_refs(remotes, refs, moved)
            if self.dry:
                self.report.remotes = [RemoteState(r, tuple(tracking.get(r, ()))) for r in remotes]
                self.report.refs.update({name: None for names in tracking.values() for name in names})
                return self.report
            forward, backward = self.git_index_changes(rw)
            writer.finish()  # every new object is in the repository before a ref names one
            purged_hashes = set(rw.purged.values())
            stone = self.engine.root / TOMBSTONES
            before = stone.read_bytes() if stone.is_file() else None
            self.stage_tombstone(purged_hashes)  # an interrupted purge keeps what it found
            if self.engine.durable:
                os.sync()
            if forward:
                self.git("update-index", "-z", "--index-info", input=forward)
            try:
                self.update_refs(local, {r.name: r.oid for r in refs})
            except BaseException:  # nothing moved: put git's index and the tombstone back
                if backward:
                    self.git("update-index", "-z", "--index-info", input=backward, check=False)
                if before is None:
                    stone.unlink(missing_ok=True)
                else:
                    _fs.atomic_write(stone, before, durable=self.engine.durable, modes=self.engine.modes)
                raise
        self.history.forget_private_index(self.lagging_pattern())
        purged_hashes |= self.update_working_tree(writer.algorithm)
        self.stage_tombstone(purged_hashes)
        self.commit_tombstone()
        self.report.remotes = self.handle_remotes(remotes, refs, moved, tracking, failed)
        self.drop_temporary_refs()
        self.clean_git_folder({old for old, new in rw.commits.items() if new != old})
        self.forget(stash, rw)
        self.report.leftovers = self.leftovers([c.old for c in rw.changes] + list(rw.purged))
        self.report.outside = self.outside()
        self.engine.catalog.reindex(full=True)
        return self.report

    # -- before anything ---------------------------------------------------------------------

    def check_repository(self) -> None:
        git_dir = self.history.git_dir
        for marker, what in _OPERATIONS.items():
            if (git_dir / marker).exists():
                raise PurgeError(f"{what} is in progress in {self.history.top}; finish or abort it, then purge")
        if self.git("rev-parse", "--is-shallow-repository", check=False).strip() == "true":
            raise PurgeError(
                "this is a shallow clone: its history is not all here, so it cannot be rewritten whole. "
                "`git fetch --unshallow` first, or purge in a full clone"
            )
        worktrees = [
            line for line in self.git("worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")
        ]
        if len(worktrees) > 1:
            raise PurgeError(
                f"the repository has {len(worktrees) - 1} linked worktree(s), whose checkouts and indexes "
                "would keep the content; remove them (`git worktree remove`), then purge"
            )

    def refs(self) -> list[_Ref]:
        out = self.git("for-each-ref", "--format=%(refname)%00%(objectname)%00%(objecttype)%00%(symref)")
        refs = []
        for line in out.splitlines():
            name, oid, kind, symref = (line.split("\0") + ["", "", "", ""])[:4]
            if name and not symref:
                refs.append(_Ref(name, oid, kind))
        if not self.git("symbolic-ref", "-q", "HEAD", check=False).strip():
            head = self.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).strip()
            if head:
                refs.append(_Ref("HEAD", head, "commit"))  # a detached HEAD
        return refs

    def stash(self) -> list[tuple[str, str]]:
        """The stash's entries, newest first: ``(commit, reflog message)``."""
        out = self.git("reflog", "show", "--format=%H%x00%gs", "refs/stash", "--", check=False)
        return [(sha, msg) for line in out.splitlines() if "\0" in line for sha, msg in [line.split("\0", 1)]]

    def tracking_refs(self, remotes: list[str], refs: list[_Ref], moved: dict[str, str | None]) -> dict[str, list[str]]:
        """For each remote: its remote-tracking refs that point into the old history."""
        found: dict[str, list[str]] = {}
        for ref in refs:
            for remote in remotes:
                if ref.name.startswith(f"refs/remotes/{remote}/") and ref.name in moved:
                    found.setdefault(remote, []).append(ref.name)
        return found

    # -- remotes -------------------------------------------------------------------------------

    def fetch(self, remotes: list[str]) -> dict[str, str]:
        """Fetch every branch and tag of each remote into temporary refs, so they are rewritten too."""
        failed = {}
        for i, remote in enumerate(remotes):
            try:
                self.fetched = True
                self.git(
                    "-c",
                    "gc.auto=0",
                    "-c",
                    "maintenance.auto=false",
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    "--no-recurse-submodules",
                    remote,
                    f"+refs/heads/*:{_TEMP_REFS}{i}/heads/*",
                    f"+refs/tags/*:{_TEMP_REFS}{i}/tags/*",
                    env={"GIT_TERMINAL_PROMPT": "0"},
                )
            except HistoryError as exc:
                failed[remote] = f"fetch failed: {exc}"
        return failed

    def handle_remotes(
        self,
        remotes: list[str],
        refs: list[_Ref],
        moved: dict[str, str | None],
        tracking: dict[str, list[str]],
        failed: dict[str, str],
    ) -> list[RemoteState]:
        """Push the new history when asked; drop the remote-tracking refs that still name the old one."""
        states = []
        updates: dict[str, str | None] = {}
        old = {r.name: r.oid for r in refs}
        for i, remote in enumerate(remotes):
            stale = list(tracking.get(remote, ()))
            pushed: dict[str, str | None] = {}
            error = failed.get(remote)
            if self.rewrite_remotes and error is None:
                pushed, error = self.push(remote, i, refs, moved)
                if error is None:
                    for target, value in pushed.items():
                        mirror = f"refs/remotes/{remote}/{target.removeprefix('refs/heads/')}"
                        if target.startswith("refs/heads/") and mirror in old:
                            updates[mirror] = value
                    stale = []
            for name in tracking.get(remote, ()):  # the content must leave this repository
                updates.setdefault(name, None)
            states.append(RemoteState(remote, tuple(stale), tuple(pushed), error))
        updates = {k: v for k, v in updates.items() if v != old.get(k)}
        self.update_refs(updates, old, check_old=False)
        self.report.refs.update(updates)
        return states

    def push(
        self, remote: str, index: int, refs: list[_Ref], moved: dict[str, str | None]
    ) -> tuple[dict[str, str | None], str | None]:
        """Force-push the rewritten versions of a remote's branches and tags, each with a lease on its old id.

        Returns:
            The remote refs pushed with their new ids (None: deleted), and an error if the push failed.
        """
        base = f"{_TEMP_REFS}{index}/"
        specs, leases = [], []
        pushed: dict[str, str | None] = {}
        for ref in refs:
            if not ref.name.startswith(base) or ref.name not in moved:
                continue
            kind, _, short = ref.name[len(base) :].partition("/")
            target = f"refs/{kind}/{short}"
            value = moved[ref.name]
            if value is not None and kind == "heads":
                local = self.git("rev-parse", "-q", "--verify", f"refs/heads/{short}^{{commit}}", check=False).strip()
                if local and (local == value or self.is_ancestor(value, local)):
                    value = local  # the local branch, with its tombstone commit
            specs.append(f"{value or ''}:{target}")
            leases.append(f"--force-with-lease={target}:{ref.oid}")
            pushed[target] = value
        if not specs:
            return {}, None
        try:
            self.git(
                "push",
                "--quiet",
                "--no-verify",
                "--porcelain",
                *leases,
                remote,
                *specs,
                env={"GIT_TERMINAL_PROMPT": "0"},
            )
        except HistoryError as exc:
            return {}, f"push failed: {exc}"
        return pushed, None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return not self.git("rev-list", "-n", "1", f"{newer}..{older}", check=False).strip() and bool(
            self.git("rev-parse", "-q", "--verify", f"{older}^{{commit}}", check=False).strip()
        )

    def drop_temporary_refs(self) -> None:
        if not self.fetched:
            return
        out = self.git("for-each-ref", "--format=%(refname) %(objectname)", _TEMP_REFS, check=False)
        lines = [f"delete {name} {oid}\n" for name, oid in (line.split() for line in out.splitlines() if line)]
        if lines:
            self.git("update-ref", "--stdin", input="".join(lines), check=False)

    # -- refs, indexes, files --------------------------------------------------------------

    def update_refs(self, moves: dict[str, str | None], old: dict[str, str], *, check_old: bool = True) -> None:
        """Move refs in one transaction; with ``check_old``, none moves unless all are as read."""
        lines = []
        for name, new in sorted(moves.items()):
            before = f" {old[name]}" if check_old and name in old else ""
            lines.append(f"delete {name}{before}\n" if new is None else f"update {name} {new}{before}\n")
        if lines:
            self.git("update-ref", "--no-deref", "-m", "memfs: purge", "--stdin", input="".join(lines))

    def git_index_changes(self, rw: _Rewriter) -> tuple[str, str]:
        """``update-index --index-info`` input: entries of git's index that held what goes take the new ones.

        Returns:
            The change, and its inverse (to put the index back if the refs cannot move).
        """
        out = self.git("ls-files", "-s", "-z", "--", self.prefix or ".", check=False)
        lines, undo = [], []
        for record in filter(None, out.split("\0")):
            meta, _, repo_path = record.partition("\t")
            mode, oid, _stage = meta.split(" ")
            if not repo_path.startswith(self.prefix) or mode == "160000":
                continue
            rel = repo_path[len(self.prefix) :]
            new_oid = rw.blob(oid, rel)
            new_rel = self.rule.path(rel)
            if new_oid == oid and new_rel == rel:
                continue
            lines.append(f"0 {ZERO_SHA}\t{repo_path}\0")
            if new_oid is not None:
                lines.append(f"{mode} {new_oid}\t{self.prefix}{new_rel}\0")
                undo.append(f"0 {ZERO_SHA}\t{self.prefix}{new_rel}\0")
            undo.append(f"{mode} {oid}\t{repo_path}\0")
        return "".join(lines), "".join(undo)

    def update_working_tree(self, algorithm: str) -> set[str]:
        """Delete the purged file / replace the text in the vault's files; the hashes of what went."""
        root = self.engine.root
        own = self.engine.own_uncommitted()
        hashes: set[str] = set()
        stale_own: list[str] = []
        rule = self.rule
        for rel in _files(root):
            target = root / rel
            try:
                found = _fs.read_vault_file(root, rel, limit=None)  # through the gate: a link is left alone
            except (OSError, LinkError):
                continue
            if found is None:
                continue
            data, mode = found
            if isinstance(rule, _PathRule):
                if rel in rule.lineage or (data and _blob_id(data, algorithm) in rule.blobs):
                    hashes.add(hashlib.sha256(data).hexdigest())
                    _fs.remove_file(root, rel)
                    _prune_empty(target.parent, root)
                    self.report.files.append(rel)
                    stale_own.append(rel)
                continue
            assert isinstance(rule, _TextRule)
            new_rel, new = rule.path(rel), rule.blob(data)
            if new_rel == rel and new == data:
                continue
            if new != data:
                hashes.add(hashlib.sha256(data).hexdigest())
            if new_rel != rel:
                new_rel = _free_name(root, new_rel)
                stale_own.append(rel)
            if rel in own:
                self.engine.replace(new_rel, new)  # still memfs's own uncommitted write
            else:
                _fs.write_file(root, new_rel, new, mode=mode, durable=self.engine.durable, modes=self.engine.modes)
            if new_rel != rel:
                _fs.remove_file(root, rel)
                _prune_empty(target.parent, root)
            self.report.files.append(new_rel)
        if any(p in own for p in stale_own):
            # Names memfs recorded as its own uncommitted writes that no longer exist: there is
            # nothing to commit, and committing them makes the engine forget them.
            self.engine.commit([p for p in stale_own if p in own], "purge: forget purged files")
        return hashes

    def lagging_pattern(self) -> re.Pattern[str]:
        rule = self.rule
        if isinstance(rule, _PathRule):
            names = [self.prefix + p for p in sorted(rule.lineage | rule.elsewhere)]
            return re.compile("^(?:" + "|".join(map(re.escape, names)) + ")$")
        assert isinstance(rule, _TextRule)
        return re.compile("|".join(map(re.escape, rule.forms)))

    def interrupted(self) -> bool:
        """True if an earlier purge stopped after the refs moved: its tombstone is written, not committed."""
        return (self.engine.root / TOMBSTONES).exists() and bool(self.history.changed([TOMBSTONES]))

    def stage_tombstone(self, hashes: set[str]) -> None:
        """Add the hashes of what goes to ``.memfs-tombstones`` (no content, no names)."""
        texts: set[tuple[str, int]] = set()
        if isinstance(self.rule, _TextRule):
            texts = {(hashlib.sha256(v).hexdigest(), len(v)) for v in self.rule.variants}
        added = Tombstones(frozenset(hashes), frozenset(texts))
        target = self.engine.root / TOMBSTONES
        try:
            current = Tombstones.parse(target.read_bytes())
        except OSError:
            current = Tombstones()
        merged = current | added
        if merged != current or not target.exists():
            _fs.atomic_write(target, merged.render(), durable=self.engine.durable, modes=self.engine.modes)

    def commit_tombstone(self) -> None:
        what = "a file's content" if isinstance(self.rule, _PathRule) else "a text"
        message = (
            f"purge: remove {what} from history\n\nIts SHA-256 hashes are in {TOMBSTONES}, so a sync "
            "can refuse to bring it back; the content itself is nowhere in this repository."
        )
        self.report.tombstone = self.engine.commit([TOMBSTONES], message, {"Memfs-Op": "purge"})

    # -- forgetting ----------------------------------------------------------------------

    def clean_git_folder(self, rewritten: set[str]) -> None:
        """Files of the git folder that name old commits or carry the content."""
        git_dir, common = self.history.git_dir, self.history.common_dir()
        for name in ("ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE"):
            with contextlib.suppress(OSError):
                if set(re.findall(r"[0-9a-f]{40,64}", (git_dir / name).read_text("utf-8", "replace"))) & rewritten:
                    (git_dir / name).unlink()
        for name in ("COMMIT_EDITMSG", "SQUASH_MSG", "TAG_EDITMSG", "MERGE_MSG"):
            with contextlib.suppress(OSError):
                data = (git_dir / name).read_bytes()
                if self.rule.message(data) != data:
                    (git_dir / name).write_bytes(self.rule.message(data))
        if isinstance(self.rule, _TextRule):  # recorded conflict resolutions hold file content
            for folder, _, names in os.walk(common / "rr-cache"):
                for name in names:
                    with contextlib.suppress(OSError):
                        if self.rule.hit((Path(folder) / name).read_bytes()):
                            (Path(folder) / name).unlink()

    def forget(self, stash: list[tuple[str, str]], rw: _Rewriter) -> None:
        """Expire every reflog, put the stash's (rewritten) entries back, prune what nothing reaches."""
        self.git("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        if stash:
            self.git("update-ref", "-d", "refs/stash", check=False)
            for sha, message in reversed(stash):
                new = rw.commits.get(sha, sha)
                if new is not None:
                    text = self.rule.message(rw.map_ids(message.encode("utf-8"))).decode("utf-8", "replace")
                    self.git("update-ref", "--create-reflog", "-m", text, "refs/stash", new)
        self.git("-c", "gc.cruftPacks=false", "-c", "gc.auto=0", "gc", "--prune=now", "--quiet")

    def outside(self) -> list[str]:
        """For a text, in a vault inside a larger repository: files outside the vault that hold it."""
        rule = self.rule
        if not self.prefix or not isinstance(rule, _TextRule):
            return []
        tips = sorted({r.oid for r in self.refs() if r.kind in ("commit", "tag")})
        if not tips:
            return []
        # The text goes to git on stdin, never on a command line other users can read.
        out = self.git(
            "grep",
            "-l",
            "-z",
            "-F",
            "-I",
            "-f",
            "-",
            *tips,
            "--",
            ".",
            f":(exclude){self.prefix}",
            input="\n".join(rule.forms) + "\n",
            check=False,
        )
        return sorted({hit.split(":", 1)[-1] for hit in out.split("\0") if hit})

    def leftovers(self, oids: list[str]) -> list[str]:
        """Which of ``oids`` are still in the object store (all should be gone)."""
        if not oids:
            return []
        out = self.git("cat-file", "--batch-check", input="\n".join(oids) + "\n", env={"GIT_NO_REPLACE_OBJECTS": "1"})
        return [line.split()[0] for line in out.splitlines() if line and not line.endswith(" missing")]


# -- helpers ---------------------------------------------------------------------------------------


def _raw_changes(out: str, prefix: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(vault path, blob id)`` pairs and renames from ``git log --raw -z`` output."""
    tokens = out.split("\0")
    pairs: list[tuple[str, str]] = []
    renames: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        token = tokens[i].rsplit("\n", 1)[-1]
        i += 1
        if not token.startswith(":"):
            continue
        meta = token[1:].split(" ")
        if len(meta) < 5:
            continue
        before, after, status = meta[2], meta[3], meta[4]
        if status[:1] in ("R", "C"):
            paths = tokens[i : i + 2]
            i += 2
        else:
            paths = tokens[i : i + 1] * 2
            i += 1
        if len(paths) != 2:
            break
        rels = [p[len(prefix) :] if p.startswith(prefix) else None for p in paths]
        if rels[0] is not None:
            pairs.append((rels[0], before))
        if rels[1] is not None:
            pairs.append((rels[1], after))
        if status[:1] == "R" and rels[0] is not None and rels[1] is not None:
            renames.append((rels[0], rels[1]))
    return pairs, renames


def _parse_tree(data: bytes, id_bytes: int) -> list[tuple[bytes, bytes, str]]:
    entries = []
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries.append((data[pos:space], data[space + 1 : nul], data[nul + 1 : nul + 1 + id_bytes].hex()))
        pos = nul + 1 + id_bytes
    return entries


def _format_tree(entries: Iterable[tuple[bytes, bytes, str]]) -> bytes:
    ordered = sorted(entries, key=lambda e: e[1] + (b"/" if e[0] == _TREE else b""))  # git's order
    return b"".join(mode + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in ordered)


def _unique(entries: list[tuple[bytes, bytes, str, bool]]) -> list[tuple[bytes, bytes, str]]:
    """Entries with distinct names: a renamed one that meets another name gets ``-2``, ``-3``..."""
    taken = {name for _, name, _, renamed in entries if not renamed}
    out = []
    for mode, name, oid, renamed in entries:
        if renamed:
            stem, dot, ext = name.rpartition(b".") if b"." in name.lstrip(b".") else (name, b"", b"")
            candidate, n = name, 2
            while candidate in taken:
                candidate = stem + b"-%d" % n + dot + ext
                n += 1
            name = candidate
            taken.add(name)
        out.append((mode, name, oid))
    return out


def _split_object(raw: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """A commit or tag as its header lines (continuations joined) and its message."""
    head, _, message = raw.partition(b"\n\n")
    headers: list[tuple[bytes, bytes]] = []
    for line in head.split(b"\n"):
        if line.startswith(b" ") and headers:
            key, value = headers[-1]
            headers[-1] = (key, value + b"\n" + line[1:])
        else:
            key, _, value = line.partition(b" ")
            headers.append((key, value))
    return headers, message


def _join_object(headers: list[tuple[bytes, bytes]], message: bytes) -> bytes:
    lines = [k + b" " + v.replace(b"\n", b"\n ") for k, v in headers if k not in _SIGNATURE_HEADERS]
    return b"\n".join(lines) + b"\n\n" + message


def _join_commit(headers: list[tuple[bytes, bytes]], tree: str, parents: list[str], message: bytes) -> bytes:
    out: list[tuple[bytes, bytes]] = []
    for key, value in headers:
        if key == b"tree":
            out.append((b"tree", tree.encode("ascii")))
            out.extend((b"parent", p.encode("ascii")) for p in parents)
        elif key != b"parent":
            out.append((key, value))
    return _join_object(out, message)


def _date(person: bytes) -> str:
    """The ISO 8601 date of an ``author`` header value (``Name <email> 1700000000 +0100``)."""
    try:
        stamp, zone = person.rsplit(b">", 1)[1].split()
        sign = -1 if zone.startswith(b"-") else 1
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5])) * sign
        return datetime.fromtimestamp(int(stamp), timezone(offset)).isoformat()
    except (ValueError, IndexError):
        return ""


def _files(root: Path) -> list[str]:
    """Every regular file of the vault folder (vault paths), but git's and memfs's own folders."""
    found = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = [
            d for d in dirs if d != ".git" and not (here == root and d == STATE_DIR) and not (here / d).is_symlink()
        ]
        for name in names:
            path = here / name
            if name != ".git" and not path.is_symlink() and path.is_file():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _prune_empty(folder: Path, root: Path) -> None:
    keep = {root, root / MEMORIES_DIR, root / SESSIONS_DIR}
    while folder not in keep and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _free_name(root: Path, rel: str) -> str:
    if not os.path.lexists(root / rel):
        return rel
    stem, dot, ext = rel.rpartition(".") if "." in rel.rsplit("/", 1)[-1] else (rel, "", "")
    n = 2
    while os.path.lexists(root / f"{stem}-{n}{dot}{ext}"):
        n += 1
    return f"{stem}-{n}{dot}{ext}"


def _blob_id(data: bytes, algorithm: str) -> str:
    return hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()


def _is_sha256(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)
