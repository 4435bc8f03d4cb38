"""Write paths of two trees of memfs, measured in the same run: a tool edit, a memory added, a session append.

    python bench/write_paths.py --trees /path/to/before /path/to/after [--ops 200] [--rounds 4]

Issue #30 moves code between modules with no change in behaviour; what it must not do is make a
write slower. Each tree is imported in a child process of its own (``PYTHONPATH=<tree>``), and the
trees take turns, round after round, so that both see the same machine load. A round is, on a fresh
vault in a temporary folder:

- ``str_replace``: ``MemoryTools.run("str_replace", ...)`` on a memory of its namespace, the same
  memory edited back and forth (each edit a commit), ``--ops`` times;
- ``add``: ``MemoryStore.add`` of a new fact-size memory (one commit each), ``--ops`` times;
- ``append``: ``MarkdownSession.add_items`` of one message to one transcript (committed each turn),
  ``--ops`` times.

Printed as JSON: per tree and path, the p50 and p95 wall ms over all rounds, and the ratio of the
second tree's p50 to the first's. ``durable=False`` as in the suite (no fsync: the code's own cost).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

CHILD = r"""
import asyncio, json, sys, tempfile, time
from pathlib import Path
import memfs

ops = int(sys.argv[1])
out = {"str_replace": [], "add": [], "append": []}
with tempfile.TemporaryDirectory() as tmp:
    vault = memfs.Vault.open(Path(tmp) / "v", create=True, durable=False)
    tools = memfs.MemoryTools(vault, "users/alice", session="bench")
    tools.run("create", path="/memories/diet.md", file_text="Alice is vegetarian and likes red lentils.\n")
    words = ("red", "green")
    for i in range(ops):
        old, new = words[i % 2], words[(i + 1) % 2]
        start = time.perf_counter()
        text = tools.run("str_replace", path="/memories/diet.md", old_str=old + " lentils", new_str=new + " lentils")
        out["str_replace"].append((time.perf_counter() - start) * 1000)
        assert "edited" in text.lower() or "replaced" in text.lower() or "updated" in text.lower(), text
    store = memfs.MemoryStore(vault, "users/bob")
    for i in range(ops):
        start = time.perf_counter()
        store.add(f"Bob's fact number {i}: he visited museum {i} on a Saturday with his sister.")
        out["add"].append((time.perf_counter() - start) * 1000)
    session = memfs.MarkdownSession(vault, "bench-session")

    async def appends():
        for i in range(ops):
            start = time.perf_counter()
            await session.add_items([{"role": "user", "content": f"Message {i}: what about the museum on Saturday?"}])
            out["append"].append((time.perf_counter() - start) * 1000)

    asyncio.run(appends())
    vault.close()
print(json.dumps(out))
"""


def run_tree(tree: Path, ops: int) -> dict[str, list[float]]:
    env = dict(os.environ, PYTHONPATH=str(tree), MEMFS_EMBEDDER="none", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ops)], env=env, capture_output=True, text=True, check=False, cwd=tree
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: the child failed:\n{proc.stderr[-2000:]}")
    result: dict[str, list[float]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "n": len(ordered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs=2, type=Path, required=True, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    samples: dict[str, dict[str, list[float]]] = {str(t): {} for t in args.trees}
    for r in range(args.rounds):
        for tree in args.trees if r % 2 == 0 else reversed(args.trees):
            for path, values in run_tree(tree.resolve(), args.ops).items():
                samples[str(tree)].setdefault(path, []).extend(values)
    before, after = (samples[str(t)] for t in args.trees)
    report: dict[str, Any] = {
        "ops": args.ops,
        "rounds": args.rounds,
        "load": os.getloadavg()[0],
        "trees": {tree: {path: stats(v) for path, v in paths.items()} for tree, paths in samples.items()},
        "after_over_before_p50": {
            path: round(statistics.median(after[path]) / statistics.median(before[path]), 3) for path in before
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
