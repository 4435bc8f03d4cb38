"""Memories handed back to Claude Code: a memory folder (topic files and its ``MEMORY.md`` index) or a ``CLAUDE.md``.

The way back from ``memfs import --format claude-code`` and ``--format agents-md``. A topic file
has Claude Code's front matter (``name``, ``description``, ``type``) and the memory's body; the
index lists each file with its description, one line each, as Claude Code keeps it. A
``CLAUDE.md`` holds one section per memory, its title as the heading. Both are written whole or
not at all, and never over a file that is already there (a person's ``CLAUDE.md`` is theirs).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _fs
from .documents import Document, dumps
from .errors import InvalidArgumentError
from .layout import one_line

INDEX = "MEMORY.md"
EXPORT_FORMATS = ("jsonl", "claude-code", "claude-md")
_DESCRIPTION_CHARS = 150  # the index line Claude Code reads at the start of every session stays short


@dataclass(frozen=True)
class Note:
    """One memory as Claude Code gets it: where it comes from, its title, front matter and body."""

    name: str  # its path inside the namespace exported (users/alice/x.md -> x.md)
    title: str
    metadata: Mapping[str, Any]
    body: str


def describe(note: Note) -> str:
    """A note's one-line description: its ``description`` key, else the first line of its body."""
    given = note.metadata.get("description")
    if isinstance(given, str) and given.strip():
        return one_line(given)
    for line in note.body.splitlines():
        words = one_line(line.lstrip("#>-* "))
        if words:
            return words if len(words) <= _DESCRIPTION_CHARS else words[: _DESCRIPTION_CHARS - 1].rstrip() + "…"
    return one_line(note.title)


def memory_folder(notes: Iterable[Note]) -> dict[str, str]:
    """A Claude Code memory folder: file name -> text, the ``MEMORY.md`` index included.

    A memory named like the index (an imported ``MEMORY.md`` that held notes of its own) is written
    beside it as ``MEMORY-notes.md`` (``MEMORY-notes-2.md``... if taken), never over it.
    """
    notes = list(notes)
    taken = {note.name.casefold() for note in notes}
    files: dict[str, str] = {}
    index = ["# Memory index", ""]
    for note in notes:
        if note.name.casefold() == INDEX.casefold():
            name, n = "MEMORY-notes.md", 1
            while name.casefold() in taken:
                n += 1
                name = f"MEMORY-notes-{n}.md"
            taken.add(name.casefold())
            note = dataclasses.replace(note, name=name)
        meta: dict[str, Any] = {"name": note.title, "description": describe(note)}
        kind = note.metadata.get("type")
        if kind is not None:
            meta["type"] = str(kind)
        files[note.name] = dumps(Document.new(meta, note.body if note.body.endswith("\n") else note.body + "\n"))
        index.append(f"- [{one_line(note.title)}]({note.name}) — {describe(note)}")
    files[INDEX] = "\n".join(index) + "\n"
    return files


def claude_md(notes: Iterable[Note]) -> str:
    """A ``CLAUDE.md``: one ``##`` section per memory, titled, its body as written."""
    parts = ["# Memory", ""]
    for note in notes:
        parts += [f"## {one_line(note.title)}", "", note.body.strip("\n"), ""]
    return "\n".join(parts)


def write_folder(folder: Path, files: Mapping[str, str]) -> None:
    """Write a memory folder; refused (nothing written) if ``folder`` holds anything already.

    Raises:
        InvalidArgumentError: ``folder`` is a file, is not empty, or its parent does not exist.
    """
    check_parent(folder)
    if folder.exists() and (not folder.is_dir() or _holds_anything(folder)):
        raise InvalidArgumentError(
            f"{folder} exists and is not an empty folder; export into a new folder "
            "(memfs never writes over a Claude Code memory folder)"
        )
    for name, text in files.items():
        _fs.atomic_write(folder / name, text.encode("utf-8"))


def _holds_anything(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return any(True for _ in entries)


def write_file(path: Path, text: str) -> None:
    """Write one file (a ``CLAUDE.md``); refused if it exists: a person's ``CLAUDE.md`` is theirs.

    Raises:
        InvalidArgumentError: ``path`` exists, or its folder does not.
    """
    check_parent(path)
    if os.path.lexists(path):
        raise InvalidArgumentError(
            f"{path} exists; memfs does not write over it: export to a new file and merge the two by hand"
        )
    _fs.atomic_write(path, text.encode("utf-8"))


def check_parent(path: Path) -> None:
    """Refuse a target whose folder does not exist, rather than make folders nobody asked for.

    Raises:
        InvalidArgumentError: The folder ``path`` would be written in is missing or not a folder.
    """
    parent = path.parent
    if not parent.is_dir():
        raise InvalidArgumentError(
            f"the folder {parent} does not exist; create it first (mkdir -p {parent}) "
            "or give a path in an existing folder"
        )
