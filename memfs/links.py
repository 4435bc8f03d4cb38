"""Links between notes: what a note links to, what links to it, and links kept whole across a move.

A link (:func:`memfs.notes.links`) is resolved the way Obsidian resolves it, among the files under
``memories/`` (notes and attachments), without regard to case:

- a wikilink ``[[Name]]`` (or an embed ``![[photo.png]]``) names a file by the end of its path:
  ``Name`` is ``Name.md`` (a target with an extension of its own, ``photo.png``, is that file), and
  ``[[Folder/Name]]`` is a file whose path ends in ``Folder/Name.md``; of several, the one in the
  linking note's own folder, else the one with the shortest path (then the first by name);
- a Markdown link ``[label](../Folder/Name.md)`` (percent-encoded) is a path relative to the linking
  note, else a path from the top as a wikilink's is.

The index keeps the table that makes this fast (derived state, rebuilt with it): for each memory,
the key of every link it holds (the target's file name, casefolded: ``linkkey``) and its own key
(``namekey``). Backlinks are the memories whose links have the key of the note's name, each
checked by resolving its links again; outlinks are a note's own links resolved.

A move through memfs (:func:`rewrites`) rewrites, in the same commit, every link that led to a
moved file so that it still does, in the form it was written in (a bare name stays a bare name
when that is still unique, a path gets the new path, a Markdown link the new relative path), and
the relative Markdown links of the moved notes themselves.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .documents import loads
from .errors import DocumentError, FileTooLargeError, InvalidArgumentError, MemoryNotFoundError, PathError
from .layout import MEMORIES_DIR
from .notes import Link, links

#: How many broken links ``doctor`` names one by one.
MAX_BROKEN_LISTED = 20


def key_of(name: str) -> str:
    """The key a file is found by: its file name, without ``.md``, casefolded (``Atlas Plan.md`` -> ``atlas plan``)."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if base.casefold().endswith(".md"):
        base = base[:-3]
    return base.casefold().replace(",", " ").strip()


def link_keys(body: str) -> list[str]:
    """The keys of every link of a note's body to another file (for the index's link table)."""
    return list(dict.fromkeys(key_of(link.target) for link in links(body) if link.target.strip()))


@dataclass(frozen=True)
class Resolved:
    """One link of a note and where it leads.

    Attributes:
        source: The vault path of the note holding the link.
        link: The link as written.
        path: The vault path it leads to, or None when no file answers it (a broken link).
    """

    source: str
    link: Link
    path: str | None


def _has_extension(target: str) -> bool:
    base = target.rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    return bool(stem and dot and ext.isalnum() and len(ext) <= 8 and not ext.isdigit())


class Resolver:
    """Resolves links among the files of a vault's ``memories/`` (as they are, or as they will be after ``moves``)."""

    def __init__(self, engine: Any, moves: Mapping[str, str] | None = None) -> None:
        self.engine = engine
        self.moves = dict(moves or {})
        self._landed: dict[str, list[str]] = {}
        for new in self.moves.values():
            self._landed.setdefault(key_of(new), []).append(new)
        self._named: dict[str, list[str]] = {}
        self._files: dict[str, list[str]] | None = None

    def candidates(self, key: str, attachment: bool) -> list[str]:
        """The files whose key is ``key``, where they are after the moves."""
        if attachment:
            if self._files is None:
                self._files = {}
                for rel in _all_files(self.engine.root):
                    self._files.setdefault(key_of(rel), []).append(rel)
            found = self._files.get(key, [])
        else:
            if key not in self._named:
                self._named[key] = self.engine.catalog.reader.linked("namekey", key)
            found = self._named[key]
        moved = [self.moves.get(p, p) for p in found]
        return sorted({p for p in moved if key_of(p) == key} | set(self._landed.get(key, [])))

    def resolve(self, source: str, link: Link) -> str | None:
        """Where ``link`` of the note at ``source`` leads (``source`` as it is after the moves), or None."""
        target = link.target.strip()
        if not target:
            return None
        attachment = _has_extension(target) and not target.casefold().endswith(".md")
        name = target if attachment or target.casefold().endswith(".md") else target + ".md"
        found = self.candidates(key_of(name), attachment)
        if link.markdown:
            near = posixpath.normpath(posixpath.join(posixpath.dirname(source), name))
            exact = [p for p in found if p.casefold() == near.casefold()]
            if exact:
                return exact[0]
        suffix = "/" + name.lstrip("/").casefold()
        matching = [p for p in found if ("/" + p.casefold()).endswith(suffix)]
        if not matching:
            return None
        here = [p for p in matching if posixpath.dirname(p) == posixpath.dirname(source)]
        return here[0] if here else min(matching, key=lambda p: (p.count("/"), p))


def _all_files(root: os.PathLike[str] | str) -> list[str]:
    """Every file under ``memories/`` (attachments too), hidden names and links left out."""
    found = []
    top = os.path.join(root, MEMORIES_DIR)
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(folder, d))]
        for name in files:
            if not name.startswith(".") and not os.path.islink(os.path.join(folder, name)):
                found.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return found


def _body(engine: Any, rel: str) -> str | None:
    try:
        return str(engine.read(rel).body)
    except (DocumentError, FileTooLargeError, MemoryNotFoundError, PathError, OSError):
        return None


def outlinks(engine: Any, rel: str) -> list[Resolved]:
    """Every link of the memory at ``rel`` to another file, resolved (a broken one has ``path`` None)."""
    body = _body(engine, rel)
    if body is None:
        return []
    engine.catalog.catch_up()
    resolver = Resolver(engine)
    return [Resolved(rel, link, resolver.resolve(rel, link)) for link in links(body) if link.target.strip()]


def backlinks(engine: Any, rel: str) -> list[Resolved]:
    """Every link of another memory (or of this one) that leads to the file at ``rel``."""
    engine.catalog.catch_up()
    key = key_of(rel)
    resolver = Resolver(engine)
    found = []
    for source in engine.catalog.reader.linked("linkkey", key):
        body = _body(engine, source)
        if body is None:
            continue
        for link in links(body):
            if link.target.strip() and key_of(link.target) == key and resolver.resolve(source, link) == rel:
                found.append(Resolved(source, link, rel))
    return found


def broken(engine: Any, prefix: str = MEMORIES_DIR + "/") -> list[Resolved]:
    """Every link of the memories under ``prefix`` that leads to no file."""
    engine.catalog.catch_up()
    resolver = Resolver(engine)
    found = []
    for source in engine.catalog.reader.linked("haslinks", "1"):
        if not source.startswith(prefix):
            continue
        body = _body(engine, source)
        for link in links(body or ""):
            if link.target.strip() and resolver.resolve(source, link) is None:
                found.append(Resolved(source, link, None))
    return found


def rewrites(engine: Any, moves: Mapping[str, str]) -> dict[str, tuple[str, bytes, str]]:
    """The new text of every memory whose links a set of moves (vault path -> vault path) would break.

    Keyed by where each memory is after the moves: where it was, the bytes read there (a write
    expects them still) and its new text. A link keeps its form: a bare name stays as
    short as it can while it still leads to the moved file; a path or a Markdown link gets the
    new path. A moved note's own relative Markdown links are rewritten from its new folder.
    """
    engine.catalog.catch_up()
    before = Resolver(engine)
    after = Resolver(engine, moves)
    edits: dict[str, list[tuple[Link, str]]] = {}
    sources: set[str] = set(moves)
    for old in moves:
        sources.update(engine.catalog.reader.linked("linkkey", key_of(old)))
    for source in sorted(sources):
        body = _body(engine, source)
        if body is None:
            continue
        now = moves.get(source, source)
        for link in links(body):
            if not link.target.strip():
                continue
            was = before.resolve(source, link)
            if was is None:
                continue
            goal = moves.get(was, was)
            if after.resolve(now, link) == goal:
                continue
            edits.setdefault(source, []).append((link, _target_for(link, body, now, goal, after)))
    texts = {}
    for source, changes in edits.items():
        data = engine.read_bytes(source)
        text = data.decode("utf-8")
        offset = len(text) - len(loads(text, path=source).body)
        for link, target in sorted(changes, key=lambda c: -c[0].start):
            text = text[: offset + link.start] + target + text[offset + link.end :]
        texts[moves.get(source, source)] = (source, data, text)
    return texts


def _target_for(link: Link, body: str, source: str, goal: str, after: Resolver) -> str:
    """How ``link`` should now name ``goal`` so that it leads there from ``source``."""
    if link.markdown:
        rel = posixpath.relpath(goal, posixpath.dirname(source))
        written = body[link.start : link.end]
        angled = link.start > 0 and body[link.start - 1] == "<"
        return rel if angled or (written == link.target and " " not in rel) else quote(rel, safe="/")
    keep_md = link.target.casefold().endswith(".md")
    parts = goal.split("/")
    inner = parts[1:]  # below memories/
    want = max(1, len(link.target.strip("/").split("/")))
    for n in range(want, len(inner) + 1):
        words = "/".join(inner[-n:])
        if not keep_md and words.casefold().endswith(".md"):
            words = words[:-3]
        candidate = Link(words, link.heading, link.label, link.embed, False, 0, 0)
        if after.resolve(source, candidate) == goal:
            return words
    return "/".join(inner)[:-3] if not keep_md and goal.endswith(".md") else "/".join(inner)


#: The most notes ``follow_links`` brings along, whatever it is asked for.
MAX_FOLLOWED = 50


def followed(engine: Any, paths: Iterable[str], limit: int, *, keep: Any = None) -> list[tuple[str, str]]:
    """The notes the memories at ``paths`` link to, one hop: ``(note, the path linking to it)``.

    In the order of ``paths`` and of their links; each note once, none of ``paths`` themselves,
    memories only (not attachments), at most ``limit`` (and :data:`MAX_FOLLOWED`); ``keep`` (a
    predicate on a vault path) says which may come (a scope).
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise InvalidArgumentError(f"follow_links must be a non-negative integer, got {limit!r}")
    sources = list(dict.fromkeys(paths))
    found: list[tuple[str, str]] = []
    seen = set(sources)
    for source in sources:
        if len(found) >= min(limit, MAX_FOLLOWED):
            break
        for resolved in outlinks(engine, source):
            target = resolved.path
            if target is None or target in seen or not target.endswith(".md") or (keep and not keep(target)):
                continue
            seen.add(target)
            found.append((target, source))
            if len(found) >= min(limit, MAX_FOLLOWED):
                break
    return found
