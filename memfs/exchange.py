"""Import and export: memories in and out of a vault, so nothing is locked in.

:func:`export_lines` writes every memory as one JSON object a line (JSON Lines): the fields other
tools look for (``id``, ``namespace``, ``title``, ``body``, ``tags``, ``type``, the validity keys,
``provenance``, ``created``, ``updated``) and the whole front matter in file order
(``front_matter``), with the block as written (``head``) when writing that front matter afresh
would not give the same bytes. :func:`import_source` reads that back file for file, byte for byte.

:func:`import_source` also adopts what other tools keep: a folder of Markdown notes (an Obsidian
vault: front matter kept, wikilinks left alone, ``.obsidian/`` skipped), an Anthropic memory-tool
folder (``/memories``: text files of any name), a Claude Code memory folder (``MEMORY.md`` and
topic files with ``name``/``description``/``type``), a ``CLAUDE.md`` or ``AGENTS.md`` file (split
into memories by its headings or bullets where that is clear, kept whole otherwise), and the JSON
of other memory services (mem0's ``get_all``: ``{"results": [{"id", "memory", "user_id", ...}]}``,
a list of them, or JSON Lines).

Every memory goes through the store's one write path (:meth:`MemoryStore.write_text`: names,
front-matter checks, ``id``/``created``/``updated`` stamps, credentials per ``on_secret``), in ONE
commit with ``Memfs-Op: import``. Everything is read and checked before the first byte is written:
a note that cannot be read (a link, a binary file, bad YAML, too large, a name already taken) is
skipped and listed in the report; a source that cannot be read at all raises
:class:`ImportSourceError`; and a failure while writing rolls the whole import back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import stat
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import _fs
from .credentials import find_secrets
from .documents import Document, dumps, loads, normalize_time, tags_of
from .engine import MAX_CONTENT_BYTES
from .errors import (
    ContentError,
    DocumentError,
    FileTooLargeError,
    ImportSourceError,
    InvalidArgumentError,
    MemfsError,
    MemoryNotFoundError,
    PathError,
)
from .layout import (
    ARCHIVE_DIR,
    ATTACHMENT_SUFFIXES,
    CONFLICTS_DIR,
    MEMORIES_DIR,
    PROPOSALS_DIR,
    SESSIONS_DIR,
    SETTINGS_FILE,
    label,
    memory_path,
    split_memory_path,
)
from .paths import clean_memory_path, clean_namespace, clean_relpath, keepable_name, slugify
from .results import Progress
from .store import MemoryStore, case_twin, new_id

#: A :class:`memfs.Vault` (typed loosely: the vault imports this module, not the other way round).
Vault = Any

#: The formats :func:`import_source` reads; ``auto`` looks at the source to choose one.
FORMATS = ("auto", "markdown", "anthropic", "claude-code", "agents-md", "jsonl", "mem0")
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
_T = TypeVar("_T")


@dataclass(frozen=True)
class Skipped:
    """Something in the source that was not imported, and why (said so a person can fix it)."""

    source: str
    reason: str


@dataclass(frozen=True)
class Imported:
    """A memory an import wrote (or, in a dry run, would write).

    Attributes:
        source: Where it came from (a file of the source, ``line 3``, ``CLAUDE.md § Testing``).
        path: Its vault path.
        id: Its id (None only for a memory put back from an export that had none: a file written by hand).
        redacted: The kinds of the credentials replaced by ``[REDACTED:...]`` on the way in.
        renamed: Why its name is not the source's own (a character a memory's name may not hold),
            or None when it kept it.
    """

    source: str
    path: str
    id: str | None
    redacted: tuple[str, ...] = ()
    renamed: str | None = None


@dataclass
class ImportReport:
    """What an import did: the format read, what it wrote, what it skipped and the commit."""

    format: str
    dry_run: bool
    imported: list[Imported] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    commit: str | None = None
    proposed: bool = False  # written as proposals waiting for review, not as facts

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (what ``memfs import --json`` prints)."""
        return {
            "format": self.format,
            "dry_run": self.dry_run,
            "commit": self.commit,
            "proposed": self.proposed,
            "imported": [vars(i) | {"redacted": list(i.redacted)} for i in self.imported],
            "skipped": [vars(s) for s in self.skipped],
        }


@dataclass(frozen=True)
class _Candidate:
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


# -- export ------------------------------------------------------------------------------------


def export_lines(
    vault: Vault, namespace: str | None = None, *, progress: Progress | None = None
) -> tuple[list[str], list[Skipped]]:
    """Every memory of the vault (or of ``namespace`` and the namespaces under it) as JSON lines.

    Returns the lines (each ending in a newline, sorted by vault path) and the files that could
    not be read (malformed, too large): an export that skips a file says so. ``progress`` is
    called with (files done, files in all) after each file.
    """
    prefix = memory_path(clean_namespace(namespace)) + "/" if namespace else MEMORIES_DIR + "/"
    lines, skipped = [], []
    files = [rel for rel in vault.engine.catalog.files(prefix) if split_memory_path(rel)[0]]  # not loose in memories/
    for done, rel in enumerate(files, 1):
        ns, name = split_memory_path(rel)
        try:
            data = vault.read_bytes(rel)
            doc = loads(data.decode("utf-8"), path=rel)
        except (DocumentError, FileTooLargeError, MemoryNotFoundError, PathError, UnicodeDecodeError) as exc:
            skipped.append(Skipped(rel, str(exc)))
        else:
            lines.append(json.dumps(record_of(ns, name, doc), ensure_ascii=False) + "\n")
        if progress is not None:
            progress(done, len(files))
    return lines, skipped


def write_export(path: Path, lines: list[str]) -> None:
    """Write an export's lines to ``path`` whole or not at all (a temp file renamed over it), private to its owner."""
    _fs.atomic_write(path, "".join(lines).encode("utf-8"))


def record_of(namespace: str, name: str, doc: Document) -> dict[str, Any]:
    """The export record of one memory file (see the module's docstring)."""
    meta = doc.metadata
    record: dict[str, Any] = {"id": meta.get("id"), "namespace": namespace, "name": name}
    for key in FIELDS[1:]:
        record[key] = meta.get(key)
    record["title"] = doc.title(name)
    record["tags"] = list(tags_of(meta.get("tags")))
    record["created"], record["updated"] = normalize_time(meta.get("created")), normalize_time(meta.get("updated"))
    record["body"] = doc.body
    record["front_matter"] = meta
    text = ("\ufeff" if doc.bom else "") + doc.head + doc.body
    if _rebuilt(meta, doc.body) != text:  # hand-written YAML, a BOM, CRLF: keep the block as written
        record["head"] = doc.head
        if doc.bom:
            record["bom"] = True
    return record


def _rebuilt(meta: Mapping[str, Any], body: str) -> str:
    return dumps(Document.new(meta, body))


# -- import ------------------------------------------------------------------------------------


def import_source(
    vault: Vault,
    source: str | os.PathLike[str],
    *,
    namespace: str | None = None,
    format: str = "auto",
    in_place: bool = False,
    dry_run: bool = False,
    on_secret: str = "redact",
    text: str | None = None,
    accept: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import memories from ``source`` into the vault in one commit (see the module's docstring).

    Args:
        vault: The vault.
        source: A folder or a file (``-`` with ``text``: what was read from stdin).
        namespace: Where the memories go; required unless the source is memfs JSON Lines, whose
            records name their own (given, it replaces theirs).
        format: One of :data:`FORMATS`.
        in_place: Adopt Markdown notes already inside the vault's ``memories/`` folder where they
            are (their front matter gets ``id``/``created``/``updated`` and ``provenance:
            import``; nothing moves) instead of copying them in.
        dry_run: Read and check everything, write nothing: the report says what would happen.
        on_secret: What a credential in a memory does: ``redact`` (the store's default), ``refuse``
            (that memory is skipped) or ``allow``.
        text: The source's content when ``source`` is ``-`` (standard input).
        accept: Write the memories as facts at once. By default an import is a set of
            proposals (``proposals/``, one group) that count once a person accepts them
            (``memfs review``, ``memfs accept``): someone else's notes are not the agent's facts
            until a person says so. ``in_place`` notes are already the person's files in the
            vault, so they are adopted at once.
        progress: Called with (steps done, steps in all): a step per record checked, then one per
            memory written. Until the checks are done every record counts as written too, and the
            total shrinks by one for each record skipped (it never grows: the bar never goes back).

    Raises:
        ImportSourceError: The source is missing, a link, or unreadable as ``format``.
        InvalidArgumentError: An unknown format, or no namespace where one is needed.
    """
    if format not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {list(FORMATS)}, got {format!r}")
    ns = clean_namespace(namespace) if namespace else None
    path = Path(source)
    if str(source) == "-":
        if text is None:
            raise InvalidArgumentError("reading from standard input needs its text")
        kind = format if format != "auto" else _sniff_json(text)
        found, skipped = _read_json_text(text, "-", kind, ns)
    else:
        if not os.path.lexists(path):
            raise ImportSourceError(f"{path}: no such file or folder to import")
        if path.is_symlink():
            raise ImportSourceError(f"{path} is a symbolic link; memfs does not follow links: give its target")
        kind_of = stat.S_IFMT(os.lstat(path).st_mode)
        if kind_of not in (stat.S_IFREG, stat.S_IFDIR):  # a FIFO or a device would block or never end
            raise ImportSourceError(
                f"{path} is not a regular file or a folder (a FIFO, a socket or a device); import a file or a folder"
            )
        kind = format if format != "auto" else detect(path)
        if in_place:
            if kind not in ("markdown", "claude-code"):
                raise InvalidArgumentError(f"--in-place adopts Markdown notes already in the vault, not {kind}")
            found, skipped = _in_place(vault, path)
        else:
            found, skipped = _read(path, kind, ns)
    propose = not (accept or in_place)
    return _run(
        vault,
        found,
        skipped,
        kind,
        str(source),
        dry_run=dry_run,
        on_secret=on_secret,
        propose=propose,
        progress=progress,
    )


def _run(
    vault: Vault,
    found: list[_Candidate],
    skipped: list[Skipped],
    kind: str,
    source: str,
    *,
    dry_run: bool = False,
    on_secret: str = "redact",
    propose: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Check every candidate, then (unless ``dry_run``) write them in one commit: the import's report."""
    if len(found) > MAX_ITEMS:
        raise ImportSourceError(f"{source} holds {len(found)} memories, more than the {MAX_ITEMS} one import takes")
    report = ImportReport(kind, dry_run, skipped=skipped)
    with vault.locked():
        plans = _plan(vault, found, report, on_secret, progress=_checking(progress, report, len(found), dry_run))
        if dry_run or not plans:
            return report
        report.commit = _write(vault, plans, kind, source, propose=propose, progress=_after(len(found), progress))
        report.proposed = propose
    return report


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
        return _sniff_json((head or b"").decode("utf-8", "replace"))
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


def _sniff_json(text: str) -> str:
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


def _read(path: Path, kind: str, ns: str | None) -> tuple[list[_Candidate], list[Skipped]]:
    if kind in ("jsonl", "mem0"):
        data = _read_file(path, MAX_SOURCE_BYTES)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ImportSourceError(f"{path} is not UTF-8 text") from None
        return _read_json_text(text, path.name, kind, ns)
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


def _read_folder(root: Path, kind: str, ns: str) -> tuple[list[_Candidate], list[Skipped]]:
    found: list[_Candidate] = []
    skipped: list[Skipped] = []
    for rel in _walk(root, skipped):
        _check_count(len(found) + len(skipped) + 1, str(root))  # a folder of a million files stops here
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
            found.append(_Candidate(rel, ns, _plain(text, rel), name, renamed=why))
        else:
            if kind == "claude-code":
                text = _claude_code(text, rel)
            name, why = _md_name(rel)
            if why is not None:  # a note's name is its title in Obsidian: keep it when the file name had to change
                text = _titled(text, unicodedata.normalize("NFC", rel.rsplit("/", 1)[-1][:-3]))
            found.append(_Candidate(rel, ns, text, name, renamed=why))
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


def _titled(text: str, title: str) -> str:
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


def _split_file(text: str, file_name: str, ns: str) -> list[_Candidate]:
    """A CLAUDE.md/AGENTS.md as memories: one per section, or per bullet, where that is clear."""
    tags = ["agents-md" if file_name.startswith("AGENTS") else "claude-md"]
    meta: dict[str, Any] = {"type": "instruction", "tags": tags, "source": file_name}
    parts = split_instructions(text)
    if len(parts) < 2:
        title = _first_heading(text) or file_name
        return [_Candidate(file_name, ns, dumps(Document.new({"title": title, **meta}, text)))]
    return [
        _Candidate(f"{file_name} § {title}", ns, dumps(Document.new({"title": title, **meta}, body)))
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


def _read_json_text(text: str, source: str, kind: str, ns: str | None) -> tuple[list[_Candidate], list[Skipped]]:
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
        _check_count(len(items), source)
        return [(f"{source} item {i}", item) for i, item in enumerate(items, 1)], []
    records: list[tuple[str, Any]] = []
    skipped: list[Skipped] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        _check_count(len(records) + len(skipped) + 1, source)
        try:
            records.append((f"{source} line {n}", json.loads(line)))
        except RecursionError:
            skipped.append(Skipped(f"{source} line {n}", f"nested too deep to read (over {MAX_NESTING} levels)"))
        except ValueError as exc:
            skipped.append(Skipped(f"{source} line {n}", f"not JSON ({exc})"))
    return records, skipped


def _check_count(count: int, source: str) -> None:
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


def _from_memfs(record: Any, where: str, ns: str | None) -> _Candidate | Skipped:
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
        return _Candidate(where, namespace, dumps(Document.new(meta, body)), name)
    if not isinstance(meta, dict):
        return Skipped(where, "'front_matter' is not an object")
    head = record.get("head")
    if isinstance(head, str):
        text = ("\ufeff" if record.get("bom") else "") + head + body
        try:
            if loads(text).metadata == meta:
                return _Candidate(where, namespace, text, name, restore=True)
        except DocumentError:
            pass  # edited into something else: the front matter says what is meant
    try:
        return _Candidate(where, namespace, _rebuilt(meta, body), name, restore=True)
    except DocumentError as exc:
        return Skipped(where, f"its front matter cannot be written: {exc.reason}")


def _from_mem0(record: Any, where: str, ns: str | None) -> _Candidate | Skipped:
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
        return _Candidate(where, namespace, dumps(Document.new(meta, text.rstrip("\n") + "\n")))
    except DocumentError as exc:
        return Skipped(where, f"its metadata cannot be front matter: {exc.reason}")


#: What a vault holds of memfs's own at its top: never a person's notes to adopt.
_VAULT_OWN = frozenset(
    {
        ".git",
        ".gitignore",
        ".memfs",
        ".memfs-tombstones",
        MEMORIES_DIR,
        SESSIONS_DIR,
        PROPOSALS_DIR,
        ARCHIVE_DIR,
        CONFLICTS_DIR,
        SETTINGS_FILE,
    }
)


def loose_notes(root: Path) -> list[str]:
    """The top-level entries of a folder that make it a notes folder to adopt (``[]`` when it is not one).

    A folder is a notes folder when Obsidian opened it (``.obsidian/``), or when it holds a Markdown
    note and nothing but notes and what notes keep beside them (attachments, ``.csv``, ``.txt``):
    a project folder with code or settings in it is never moved into ``memories/``. Then everything
    at its top but memfs's own (notes, attachments, the editor's settings) belongs to the notes.
    """
    if not root.is_dir():
        return []
    entries = sorted(e.name for e in os.scandir(root) if e.name not in _VAULT_OWN)
    if ".obsidian" in entries:
        return entries
    kinds = _kinds_of_files(root, [e for e in entries if not e.startswith(".")])
    if "md" in kinds and kinds <= _NOTE_FOLDER_SUFFIXES:
        return entries
    return []


#: What a notes folder holds besides notes: what Obsidian keeps beside them.
_NOTE_FOLDER_SUFFIXES = frozenset({"md", "csv", "txt", *ATTACHMENT_SUFFIXES})


def _kinds_of_files(root: Path, entries: list[str], limit: int = 20_000) -> set[str]:
    """The suffixes (lower case; ``""`` for none) of the files under ``entries`` of ``root``, hidden ones aside."""
    kinds: set[str] = set()
    seen = 0
    for entry in entries:
        path = root / entry
        if path.is_symlink():
            kinds.add("")
            continue
        walked = os.walk(path) if path.is_dir() else [(str(root), [], [entry])]
        for _folder, dirs, files in walked:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if not name.startswith("."):
                    kinds.add(name.rpartition(".")[2].lower() if "." in name else "")
            seen += len(files)
            if seen > limit:
                kinds.add("")  # too large to be sure: not adopted
                return kinds
    return kinds


def adopt_folder(vault: Vault, entries: list[str], namespace: str = "notes") -> ImportReport:
    """Adopt the notes at the top of the vault's folder: moved into ``memories/<namespace>/``, then stamped there.

    Every note keeps its name and its path inside the namespace (a name memfs cannot keep is
    given the nearest one it can, and the report says why); attachments and ``.obsidian/`` move
    along, so the notes and what they link to stay one Obsidian vault (open ``memories/<namespace>``
    in Obsidian). Files git tracked at their old place are committed as moved. No folder is left
    empty behind.

    Raises:
        ImportSourceError: ``memories/<namespace>`` already holds a file of the same name.
    """
    ns = clean_namespace(namespace)
    root = vault.root
    target = memory_path(ns)
    moves: list[tuple[str, str, str | None]] = []  # (old, new, why the name changed)
    for entry in entries:
        if (root / entry).is_dir() and not (root / entry).is_symlink():
            for folder, dirs, files in os.walk(root / entry):
                dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
                for name in files:
                    old = (Path(folder) / name).relative_to(root).as_posix()
                    moves.append((old, *_adopted_name(old)))
        else:
            moves.append((entry, *_adopted_name(entry)))
    clash = [new for _, new, _ in moves if os.path.lexists(root / target / new)]
    if clash:
        raise ImportSourceError(
            f"{target}/{clash[0]} already exists; adopt the notes into another namespace (--namespace)"
        )
    tops = tuple(entries)
    head = vault.history.head()
    tracked = [rel for rel in vault.history.tracked(head) if rel.split("/", 1)[0] in tops] if head else []
    with vault.locked():
        for old, new, _ in moves:
            dest = root / target / new
            vault.engine.make_folders(Path(target, new).parent.as_posix())
            os.rename(root / old, dest)
        for entry in entries:
            _remove_empty(root / entry)
        moved: dict[str, bytes | None] = {rel: None for rel in tracked if not os.path.lexists(root / rel)}
        skipped: list[Skipped] = []
        for _, new, _ in moves:
            rel = f"{target}/{new}"
            if not _editor_state(new):
                data = _committable(root / rel, rel, skipped)
                if data is not None:
                    moved[rel] = data
        # the notes as they were, then stamped by the import: one commit each, however many notes
        vault.history.commit(
            moved,
            f"adopt: {len(moves)} files moved into {target}",
            author=vault.person,
            trailers={"Memfs-Op": "adopt"},
            durable=vault.durable,
        )
        renamed = {f"{target}/{new}": (why, old) for old, new, why in moves if why}
        found, unread = _in_place(vault, root / target)
        for n, cand in enumerate(found):
            if cand.source in renamed:  # a note's name is its title in Obsidian: keep it where the file's changed
                why, old = renamed[cand.source]
                title = unicodedata.normalize("NFC", old.rsplit("/", 1)[-1].removesuffix(".md"))
                text = cand.text if cand.source.endswith("/" + title + ".md") else _titled(cand.text, title)
                found[n] = dataclasses.replace(cand, text=text, renamed=why)
        return _run(vault, found, skipped + unread, "markdown", str(root / target))


#: The largest file of a notes folder committed with it (an attachment past it stays, uncommitted, and is named).
MAX_ATTACHMENT_BYTES = 32 * 1024 * 1024
#: Obsidian's files of one person's window layout and caches: never committed (``.gitignore`` says so too).
EDITOR_STATE = ("workspace.json", "workspace-mobile.json", "workspaces.json", "cache")


def _editor_state(rel: str) -> bool:
    """Whether a file is an editor's state of the moment rather than shareable settings."""
    parts = rel.split("/")
    return ".obsidian" in parts[:-1] and parts[parts.index(".obsidian") + 1] in EDITOR_STATE


def _committable(path: Path, rel: str, skipped: list[Skipped]) -> bytes | None:
    """A moved file's bytes to commit, or None (and why, in ``skipped``) when it cannot be."""
    try:
        data = _fs.read_file(path, limit=MAX_ATTACHMENT_BYTES, name=rel)
    except FileTooLargeError as exc:
        skipped.append(
            Skipped(
                rel, f"{exc.size:,} bytes, larger than memfs commits ({exc.limit:,}); kept in the folder, not committed"
            )
        )
        return None
    except OSError as exc:
        skipped.append(Skipped(rel, f"cannot be read ({exc.strerror}); kept in the folder, not committed"))
        return None
    if data is None:
        skipped.append(Skipped(rel, "not a regular file (a link or a device); kept in the folder, not committed"))
    return data


def _adopted_name(rel: str) -> tuple[str, str | None]:
    """Where a file of a notes folder goes inside the namespace, and why its name changed (None if not)."""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts):  # the editor's settings, kept as they are
        return unicodedata.normalize("NFC", rel), None
    try:
        return clean_relpath(rel), None
    except PathError:
        return keepable_name(rel)


def _remove_empty(folder: Path) -> None:
    """Remove ``folder`` and the folders under it that hold nothing now (their files moved)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for here, _dirs, _files in sorted(os.walk(folder, topdown=False), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            os.rmdir(here)


def _in_place(vault: Vault, path: Path) -> tuple[list[_Candidate], list[Skipped]]:
    """The notes of a folder inside the vault's ``memories/``, to be stamped where they are."""
    try:
        rel_root = path.resolve().relative_to((vault.root / MEMORIES_DIR).resolve()).as_posix()
    except ValueError:
        raise InvalidArgumentError(
            f"--in-place adopts notes already in the vault's {MEMORIES_DIR}/ folder; "
            f"{path} is not in it (import a copy instead)"
        ) from None
    found, skipped = [], []
    for rel in vault.engine.catalog.files(memory_path(rel_root) + "/" if rel_root != "." else MEMORIES_DIR + "/"):
        composed = unicodedata.normalize("NFC", rel)  # macOS writes accents decomposed: same name, NFC
        ns, name = split_memory_path(composed)
        if not ns:
            skipped.append(Skipped(rel, "not in a namespace folder"))
            continue
        try:
            raw = vault.read_bytes(rel)
        except (MemfsError, OSError) as exc:
            skipped.append(Skipped(rel, str(exc)))
            continue
        moved = None
        if composed != rel:
            if os.path.lexists(vault.root / composed) and not os.path.samefile(vault.root / composed, vault.root / rel):
                skipped.append(
                    Skipped(
                        rel,
                        f"its name is not in Unicode NFC form, and {label(composed)} (the same "
                        "name in NFC form) is another file; merge or rename one of them",
                    )
                )
                continue
            moved = rel if not os.path.lexists(vault.root / composed) else None
        text = raw.decode("utf-8", "surrogateescape")
        why = "its name was not in Unicode NFC form" if moved else None
        found.append(_Candidate(rel, ns, text, name, replace=raw, renamed=why, moved_from=moved))
    return found, skipped


def _read_file(path: Path, limit: int) -> bytes:
    try:
        data = _fs.read_file(path, limit=limit)
    except FileTooLargeError as exc:
        raise ImportSourceError(f"{path} is {exc.size:,} bytes, more than an import reads ({limit:,})") from None
    if data is None:
        raise ImportSourceError(f"{path} is not a regular file")
    return data


# -- checking and writing -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    candidate: _Candidate
    name: str
    text: str
    imported: Imported


def _store(vault: Vault, namespace: str, *, propose: bool = False) -> MemoryStore:
    """The store an import writes through: the one place that decides where imported memories go.

    ``propose``: as proposals waiting for a person's review (the default of an import), else facts.
    """
    store: MemoryStore = vault.memories(namespace, propose=propose, writer="import")
    return store


def _counted(items: list[_T], progress: Progress | None) -> Iterator[_T]:
    """``items`` one by one; ``progress`` hears (done, len(items)) as each is dealt with (asked for the next)."""
    for done, item in enumerate(items, 1):
        yield item
        if progress is not None:
            progress(done, len(items))


def _checking(progress: Progress | None, report: ImportReport, records: int, dry_run: bool) -> Progress | None:
    """``progress`` while records are checked: the total is every check and every write still to come."""
    if progress is None:
        return None
    told, skipped_before = progress, len(report.skipped)

    def checked(done: int, _: int) -> None:
        writes = 0 if dry_run else records - (len(report.skipped) - skipped_before)  # a skipped one is not written
        told(done, records + writes)

    return checked


def _after(steps: int, progress: Progress | None) -> Progress | None:
    """``progress`` for the steps that follow the first ``steps``: counts and total shifted by them."""
    if progress is None:
        return None
    told = progress
    return lambda done, total: told(steps + done, steps + total)


def _plan(
    vault: Vault, found: list[_Candidate], report: ImportReport, on_secret: str, *, progress: Progress | None = None
) -> list[_Plan]:
    """Check every candidate against the store's rules and the vault, before anything is written."""
    plans: list[_Plan] = []
    taken: set[str] = set()
    ids: set[str] = set()
    folders: dict[str, str] = {}  # the folders this import writes in, casefolded -> as spelled
    for cand in _counted(found, progress):
        store = _store(vault, cand.namespace)
        try:
            plan = _check(vault, store, cand, on_secret, taken, ids)
        except (ContentError, PathError, InvalidArgumentError) as exc:
            report.skipped.append(Skipped(cand.source, str(exc)))
            continue
        if not isinstance(plan, Skipped) and cand.replace is None:
            plan = _case_clash(plan, folders) or plan
        if isinstance(plan, Skipped):
            report.skipped.append(plan)
            continue
        taken.add(memory_path(cand.namespace, plan.name).casefold())
        if plan.imported.id is not None:
            ids.add(plan.imported.id)
        plans.append(plan)
        report.imported.append(plan.imported)
    return plans


def _check(
    vault: Vault, store: MemoryStore, cand: _Candidate, on_secret: str, taken: set[str], ids: set[str]
) -> _Plan | Skipped:
    provenance = None if cand.restore else "import"
    try:
        doc = loads(cand.text)
    except DocumentError as exc:
        return Skipped(cand.source, exc.reason)
    adopted = all(doc.metadata.get(key) for key in ("id", "created", "updated", "provenance"))
    if cand.replace is not None and adopted:  # stamping it again would only move `updated`
        return Skipped(cand.source, "already adopted (it has an id, times and provenance)")
    if cand.name is None and doc.metadata.get("id") is None:
        doc = doc.with_metadata({"id": new_id()})
    name = cand.name or _free_name(store, doc, cand.namespace, taken)
    if on_secret != "allow" and find_secrets(name):
        return Skipped(cand.source, "its name holds a credential (a name cannot be redacted)")
    text = store.stamp(
        cand.text if cand.restore else dumps(doc),
        name=name,
        creating=cand.replace is None,
        provenance=provenance,
        on_secret=on_secret,
        as_written=cand.restore,
    )
    if not cand.restore and normalize_time(doc.metadata.get("updated")):  # the source says when it changed last
        kept = {"updated": doc.metadata["updated"]}
        if "created" not in doc.metadata:  # created no later than it was last updated
            kept["created"] = doc.metadata["updated"]
        text = dumps(loads(text).with_metadata(kept))
    found_id = loads(text).metadata.get("id")
    memory_id = None if found_id is None else str(found_id)
    rel = memory_path(cand.namespace, clean_memory_path(name))
    kinds = tuple(sorted({f.kind for f in find_secrets(cand.text)})) if on_secret == "redact" else ()
    imported = Imported(cand.source, rel, memory_id, kinds, cand.renamed)
    if cand.replace is not None:
        return _Plan(cand, name, text, imported)
    if rel.casefold() in taken:
        return Skipped(cand.source, f"{label(rel)} comes twice in this import")
    if memory_id is not None and memory_id in ids:
        return Skipped(cand.source, f"the id {memory_id} comes twice in this import")
    held = None if memory_id is None else vault.path_of(memory_id)
    if held is not None:
        same = held == rel and _holds(vault, rel, text)
        return Skipped(
            cand.source,
            "already in the vault, unchanged" if same else f"the id {memory_id} is already used by {label(held)}",
        )
    twin = case_twin(vault.root, rel)
    if twin is not None:
        return Skipped(cand.source, f"{twin} is already in the vault and differs from {label(rel)} only in case")
    if os.path.lexists(vault.root / rel):
        if cand.restore and _holds(vault, rel, text):
            return Skipped(cand.source, "already in the vault, unchanged")
        return Skipped(cand.source, f"{label(rel)} already exists; import into another namespace")
    return _Plan(cand, name, text, imported)


def _case_clash(plan: _Plan, folders: dict[str, str]) -> Skipped | None:
    """A memory of this import whose folder differs only in case from another's (else None; ``folders`` learns it).

    Checked here, so that a dry run predicts it and the write (or a proposal's acceptance) never
    meets it: two folders one letter's case apart cannot both exist on macOS or Windows.
    """
    parts = plan.imported.path.split("/")[:-1]
    for n in range(1, len(parts) + 1):
        folder = "/".join(parts[:n])
        known = folders.get(folder.casefold())
        if known is not None and known != folder:
            return Skipped(
                plan.candidate.source,
                f"its folder {label(folder)} differs only in case from "
                f"{label(known)}, which this import also writes; rename one of them",
            )
    for n in range(1, len(parts) + 1):
        folder = "/".join(parts[:n])
        folders.setdefault(folder.casefold(), folder)
    return None


def _holds(vault: Vault, rel: str, text: str) -> bool:
    """Whether the vault file ``rel`` is exactly ``text`` (read through the vault's path gate)."""
    try:
        return bool(vault.read_bytes(rel) == text.encode("utf-8"))
    except (MemfsError, OSError):
        return False


def _free_name(store: MemoryStore, doc: Document, namespace: str, taken: set[str]) -> str:
    title = doc.metadata.get("title")
    slug = slugify(str(title) if title else doc.title("memory.md"))
    for n in range(1, 10_000):
        name = f"{slug}.md" if n == 1 else f"{slug}-{n}.md"
        rel = memory_path(namespace, name)
        if rel.casefold() not in taken and not os.path.lexists(store.engine.root / rel):
            return name
    raise ContentError(f"too many memories named {slug!r} in {namespace}")


def _write(
    vault: Vault, plans: list[_Plan], kind: str, source: str, *, propose: bool, progress: Progress | None = None
) -> str | None:
    """Every planned memory through the store's write path, in one commit (all or nothing).

    Proposed, each namespace's memories are one group: ``memfs accept`` of any takes them all.
    """
    what = f"{len(plans)} memor{'y' if len(plans) == 1 else 'ies'}"
    message = f"import: {what} ({kind}) from {os.path.basename(source.rstrip('/')) or source}"
    trailers = {"Memfs-Op": "import", "Memfs-Format": kind}
    grouped: dict[str, MemoryStore] = {}
    arriving = {plan.imported.id for plan in plans if plan.imported.id is not None}  # may name each other
    with contextlib.ExitStack() as stack:
        stack.enter_context(vault.batch(message, trailers=trailers))
        for plan in _counted(plans, progress):
            store = grouped.get(plan.candidate.namespace)
            if store is None:
                store = grouped[plan.candidate.namespace] = _store(vault, plan.candidate.namespace, propose=propose)
                stack.enter_context(store.together())
            if plan.candidate.moved_from is not None:  # the same name, composed (NFC)
                vault.engine.move(
                    plan.candidate.moved_from,
                    memory_path(plan.candidate.namespace, plan.name),
                    message=f"import: {label(plan.candidate.moved_from)} in NFC form",
                )
            store.write_text(
                plan.name,
                plan.text,
                create=plan.candidate.replace is None,
                expect=plan.candidate.replace,
                as_written=True,
                trailers=trailers,
                arriving=arriving,
            )
    moved = [plan.candidate.moved_from for plan in plans if plan.candidate.moved_from is not None]
    if moved:  # the old names, gone: their pending lines are refused (not NFC), so the index is told here
        vault.engine.catalog.reconcile(moved, commit=False)
    head: str | None = vault.history.head()
    return head
