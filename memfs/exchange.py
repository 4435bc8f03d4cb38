"""Import and export: memories in and out of a vault, so nothing is locked in.

:func:`export_lines` writes every memory as one JSON object a line (JSON Lines): the fields other
tools look for (``id``, ``namespace``, ``title``, ``body``, ``tags``, ``type``, the validity keys,
``provenance``, ``created``, ``updated``) and the whole front matter in file order
(``front_matter``), with the block as written (``head``) when writing that front matter afresh
would not give the same bytes. :func:`import_source` reads that back file for file, byte for byte.

:func:`import_source` also adopts what other tools keep, read by :mod:`memfs.sources`: a folder
of Markdown notes (an Obsidian vault: front matter kept, wikilinks left alone, ``.obsidian/``
skipped), an Anthropic memory-tool folder (``/memories``: text files of any name), a Claude Code
memory folder (``MEMORY.md`` and topic files with ``name``/``description``/``type``), a
``CLAUDE.md`` or ``AGENTS.md`` file (split into memories by its headings or bullets where that is
clear, kept whole otherwise), and the JSON of other memory services (mem0's ``get_all``:
``{"results": [{"id", "memory", "user_id", ...}]}``, a list of them, or JSON Lines).

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
import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import _fs
from .credentials import find_secrets, secret_advice
from .documents import Document, dumps, loads, normalize_time, tags_of
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
from .sources import (
    FIELDS,
    Candidate,
    Skipped,
    check_import_size,
    check_source_text,
    detect,
    read_json_text,
    read_source,
    rebuilt,
    sniff_json,
    titled,
)
from .store import MemoryStore, case_twin, new_id

#: A :class:`memfs.Vault` (typed loosely: the vault imports this module, not the other way round).
Vault = Any

#: The formats :func:`import_source` reads; ``auto`` looks at the source to choose one.
FORMATS = ("auto", "markdown", "anthropic", "claude-code", "agents-md", "jsonl", "mem0")
_T = TypeVar("_T")


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
    if rebuilt(meta, doc.body) != text:  # hand-written YAML, a BOM, CRLF: keep the block as written
        record["head"] = doc.head
        if doc.bom:
            record["bom"] = True
    return record


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
        check_source_text(text)
        kind = format if format != "auto" else sniff_json(text)
        found, skipped = read_json_text(text, "-", kind, ns)
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
            found, skipped = read_source(path, kind, ns)
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
    found: list[Candidate],
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
    check_import_size(len(found), source)
    report = ImportReport(kind, dry_run, skipped=skipped)
    with vault.locked():
        plans = _plan(vault, found, report, on_secret, progress=_checking(progress, report, len(found), dry_run))
        if dry_run or not plans:
            return report
        report.commit = _write(vault, plans, kind, source, propose=propose, progress=_after(len(found), progress))
        report.proposed = propose
    return report


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
    # a hidden file at the top (``.env``, ``.DS_Store``) is the folder's, not the notes': it stays
    entries = sorted(
        e.name for e in os.scandir(root) if e.name not in _VAULT_OWN and (e.name == ".obsidian" or e.name[0] != ".")
    )
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
                data = _committable(vault, rel, skipped)
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
                text = cand.text if cand.source.endswith("/" + title + ".md") else titled(cand.text, title)
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


def _committable(vault: Vault, rel: str, skipped: list[Skipped]) -> bytes | None:
    """A moved file's bytes to commit, or None (and why, in ``skipped``) when it cannot be.

    A file holding a credential (in its text or its name) is not committed, as a person's edit
    holding one is not: git would keep it for good. A note among them is still imported (its
    memory redacted, as every import does); the file itself waits for the person.
    """
    try:
        data = _fs.read_file(vault.root / rel, limit=MAX_ATTACHMENT_BYTES, name=rel)
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
        return None
    found = vault.engine.edits.new_secrets(rel)
    if found:
        skipped.append(Skipped(rel, f"kept in the folder, not committed: {secret_advice(rel, found)}"))
        return None
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


def _in_place(vault: Vault, path: Path) -> tuple[list[Candidate], list[Skipped]]:
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
        found.append(Candidate(rel, ns, text, name, replace=raw, renamed=why, moved_from=moved))
    return found, skipped


# -- checking and writing -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    candidate: Candidate
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
    vault: Vault, found: list[Candidate], report: ImportReport, on_secret: str, *, progress: Progress | None = None
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
    vault: Vault, store: MemoryStore, cand: Candidate, on_secret: str, taken: set[str], ids: set[str]
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
