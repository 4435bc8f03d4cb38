"""How long a sync takes: 100 changed memories into a 10k-memory vault over file://. JSON on stdout.

    python bench/sync.py                       # 10,000 memories, 100 changed, 5 rounds
    python bench/sync.py --memories 2000 --rounds 3

Each round, a writer clone changes 100 memories (one commit) and pushes them. Then:
- **memfs**: a second clone runs ``vault.sync()`` (fetch, join, push of its own new commit), then
  one search, so the index has caught up with the 100 files (the figure includes that);
- **baseline**: a plain git clone of the same remote runs ``git pull --no-rebase && git push`` of
  the same change (its own one-line commit made first, so both push as well as pull).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import memfs  # noqa: E402

GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org"]


def say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def stats(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {"p50_ms": round(statistics.median(ordered), 1), "max_ms": round(ordered[-1], 1), "n": len(ordered)}


def run(size: int, changed: int, rounds: int) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(prefix="memfs-sync-bench-"))
    try:
        remote = folder / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(remote)], check=True)
        items = corpus.memories(size, seed=3)
        say(f"writing and committing {size} memories")
        corpus.write_vault(folder / "writer", items)
        with memfs.Vault.open(folder / "writer", durable=False) as writer:
            git(writer.root, "remote", "add", "origin", remote.as_uri())
            writer.sync()
        say("cloning the vault twice and the repository once")
        reader = memfs.Vault.clone(remote.as_uri(), folder / "reader", durable=False)
        reader.search("warm up")
        subprocess.run(["git", "clone", "-q", remote.as_uri(), str(folder / "plain")], check=True)
        paths = sorted(p for p in (folder / "writer" / "memories").rglob("*.md"))[:changed]
        memfs_ms, plain_ms = [], []
        for i in range(rounds):
            say(f"round {i + 1}: {changed} memories changed and pushed by the writer")
            with memfs.Vault.open(folder / "writer", durable=False) as writer, writer.batch(f"round {i}"):
                for n, path in enumerate(paths):
                    rel = path.relative_to(writer.root).as_posix()
                    text = writer.read_bytes(rel).decode()
                    writer.write(rel, text + f"\nround {i} note {n}\n", message=f"note {n}")
            with memfs.Vault.open(folder / "writer", durable=False) as writer:
                writer.sync()
            reader.memories("users/reader").add(f"reader note {i}", title=f"reader {i}")
            start = time.perf_counter()
            report = reader.sync()
            hits = reader.search(f"round {i} note")
            memfs_ms.append((time.perf_counter() - start) * 1000)
            assert len(report.received) == changed and report.pushed and hits, report
            (folder / "plain" / f"plain-{i}.txt").write_text("x\n")
            git(folder / "plain", "add", f"plain-{i}.txt")
            git(folder / "plain", "commit", "-qm", f"plain {i}")
            start = time.perf_counter()
            git(folder / "plain", "pull", "-q", "--no-rebase", "origin", "main")
            git(folder / "plain", "push", "-q", "origin", "HEAD:main")
            plain_ms.append((time.perf_counter() - start) * 1000)
        reader.close()
        return {"memories": size, "changed": changed, "memfs_sync_and_search": stats(memfs_ms),
                "git_pull_and_push": stats(plain_ms)}  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    result = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()},
        "sync": run(args.memories, args.changed, args.rounds),
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
