"""What changed in a vault since a time or a revision, grouped by who changed it.

Every change to a vault is a commit, and memfs's commits say who made them: the trailers it writes
(``Memfs-Op``, ``Memfs-Tool``, ``Memfs-Session``, see :mod:`memfs.history`) and the author. A commit
is counted as

- a **sync**'s when ``Memfs-Op`` is ``sync`` or ``resolve`` (another copy's changes arriving, or a
  conflict settled);
- an **agent**'s when an agent's tools (``Memfs-Tool``), a session (``Memfs-Session``) or an
  extractor (``Memfs-Op: extract``) wrote it, or memfs's default agent identity is its author
  (a library call that named no one);
- a **person**'s otherwise: the CLI (which commits as the person who typed), edits by hand that
  memfs committed (``Memfs-Op: reconcile``) and commits made with git itself.

The history is followed along first parents, so a sync's merge stands for everything it brought
in (the merge against the side it was made on), rather than the other copy's commits one by one.
A sync that only fast-forwarded made no commit: what it brought shows as the other copy's commits,
under whoever made them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .dates import iso, time_range
from .errors import InvalidArgumentError, RevisionNotFoundError
from .history import DEFAULT_AGENT, GitHistory, Revision

#: The groups, in the order they are shown.
GROUPS = ("agents", "people", "syncs")
_SYNC_OPS = frozenset({"sync", "resolve"})
_AGENT_OPS = frozenset({"extract", "session"})
_MEMBER = {"agents": "agent", "people": "person", "syncs": "sync"}
_STATUS = {"A": "added", "D": "deleted", "M": "modified"}


@dataclass(frozen=True)
class FileChange:
    """One file a commit changed: ``added``, ``modified`` or ``deleted``, and the diff if asked for."""

    path: str
    status: str
    diff: str | None = None


@dataclass(frozen=True)
class Change:
    """One commit in the range, with who made it and the files it changed (within the scope asked)."""

    sha: str
    date: str
    author: str
    group: str
    op: str | None
    subject: str
    session: str | None
    files: tuple[FileChange, ...]

    @property
    def by(self) -> str:
        """``agent``, ``person`` or ``sync``: the group's name for one of its members."""
        return _MEMBER[self.group]

    def to_json(self) -> dict[str, Any]:
        """The change as plain data."""
        return {
            "sha": self.sha,
            "date": self.date,
            "author": self.author,
            "group": self.group,
            "op": self.op,
            "subject": self.subject,
            "session": self.session,
            "files": [{k: v for k, v in vars(f).items() if v is not None} for f in self.files],
        }


@dataclass(frozen=True)
class Changes:
    """What changed since ``since`` (a time, or a revision), newest first.

    Attributes:
        since: The moment (ISO 8601) or the revision the range starts after.
        changes: The commits, newest first.
        truncated: More commits matched than ``limit``; the oldest were left out.
    """

    since: str
    changes: list[Change] = field(default_factory=list)
    truncated: bool = False

    def groups(self) -> dict[str, list[Change]]:
        """The changes of each group (``agents``, ``people``, ``syncs``), newest first; empty groups left out."""
        out: dict[str, list[Change]] = {}
        for group in GROUPS:
            chosen = [c for c in self.changes if c.group == group]
            if chosen:
                out[group] = chosen
        return out

    def to_json(self) -> dict[str, Any]:
        """The whole range as plain data (what ``memfs changes --json`` prints)."""
        return {
            "since": self.since,
            "truncated": self.truncated,
            "groups": {g: [c.to_json() for c in cs] for g, cs in self.groups().items()},
        }


def group_of(rev: Revision) -> str:
    """``agents``, ``people`` or ``syncs``: who made a commit, by its trailers and author (module docstring)."""
    op = rev.trailers.get("Memfs-Op")
    if op in _SYNC_OPS:
        return "syncs"
    if "Memfs-Tool" in rev.trailers or "Memfs-Session" in rev.trailers or op in _AGENT_OPS:
        return "agents"
    if op is not None and rev.author.email == DEFAULT_AGENT.email:
        return "agents"
    return "people"


def collect(
    history: GitHistory,
    since: str | datetime,
    *,
    prefix: str = "",
    diff: bool = False,
    limit: int = 500,
    skip_session: str | None = None,
) -> Changes:
    """The commits after ``since`` (memfs's date syntax, else a revision) that changed files under ``prefix``.

    Args:
        history: The vault's git history.
        since: A time (``2026-11-20``, ``3 days ago``, a datetime) or a revision (a sha, ``HEAD~5``).
        prefix: Only files whose vault path starts with this (``memories/users/alice/``).
        diff: Give each file's unified diff.
        limit: At most this many commits (the newest); ``truncated`` says when more matched.
        skip_session: Leave out what this session wrote (an agent knows its own changes).

    Raises:
        InvalidArgumentError: ``since`` is neither a date nor a revision of this vault.
    """
    moment, after = _start(history, since)
    revisions = history.log(
        since=_git_time(moment) if moment else None, after=after, limit=limit + 1, first_parent=True
    )
    truncated = len(revisions) > limit
    found = []
    for rev in revisions[:limit]:
        if rev.trailers.get("Memfs-Op") == "init":
            continue
        if skip_session is not None and rev.trailers.get("Memfs-Session") == skip_session:
            continue
        files = _files(history, rev.sha, prefix, diff)
        if files:
            found.append(
                Change(
                    rev.sha,
                    rev.date,
                    str(rev.author),
                    group_of(rev),
                    rev.trailers.get("Memfs-Op"),
                    rev.subject,
                    rev.trailers.get("Memfs-Session"),
                    files,
                )
            )
    return Changes(iso(moment) if moment else str(since), found, truncated)


def _start(history: GitHistory, since: str | datetime) -> tuple[datetime | None, str | None]:
    """``since`` as a moment, else as a revision (a date is tried first: ``2026-11-01`` is a date)."""
    if isinstance(since, datetime):
        return time_range(since, None)[0], None
    if not isinstance(since, str) or not since.strip():
        raise InvalidArgumentError(f"since must be a date, a time or a revision, got {since!r}")
    try:
        return time_range(since, None)[0], None
    except InvalidArgumentError as not_a_date:
        try:
            return None, history.resolve(since)
        except RevisionNotFoundError:
            raise InvalidArgumentError(f"{not_a_date}; nor is {since!r} a revision of this vault") from None


def _files(history: GitHistory, sha: str, prefix: str, diff: bool) -> tuple[FileChange, ...]:
    """The files commit ``sha`` changed under ``prefix``: one ``cat-file --batch`` per side, however many."""
    parent = history.first_parent(sha)
    changed = {path: mode for path, mode in history.tree_changes(parent, sha).items() if path.startswith(prefix)}
    if not changed:
        return ()
    paths = sorted(changed)
    before = history.files_at(parent, paths) if parent else dict.fromkeys(paths)
    after = history.files_at(sha, paths) if diff else {}
    out = []
    for path in paths:
        status = "D" if changed[path] == "000000" else ("A" if before[path] is None else "M")
        text = _diff(path, before[path], after.get(path)) if diff else None
        out.append(FileChange(path, _STATUS[status], text))
    return tuple(out)


def _diff(path: str, old: bytes | None, new: bytes | None) -> str:
    a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
    lines = difflib.unified_diff(
        a, b, f"a/{path}" if old is not None else "/dev/null", f"b/{path}" if new is not None else "/dev/null"
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _git_time(moment: datetime) -> str:
    # a form git reads exactly one way (the Vault's log does the same)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S +0000")
