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
from collections.abc import Iterable, Mapping
from typing import Any

from .documents import tags_of

# A tag starts after white space or at the start of a line, holds letters, digits, ``_``, ``-`` and
# ``/``, and at least one character that is not a digit (``#1`` is no tag, ``#y1984`` is).
_TAG = re.compile(r"(?<![^\s(\[{,;])#([\w/-]*[^\W\d][\w/-]*)")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def inline_tags(body: str) -> tuple[str, ...]:
    """The ``#tags`` written in a note's body, in order of first use, outside fenced and inline code."""
    found: dict[str, None] = {}
    fence: str | None = None
    for line in body.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        if "#" not in line:
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
