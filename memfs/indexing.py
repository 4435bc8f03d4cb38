"""What a file becomes in the index: a memory's fields, a transcript's messages, a file skipped.

A memory is one document (its title, body, tags, aliases, link keys, validity, the stat and
sha256 of the bytes it was built from). A transcript is one document per message, holding its
neighbours' words, weaker (:func:`_message_terms`), and one for the file, whose digests of the
file's prefix at its last entries let an append or a pop re-read only what changed. A malformed
file, or one larger than memfs reads, is a document of its own that search masks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import _fs, transcript
from .analysis import ANALYZER, WEIGHT_SCALE
from .dates import date_words, written_date
from .documents import Document, load_bytes, normalize_time, timestamp
from .errors import DocumentError, FileTooLargeError, LinkError, ValidityError
from .items import text_of
from .layout import is_transcript, split_memory_path
from .lifecycle import check, validity
from .links import key_of, link_keys
from .notes import aliases_of, note_tags, tag_terms
from .results import Problem, SyncReport

log = logging.getLogger(__name__)

MAX_INDEXED_BYTES = 4 * 1024 * 1024  # a memory file larger than this is neither read nor indexed
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024  # a transcript larger than this is neither read nor indexed
MAX_INDEXED_ENTRIES = 5_000  # message search covers the last this many entries of a transcript

# A message is indexed with the words of the messages around it, weaker, because a question
# often repeats the words of the turn before its answer ("How long have you been doing yoga?" /
# "Three years now"): its own words weigh 1, its neighbours' 1/2, those two away 1/4. That is a
# rule for short turns. A long message says what it is about by itself, and a long neighbour
# would swamp a short one (a user's line between two assistant replies of a page each), so a
# neighbour's weight also falls with the message's own length (whole up to CONTEXT_FULL_TERMS
# terms, nothing from CONTEXT_ALONE_TERMS on) and no neighbour brings more words than the message
# has (at least CONTEXT_FULL_TERMS): see _context_share. docs/benchmarks.md has the measurements.
CONTEXT_WEIGHTS = (1.0, 0.5, 0.25)
CONTEXT_FULL_TERMS = 32  # a message of at most this many terms takes its neighbours' words whole ...
CONTEXT_ALONE_TERMS = 64  # ... and one of this many stands alone (in between, linearly less)
DATE_WEIGHT = 0.25  # the words of the session's date ("8 May 2023") weigh like a turn two away


class Indexer:
    """Files into index documents, written through a Whoosh writer (or anything with its three methods).

    Args:
        root: The vault folder (files are read through its path gate).
        stored: The stored fields of the index's document for a vault path, or None (a
            transcript's own entry: where indexing its messages can resume).
    """

    def __init__(self, root: Path, stored: Callable[[str], dict[str, Any] | None]) -> None:
        self.root = root
        self._stored = stored

    def index_file(
        self, writer: Any, rel: str, st: tuple[int, int], known: dict[str, tuple[Any, ...]], report: SyncReport
    ) -> None:
        """Index the file at ``rel`` (its stat ``st``) into ``writer``, ``known`` being what the index held."""
        limit = MAX_TRANSCRIPT_BYTES if is_transcript(rel) else MAX_INDEXED_BYTES
        try:  # through the path gate (a link swapped in is not read); the size checked before a byte is read
            found = _fs.read_vault_file(self.root, rel, limit=limit)
        except FileTooLargeError as exc:
            self._index_too_large(writer, rel, st, exc, known, report)
            return
        except (OSError, LinkError) as exc:
            log.warning("cannot read %s: %s", rel, exc)
            return
        if found is None:  # gone (or replaced by a link) since the walk: the next sync removes it
            return
        data = found[0]
        sha = hashlib.sha256(data).hexdigest()
        if is_transcript(rel):
            self.index_transcript(writer, rel, st, data, sha, known.get(rel), report)
            return
        if known.get(rel, (None, None, None))[2] != sha:  # a touched file is not reported
            (report.updated if rel in known else report.added).append(rel)
        try:
            doc = load_bytes(data, path=rel)
        except DocumentError as exc:
            log.warning("skipping malformed file: %s", exc)
            report.problems.append(Problem(rel, exc.reason))
            writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], sha), error=exc.reason)
            return
        # add_document when the path was never indexed: update_document would search for it first
        (writer.update_document if rel in known else writer.add_document)(**self._fields(rel, doc, st, sha))

    def _index_too_large(
        self,
        writer: Any,
        rel: str,
        st: tuple[int, int],
        error: FileTooLargeError,
        known: dict[str, tuple[Any, ...]],
        report: SyncReport,
    ) -> None:
        """Record a file over its size limit as skipped, unread: masked from search, listed as a problem.

        Its stat is kept (with no content digest), so it is not looked at again until it changes.
        """
        what = "its messages are not searchable" if is_transcript(rel) else "not searchable, not committed"
        reason = (
            f"{error.size:,} bytes, larger than the {error.limit:,} bytes memfs reads; {what}: shorten or remove it"
        )
        log.warning("skipping %s: %s", rel, reason)
        if known.get(rel, (None, None, None))[2] != "":
            (report.updated if rel in known else report.added).append(rel)
        report.problems.append(Problem(rel, reason))
        if is_transcript(rel):
            writer.delete_by_term("session", rel)
        writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], ""), error=reason)

    def index_transcript(
        self,
        writer: Any,
        rel: str,
        st: tuple[int, int],
        data: bytes,
        sha: str,
        known: tuple[Any, ...] | None,
        report: SyncReport,
        *,
        stored: dict[str, Any] | None = None,
    ) -> None:
        """Index a transcript's messages; after an append or a pop, only what changed.

        The transcript's own entry keeps digests of the file's prefix at its last entries and at
        its end. A message's document holds its neighbours' words, so a change reaches the
        messages just before it too: if the file still starts with one of the digested prefixes,
        entries are re-read from a few messages before it, the first ones for their words alone.
        Only the last :data:`MAX_INDEXED_ENTRIES` entries are indexed (a transcript of 100,000
        messages costs what one of 5,000 does); older ones leave the index as new ones come.
        ``stored`` is the transcript's entry when it is not (yet) in this index (one built aside).
        """
        if stored is None:
            stored = dict(self._stored(rel) or {}) if known else {}
        usable = sorted(
            (off, digest, n) for off, (digest, n) in (stored.get("checkpoints") or {}).items() if off <= len(data)
        )
        now = prefix_digests(data, [off for off, _, _ in usable])
        # the marks were taken from one version of the file: those before a matching one match too
        same = max(
            (n for (_, digest, n), digest_now in zip(usable, now, strict=True) if digest == digest_now), default=None
        )
        reach = len(CONTEXT_WEIGHTS) - 1
        start, first = None, 1
        if same is not None:
            first, start = next(((n, off) for off, _, n in reversed(usable) if n <= same - 2 * reach), (1, None))
        indexed_to = int(stored.get("position") or 0)  # the last entry indexed so far
        (report.updated if known else report.added).append(rel)
        try:
            entries, problems, meta = self._transcript_entries(data, rel, start, stored)
            if start is not None and sum(e.kind == "item" and e.n < (same or 0) for e in entries) < 2 * reach:
                start, first = None, 1  # manager entries in between: too few messages read for their neighbours
            elif start is not None and entries and entries[-1].n < indexed_to and indexed_to > MAX_INDEXED_ENTRIES:
                start, first = None, 1  # a pop: older entries come back into the window, so read them again
            if start is None:
                entries, problems, meta = self._transcript_entries(data, rel, None, stored)
        except DocumentError as exc:
            report.problems.append(Problem(rel, exc.reason))
            writer.delete_by_term("session", rel)
            writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], sha), error=exc.reason)
            return
        messages = [e for e in entries if e.kind == "item"]
        context = 0 if start is None else reach  # the first messages read are only their neighbours' context
        last = entries[-1].n if entries else first - 1
        floor = last - MAX_INDEXED_ENTRIES  # entries at or below it are not indexed
        if start is None:
            writer.delete_by_term("session", rel)
        else:
            changed = messages[context].n if len(messages) > context else first
            for n in range(changed, indexed_to + 1):
                writer.delete_by_term("path", f"{rel}#{n}")
            for n in range(max(1, indexed_to - MAX_INDEXED_ENTRIES + 1), min(changed, floor + 1)):
                writer.delete_by_term("path", f"{rel}#{n}")  # out of the window now
        for problem in problems:
            report.problems.append(Problem(rel, f"byte {problem.offset}: {problem.reason}"))
        day = written_date(meta["date"])
        date_terms = list(ANALYZER.stems(date_words(day) if day else meta["date"] or ""))
        own = [Counter(ANALYZER.stems(text_of(e.item))) for e in messages]
        for i in range(context, len(messages)):
            entry = messages[i]
            if entry.n <= floor:
                continue
            role = str(entry.item.get("role") or entry.item.get("type") or "")
            writer.add_document(
                **_with_terms(
                    {
                        "path": f"{rel}#{entry.n}",
                        "kind": "message",
                        "session": rel,
                        "session_id": meta["session_id"],
                        "namespace": "",
                        "message": _message_terms(own, i, date_terms),
                        "position": entry.n,
                        "speaker": speaker_of(entry.item),
                        "role": role,
                        "time": entry.time,
                        "item": json.dumps(entry.item, ensure_ascii=False),
                        "date": meta["date"],
                        "day": day.isoformat() if day else None,
                    }
                )
            )
        marks = [(e.offset, e.n) for e in entries[-8:]] + [(len(data), last + 1)]
        digests = prefix_digests(data, [off for off, _ in marks])
        checkpoints = {off: (digest, n) for (off, n), digest in zip(marks, digests, strict=True)}
        writer.update_document(
            path=rel,
            kind="transcript",
            stat=(st[0], st[1], sha),
            checkpoints=checkpoints,
            position=last,
            **{k: v for k, v in meta.items() if v is not None},
        )

    @staticmethod
    def _transcript_entries(
        data: bytes, rel: str, start: int | None, stored: dict[str, Any]
    ) -> tuple[list[Any], list[Any], dict[str, Any]]:
        """A transcript's entries (from ``start``, else the last :data:`MAX_INDEXED_ENTRIES`) and front-matter facts.

        Those are the session's id and date: ``date`` if the front matter has one (the day the
        conversation took place, as written), else ``created``. Read from the transcript's own
        index entry when only the end of the file is parsed.
        """
        if start is not None:
            entries, problems = transcript.parse_entries(data, start)
            return entries, problems, {"session_id": str(stored.get("session_id") or rel), "date": stored.get("date")}
        parsed = transcript.parse(data, path=rel, last=MAX_INDEXED_ENTRIES)
        written = parsed.metadata.get("date") or parsed.metadata.get("created")
        meta = {"session_id": str(parsed.metadata.get("session_id", rel)), "date": str(written) if written else None}
        return parsed.entries, parsed.problems, meta

    def _fields(self, rel: str, doc: Document, st: tuple[int, int], sha: str) -> dict[str, Any]:
        meta = doc.metadata
        namespace = split_memory_path(rel)[0]
        mtime = datetime.fromtimestamp(st[0] / 1e9, timezone.utc)
        updated = normalize_time(meta.get("updated")) or timestamp(mtime)
        tags = note_tags(meta, doc.body)
        keys = link_keys(doc.body)
        held = validity(meta)
        terms = ["superseded" if held.superseded_by is not None else "timed" if held.timed else ""]
        kept: dict[str, Any] = (
            {}
            if held.plain
            else {
                "validity": (held.start, held.end, held.superseded_by, list(held.supersedes), held.expires),
            }
        )
        try:
            check(meta)
        except ValidityError as exc:  # a person's hand edit: the memory is served, the key ignored
            terms.append("unreadable")
            kept["validity_error"] = str(exc)
        kept["lifecycle"] = " ".join(t for t in terms if t) or None
        return _with_terms(
            {
                "path": rel,
                "kind": "memory",
                "namespace": namespace,
                "id": str(meta["id"]) if meta.get("id") is not None else None,
                "title": doc.title(rel),
                "body": _searched_body(meta, doc.body),
                "tags": ",".join(tags),
                "tag": ",".join(tag_terms(tags)) or None,
                "aliases": "\n".join(aliases_of(meta)) or None,
                "namekey": key_of(rel),
                "linkkey": ",".join(keys) or None,
                "haslinks": "1" if keys else None,
                "type": str(meta["type"]) if meta.get("type") is not None else None,
                "created": normalize_time(meta.get("created")) or updated,
                "updated": updated,
                "stat": (st[0], st[1], sha),
                **kept,
            }
        )


def prefix_digests(data: bytes, offsets: Sequence[int]) -> list[str]:
    """The sha256 of ``data[:offset]`` for each of ``offsets`` (ascending), in one pass over ``data``."""
    digest, view, done, out = hashlib.sha256(), memoryview(data), 0, []
    for offset in offsets:
        digest.update(view[done:offset])
        done = offset
        out.append(digest.copy().hexdigest())
    return out


def resume_point(data: bytes, stored: dict[str, Any]) -> tuple[int | None, int]:
    """Where indexing a transcript can start: the furthest checkpoint of ``stored`` that ``data`` still starts with.

    Returns ``(offset, position of the entry there)``, or ``(None, 1)``: the whole file is read.
    """
    checkpoints = stored.get("checkpoints") or {}
    usable = sorted((off, digest, n) for off, (digest, n) in checkpoints.items() if off <= len(data))
    found: tuple[int | None, int] = (None, 1)
    for (offset, digest, n), now in zip(usable, prefix_digests(data, [u[0] for u in usable]), strict=True):
        if now == digest:
            found = (offset, n)
    return found


def _with_terms(fields_: dict[str, Any]) -> dict[str, Any]:
    """Fill in the unstored ``ns`` terms and drop empty values before indexing."""
    fields_["ns"] = namespace_terms(fields_.get("namespace") or "") or None
    return {k: v for k, v in fields_.items() if v is not None}


_LABEL = re.compile(r"\s*([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s")
# A label is a few words at the very start, so only this many characters are looked at: a longer
# "label" is no one's name, and past them a long first word costs the match a step per character
# (a third of a second for a 16 MiB message).
_LABEL_REACH = 200


def speaker_of(item: dict[str, Any]) -> str | None:
    """Who said a message: the item's ``name``, else a chat log's leading label ("Alice: ...")."""
    name = item.get("name")
    if isinstance(name, str) and name.strip():
        return name
    match = _LABEL.match(text_of(item), 0, _LABEL_REACH)
    return match[1] if match else None


def _message_terms(own: list[Counter[str]], i: int, date_terms: list[str]) -> list[tuple[str, float]] | None:
    """The terms of message ``i`` with their weights: its own words, its neighbours' and its date's.

    Weights are those of :data:`CONTEXT_WEIGHTS` times :func:`_context_share` for neighbours,
    :data:`DATE_WEIGHT` for the date's words, all times :data:`WEIGHT_SCALE`. A message with no
    words of its own gets none: it could only be found by its neighbours'.
    """
    if not own[i]:
        return None
    length = own[i].total()
    weights: dict[str, float] = {term: count * CONTEXT_WEIGHTS[0] for term, count in own[i].items()}
    for distance, weight in enumerate(CONTEXT_WEIGHTS[1:], 1):
        for j in (i - distance, i + distance):
            share = weight * _context_share(length, own[j].total()) if 0 <= j < len(own) and own[j] else 0.0
            if share > 0:
                for term, count in own[j].items():
                    weights[term] = weights.get(term, 0.0) + count * share
    if DATE_WEIGHT > 0:
        for term in date_terms:
            weights[term] = weights.get(term, 0.0) + DATE_WEIGHT
    return [(term, weight * WEIGHT_SCALE) for term, weight in weights.items()]


def _context_share(own: int, other: int) -> float:
    """How much of a neighbour's words (``other`` terms) a message of ``own`` terms takes, from 0 to 1.

    Whole for a short message beside a neighbour no longer than :data:`CONTEXT_FULL_TERMS`
    (or than itself); less as the message grows, nothing from :data:`CONTEXT_ALONE_TERMS`
    terms on; and a longer neighbour's words are scaled down to that many, so what a message
    takes from a neighbour never outweighs what it says itself.
    """
    if own >= CONTEXT_ALONE_TERMS or other <= 0:
        return 0.0
    fade = 1.0
    if own > CONTEXT_FULL_TERMS:
        fade = (CONTEXT_ALONE_TERMS - own) / (CONTEXT_ALONE_TERMS - CONTEXT_FULL_TERMS)
    return fade * min(1.0, max(own, CONTEXT_FULL_TERMS) / other)


def namespace_terms(namespace: str) -> list[str]:
    """The ``ns`` terms of a memory in ``namespace``: the namespace and each of its ancestors, whole.

    ``x users/alice`` gives ``["x users", "x users/alice"]``. Whoosh indexes a list given to a field
    as exactly these terms, one per item, without running any tokeniser over them, so a filter on
    ``users/alice`` matches a memory only if its namespace is ``users/alice`` or lies below it:
    no space, punctuation, case or Unicode in a folder name can make a namespace match another.
    """
    parts = namespace.split("/") if namespace else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _searched_body(meta: Mapping[str, Any], body: str) -> str:
    """The words searched as a memory's body: its ``description`` and the body.

    Claude Code's memory files and many Obsidian notes keep a one-line summary there.
    """
    description = meta.get("description")
    return f"{description}\n{body}" if isinstance(description, str) and description.strip() else body
