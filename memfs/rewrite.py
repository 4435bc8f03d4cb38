"""A history rewritten by a rule: what a purge removes, and the rewriter that writes the new commits.

A rule decides on names, file versions, messages and people: :class:`_PathRule` drops every
version of a file (followed across renames, both ways) and any other file that held the same
bytes; :class:`_TextRule` replaces a text (and its JSON-escaped and slug forms) with
``[PURGED]``, keeping transcript entries' byte lengths exact and front matter valid YAML.
:class:`_Rewriter` applies one to every commit, parents first, reading objects with one
``git cat-file --batch`` and writing the new ones as one pack, trees through
:class:`memfs.gitstore.Tree` (the one codec of git's trees). :mod:`memfs.purge` runs it.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from .documents import dumps, load_bytes
from .errors import DocumentError, HistoryError, InvalidArgumentError
from .gitstore import GITLINK_MODE, TREE_MODE, ZERO_SHA, ObjectReader, ObjectWriter, Tree
from .history import GitHistory
from .layout import label
from .paths import slugify

PLACEHOLDER = "[PURGED]"
MIN_TEXT_CHARS = 4

_PLACEHOLDER = PLACEHOLDER.encode("ascii")
_SIGNATURE_HEADERS = (b"gpgsig", b"gpgsig-sha256", b"mergetag")
# A transcript entry's heading, as memfs.transcript writes it.
_ENTRY = re.compile(rb"^## [^\n]*?<!-- memfs:entry (\{[^\n]*\}) -->[ \t]*\r?\n", re.MULTILINE)
_HEX = re.compile(rb"(?<![0-9A-Za-z])[0-9a-f]{7,64}(?![0-9A-Za-z])")
_TAG_SIGNATURE = re.compile(rb"-----BEGIN (?:PGP SIGNATURE|SSH SIGNATURE|SIGNED MESSAGE)-----.*\Z", re.S)
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


# -- what is purged ------------------------------------------------------------------------------


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
                if name == self.prefix_parts[depth] and mode == TREE_MODE:
                    new = self._along(sub, depth + 1)
                    if new != sub:
                        rest = entries[:i] + ([(mode, name, new)] if new else []) + entries[i + 1 :]
                        result = self.writer.write("tree", Tree.of(rest).raw) if rest else None
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
            if mode == TREE_MODE:
                new = self.vault_tree(sub, rel + "/") if self.rule.visits(rel + "/") else sub
            elif mode == GITLINK_MODE:
                new = sub
            else:
                new = self.blob(sub, rel)
            new_name = self.rule.name(name)
            if new is None:
                changed = True
                continue
            changed = changed or new != sub or new_name != name
            out.append((mode, new_name, new, new_name != name))
        result = oid if not changed else (self.writer.write("tree", Tree.of(_unique(out)).raw) if out else None)
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
            tree = next((oid for mode, name, oid in self.entries(tree) if name == part and mode == TREE_MODE), None)
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
            trees = [side[1] if side and side[0] == TREE_MODE else None for side in (x, y)]
            if any(trees) and self.rule.visits(rel + "/") and self._diff_touches(trees[0], trees[1], rel + "/"):
                return True
            for side in (x, y):
                if side and side[0] not in (TREE_MODE, GITLINK_MODE) and self.blob(side[1], rel) != side[1]:
                    return True
        return False

    def entries(self, tree: str) -> list[tuple[bytes, bytes, str]]:
        """A tree's entries, parsed (cached: a commit's tree is looked at again by its children)."""
        if tree not in self.parsed:
            if len(self.parsed) > 50_000:
                self.parsed.clear()
            self.parsed[tree] = Tree.parse(self.read(tree, "tree"), self.id_bytes).entries()
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
