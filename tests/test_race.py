"""An agent and a person's editor on the same memory at once, in two processes: nothing silently lost.

The agent inserts a line with a new token through the memory tools; the editor saves the way
editors do (read the file, write a temporary file, rename it over), adding a token of its own.
Every edit builds on the file it read, so a token can only disappear when a write based on an old
read replaces a newer file. memfs's writes are compare-and-swap, so the agent never does that:
every editor token must be in the final file. An editor's stale save can drop agent tokens from
the file, but only after git has them: every acknowledged agent token must be in git history.
``MEMFS_RACE_EDITS`` sets the edits per side (200 here, 2,000 in ``make faults``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memfs

EDITS = int(os.environ.get("MEMFS_RACE_EDITS", "200"))
NAME = "memories/users/alice/shared.md"

AGENT = """
import sys, time
from pathlib import Path
import memfs
from memfs.tools import MemoryTools
root, edits, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
acknowledged = []
with memfs.Vault.open(root, durable=False, lock_timeout=30) as vault:
    tools = MemoryTools(vault, "users/alice", session="race")
    for i in range(edits):
        token = f"agent-{i:05d}"
        result = tools.call({"command": "insert", "path": "/memories/shared.md", "insert_line": 6,
                             "insert_text": token})
        if not result.is_error:
            acknowledged.append(token)
        elif "changed" not in result.text and "saved by another program" not in result.text:
            print("UNEXPECTED", result.text, file=sys.stderr)
print(" ".join(acknowledged))
"""

EDITOR = """
import os, random, sys, time
from pathlib import Path
path, edits, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
for j in range(edits):
    text = path.read_text()
    tmp = path.with_name(".shared.md.swp")
    tmp.write_text(text + f"editor-{j:05d}\\n")
    os.replace(tmp, path)
    time.sleep(random.random() * 0.04)  # an edit about as often as the agent's
print("done")
"""


def history_text(root: Path) -> str:
    out = subprocess.run(["git", "-C", str(root), "log", "-p", "--format=%H", "--", NAME],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return out.stdout


@pytest.mark.faults
@pytest.mark.parametrize("watcher", [False, True], ids=["no-watcher", "watcher"])
def test_agent_and_editor_racing_lose_nothing(tmp_path: Path, watcher: bool) -> None:
    root, go = tmp_path / "vault", tmp_path / "go"
    with memfs.Vault.open(root, durable=False, create=True, person="Alice <alice@example.com>") as vault:
        vault.memories("users/alice").add("Shared notes.", title="Shared", path="shared.md")
        watching = vault.watch(index_delay=0.05, commit_delay=0.2) if watcher else None
        agent = subprocess.Popen([sys.executable, "-c", AGENT, str(root), str(EDITS), str(go)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        editor = subprocess.Popen([sys.executable, "-c", EDITOR, str(root / NAME), str(EDITS), str(go)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(0.5)
        go.touch()
        agent_out, agent_err = agent.communicate(timeout=600)
        editor.communicate(timeout=600)
        if watching is not None:
            watching.stop()
        vault.engine.commit_outside_edits([NAME])
    assert agent.returncode == 0 and "UNEXPECTED" not in agent_err, agent_err[-2000:]
    acknowledged = agent_out.split()
    assert len(acknowledged) >= EDITS // 4  # most agent edits get through
    final = (root / NAME).read_text()
    missing_editor = [f"editor-{j:05d}" for j in range(EDITS) if f"editor-{j:05d}" not in final]
    conflict_copies = "".join(p.read_text() for p in (root / NAME).parent.glob("shared.conflict-*"))
    missing_editor = [t for t in missing_editor if t not in conflict_copies]
    assert missing_editor == [], f"{len(missing_editor)} editor saves silently lost, e.g. {missing_editor[:5]}"
    history = history_text(root)
    missing_agent = [t for t in acknowledged if t not in history]
    assert missing_agent == [], f"{len(missing_agent)} acknowledged agent edits not in git, e.g. {missing_agent[:5]}"
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "memories"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert status.stdout == ""
