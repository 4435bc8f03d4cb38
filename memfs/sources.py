"""Sources read for an import: what other tools keep, turned into candidate memories.

A folder of Markdown notes (an Obsidian vault: front matter kept, wikilinks left alone,
``.obsidian/`` skipped), an Anthropic memory-tool folder, a Claude Code memory folder, a
``CLAUDE.md`` or ``AGENTS.md`` file (split into memories by its headings or bullets where that is
clear, kept whole otherwise), mem0's JSON and memfs's own JSON Lines export. What cannot be read
is a :class:`Skipped` with its reason; nothing here touches a vault (:mod:`memfs.exchange` checks
and writes what is read).
"""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from . import _fs
from .documents import Document, dumps, loads, normalize_time
from .engine import MAX_CONTENT_BYTES
from .errors import (
    DocumentError,
    FileTooLargeError,
    ImportSourceError,
    InvalidArgumentError,
    PathError,
)
from .paths import clean_memory_path, clean_namespace, keepable_name

#: The front-matter keys an export also gives as fields of their own, in this order.
FIELDS = (
    "id",
    "title",
    "type",
    "tags",
    "valid_from",
    "valid_until",
    "expires",
    "supersedes",
    "superseded_by",
    "provenance",
    "created",
    "updated",
)
#: How many notes, records or files one import reads at most (a runaway source is refused whole).
MAX_ITEMS = 20_000
#: The largest JSON or JSON Lines source read (the notes of a folder are limited one by one).
MAX_SOURCE_BYTES = 256 * 1024 * 1024
#: How deep a JSON source, a record's metadata or a folder may nest: deeper is refused with a
#: sentence, never a RecursionError (a memory's front matter is a few levels deep).
MAX_NESTING = 32
#: Folder names a folder import never goes into: an editor's settings, version control, a trash.
SKIPPED_FOLDERS = frozenset({".obsidian", ".git", ".trash", ".memfs", "node_modules"})
_AGENT_FILES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_BULLET = re.compile(r"^[-*+][ \t]+\S")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


@dataclass(frozen=True)
class Skipped:
    """Something in the source that was not imported, and why (said so a person can fix it)."""

    source: str
    reason: str


@dataclass(frozen=True)
class Candidate:
    """One memory read from a source, before it is checked against the vault.

    ``name`` None lets the store make one from the title; ``restore`` keeps the record's own
    provenance and times (a memfs export read back) instead of marking it ``provenance: import``.
    """

    source: str
    namespace: str
    text: str
    name: str | None = None
    restore: bool = False
    replace: bytes | None = None  # in place: the bytes of the vault file this stamps
    renamed: str | None = None  # why ``name`` is not the source's own
    moved_from: str | None = None  # in place: the vault path it is moved from to take ``name`` (NFC)


def detect(path: Path) -> str:
    """The format of an import source, from its name and a look inside."""
    if path.is_dir():
        names = {entry.name for entry in os.scandir(path)}
        if ".obsidian" in names:
            return "markdown"
        if "MEMORY.md" in names:
            return "claude-code"
        if path.name == "memories" or not _holds_markdown(path):
            return "anthropic"  # the memory tool's folder, or text files that are not Markdown notes
        return "markdown"
    if path.name in _AGENT_FILES or path.suffix.lower() == ".md":
        return "agents-md"
    if path.suffix.lower() in (".json", ".jsonl", ".ndjson"):
        head = _fs.read_head(path, 64 * 1024)
        return sniff_json((head or b"").decode("utf-8", "replace"))
    raise ImportSourceError(f"{path}: cannot tell its format from its name; give --format")


def _holds_markdown(root: Path, limit: int = 10_000) -> bool:
    """Whether a folder holds a Markdown note anywhere (looking at ``limit`` entries at most).

    A notes folder often keeps every note in sub-folders (``Areas/``, ``Projects/``): only looking
    at the top would call it a memory-tool folder and turn its ``.canvas`` and ``.csv`` into memories.
    """
    seen = 0
    for _folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith(".")]
        if any(name.endswith(".md") for name in files):
            return True
        seen += len(files) + len(dirs)
        if seen > limit:
            break
    return False


def _memory_tool_file(rel: str) -> bool:
    """Whether a file of a memory-tool folder is a note: Markdown, plain text, XML, or no extension."""
    name = rel.rsplit("/", 1)[-1]
    return "." not in name or name.rsplit(".", 1)[1].lower() in ("md", "txt", "xml", "markdown")


def sniff_json(text: str) -> str:
    """``jsonl`` for memfs's own records (they have a ``body``), else ``mem0``."""
    start = text.lstrip()[:1]
    if start == "[" or (start == "{" and '"results"' in text[:4096] and '"body"' not in text[:4096]):
        return "mem0"
    first = text.lstrip().split("\n", 1)[0]
    try:
        record = json.loads(first)
    except ValueError:
        return "jsonl"
    return "mem0" if isinstance(record, dict) and "memory" in record and "body" not in record else "jsonl"


# -- readers: each returns the candidates and what it skipped -------------------------------------


def read_source(path: Path, kind: str, ns: str | None) -> tuple[list[Candidate], list[Skipped]]:
    """The memories a file or folder of format ``kind`` holds, and what in it could not be read."""
    if kind in ("jsonl", "mem0"):
        data = read_file(path, MAX_SOURCE_BYTES)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ImportSourceError(f"{path} is not UTF-8 text") from None
        return read_json_text(text, path.name, kind, ns)
    if ns is None:
        raise InvalidArgumentError(f"importing {kind} needs a namespace to put the memories in (--namespace)")
    if kind == "agents-md":
        if path.is_dir():
            raise ImportSourceError(f"{path} is a folder; agents-md reads one CLAUDE.md or AGENTS.md file")
        note = _note_text(path, path.name)
        if isinstance(note, Skipped):
            raise ImportSourceError(f"{note.source}: {note.reason}")
        return _split_file(note, path.name, ns), []
    if not path.is_dir():
        raise ImportSourceError(f"{path} is a file; {kind} reads a folder")
    return _read_folder(path, kind, ns)


def _read_folder(root: Path, kind: str, ns: str) -> tuple[list[Candidate], list[Skipped]]:
    found: list[Candidate] = []
    skipped: list[Skipped] = []
    for rel in _walk(root, skipped):
        check_import_size(len(found) + len(skipped) + 1, str(root))  # a folder of a million files stops here
        if kind != "anthropic" and not rel.endswith(".md"):
            skipped.append(Skipped(rel, "not a Markdown note (attachments are not imported)"))
            continue
        if kind == "anthropic" and not _memory_tool_file(rel):
            skipped.append(Skipped(rel, "not a text note (.md, .txt, .xml or no extension); not a memory"))
            continue
        text = _note_text(root / rel, rel)
        if isinstance(text, Skipped):
            skipped.append(text)
            continue
        if kind == "claude-code" and rel == "MEMORY.md" and _only_an_index(text):
            skipped.append(Skipped(rel, "the folder's index (each line points to a topic file, imported on its own)"))
            continue
        if kind == "anthropic":
            name, why = _md_name(rel)
            found.append(Candidate(rel, ns, _plain(text, rel), name, renamed=why))
        else:
            if kind == "claude-code":
                text = _claude_code(text, rel)
            name, why = _md_name(rel)
            if why is not None:  # a note's name is its title in Obsidian: keep it when the file name had to change
                text = titled(text, unicodedata.normalize("NFC", rel.rsplit("/", 1)[-1][:-3]))
            found.append(Candidate(rel, ns, text, name, renamed=why))
    return found, skipped


def _walk(root: Path, skipped: list[Skipped]) -> Iterator[str]:
    """The files under ``root`` (relative, sorted), never through a link and never into a skipped folder."""
    folders = [""]  # a stack, not recursion: a folder tree may be thousands deep
    while folders:
        rel_folder = folders.pop()
        here = root / rel_folder if rel_folder else root
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(rel_folder or ".", f"cannot be read ({exc.strerror})"))
            continue
        below = []
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                skipped.append(Skipped(rel, "a symbolic link; memfs does not follow links"))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name in SKIPPED_FOLDERS:
                    continue
                if rel.count("/") + 1 > MAX_NESTING:
                    skipped.append(Skipped(rel, f"a folder deeper than {MAX_NESTING} levels; nothing below it is read"))
                else:
                    below.append(rel)
            else:
                yield rel
        folders.extend(reversed(below))


def _note_text(path: Path, rel: str) -> str | Skipped:
    """A note's text, or why it is skipped: not a regular file, too large, binary, not UTF-8."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return Skipped(rel, "not a regular file")
        data = _fs.read_file(path, limit=MAX_CONTENT_BYTES, name=rel)
    except FileTooLargeError as exc:
        return Skipped(rel, f"{exc.size:,} bytes, larger than a memory may be ({exc.limit:,})")
    except OSError as exc:
        return Skipped(rel, f"cannot be read ({exc.strerror})")
    if data is None:
        return Skipped(rel, "not a regular file (a link or a device)")
    if b"\x00" in data:
        return Skipped(rel, "a binary file (it holds NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return Skipped(rel, "not UTF-8 text")


def _md_name(rel: str) -> tuple[str, str | None]:
    """A memory name for a source file and why it differs from the file's own (None when it does not).

    Its own relative path when memfs accepts it; else the nearest name it does (only the parts that
    break a rule change, case kept: :func:`memfs.paths.keepable_name`).
    """
    name = rel if rel.endswith(".md") else rel + ".md"
    try:
        return clean_memory_path(name), None
    except PathError:
        return keepable_name(name)


def titled(text: str, title: str) -> str:
    """``text`` with a ``title`` key, unless it has one or its front matter cannot be read (the plan says so)."""
    try:
        doc = loads(text)
    except DocumentError:
        return text
    return text if "title" in doc.metadata else dumps(doc.with_metadata({"title": title}))


def _plain(text: str, rel: str) -> str:
    """A memory-tool file as a memory: Markdown kept; any other text as the body, titled by the file's name."""
    if rel.endswith(".md"):
        return text
    title = rel.rsplit("/", 1)[-1]
    return dumps(Document.new({"title": title}, text))


_INDEX_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*\[[^\]]*\]\(<?[^)>#]+\.md(?:#[^)>]*)?>?\)")


def _only_an_index(text: str) -> bool:
    """Whether a Claude Code ``MEMORY.md`` only lists topic files (``- [Title](file.md) — hook``) under headings.

    Such a file is the folder's table of contents, not a memory: imported, it would be injected
    as context beside the very files it lists. Any other line makes it a note of its own.
    """
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return bool(lines) and all(_INDEX_LINE.match(line) for line in lines)


def _claude_code(text: str, rel: str) -> str:
    """A Claude Code memory file: its ``name`` becomes the title; ``description`` and ``type`` stay."""
    try:
        doc = loads(text, path=rel)
    except DocumentError:
        return text  # the plan reports it
    name = doc.metadata.get("name")
    if isinstance(name, str) and name.strip() and "title" not in doc.metadata:
        doc = doc.with_metadata({"title": name.strip()})
    return dumps(doc)


def _split_file(text: str, file_name: str, ns: str) -> list[Candidate]:
    """A CLAUDE.md/AGENTS.md as memories: one per section, or per bullet, where that is clear."""
    tags = ["agents-md" if file_name.startswith("AGENTS") else "claude-md"]
    meta: dict[str, Any] = {"type": "instruction", "tags": tags, "source": file_name}
    parts = split_instructions(text)
    if len(parts) < 2:
        title = _first_heading(text) or file_name
        return [Candidate(file_name, ns, dumps(Document.new({"title": title, **meta}, text)))]
    return [
        Candidate(f"{file_name} § {title}", ns, dumps(Document.new({"title": title, **meta}, body)))
        for title, body in parts
    ]


def split_instructions(text: str) -> list[tuple[str, str]]:
    """``(title, body)`` parts of an instructions file, or ``[]`` when no split is clear.

    Sections under the most frequent heading level that appears at least twice are parts (the text
    before the first one, if any, is a part of its own, titled by an H1 above it); with no such
    headings, a file that is only top-level bullets gives one part per bullet. Fenced code never
    counts as a heading or a bullet.
    """
    lines = text.splitlines(keepends=True)
    headings = _headings(lines)
    levels = [level for level, _, _ in headings]
    repeated = [n for n in sorted(set(levels)) if levels.count(n) >= 2]
    if repeated:
        level = repeated[0]
        cuts = [(i, title) for n, i, title in headings if n == level]
        parts = []
        lead = "".join(line for j, line in enumerate(lines[: cuts[0][0]]) if not _is_heading_of(line, 1))
        if lead.strip():
            h1 = [t for n, _, t in headings if n == 1]
            parts.append((h1[0] if h1 else "Overview", lead.strip("\n") + "\n"))
        for k, (start, title) in enumerate(cuts):
            end = cuts[k + 1][0] if k + 1 < len(cuts) else len(lines)
            body = "".join(lines[start + 1 : end]).strip("\n")
            if body.strip():
                parts.append((title, body + "\n"))
        return parts
    if headings:
        return []
    bullets = _bullets(lines)
    return [(" ".join(b.split()[1:9]), b) for b in bullets] if len(bullets) >= 2 else []


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    found, fenced = [], False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line.rstrip("\r\n"))
        if match:
            found.append((len(match.group(1)), i, match.group(2).strip()))
    return found


def _is_heading_of(line: str, level: int) -> bool:
    match = _HEADING.match(line.rstrip("\r\n"))
    return match is not None and len(match.group(1)) == level


def _first_heading(text: str) -> str | None:
    found = _headings(text.splitlines(keepends=True))
    return found[0][2] if found else None


def _bullets(lines: list[str]) -> list[str]:
    """Each top-level bullet with its indented continuation lines, if the text is nothing else."""
    bullets: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        if _BULLET.match(line):
            bullets.append(line)
        elif bullets and line[:1] in (" ", "\t"):
            bullets[-1] += line
        else:
            return []
    return [b if b.endswith("\n") else b + "\n" for b in bullets]


def read_json_text(text: str, source: str, kind: str, ns: str | None) -> tuple[list[Candidate], list[Skipped]]:
    """The memories JSON Lines or mem0 JSON text holds (``source`` names it in skips)."""
    if kind not in ("jsonl", "mem0"):
        raise InvalidArgumentError(f"standard input is read as jsonl or mem0, not {kind}")
    if kind == "mem0" and ns is None:
        raise InvalidArgumentError("importing mem0 needs a namespace to put the memories in (--namespace)")
    records, skipped = _json_records(text, source)
    found = []
    for where, record in records:
        made = _from_memfs(record, where, ns) if kind == "jsonl" else _from_mem0(record, where, ns)
        if isinstance(made, Skipped):
            skipped.append(made)
        else:
            found.append(made)
    return found, skipped


def _json_records(text: str, source: str) -> tuple[list[tuple[str, Any]], list[Skipped]]:
    """The records of a JSON document (a list, or ``results``/``memories`` of an object) or of JSON Lines."""
    stripped = text.lstrip()
    if stripped[:1] == "[" or (stripped[:1] == "{" and "\n{" not in stripped.rstrip()):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ImportSourceError(f"{source} is not valid JSON: {exc}") from None
        except RecursionError:  # the parser nests a call per level; deeper than it goes is no memory
            raise ImportSourceError(
                f"{source} nests lists or objects too deep to read; a memory's data "
                f"is never deeper than {MAX_NESTING} levels"
            ) from None
        if isinstance(data, dict):
            items = data.get("results", data.get("memories", [data]))
        else:
            items = data
        if not isinstance(items, list):
            raise ImportSourceError(f"{source}: expected a list of memories (or an object with 'results')")
        check_import_size(len(items), source)
        return [(f"{source} item {i}", item) for i, item in enumerate(items, 1)], []
    records: list[tuple[str, Any]] = []
    skipped: list[Skipped] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        check_import_size(len(records) + len(skipped) + 1, source)
        try:
            records.append((f"{source} line {n}", json.loads(line)))
        except RecursionError:
            skipped.append(Skipped(f"{source} line {n}", f"nested too deep to read (over {MAX_NESTING} levels)"))
        except ValueError as exc:
            skipped.append(Skipped(f"{source} line {n}", f"not JSON ({exc})"))
    return records, skipped


def check_import_size(count: int, source: str) -> None:
    """Refuse a source as soon as it holds more than one import takes (before any record is built)."""
    if count > MAX_ITEMS:
        raise ImportSourceError(
            f"{source} holds more than the {MAX_ITEMS:,} memories one import takes; "
            "split it and import the parts one by one"
        )


def _too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether lists and objects nest deeper than ``limit`` in ``value`` (walked with a stack, not recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _from_memfs(record: Any, where: str, ns: str | None) -> Candidate | Skipped:
    """A memfs export record as the file it was: ``head`` when it still says ``front_matter``."""
    if not isinstance(record, dict):
        return Skipped(where, "not a JSON object")
    body, meta = record.get("body"), record.get("front_matter")
    if not isinstance(body, str):
        return Skipped(where, "no 'body' text")
    if _too_deep(record):
        return Skipped(where, f"nests deeper than {MAX_NESTING} levels")
    namespace = ns or record.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        return Skipped(where, "no 'namespace' (give --namespace)")
    try:
        namespace = clean_namespace(namespace)
    except PathError as exc:
        return Skipped(where, str(exc))
    name = record.get("name")
    if name is not None and not isinstance(name, str):
        return Skipped(where, "'name' is not text")
    if meta is None:  # another tool's record: its fields are the front matter
        meta = {k: record[k] for k in FIELDS if record.get(k) not in (None, [], "")}
        return Candidate(where, namespace, dumps(Document.new(meta, body)), name)
    if not isinstance(meta, dict):
        return Skipped(where, "'front_matter' is not an object")
    head = record.get("head")
    if isinstance(head, str):
        text = ("\ufeff" if record.get("bom") else "") + head + body
        try:
            if loads(text).metadata == meta:
                return Candidate(where, namespace, text, name, restore=True)
        except DocumentError:
            pass  # edited into something else: the front matter says what is meant
    try:
        return Candidate(where, namespace, rebuilt(meta, body), name, restore=True)
    except DocumentError as exc:
        return Skipped(where, f"its front matter cannot be written: {exc.reason}")


def _from_mem0(record: Any, where: str, ns: str | None) -> Candidate | Skipped:
    """A mem0 memory (``id``, ``memory``, ``user_id``/``agent_id``/``run_id``, ``metadata``, ``categories``, times)."""
    if not isinstance(record, dict):
        return Skipped(where, "not a JSON object")
    text = record.get("memory", record.get("text", record.get("content")))
    if not isinstance(text, str) or not text.strip():
        return Skipped(where, "no 'memory' text")
    namespace = ns
    if namespace is None:
        return Skipped(where, "no namespace to put it in (give --namespace)")
    meta: dict[str, Any] = {"title": " ".join(text.split()[:8])}
    categories = record.get("categories")
    if isinstance(categories, list):
        meta["tags"] = [str(c).replace(",", " ").strip() for c in categories if str(c).strip()]
    for key, ours in (("created_at", "created"), ("updated_at", "updated")):
        moment = normalize_time(record.get(key))
        if moment:
            meta[ours] = moment
    origin = {k: record[k] for k in ("id", "user_id", "agent_id", "run_id", "hash") if isinstance(record.get(k), str)}
    extra = record.get("metadata")
    if _too_deep(extra, MAX_NESTING - 2):
        return Skipped(where, f"its metadata nests deeper than {MAX_NESTING - 2} levels")
    if isinstance(extra, dict) and extra:
        origin["metadata"] = extra
    if origin:
        meta["mem0"] = origin
    try:
        return Candidate(where, namespace, dumps(Document.new(meta, text.rstrip("\n") + "\n")))
    except DocumentError as exc:
        return Skipped(where, f"its metadata cannot be front matter: {exc.reason}")


def rebuilt(meta: Mapping[str, Any], body: str) -> str:
    """A memory file's text from its front matter and body."""
    return dumps(Document.new(meta, body))


def check_source_text(text: str, name: str = "standard input") -> None:
    """Refuse a source given as text (standard input) past what an import reads, as a file past it is."""
    if len(text) > MAX_SOURCE_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise ImportSourceError(f"{name} holds more than an import reads ({MAX_SOURCE_BYTES:,} bytes)")


def read_stdin(stream: BinaryIO) -> str:
    """Standard input as an import's text, read up to one byte past what an import reads (never all of it)."""
    data = stream.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise ImportSourceError(f"standard input holds more than an import reads ({MAX_SOURCE_BYTES:,} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportSourceError("standard input is not UTF-8 text") from None


def read_file(path: Path, limit: int) -> bytes:
    """A source file's bytes, at most ``limit`` of them; :class:`ImportSourceError` when it cannot be read."""
    try:
        data = _fs.read_file(path, limit=limit)
    except FileTooLargeError as exc:
        raise ImportSourceError(f"{path} is {exc.size:,} bytes, more than an import reads ({limit:,})") from None
    if data is None:
        raise ImportSourceError(f"{path} is not a regular file")
    return data
