"""Transcript files: a conversation as Markdown a person can read, losslessly.

A transcript is front matter (``memfs: transcript/1``, the session id, keys) and then one entry
per item, appended in order::

    ## user · 2026-11-22T10:00:01Z <!-- memfs:entry {"n": 1, "len": 33, "at": ["content"], ...} -->
    Hi, I'm planning a trip to Japan.

The heading line carries the machine-readable part in an HTML comment (invisible in rendered
Markdown): the position ``n``, the time, the byte length of the body, and the item without its
text. When an item has one text (a chat message, a one-part Responses or Anthropic message, a
Strands text block), that text is the body, as Markdown; any other item is the body as a fenced
JSON block. The byte length makes parsing exact whatever the text contains (lines that look like
headings, markers, fences); when a person edits a message and the length no longer matches, the
body runs to the next heading instead, so the edit is what the agent reads next time.

Appending writes only the new entries; removing the last entry truncates the file; reading the
last N entries reads the file from the end. A writer killed in the middle of an append leaves the
start of an entry after the last complete one (a *torn tail*): :func:`classify_tail` and
:func:`partial_heading` tell it from a person's edit, and readers never take an incomplete
heading at the very end for text of the message before it. The format is specified in
docs/format.md.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .documents import Document, dumps, loads
from .errors import DocumentError
from .items import text_path

log = logging.getLogger(__name__)

FORMAT = "transcript/1"
_HEADER = re.compile(rb"^## [^\n]*?<!-- memfs:entry (\{[^\n]*\}) -->[ \t]*\r?\n", re.MULTILINE)
# Any line that starts like an entry's heading, well formed or not: where an entry begins.
_BOUNDARY = re.compile(rb"^## [^\n]*?<!-- memfs:entry\b[^\n]*(?:\n|\Z)", re.MULTILINE)
_LEN = re.compile(rb'"len": ?(\d{1,12})\b')
_LABEL_UNSAFE = re.compile(r"[^\w .:/@-]+")
# The start of a heading memfs writes (``## label · 2026-...``), cut short anywhere before its line
# ended: ``#``, ``## ``, ``## assis`` (one word, the label), ``## user \xc2`` (inside its ``·``), or
# anything once the ``·`` or the marker's ``<`` is there; the entry before it keeps its exact bytes.
# A person's heading of several words (``## My notes``) is theirs.
_PARTIAL_HEADING = re.compile(rb"(?:##? ?|## [^\s<]{1,64}(?: \xc2?)?|## [^\n]{0,120}? (?:\xc2\xb7|<)[^\n]*)\Z")
_KIND = b'"kind": '


@dataclass(frozen=True)
class Entry:
    """One entry of a transcript: its position, time, the item, and where it sits in the file.

    Attributes:
        n: The 1-based position in the conversation.
        item: The stored item (a JSON-style mapping).
        time: When it was appended (ISO 8601), if recorded.
        kind: ``item`` for conversation items; other kinds (``summary``) are memfs's own.
        meta: Extra machine-readable fields of the entry (a summary's range, ...).
        offset: The byte offset of the entry's heading in the file.
    """

    n: int
    item: dict[str, Any]
    time: str | None = None
    kind: str = "item"
    meta: dict[str, Any] = field(default_factory=dict)
    offset: int = 0


@dataclass(frozen=True)
class BrokenEntry:
    """A part of a transcript that could not be read (a hand edit broke an entry)."""

    offset: int
    reason: str


@dataclass
class Parsed:
    """A parsed transcript: its front matter, entries and problems."""

    metadata: dict[str, Any]
    entries: list[Entry]
    problems: list[BrokenEntry]
    body_offset: int


# -- rendering -------------------------------------------------------------------------


def render_entry(
    item: Mapping[str, Any],
    n: int,
    time: str | None = None,
    *,
    kind: str = "item",
    meta: Mapping[str, Any] | None = None,
) -> bytes:
    """The bytes of one entry: heading line, body, blank line."""
    if not isinstance(item, Mapping):
        raise TypeError(f"a transcript item must be a mapping, got {type(item).__name__}")
    record: dict[str, Any] = {"n": n}
    if time:
        record["t"] = time
    if kind != "item":
        record["kind"] = kind
    if meta:
        record["meta"] = dict(meta)
    path = text_path(item)
    if path is not None:
        shell = json.loads(json.dumps(item))
        target = shell
        for step in path[:-1]:
            target = target[step]
        body = target[path[-1]]
        target[path[-1]] = None
        record["at"] = path
        record["item"] = shell
    else:
        text = json.dumps(item, ensure_ascii=False, indent=2)
        fence = "`" * max(3, _longest_run(text, "`") + 1)
        body = f"{fence}json memfs:item\n{text}\n{fence}"
    data = body.encode("utf-8")
    record["len"] = len(data)
    label = _label(item, kind)
    comment = json.dumps(record, ensure_ascii=False, separators=(", ", ": ")).replace(">", "\\u003e")
    heading = f"## {label}" + (f" · {time}" if time else "") + f" <!-- memfs:entry {comment} -->\n"
    return bytes(heading.encode("utf-8") + data + b"\n\n")


def render(
    items: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Any] | None = None,
    *,
    start: int = 1,
    times: Sequence[str | None] | None = None,
) -> str:
    """A whole transcript: front matter and every item."""
    head = new_head(metadata or {})
    body = b"".join(render_entry(item, start + i, times[i] if times else None) for i, item in enumerate(items))
    return head + body.decode("utf-8")


def new_head(metadata: Mapping[str, Any]) -> str:
    """The front matter and the blank line that start a transcript file."""
    return dumps(Document.new({"memfs": FORMAT, **metadata}, "")) + "\n"


def _label(item: Mapping[str, Any], kind: str) -> str:
    if kind != "item":
        label = kind
    else:
        role, kind_name = item.get("role"), item.get("type")
        label = str(role or kind_name or "item")
        if role and kind_name and kind_name != "message":
            label += f" {kind_name}"
        if isinstance(item.get("name"), str):
            label += f" {item['name']}"
    return _LABEL_UNSAFE.sub(" ", label).strip()[:80] or "item"


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(f"{re.escape(char)}+", text)
    return max((len(r) for r in runs), default=0)


# -- parsing -----------------------------------------------------------------------------


def parse(text: str | bytes, *, path: str | None = None, last: int | None = None) -> Parsed:
    """Parse a transcript. Entries that a hand edit broke are reported in ``problems`` and skipped.

    With ``last``, only the last ``last`` entries are parsed: they are found by a byte search for
    their headings, so a transcript of 100,000 entries costs about what one of ``last`` does.

    Raises:
        DocumentError: The front matter is missing or not a transcript's.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    first = _BOUNDARY.search(data)
    head_end = first.start() if first else len(data)
    try:
        doc = loads(data[:head_end].decode("utf-8"), path=path)
    except UnicodeDecodeError as exc:
        raise DocumentError(path, f"not valid UTF-8 at byte {exc.start}") from exc
    if doc.metadata.get("memfs") != FORMAT:
        raise DocumentError(path, f"not a memfs transcript (front matter `memfs: {FORMAT}` missing)")
    entries, problems = parse_entries(data, head_end if last is None else _tail_start(data, last, head_end))
    return Parsed(doc.metadata, entries, problems, head_end)


def _tail_start(data: bytes, count: int, start: int) -> int:
    """Where the last ``count`` entry headings after ``start`` begin (``start`` if there are fewer).

    Looked for from the end, line start by line start, so the cost is the tail's, not the file's
    (scanning from ``start`` costs a quarter of a second per 16 MiB message before the tail).
    """
    found, end = 0, len(data)  # a heading begins at end + 1 once found
    while found < count:
        newline = data.rfind(b"\n## ", max(start - 1, 0), end)
        if newline < 0:  # only the very first byte is left to begin a line
            if start == 0 and end > 0 and _BOUNDARY.match(data, 0):
                found, end = found + 1, -1
            break
        end = newline  # no later heading straddles it: the bytes after this newline are "## "
        if _BOUNDARY.match(data, newline + 1):
            found += 1
    return end + 1 if count > 0 and found == count else start


def parse_entries(data: bytes, start: int = 0) -> tuple[list[Entry], list[BrokenEntry]]:
    """The entries in ``data`` from ``start`` (which must be at a heading or before the first).

    An entry whose heading a hand edit broke (its comment lost a brace, its JSON is invalid, it
    no longer closes) is reported in the problems and skipped, body and all; the entries around
    it keep their own bodies.
    """
    entries: list[Entry] = []
    problems: list[BrokenEntry] = []
    boundary = _BOUNDARY.search(data, start)
    while boundary is not None:
        match = _HEADER.match(data, boundary.start())
        if match is None:
            problems.append(
                BrokenEntry(
                    boundary.start(),
                    "broken entry heading (its memfs:entry comment does not read as written); the entry is skipped",
                )
            )
            boundary = _skip_broken(data, boundary)
            continue
        body_start = match.end()
        try:
            record = json.loads(match.group(1).decode("utf-8"))
            length = record.get("len")
        except (ValueError, UnicodeDecodeError, AttributeError) as exc:
            problems.append(BrokenEntry(match.start(), f"unreadable entry marker: {exc}"))
            boundary = _skip_broken(data, match)
            continue
        end = body_start + length if isinstance(length, int) and length >= 0 else -1
        after = end + 2
        torn = end >= 0 and (_partial_at(data, after) or _unended_heading_at(data, after))
        if end >= 0 and data[end:after] == b"\n\n" and (after >= len(data) or torn or _BOUNDARY.match(data, after)):
            body, following = data[body_start:end], (_BOUNDARY.match(data, after) if after < len(data) else None)
            if torn:  # a heading cut short at the very end: an interrupted append, not a broken entry
                problems.append(BrokenEntry(after, "an incomplete entry at the end (an append was interrupted)"))
                following = None
        else:  # edited by hand: the body runs to the next heading
            following = _BOUNDARY.search(data, body_start)
            stop = following.start() if following else len(data)
            body = data[body_start:stop]
            body = body[:-2] if body.endswith(b"\n\n") else body.rstrip(b"\n")
        try:
            entries.append(_entry(record, body.decode("utf-8"), match.start()))
        except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError) as exc:
            problems.append(BrokenEntry(match.start(), f"entry {record.get('n', '?')} is unreadable: {exc}"))
        boundary = following
    return entries, problems


def _skip_broken(data: bytes, heading: re.Match[bytes]) -> re.Match[bytes] | None:
    """The heading after a broken one: where its ``len`` (if still readable) ends, else the next one."""
    found = _LEN.search(data, heading.start(), heading.end())
    if found is not None:
        after = heading.end() + int(found.group(1)) + 2
        if data[after - 2 : after] == b"\n\n":
            if after >= len(data):
                return None
            landed = _BOUNDARY.match(data, after)
            if landed is not None:
                return landed
    return _BOUNDARY.search(data, heading.end())


def _entry(record: dict[str, Any], body: str, offset: int) -> Entry:
    if "item" in record:
        item = record["item"]
        target = item
        path = record["at"]
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = body
    else:
        lines = body.split("\n")
        if len(lines) < 2 or not lines[0].startswith("```") or lines[-1] != lines[0].split("json")[0]:
            raise ValueError("its JSON block is not fenced as written")
        item = json.loads("\n".join(lines[1:-1]))
    if not isinstance(item, dict):
        raise ValueError("the item is not a JSON object")
    n = record["n"]
    if not isinstance(n, int):
        raise ValueError("its position is not a number")
    return Entry(n, item, record.get("t"), record.get("kind", "item"), record.get("meta") or {}, offset)


def items(text: str | bytes) -> list[dict[str, Any]]:
    """The conversation items of a transcript, in order (for ``parse(render(x)) == x``)."""
    return [e.item for e in parse(text).entries if e.kind == "item"]


# -- reading from the end ------------------------------------------------------------------


def read_tail(fd: int, count: int | None, *, chunk: int = 16_384) -> tuple[list[Entry], list[BrokenEntry], int]:
    """The last ``count`` entries of an open transcript (all with None), reading from the end.

    Returns the entries, problems, and the file offset where the returned entries start.
    """
    size = os.fstat(fd).st_size
    if count is None:
        data = os.pread(fd, size, 0)
        first = _BOUNDARY.search(data)
        start = first.start() if first else size
        entries, problems = parse_entries(data, start)
        return entries, problems, start
    window = min(size, chunk)
    while window < size:
        data = os.pread(fd, window, size - window)
        base = size - window
        for candidate in _HEADER.finditer(data):  # a heading inside a message's text fails the check
            chain = _strict_chain(data, candidate.start())
            if chain is None:
                continue
            if len(chain) >= count:  # later candidates only give shorter chains: one success decides
                chosen = chain[-count:] if count else []
                shifted = [Entry(e.n, e.item, e.time, e.kind, e.meta, e.offset + base) for e in chosen]
                return shifted, [], shifted[0].offset if shifted else size
            break
        window = min(size, window * 4)
    entries, problems, start = read_tail(fd, None)
    chosen = entries[-count:] if count else []
    return chosen, problems, chosen[0].offset if chosen else size


def _strict_chain(data: bytes, start: int) -> list[Entry] | None:
    """Entries from ``start`` to the end if every length lands on the next heading, else None."""
    entries: list[Entry] = []
    pos = start
    while pos < len(data):
        match = _HEADER.match(data, pos)
        if match is None:
            return entries if entries and _partial_at(data, pos) else None
        try:
            record = json.loads(match.group(1).decode("utf-8"))
            end = match.end() + record["len"]
            if data[end : end + 2] != b"\n\n" or (entries and record["n"] != entries[-1].n + 1):
                return None
            entries.append(_entry(record, data[match.end() : end].decode("utf-8"), pos))
        except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError):
            return None
        pos = end + 2
    return entries


# -- torn tails ------------------------------------------------------------------------------


def _partial_at(data: bytes, pos: int) -> bool:
    """True if ``data`` ends, from ``pos`` (a line start), with a memfs heading line cut short."""
    return 0 < pos < len(data) and data[pos - 1] == 0x0A and _PARTIAL_HEADING.fullmatch(data, pos) is not None


def _unended_heading_at(data: bytes, pos: int) -> bool:
    """True if ``data`` ends, from ``pos`` (a line start), with a line that starts like a heading and never ends.

    Read after an entry whose length lands exactly before it: the entry is memfs's, whole, and
    keeps its exact bytes; the line (a heading cut short, ``## assistant functio``) is no part of it.
    """
    return 0 < pos < len(data) and data[pos - 1] == 0x0A and data.startswith(b"#", pos) and b"\n" not in data[pos:]


def partial_heading(data: bytes) -> int | None:
    """The offset of a memfs heading line cut short at the very end of ``data`` (no line end), or None.

    Such a line (``## user · 2026-11-23T10:00:01Z <!-- memfs:en``) is what a writer killed while
    writing a heading leaves; a person's text rarely ends with one. ``data`` may be the file's
    last few KB.
    """
    start = data.rfind(b"\n") + 1
    return start if _partial_at(data, start) else None


def classify_tail(data: bytes) -> str:
    """What the bytes that follow the end of memfs's last complete write are.

    ``"complete"``: nothing, or whole entries, each as long as it says (a writer killed after its
    write but before it recorded it). ``"torn"``: whole entries, then the start of one that ends
    early: a heading line without its end, or a heading and less body than its ``len`` (a writer
    killed in the middle of an append, or a short write that was not undone). ``"edit"``: anything
    else, such as a person's text.
    """
    pos = 0
    while pos < len(data):
        match = _HEADER.match(data, pos)
        if match is None:
            rest = data[pos:]
            return "torn" if b"\n" not in rest and (rest.startswith(b"## ") or b"## ".startswith(rest)) else "edit"
        try:
            length = json.loads(match.group(1).decode("utf-8"))["len"]
        except (ValueError, UnicodeDecodeError, KeyError, TypeError):
            return "edit"
        if not isinstance(length, int) or length < 0:
            return "edit"
        end = match.end() + length
        if end + 2 > len(data):
            return "torn"
        if data[end : end + 2] != b"\n\n":
            return "edit"
        pos = end + 2
    return "complete"


def separator(last: bytes) -> bytes:
    """What must precede new entries at the end of a file whose last bytes are ``last``.

    memfs ends every entry with a blank line; a file a person saved without it gets one, so the next
    heading starts a line of its own and is never glued into the text before it (which reads the
    same: a body that runs to the next heading loses its final line ends).
    """
    if not last or last.endswith(b"\n\n"):
        return b""
    return b"\n" if last.endswith(b"\n") else b"\n\n"


def kinds_before(fd: int, end: int, *, chunk: int = 1 << 20) -> bool:
    """True if the bytes of the open file before ``end`` may hold an entry of memfs's own kinds.

    A byte search for ``"kind": `` from ``end`` back to the start of the file, without parsing:
    items that hold such a key make it answer True when it need not, never the other way round.
    """
    pos = end
    while pos > 0:
        start = max(0, pos - chunk)
        if _KIND in os.pread(fd, min(end, pos + len(_KIND) - 1) - start, start):
            return True
        pos = start
    return False


def body_offset(data: bytes) -> int:
    """Where the entries of a transcript start (its length if it has none)."""
    first = _HEADER.search(data)
    return first.start() if first else len(data)
