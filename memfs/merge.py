"""Three-way merges of vault files by what they mean, not by their lines.

A sync brings two histories of one vault together. For each file both changed since their
common ancestor, :func:`merge_file` decides what the merged vault holds:

- a **memory** merges key by key in its front matter (different keys changed on both sides are
  both kept; ``updated`` takes the later time; ``tags`` merge as sets; one key changed to two
  values is a conflict) and three-way by lines in its body (changes that do not touch the same
  or adjacent lines merge, as ``git merge-file`` merges them);
- a **transcript** merges as a union of entries: the entries both sides appended after the
  ancestor, once each, in time order, renumbered, with the positions that window, summary and
  truncate entries name moved along;
- an edit on one side and a deletion on the other keeps the edit.

Nothing here writes a conflict marker: a true conflict returns ``conflict=True`` with the local
version as the result, and the caller keeps the other side's bytes as a conflict copy.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import transcript
from .documents import Document, dumps, load_bytes, normalize_time, tags_of
from .errors import DocumentError

#: Front-matter keys whose values are positions of a transcript's entries (moved by a renumbering).
_POSITION_KEYS = ("start", "position")


@dataclass(frozen=True)
class Merged:
    """What a three-way merge of one file gives.

    Attributes:
        data: The merged bytes (None: the file is deleted). On a conflict, the local bytes.
        conflict: True when both sides changed the same thing differently; the caller keeps the
            other side's bytes as a conflict copy.
        note: A short sentence for the sync report when the merge decided something a person
            may want to know (an edit kept over a deletion, a conflict), else "".
    """

    data: bytes | None
    conflict: bool = False
    note: str = ""


def merge_file(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None) -> Merged:
    """Merge the versions of the vault file ``path``: at the common ancestor, here, and on the other side."""
    if ours == theirs:
        return Merged(ours)
    if base == ours:
        return Merged(theirs)
    if base == theirs:
        return Merged(ours)
    if ours is None:
        return Merged(theirs, note=f"{path}: deleted here, edited there; the edit is kept")
    if theirs is None:
        return Merged(ours, note=f"{path}: edited here, deleted there; the edit is kept")
    if not path.endswith(".md"):  # an attachment: bytes, nothing to merge by meaning
        return Merged(ours, conflict=True, note=f"{path}: changed on both sides")
    if path.startswith("sessions/"):
        merged = merge_transcripts(base, ours, theirs)
    else:
        merged = merge_memories(base, ours, theirs)
    if merged is None:
        return Merged(ours, conflict=True, note=f"{path}: changed on both sides in the same place")
    return Merged(merged)


# -- memories ------------------------------------------------------------------------------


def merge_memories(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """A memory merged key by key and line by line, or None on a conflict."""
    try:
        docs = [load_bytes(data) if data is not None else Document() for data in (base, ours, theirs)]
    except DocumentError:
        return _merge_text(base, ours, theirs)
    old, mine, other = docs
    if mine.has_front_matter != other.has_front_matter:
        return _merge_text(base, ours, theirs)
    metadata = merge_front_matter(old.metadata, mine.metadata, other.metadata)
    body = merge_lines(old.body, mine.body, other.body)
    if metadata is None or body is None:
        return None
    changes = {k: v for k, v in metadata.items() if k not in mine.metadata or mine.metadata[k] != v}
    removed = [k for k in mine.metadata if k not in metadata]
    result = (
        mine.with_metadata(changes, remove=removed).with_body(body) if mine.has_front_matter else mine.with_body(body)
    )
    return dumps(result).encode("utf-8")


def merge_front_matter(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any] | None:
    """Front matter merged key by key against the ancestor; None when one key took two values.

    The order is ours, then keys only the other side added, in its order.
    """
    merged: dict[str, Any] = {}
    missing = object()
    for key in [*ours, *(k for k in theirs if k not in ours), *(k for k in base if k not in ours and k not in theirs)]:
        b, o, t = base.get(key, missing), ours.get(key, missing), theirs.get(key, missing)
        if o == t or b == t:
            value = o
        elif b == o:
            value = t
        elif key == "updated" and o is not missing and t is not missing:
            value = _later(o, t)
        elif key == "tags" and o is not missing and t is not missing:
            value = _merge_tags(b, o, t)
        else:
            return None
        if value is not missing:
            merged[key] = value
    return merged


def _later(ours: Any, theirs: Any) -> Any:
    a, b = normalize_time(ours), normalize_time(theirs)
    if a is None or b is None:
        return ours if b is None else theirs
    return theirs if b > a else ours


def _merge_tags(base: Any, ours: Any, theirs: Any) -> list[str]:
    """Tags as sets: what either side added, less what either side removed, in a stable order."""
    old = set(tags_of(base)) if isinstance(base, (str, list)) else set()
    mine, other = tags_of(ours), tags_of(theirs)
    removed = (old - set(mine)) | (old - set(other))
    return [t for t in dict.fromkeys([*mine, *other]) if t not in removed]


def _merge_text(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    try:
        texts = [data.decode("utf-8") if data is not None else "" for data in (base, ours, theirs)]
    except UnicodeDecodeError:
        return None
    merged = merge_lines(*texts)
    return None if merged is None else merged.encode("utf-8")


def merge_lines(base: str, ours: str, theirs: str) -> str | None:
    """A three-way merge of texts by lines (``git merge-file`` semantics); None on a conflict.

    The texts are cut into runs between lines all three share (in order); a run changed on one
    side only takes that side; a run changed the same way on both takes it once; a run changed
    differently on both (which includes changes to adjacent lines) is a conflict.
    """
    if ours == theirs or base == theirs:
        return ours
    if base == ours:
        return theirs
    old, mine, other = (text.splitlines(keepends=True) for text in (base, ours, theirs))
    in_mine, in_other = _matches(old, mine), _matches(old, other)
    out: list[str] = []
    i = a = b = 0
    for k in [*(k for k in range(len(old)) if k in in_mine and k in in_other), None]:
        stop_old = len(old) if k is None else k
        stop_a = len(mine) if k is None else in_mine[k]
        stop_b = len(other) if k is None else in_other[k]
        run = _resolve(old[i:stop_old], mine[a:stop_a], other[b:stop_b])
        if run is None:
            return None
        out += run
        if k is not None:
            out.append(old[k])
            i, a, b = k + 1, in_mine[k] + 1, in_other[k] + 1
    return "".join(out)


def _matches(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """Line ``i`` of ``old`` -> the line of ``new`` it stayed as (an increasing matching)."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return {block.a + d: block.b + d for block in matcher.get_matching_blocks() for d in range(block.size)}


def _resolve(base: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    if ours == theirs or base == theirs:
        return ours
    if base == ours:
        return theirs
    return None


# -- transcripts ---------------------------------------------------------------------------


def merge_transcripts(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """The union of two transcripts' entries since their ancestor, or None when they cannot be joined.

    Both sides must still hold the ancestor's entries as their start (a side that popped or
    cleared entries, or a hand edit of an old message, makes the merge a conflict: the caller
    keeps both versions). An entry is the same on both sides when its kind, time, item and
    manager data are: entries a third machine appended and both sides already took in count once.
    """
    try:
        old = transcript.parse(base) if base is not None else None
        mine, other = transcript.parse(ours), transcript.parse(theirs)
    except DocumentError:
        return None
    if mine.problems or other.problems or (old is not None and old.problems):
        return None
    start = old.entries if old is not None else []
    keys_start = [_identity(e) for e in start]
    if [_identity(e) for e in mine.entries[: len(start)]] != keys_start:
        return None
    if [_identity(e) for e in other.entries[: len(start)]] != keys_start:
        return None
    head = _merge_heads(base, ours, theirs, old, mine, other)
    if head is None:
        return None
    new_mine, new_other = mine.entries[len(start) :], other.entries[len(start) :]
    seen = Counter(_identity(e) for e in new_mine)
    taken: list[tuple[str, transcript.Entry]] = []
    renumber: dict[str, dict[int, int]] = {"ours": {}, "theirs": {}}
    duplicates: list[tuple[transcript.Entry, str]] = []
    for entry in new_other:
        key = _identity(entry)
        if seen[key]:
            seen[key] -= 1
            duplicates.append((entry, key))
        else:
            taken.append(("theirs", entry))
    ordered = _by_time([("ours", e) for e in new_mine], taken)
    position = len(start)
    for side, entry in ordered:
        position += 1
        renumber[side][entry.n] = position
    by_key = {_identity(e): renumber["ours"][e.n] for e in new_mine}
    for entry, key in duplicates:
        renumber["theirs"][entry.n] = by_key[key]
    cut = mine.entries[len(start)].offset if new_mine else len(ours)
    kept = ours[mine.body_offset : cut]
    rendered = [
        transcript.render_entry(
            entry.item, renumber[side][entry.n], entry.time, kind=entry.kind, meta=_moved(entry.meta, renumber[side])
        )
        for side, entry in ordered
    ]
    spacer = transcript.separator(head + kept) if rendered else b""
    return head + kept + spacer + b"".join(rendered)


def _identity(entry: transcript.Entry) -> str:
    meta = {k: v for k, v in entry.meta.items() if k not in (*_POSITION_KEYS, "range")}
    return json.dumps([entry.kind, entry.time, entry.item, meta], sort_keys=True, ensure_ascii=False)


def _by_time(
    ours: list[tuple[str, transcript.Entry]], theirs: list[tuple[str, transcript.Entry]]
) -> list[tuple[str, transcript.Entry]]:
    """Both lists (each in its own order) merged by time; on a tie or an untimed entry, ours first."""
    out: list[tuple[str, transcript.Entry]] = []
    i = j = 0
    while i < len(ours) or j < len(theirs):
        if j >= len(theirs):
            out.append(ours[i])
            i += 1
        elif i >= len(ours):
            out.append(theirs[j])
            j += 1
        else:
            a, b = ours[i][1].time, theirs[j][1].time
            if a is None or b is None or a <= b:
                out.append(ours[i])
                i += 1
            else:
                out.append(theirs[j])
                j += 1
    return out


def _moved(meta: dict[str, Any], renumber: dict[int, int]) -> dict[str, Any]:
    """A manager entry's positions moved to the merged numbering (the ancestor's stay as they were)."""
    moved = dict(meta)
    for key in _POSITION_KEYS:
        if isinstance(moved.get(key), int):
            moved[key] = renumber.get(moved[key], moved[key])
    span = moved.get("range")
    if isinstance(span, list) and all(isinstance(n, int) for n in span):
        moved["range"] = [renumber.get(n, n) for n in span]
    return moved


def _merge_heads(
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    old: transcript.Parsed | None,
    mine: transcript.Parsed,
    other: transcript.Parsed,
) -> bytes | None:
    """The transcript's front matter: one side's when only it changed, else merged key by key."""
    head_b = base[: old.body_offset] if base is not None and old is not None else None
    head_o, head_t = ours[: mine.body_offset], theirs[: other.body_offset]
    if head_o == head_t or head_b == head_t:
        return head_o
    if head_b == head_o:
        return head_t
    metadata = merge_front_matter(old.metadata if old else {}, mine.metadata, other.metadata)
    if metadata is None:
        return None
    doc = load_bytes(head_o)
    changes = {k: v for k, v in metadata.items() if doc.metadata.get(k) != v}
    return dumps(doc.with_metadata(changes)).encode("utf-8")
