"""How long a purge takes on a vault with a long history. JSON on stdout, progress on stderr.

    python bench/purge.py                 # 1,000 commits
    python bench/purge.py --commits 3000

The vault: memories added and updated (one commit each) across 200 files in 4 namespaces, and a
transcript committed every turn (so its every version is a blob of its own). A GitHub-token-shaped
string is planted early, in one memory and in one message, so nearly every commit is rewritten.
Each purge runs on a fresh copy of the vault, durable (fsync) as a vault opens by default.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import memfs

TOKEN = "pin_" + "Zq8RtY2uVw4XkLm6Np0Bc3Df5Gh7Jk9Ls1Qa"  # no shape the credential scanner knows: it is stored


def build(root: Path, commits: int) -> dict[str, int]:
    with memfs.Vault.open(root, durable=False, create=True) as vault:
        stores = [vault.memories(f"users/u{i}") for i in range(4)]
        chat = vault.session("support", commit="turn")
        made: list[tuple[memfs.MemoryStore, str]] = []
        secret = stores[0].add(f"the deploy token is {TOKEN}", title="Deploy token")
        chat.append([{"role": "user", "content": f"my token is {TOKEN}, keep it"}])
        n = 2
        while n < commits:
            store = stores[n % 4]
            if n % 5 == 0:
                chat.append([{"role": "user", "content": f"turn {n}: what about item {n}?"}])
            elif len(made) < 200:
                memory = store.add(f"Fact number {n} about topic {n % 17}.", title=f"Fact {n}", tags=[f"t{n % 7}"])
                made.append((store, memory.id))
            else:
                owner, mid = made[n % len(made)]
                owner.update(mid, body=f"Fact revised at step {n}, topic {n % 13}.")
            n += 1
            if n % 200 == 0:
                print(f"  {n} commits", file=sys.stderr)
        del secret
    count = int(subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True,
                               text=True, check=True).stdout)  # fmt: skip
    objects = subprocess.run(["git", "count-objects", "-v"], cwd=root, capture_output=True, text=True).stdout
    return {"commits": count, "loose_objects": int(objects.split("count: ")[1].split()[0])}


def timed_purge(source: Path, work: Path, **options: object) -> dict[str, object]:
    target = work / f"copy-{len(list(work.iterdir()))}"
    shutil.copytree(source, target, symlinks=True)
    subprocess.run(["sync"], check=False)  # the copy's writes are not counted in the purge
    with memfs.Vault.open(target) as vault:
        started = time.perf_counter()
        report = vault.purge(**options)  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "commits_changed": len(report.changed),
        "commits_new_ids": len(report.commits),
        "versions_removed": report.versions,
        "leftovers": len(report.leftovers),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "source"
        print(f"building a vault of {args.commits} commits", file=sys.stderr)
        started = time.perf_counter()
        built = build(source, args.commits)
        build_seconds = time.perf_counter() - started
        runs = work / "runs"
        runs.mkdir()
        result = {
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()[0]},
            "vault": {**built, "build_seconds": round(build_seconds, 1)},
            "dry_run_text": timed_purge(source, runs, text=TOKEN, dry_run=True),
            "purge_text": timed_purge(source, runs, text=TOKEN),
            "purge_path": timed_purge(source, runs, path="users/u0/deploy-token.md"),
            "purge_absent_text": timed_purge(source, runs, text="not-in-this-vault-0000"),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
