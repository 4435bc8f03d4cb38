"""How long long index jobs hold the vault lock: built outside it (now) vs all under it (the baseline).

Two jobs, each run twice on identical copies of one vault: the first index of a big transcript
(``flush_index`` after a session appended it) and a rebuild of the index of many memories
(``reindex(full=True)``). The baseline runs the same call inside ``engine.locked()``, which is how
the job ran before it was split: everything under the lock. The figure is the longest single hold
of the vault lock during the job (what another process's write may have to wait), with the job's
wall time and how many times it took the lock.

    python bench/locks.py                              # 50,000 messages, 10,000 memories
    python bench/locks.py --messages 5000 --memories 1000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import memfs  # noqa: E402


@contextmanager
def lock_holds(vault: memfs.Vault) -> Iterator[list[float]]:
    """Record how long each outermost hold of the vault lock lasts (the flock, taken at depth 0)."""
    lock = vault.engine._lock
    holds: list[float] = []
    acquire, release = lock._acquire_file, lock._release_file
    since = [0.0]

    def timed_acquire(limit: float) -> None:
        acquire(limit)
        since[0] = time.perf_counter()

    def timed_release() -> None:
        holds.append(time.perf_counter() - since[0])
        release()

    lock._acquire_file, lock._release_file = timed_acquire, timed_release  # type: ignore[method-assign]
    try:
        yield holds
    finally:
        del lock._acquire_file, lock._release_file


def measure(template: Path, job: Callable[[memfs.Vault], Any], *, baseline: bool) -> dict[str, Any]:
    """Run ``job`` on a fresh copy of ``template``; the longest lock hold, in seconds."""
    work = Path(tempfile.mkdtemp(prefix="memfs-locks-"))
    try:
        root = work / "vault"
        shutil.copytree(template, root, symlinks=True)
        vault = memfs.Vault.open(root, reconcile=False)
        try:
            with lock_holds(vault) as holds:
                start = time.perf_counter()
                if baseline:
                    with vault.engine.locked():
                        job(vault)
                else:
                    job(vault)
                wall = time.perf_counter() - start
        finally:
            vault.close()
        return {"max_hold_s": round(max(holds), 3), "holds": len(holds), "job_s": round(wall, 2)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def transcript_vault(folder: Path, messages: int) -> Path:
    """A vault with a committed transcript of ``messages`` messages, queued for the index."""
    root = folder / "transcript"
    with memfs.Vault.open(root, create=True) as vault:
        vault.memories("notes").add("The museum opens at ten.", title="Museum")
        vault.search("museum")  # the index has the memory
        session = vault.session("long", commit="manual")
        for start in range(0, messages, 5000):
            session.append([{"role": "user" if i % 2 else "assistant",
                             "content": f"Message {i}: what about the museum on Saturday? It opens at ten."}
                            for i in range(start, min(messages, start + 5000))])  # fmt: skip
        session.commit()
        (root / ".memfs" / "pending").write_bytes(b"")  # close() must not index the transcript
    (root / ".memfs" / "pending").write_bytes(b"sessions/long.md\n")  # queued for the next search, as after the append
    return root


def memories_vault(folder: Path, count: int) -> Path:
    """A vault of ``count`` committed memories, indexed."""
    root = folder / "memories"
    corpus.write_vault(root, corpus.memories(count))
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "memories"], check=True)
    memfs.Vault.open(root, create=True).close()
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--memories", type=int, default=10_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="memfs-locks-template-"))
    try:
        out: dict[str, Any] = {}
        transcript = transcript_vault(folder, args.messages)
        first_index = {"messages": args.messages}
        for name, baseline in (("all_under_lock", True), ("built_outside_lock", False)):
            first_index[name] = measure(transcript, lambda v: v.engine.catalog.flush_index(), baseline=baseline)
        out["first_index_of_transcript"] = first_index
        memories = memories_vault(folder, args.memories)
        rebuild = {"memories": args.memories}
        for name, baseline in (("all_under_lock", True), ("built_outside_lock", False)):
            rebuild[name] = measure(memories, lambda v: v.reindex(full=True), baseline=baseline)
        out["full_reindex"] = rebuild
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
