"""Health checks of a vault: the index against the files, git's state, malformed and stray files."""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import _fs
from .engine import WriteEngine
from .layout import MEMORIES_DIR

MAX_LISTED = 20  # uncommitted edits named one by one
_STATES = {"M": "changed", "A": "added", "?": "added", "D": "deleted", "T": "changed"}


@dataclass(frozen=True)
class Finding:
    """One thing ``doctor`` found: its severity (``ok``, ``warning``, ``error``) and what."""

    severity: str
    check: str
    message: str


def examine(engine: WriteEngine) -> list[Finding]:
    """Check the index against the files, git's state, malformed files and leftovers."""
    findings: list[Finding] = []
    with engine.locked():
        engine.flush_index()
        on_disk = dict(engine.index.scan())
        known = engine.index.known(None)
        missing = sorted(set(on_disk) - set(known))
        ghosts = sorted(set(known) - set(on_disk))
        stale = sorted(p for p in set(on_disk) & set(known) if known[p][:2] != on_disk[p])
        if missing or ghosts or stale:
            findings.append(Finding("warning", "index",
                f"index out of step: {len(missing)} unindexed, {len(ghosts)} removed, {len(stale)} "
                "changed files; run `memfs reindex`"))  # fmt: skip
        else:
            findings.append(Finding("ok", "index", f"{len(known)} files indexed, all current"))
        for problem in engine.index.problems():
            findings.append(Finding("error", "file", f"{problem.path}: {problem.reason}"))
        lock = engine.history.git_dir / "index.lock"
        if lock.exists():
            age = time.time() - lock.stat().st_mtime
            findings.append(Finding("warning", "git",
                f"{lock} exists ({age:.0f} s old); if no git command is running, remove it"))  # fmt: skip
        own = engine.own_uncommitted()
        prefix = engine.history.prefix
        edits = set(engine.outside_edits())
        status = {line[3:].removeprefix(prefix): line[:2] for line in engine.history.status()}
        if own:
            findings.append(Finding("ok", "sessions",
                f"{len(own)} transcripts hold messages their session has not committed yet (its commit "
                f"policy); first: {sorted(own)[0]}"))  # fmt: skip
        for rel in sorted(edits)[:MAX_LISTED]:
            what = _STATES.get(status.get(rel, " M").strip()[:1], "changed")
            findings.append(Finding("warning", "edit",
                f"{rel}: {what} outside memfs, not committed yet; `memfs commit` commits it"))  # fmt: skip
        if len(edits) > MAX_LISTED:
            findings.append(Finding("warning", "edit", f"... and {len(edits) - MAX_LISTED} more uncommitted edits"))
        dirty = sorted(rel for rel in status if rel not in own and rel not in edits)
        if dirty:
            findings.append(Finding("warning", "git",
                f"{len(dirty)} other uncommitted changes (first: {status[dirty[0]].strip()} {dirty[0]})"))  # fmt: skip
        elif not edits:
            findings.append(Finding("ok", "git", "working tree matches the last commit"))
        leftovers = list((engine.root / MEMORIES_DIR).rglob(_fs.TEMP_PREFIX + "*"))
        if leftovers:
            findings.append(Finding("warning", "files",
                f"{len(leftovers)} temporary files left by an interrupted write"))  # fmt: skip
    return findings
