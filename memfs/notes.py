"""What a note means beyond its front matter, the way Obsidian reads it: tags, aliases and links.

A note's **tags** are the union of its front-matter ``tags`` and the ``#tags`` written in its body
(outside code), each without its ``#``. Tags nest with ``/``: ``project/atlas`` is also under
``project``, so a filter on ``project`` finds it (:func:`tag_terms`, :func:`has_tag`). Tags match
without regard to case, as Obsidian matches them.

A note's **aliases** are its front-matter ``aliases`` (a list, or one string): other names it is
found by, searched like its title.

Everything here is pure text in, values out: the index, the store and the links table read notes
through it, so they agree on what a note says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from .documents import tags_of

# A tag starts after white space or at the start of a line, holds letters, digits, ``_``, ``-`` and
# ``/``, and at least one character that is not a digit (``#1`` is no tag, ``#y1984`` is).
_TAG = re.compile(r"(?<![^\s(\[{,;])#([\w/-]*[^\W\d][\w/-]*)")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def inline_tags(body: str) -> tuple[str, ...]:
    """The ``#tags`` written in a note's body, in order of first use, outside fenced and inline code."""
    found: dict[str, None] = {}
    for line, _, fenced in _lines(body):
        if fenced or "#" not in line:
            continue
        for match in _TAG.finditer(_INLINE_CODE.sub(" ", line)):
            tag = match.group(1).strip("/")
            if tag:
                found.setdefault(tag, None)
    return tuple(found)


def note_tags(metadata: Mapping[str, Any], body: str) -> tuple[str, ...]:
    """A note's tags: its front-matter ``tags`` (a leading ``#`` dropped), then its inline ones, each once."""
    tags: dict[str, None] = {}
    seen: set[str] = set()
    for tag in (*(t.strip().lstrip("#") for t in tags_of(metadata.get("tags"))), *inline_tags(body)):
        if tag and tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.setdefault(tag, None)
    return tuple(tags)


def tag_terms(tags: Iterable[str]) -> list[str]:
    """Each tag and every tag it nests under, casefolded: ``project/atlas`` gives ``project``, ``project/atlas``."""
    terms: dict[str, None] = {}
    for tag in tags:
        parts = [p for p in normalize_tag(tag).split("/") if p]
        for n in range(1, len(parts) + 1):
            terms.setdefault("/".join(parts[:n]), None)
    return list(terms)


def normalize_tag(tag: str) -> str:
    """A tag as filters compare it: no ``#``, no surrounding ``/`` or spaces, casefolded."""
    return tag.strip().lstrip("#").strip("/").casefold()


def has_tag(tags: Iterable[str], wanted: str) -> bool:
    """Whether ``wanted`` is one of ``tags`` or a tag one of them nests under (``project`` for ``project/atlas``)."""
    return normalize_tag(wanted) in tag_terms(tags)


def aliases_of(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """A note's front-matter ``aliases`` (or ``alias``): a YAML list, or one string."""
    value = metadata.get("aliases", metadata.get("alias"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(str(a).strip() for a in value if isinstance(a, (str, int, float)) and str(a).strip())


@dataclass(frozen=True)
class Link:
    """One link in a note's body, as written.

    Attributes:
        target: What it points at, as written (``Atlas Plan``, ``Projects/Atlas Plan``,
            ``photo.png``; a Markdown link's target percent-decoded: ``../Kyoto Trip: March.md``).
            Empty for a link to a heading of the same note (``[[#Goals]]``).
        heading: The heading or block after ``#`` (``Goals``, ``^block``), or None.
        label: The text shown (``[[Note|label]]``, ``[label](Note.md)``), or None.
        embed: ``![[...]]`` or ``![...](...)``: the target is shown inside the note.
        markdown: A Markdown link (``[label](target)``) rather than a wikilink.
        start: Where the target starts in the body (characters), for rewriting it.
        end: Where the target ends (the heading and label excluded).
    """

    target: str
    heading: str | None
    label: str | None
    embed: bool
    markdown: bool
    start: int
    end: int


_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|#^\n]*)(?:([#^][^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_MDLINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(<[^>\n]+>|[^)\s]+)(?:\s+\"[^\"\n]*\")?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def links(body: str) -> list[Link]:
    """Every link of a note's body to a file (wikilinks, embeds, Markdown links), in order, outside code.

    Markdown links to web addresses (anything with a scheme: ``https:``, ``mailto:``) or to a
    heading of the same note (``#part``) are not links to a file and are left out.
    """
    found: list[Link] = []
    for line, start, fenced in _lines(body):
        if fenced or "[" not in line:
            continue
        blank = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for m in _WIKILINK.finditer(blank):
            target = m.group(2).strip()
            heading = m.group(3)[1:].strip() if m.group(3) and m.group(3)[0] == "#" else m.group(3)
            found.append(
                Link(
                    target,
                    heading or None,
                    m.group(4),
                    bool(m.group(1)),
                    False,
                    start + m.start(2),
                    start + m.start(2) + len(m.group(2).rstrip()),
                )
            )
        for m in _MDLINK.finditer(blank):
            raw = m.group(3)
            inner = raw[1:-1] if raw.startswith("<") else raw
            if _SCHEME.match(inner) or inner.startswith("#"):
                continue
            path, _, heading = inner.partition("#")
            first = start + m.start(3) + (1 if raw.startswith("<") else 0)
            found.append(
                Link(
                    unquote(path),
                    unquote(heading) or None,
                    m.group(2) or None,
                    bool(m.group(1)),
                    True,
                    first,
                    first + len(path),
                )
            )
    return sorted(found, key=lambda link: link.start)


def _lines(body: str) -> Iterator[tuple[str, int, bool]]:
    """Each line of ``body`` with where it starts and whether it is inside fenced code."""
    fence: str | None = None
    at = 0
    for line in body.splitlines(keepends=True):
        opened = _FENCE.match(line)
        inside = fence is not None
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence, inside = opened.group(1), True
        yield line, at, inside
        at += len(line)
