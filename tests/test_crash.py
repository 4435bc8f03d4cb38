"""kill -9 at random points while writing: every file is old or new, and reopening recovers."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

import memfs
from memfs.documents import load_bytes


def _hammer(root: str, ready: str) -> None:
    vault = memfs.Vault.open(root, reconcile=False)
    store = vault.memories("crash")
    i = 0
    while True:
        i += 1
        store.update("target.md", body=f"version {i} marmalade\n" + "filler line\n" * 2000)
        store.add(f"new memory {i}", title=f"n{i}")
        Path(ready).touch()  # in the write loop: the parent may kill from now on


@pytest.mark.slow
def test_kill_during_writes_leaves_whole_files_and_a_consistent_vault(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True) as vault:
        vault.memories("crash").add("version 0\n", path="target.md")
    ctx = multiprocessing.get_context("spawn")
    rng = random.Random(7)
    # Six kills (it was 12): each lands at a random point of the same write loop; `make faults`
    # kills every write path at 200 points (bench/faults.py), so this is the quick sample of it.
    for _ in range(6):
        ready = tmp_path / "ready"
        ready.unlink(missing_ok=True)
        proc = ctx.Process(target=_hammer, args=(str(root), str(ready)))
        proc.start()
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and proc.is_alive():
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 0.4))  # somewhere in the write loop
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        for path in (root / "memories").rglob("*.md"):  # never a torn file
            doc = load_bytes(path.read_bytes(), path=str(path))
            if path.name == "target.md":  # the first version, or a whole later one
                assert doc.body == "version 0\n" or (
                    doc.body.startswith("version ") and doc.body.endswith("filler line\n" * 5)
                )
    with memfs.Vault.open(root) as vault:  # recovery: sweep, reindex, commit what was written
        assert vault.history.status() == []
        assert vault.doctor()[0].severity == "ok"
        on_disk = {p.relative_to(root).as_posix() for p in (root / "memories").rglob("*.md")}
        assert set(vault.index.entries()) == on_disk
        target = vault.memories("crash").get("target.md")
        assert target.body.startswith("version ")
        assert vault.search("marmalade")[0].path == "memories/crash/target.md"
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
