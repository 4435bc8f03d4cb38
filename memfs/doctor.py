"""Health checks of a vault: the index against the files, git's state, malformed and stray files, salvage."""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import _fs
from .engine import WriteEngine
from .layout import MEMORIES_DIR


@dataclass(frozen=True)
class Finding:
    """One thing ``doctor`` found: its severity (``ok``, ``warning``, ``error``) and what."""

    severity: str
    check: str
    message: str


def examine(engine: WriteEngine) -> list[Finding]:
    """Check the index against the files, git's state, malformed files, leftovers and salvage files."""
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
        dirty = [line for line in engine.history.status() if line[3:].removeprefix(prefix) not in own]
        if own:
            findings.append(Finding("ok", "sessions",
                f"{len(own)} transcripts hold messages their session has not committed yet (its commit "
                f"policy); first: {sorted(own)[0]}"))  # fmt: skip
        if dirty:
            findings.append(Finding("warning", "git",
                f"{len(dirty)} uncommitted changes (first: {dirty[0].strip()}); run `memfs reindex` "
                "to commit edits made outside memfs"))  # fmt: skip
        else:
            findings.append(Finding("ok", "git", "working tree matches the last commit"))
        salvage = engine.salvage_files()
        if salvage:
            findings.append(Finding("warning", "salvage",
                f"{len(salvage)} salvage files hold the bytes of transcript appends that were interrupted and cut "
                f"off (never acknowledged; read them, then delete them): "
                + ", ".join(str(p.relative_to(engine.root)) for p in salvage[:5])
                + (f" and {len(salvage) - 5} more" if len(salvage) > 5 else "")))  # fmt: skip
        leftovers = list((engine.root / MEMORIES_DIR).rglob(_fs.TEMP_PREFIX + "*"))
        if leftovers:
            findings.append(Finding("warning", "files",
                f"{len(leftovers)} temporary files left by an interrupted write"))  # fmt: skip
    return findings
