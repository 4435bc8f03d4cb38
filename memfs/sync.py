"""Sync a vault through a git remote: fetch, join by meaning, push; nothing lost, no conflict markers.

A sync round, ``sync(engine, "origin")``:

1. **Fetch** the remote's branch (outside the vault lock: the network may be slow).
2. Under the vault lock, **commit what is not committed yet**: a person's edits (as theirs) and
   the messages of sessions that commit by hand (as the agent), so the join starts from HEAD.
3. **Join** (:func:`_join`): for every file the other side changed since the common ancestor,
   :func:`memfs.merge.merge_file` decides; files the remote sends that a vault never holds (links,
   files outside ``memories/`` and ``sessions/``, case twins, oversized files, conflict markers)
   are not taken and are reported. A true conflict keeps the local version at its path and the
   other side's as a conflict copy under ``conflicts/`` (committed, so nothing is lost anywhere),
   listed by :func:`conflicts` and ``memfs doctor``, settled with :func:`resolve`. The files are
   written and committed in one engine transaction whose commit has both histories as parents
   (or HEAD simply moves forward when nothing here was new).
4. **Push** (never forced). If the remote moved meanwhile, go round again (bounded).

After a sync the index catches up from exactly the files the join wrote (they are pending like
any write), and a watcher sees files that match HEAD, so it commits nothing as a person's edit.
Credentials are git's business: memfs never asks for them or keeps them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .documents import load_bytes
from .engine import MAX_CONTENT_BYTES, WriteEngine, check_content
from .errors import (
    DocumentError,
    FileTooLargeError,
    InvalidArgumentError,
    LinkError,
    MemfsError,
    MemoryNotFoundError,
    NotFoundError,
    PathError,
    SyncError,
)
from .history import has_conflict_markers
from .layout import (
    ARCHIVE_DIR,
    CONFLICTS_DIR,
    CONTENT_DIRS,
    MAX_ATTACHMENT_BYTES,
    MEMORIES_DIR,
    PROPOSALS_DIR,
    SESSIONS_DIR,
    TOMBSTONES,
    conflict_copy,
    conflicted_path,
    is_attachment,
    is_memory,
    label,
    split_memory_path,
)
from .merge import merge_file
from .paths import clean_relpath
from .purge import Tombstones, tombstones

log = logging.getLogger(__name__)

MAX_ROUNDS = 5  # fetch-join-push rounds before giving up on a remote that keeps moving
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
#: What one sync takes into this vault's purge list from a remote's. Every new text length costs a
#: SHA-256 per byte of every file version a sync checks, in this sync and every later one.
MAX_NEW_TOMBSTONES = 1000
MAX_NEW_TEXT_LENGTHS = 16
_TRACED_COMMITS = 200  # the other side's commits searched for who deleted what a sync deleted
_FILE_MODES = ("100644", "100755")
_DELETED = "000000"


@dataclass(frozen=True)
class ConflictCopy:
    """A file both sides changed in the same place: the local version stays at ``path``."""

    path: str
    copy: str  # the other side's version (vault path under ``conflicts/``)


@dataclass
class SyncResult:
    """What a sync did.

    Attributes:
        remote: The remote's name (never its URL, which may hold credentials).
        branch: The branch synced.
        received: Vault paths the other side changed that this vault took in.
        merged: Those of them both sides had changed, joined by meaning.
        conflicts: Files changed on both sides in the same place (the other side kept as a copy).
        skipped: ``path: reason`` for what the remote sent that a vault never holds.
        notes: Decisions a person may want to know of (an edit kept over a deletion, a rename followed).
        deleted: Vault paths (memories and transcripts) the sync deleted because the other side had.
        deletions: What was deleted, a line per namespace, with who deleted it and the command that
            brings it back (``memfs sync`` prints them).
        pushed: True when this sync sent commits to the remote.
        head: The commit both sides are at afterwards.
        rounds: Fetch-join-push rounds it took (more than one when the remote moved meanwhile).
    """

    remote: str
    branch: str
    received: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    conflicts: list[ConflictCopy] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    deletions: list[str] = field(default_factory=list)
    pushed: bool = False
    head: str | None = None
    rounds: int = 0

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (``memfs sync --json``)."""
        return asdict(self)


def sync(
    engine: WriteEngine, remote: str = "origin", branch: str | None = None, *, max_rounds: int = MAX_ROUNDS
) -> SyncResult:
    """Fetch ``branch`` of ``remote``, join it with this vault's history, push the result.

    Args:
        engine: The vault's write engine.
        remote: A configured remote's name.
        branch: The branch on both sides; by default the branch HEAD is on.
        max_rounds: Rounds to try when the remote keeps moving between fetch and push.

    Raises:
        SyncError: No such remote, a detached HEAD, a vault inside a larger repository, the remote
            unreachable, or still moving after ``max_rounds`` rounds.
        RepositoryStateError: A person's merge, rebase... is in progress here.
    """
    history = engine.history
    if history.prefix:
        raise SyncError(
            f"{engine.root} is a folder inside a larger git repository; sync the repository "
            "with git, or give the vault a repository of its own"
        )
    if not isinstance(remote, str) or remote not in history.remotes():
        raise SyncError(f"no remote named {remote!r}; add one with `git remote add {remote} URL`")
    branch = branch or history.branch()
    if branch is None:
        raise SyncError("HEAD is detached (no branch to sync); check out a branch first")
    report = SyncResult(remote, branch)
    for round_ in range(1, max_rounds + 1):
        report.rounds = round_
        history.check_can_commit()
        theirs = _fetch(engine, remote, branch)
        with engine.locked():
            _commit_pending(engine)
            ours = history.head()
            if theirs is not None and not history.is_ancestor(theirs, ours):
                try:
                    _join(engine, ours, theirs, report)
                except SyncError:
                    history.remote.drop_fetched(remote, branch)  # nothing refused stays in the object store
                    raise
            if theirs is not None:
                history.remote.accept_fetched(remote, branch, theirs)
            removed = remove_links(engine.root)  # a person's `git pull` may have checked some out
            if removed:
                commit_removed_links(engine, removed, "sync")
                report.notes += [f"{rel}: a symbolic link, removed (memfs never follows links)" for rel in removed]
            head = history.head()
        report.head = head
        if head is None or head == theirs:
            return report
        if _push(engine, remote, branch, head):
            report.pushed = True
            return report
    raise SyncError(f"{remote}/{branch} kept moving during {max_rounds} rounds of sync; try again")


#: The folders memfs reads and writes: no symbolic link is left in them after a clone or a sync.
LINK_FREE_DIRS = (*CONTENT_DIRS, ARCHIVE_DIR, PROPOSALS_DIR, CONFLICTS_DIR)


def links_in_content(root: Path) -> list[str]:
    """The symbolic links under the folders memfs reads and writes (vault paths, sorted), never followed.

    memfs never reads through a link, but a person's editor does: ``memories/passwd.md ->
    /etc/passwd`` opens the system's file, ``memories/keys -> /root`` a home folder.
    """
    found = []
    for top in LINK_FREE_DIRS:
        if os.path.islink(root / top):
            found.append(top)
            continue
        folders = [top]  # a stack: a folder tree may be deep
        while folders:
            rel = folders.pop()
            try:
                entries = list(os.scandir(root / rel))
            except OSError:
                continue
            for entry in entries:
                child = f"{rel}/{entry.name}"
                if entry.is_symlink():
                    found.append(child)
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(child)
    return sorted(found)


def remove_links(root: Path) -> list[str]:
    """Remove every symbolic link under the content folders (the link itself, never what it names)."""
    removed = []
    for rel in links_in_content(root):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(root / rel)  # its folders are real ones: the walk never went through a link
            removed.append(rel)
    return removed


def commit_removed_links(engine: WriteEngine, removed: list[str], why: str) -> None:
    """Commit the removal of links git tracked (one commit), so the next sync sends it on."""
    head = engine.history.head()
    tracked = set(engine.history.tracked(head)) if head else set()
    gone = [rel for rel in removed if rel in tracked]
    if gone:
        engine.commit(
            gone,
            f"{why}: removed {len(gone)} symbolic links memfs never follows",
            {"Memfs-Op": "sync"},
            contents=dict.fromkeys(gone),
        )
    for rel in removed:
        log.warning("%s: removed the symbolic link %s (memfs never follows links; an editor would)", why, rel)


def _fetch(engine: WriteEngine, remote: str, branch: str) -> str | None:
    try:
        return engine.history.remote.fetch(remote, branch)
    except MemfsError as exc:
        raise SyncError(f"could not fetch {branch} from {remote}: {exc}") from exc


def _push(engine: WriteEngine, remote: str, branch: str, head: str) -> bool:
    try:
        return engine.history.remote.push(remote, branch, head)
    except MemfsError as exc:
        raise SyncError(f"could not push {branch} to {remote}: {exc}") from exc


def _commit_pending(engine: WriteEngine) -> None:
    """Commit a person's edits (as theirs) and sessions' uncommitted messages (as the agent)."""
    engine.commit_outside_edits()
    own = sorted(engine.own_uncommitted())
    if own:
        engine.commit(own, f"session: {len(own)} transcripts before a sync", {"Memfs-Op": "sync"})


# -- the join ---------------------------------------------------------------------------------


def _join(engine: WriteEngine, ours: str | None, theirs: str, report: SyncResult) -> None:
    history = engine.history
    base = history.merge_base(ours, theirs) if ours else None
    mine = history.tree_changes(base, ours) if ours else {}
    other = history.tree_changes(base, theirs)
    paths = sorted(set(mine) | set(other))
    old = history.files_at(base, paths) if base else dict.fromkeys(paths)
    here = history.files_at(ours, paths) if ours else dict.fromkeys(paths)
    sizes = history.sizes_at(theirs, sorted(other))
    too_large = [p for p in other if (sizes.get(p) or 0) > _limit(p)]
    if TOMBSTONES in too_large:  # what the remote purged cannot be left unread
        raise SyncError(f"the remote's {TOMBSTONES} is {sizes[TOMBSTONES]:,} bytes, larger than memfs reads")
    # Read only blobs measured within their limit (a path the remote did not change is as at the base):
    # no tree, link or oversized file the remote sends is ever read whole.
    wanted = [p for p in paths if p not in other or (sizes.get(p) is not None and p not in too_large)]
    there = history.files_at(theirs, wanted)
    there.update((p, None) for p in paths if p not in there)  # deleted, not a file, or too large: see _refusal
    _refuse_purged(engine, ours, theirs, there.get(TOMBSTONES) if TOMBSTONES in other else None)
    known = {unicodedata.normalize("NFC", p).casefold(): p for p in history.tracked(ours)} if ours else {}
    renamed_there = _renames(other, old, there)
    renamed_here = _renames(mine, old, here)
    files: dict[str, tuple[bytes | None, bytes | None]] = {}
    tag = theirs[:10]
    handled: set[str] = set()
    for path in sorted(other):
        if path in handled:
            continue
        refusal = _refusal(path, other[path], there[path], sizes.get(path), known)
        if refusal:
            report.skipped.append(f"{path}: {refusal}")
            continue
        b, o, t = old[path], here[path], there[path]
        if path == TOMBSTONES:  # what either side purged stays purged: the union of both lists
            joined = (Tombstones.parse(o or b"") | Tombstones.parse(t or b"")).render()
            if joined != o:
                files[path] = (o, joined)
            continue
        target = path
        if t is None and o is not None and o != b and path in renamed_there:  # renamed there, edited here
            target = renamed_there[path]
            refusal = _refusal(target, other[target], there[target], sizes.get(target), known)
            if refusal:
                report.skipped.append(f"{target}: {refusal}")
                continue
            handled.add(target)
            t = there[target]
            files[path] = (o, None)  # the old name goes, as it went there
            report.notes.append(f"{label(path)}: renamed there to {label(target)}; the edit made here follows it")
        elif o is None and t is not None and t != b and path in renamed_here:  # renamed here, edited there
            target = renamed_here[path]
            o = here[target]
            report.notes.append(f"{label(path)}: renamed here to {label(target)}; the edit made there follows it")
        merged = merge_file(target, b, o, t)
        if merged.note and not merged.conflict:
            report.notes.append(merged.note)
        if merged.conflict and t is not None:
            copy = conflict_copy(target, tag)
            files[copy] = (None, t)
            report.conflicts.append(ConflictCopy(target, copy))
        elif o not in (b, t) and t != b:
            report.merged.append(target)
        if merged.data != here[target]:
            files[target] = (here[target], merged.data)
            if merged.data is None and target.split("/", 1)[0] in CONTENT_DIRS:
                report.deleted.append(target)
        report.received.append(target)
    for rel, (expected, _) in list(files.items()):
        if expected is None and os.path.lexists(engine.root / rel) and rel.startswith(CONFLICTS_DIR + "/"):
            files[rel] = (_read(engine, rel), files[rel][1])  # a copy from an earlier sync of the same commit
    message = f"sync: {len(report.received)} files from {report.remote}/{report.branch}"
    if report.conflicts:
        message += f", {len(report.conflicts)} conflicts kept as copies"
    engine.integrate(files, merge=theirs, message=message, trailers={"Memfs-Op": "sync"})
    if report.deleted:
        report.deletions += _deletions(engine, ours, report.deleted)


def _deletions(engine: WriteEngine, ours: str | None, deleted: list[str]) -> list[str]:
    """A line per namespace for what a sync deleted: how many, who deleted them, how to bring them back.

    Each file is traced to the newest commit of the other side that deleted it. ``memfs undo --by
    EMAIL`` is offered only when that commit is the newest change of its author that undo would
    pick; otherwise each file's ``memfs restore`` is named.
    """
    history = engine.history
    by_commit: dict[str, list[str]] = {}
    left = set(deleted)
    newest: dict[str, str] = {}  # author email -> the newest commit undo --by EMAIL would pick
    revs = list(history.log(None, after=ours, limit=_TRACED_COMMITS)) if ours else []
    for rev in revs:
        op = rev.trailers.get("Memfs-Op")
        if op in ("init", "undo", "purge", "sync"):
            continue
        newest.setdefault(rev.author.email.lower(), rev.sha)
        if left:
            gone = {rel for status, rel in history.files_changed(rev.sha) if status == "D"} & left
            if gone:
                by_commit[rev.sha] = sorted(gone)
                left -= gone
    authors = {rev.sha: rev.author for rev in revs}
    lines = []
    for sha, paths in [*by_commit.items(), *([("", sorted(left))] if left else [])]:
        who = authors.get(sha)
        if who is not None and newest.get(who.email.lower()) == sha:
            back = f"`memfs undo --by {who.email}` brings them back"
        else:
            back = f"`memfs restore PATH --to {(sha or ours or '')[:10]}{'~1' if sha else ''}` brings each back"
        by = f" by {who.name} <{who.email}> in {sha[:10]}" if who is not None else ""
        lines += [f"deleted {what}{by}; {back}" for what in sorted(_by_place(paths))]
    return lines


def _by_place(paths: list[str]) -> dict[str, int]:
    """How many of ``paths`` each namespace holds (``sessions/`` for transcripts), as ``N memories from PLACE``."""
    counts: dict[tuple[str, str], int] = {}
    for rel in paths:
        if is_memory(rel):
            key = ("memory", split_memory_path(rel)[0] or MEMORIES_DIR + "/")
        else:
            key = ("transcript", SESSIONS_DIR + "/")
        counts[key] = counts.get(key, 0) + 1
    nouns = {"memory": "memories", "transcript": "transcripts"}
    return {f"{n} {noun if n == 1 else nouns[noun]} from {place}": n for (noun, place), n in counts.items()}


def _refuse_purged(engine: WriteEngine, ours: str | None, theirs: str, sent: bytes | None) -> None:
    """Raise SyncError rather than let a purged file version or text back into either history."""
    here = tombstones(engine)
    there = Tombstones.parse(sent) if sent is not None else Tombstones()
    _check_tombstones_sent(here, there)
    every = here | there
    if not (every.blobs or every.texts):
        return
    history = engine.history
    try:
        versions = history.new_blobs(theirs, ours, limit=MAX_TRANSCRIPT_BYTES)
        if any(every.is_purged(data) for data in versions):
            raise SyncError(
                "the remote still holds content purged from this vault; purge it there "
                "too (`memfs purge ... --rewrite-remotes` from a clone that has it) before "
                "syncing"
            )
    except FileTooLargeError as exc:  # unread, so it cannot be shown free of purged content
        raise SyncError(
            f"the remote's history holds a file version of {exc.size:,} bytes, larger than "
            f"{exc.limit:,}; this vault has purged content, and memfs takes in no history "
            "it cannot check for it"
        ) from exc
    if ours and (there.blobs - here.blobs or there.texts - here.texts):
        if any(there.is_purged(data) for data in history.new_blobs(ours, theirs)):
            raise SyncError(
                "the remote purged content this vault still holds; clone the vault again "
                "from the remote (`memfs clone`), or purge the same content here first"
            )


def _check_tombstones_sent(here: Tombstones, there: Tombstones) -> None:
    """Raise SyncError when the remote's purge list adds more than a sync takes (checked before any hashing)."""
    added = len(there.blobs - here.blobs) + len(there.texts - here.texts)
    lengths = {n for _, n in there.texts} - {n for _, n in here.texts}
    if added > MAX_NEW_TOMBSTONES or len(lengths) > MAX_NEW_TEXT_LENGTHS:
        raise SyncError(
            f"the remote's {TOMBSTONES} adds {added:,} purged entries with {len(lengths):,} new text lengths; "
            f"a sync takes at most {MAX_NEW_TOMBSTONES:,} entries and {MAX_NEW_TEXT_LENGTHS} text lengths from a "
            "remote (each length is checked against every byte synced, forever after); nothing was taken in. "
            "If those purges are meant, clone the vault again from the remote (`memfs clone`)"
        )


def _limit(path: str) -> int:
    """The largest file a sync takes in at ``path``: a transcript's limit, or a memory's."""
    if is_attachment(path):
        return MAX_ATTACHMENT_BYTES
    return MAX_TRANSCRIPT_BYTES if path == TOMBSTONES or path.split("/", 1)[0] == "sessions" else MAX_CONTENT_BYTES


def _refusal(path: str, mode: str, data: bytes | None, size: int | None, known: dict[str, str]) -> str:
    """Why a file the remote sends is not taken in ("" if it is)."""
    top = path.split("/", 1)[0]
    if path == TOMBSTONES:
        return "" if mode in (*_FILE_MODES, _DELETED) else "not a file"
    if top not in (*CONTENT_DIRS, CONFLICTS_DIR, ARCHIVE_DIR, PROPOSALS_DIR):
        return (
            "outside memories/, sessions/, archive/ and proposals/; a sync takes in only memories, "
            "transcripts, archived memories and proposals"
        )
    try:
        clean_relpath(path)
    except PathError as exc:
        return f"not a safe vault path ({exc})"
    if mode == _DELETED:
        return ""
    if mode not in _FILE_MODES:
        return "a symbolic link or submodule, which memfs never follows" if mode != "040000" else "not a file"
    twin = known.get(unicodedata.normalize("NFC", path).casefold())
    if twin is not None and twin != path:
        return f"differs from {twin} only in letter case"
    size, limit = size or 0, _limit(path)
    if size > limit:
        return f"{size} bytes, over the {limit}-byte limit"
    if data is not None and has_conflict_markers(data):
        return "holds git's conflict markers from a merge nobody resolved"
    return ""


def _renames(changes: dict[str, str], old: dict[str, bytes | None], new: dict[str, bytes | None]) -> dict[str, str]:
    """Memories one side renamed: old path -> new path, matched by their stable ``id``."""
    added = {}
    for path, mode in changes.items():
        if mode != _DELETED and old.get(path) is None and is_memory(path):
            ident = _id_of(new.get(path))
            if ident:
                added[ident] = path
    moved = {}
    for path, mode in changes.items():
        if mode == _DELETED and is_memory(path):
            ident = _id_of(old.get(path))
            if ident and ident in added:
                moved[path] = added[ident]
    return moved


def _id_of(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        ident = load_bytes(data).metadata.get("id")
    except DocumentError:
        return None
    return ident if isinstance(ident, str) and ident else None


def _read(engine: WriteEngine, rel: str) -> bytes | None:
    """The bytes of the vault file ``rel`` through the path gate, bounded; None if there is none (or a link).

    A file too large for memfs to read raises FileTooLargeError: a sync never merges what it cannot read.
    """
    try:
        return engine.read_bytes(rel)
    except (OSError, MemoryNotFoundError, LinkError):
        return None


# -- conflicts ------------------------------------------------------------------------------


def conflicts(engine: WriteEngine) -> list[ConflictCopy]:
    """The conflict copies a sync kept, oldest path first; each names the file it is a version of."""
    folder = engine.root / CONFLICTS_DIR
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            copy = os.path.relpath(os.path.join(dirpath, name), engine.root).replace(os.sep, "/")
            original = conflicted_path(copy)
            if original is not None:
                found.append(ConflictCopy(original, copy))
    return sorted(found, key=lambda c: (c.path, c.copy))


def resolve(engine: WriteEngine, path: str, keep: str | bytes, *, copy: str | None = None) -> str | None:
    """Settle a conflict in one commit: keep the local version, the other side's, or given bytes.

    Args:
        engine: The vault's write engine.
        path: The vault path in conflict (as :func:`conflicts` lists it).
        keep: ``"local"`` (the file as it is), ``"remote"`` (the conflict copy), or the bytes to keep.
        copy: Which copy ``remote`` means when a file has several; by default the only one.

    Returns:
        The commit id.

    Raises:
        NotFoundError: ``path`` has no conflict copy.
        InvalidArgumentError: ``keep`` is none of the three, or ``remote`` is ambiguous.
    """
    mine = [c for c in conflicts(engine) if c.path == path]
    if not mine:
        raise NotFoundError(f"{path} has no conflict copy; `memfs conflicts` lists those that do")
    if keep == "remote":
        chosen = [c for c in mine if copy is None or c.copy == copy]
        if len(chosen) != 1:
            raise InvalidArgumentError(
                f"{path} has {len(mine)} conflict copies; name the one to keep: " + ", ".join(c.copy for c in mine)
            )
        data: bytes | None = engine.read_bytes(chosen[0].copy)  # through the path gate, bounded
    elif keep == "local":
        data = None
    elif isinstance(keep, bytes):
        data = check_content(keep.decode("utf-8", "surrogateescape")) if is_memory(path) else keep
    else:
        raise InvalidArgumentError(f"keep must be 'local', 'remote' or the bytes to keep, got {keep!r}")
    with engine.batch(f"resolve: {label(path)}", trailers={"Memfs-Op": "resolve"}):
        if data is not None:
            engine.write(path, data.decode("utf-8"), message=f"keep the chosen version of {label(path)}")
        for conflict in mine:
            engine.delete(conflict.copy, message=f"drop the conflict copy {conflict.copy}")
    return engine.history.head()


def report_lines(report: SyncResult) -> list[str]:
    """The report as lines a person reads (``memfs sync``)."""
    lines = [
        f"{len(report.received)} files in from {report.remote}/{report.branch}"
        + (f" ({len(report.merged)} merged)" if report.merged else "")
        + ("; pushed" if report.pushed else "; nothing to push")
    ]
    lines += [
        f"conflict: {c.path} (theirs kept as {c.copy}; `memfs resolve {c.path} --keep local|remote|FILE`)"
        for c in report.conflicts
    ]
    lines += report.deletions
    lines += [f"skipped: {s}" for s in report.skipped]
    lines += [f"note: {n}" for n in report.notes]
    return lines
