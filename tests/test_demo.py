"""`make demo` runs the main job on a copy of example_vault from start to end, and each step shows what it claims."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_demo_runs_to_the_end_and_each_step_does_what_it_says(tmp_path: Path) -> None:
    env = {**os.environ, "MEMFS_DEMO_DIR": str(tmp_path / "demo"), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "demo.py")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    for shown in (
        "the hand-written files were committed as the person",
        "after a hand edit, injected: True",
        "committed as the person:",
        "contains a '..' component, which is not allowed",
        "ok      git    working tree matches the last commit",
    ):
        assert shown in out, shown
    assert 'path="users/alice/gym.md"' in out  # injected beside the train: the block holds both facts asked
    assert (tmp_path / "demo" / "vault" / ".git").is_dir()  # it ran where it was told, on a copy
    untouched = subprocess.run(["git", "status", "--porcelain", "--", "example_vault"], cwd=REPO,
                               capture_output=True, text=True, check=True)  # fmt: skip
    assert untouched.stdout == ""
