"""The fault harness: every public write path, failed at each of its operations in turn.

Every operation by which memfs changes a vault passes through ``memfs._fs.checkpoint`` (the I/O
seam). A scenario is one public write (a memory update, a batch, a tool command, a session
append, a watcher commit, ...). The harness first runs it clean to count its operations, then
runs it again failing the 1st, 2nd, ... operation with ENOSPC, EIO or a short write (or killing
the process there, in a child), and after each fault checks the invariants:

- a call that returned is in git (HEAD holds exactly the files on disk);
- a call that raised changed nothing (files and HEAD as before);
- every memory and transcript parses; no temp file is left; the journal is gone;
- the next write succeeds at once, and after a reopen the index matches the files.

Used by tests/test_faults.py (a fast subset in ``make test``) and ``make faults`` (all of it).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import memfs
from memfs import _fs, transcript
from memfs.documents import loads
from memfs.tools import MemoryTools

NS = "users/alice"
Action = Callable[[memfs.Vault], object]


@dataclass
class Tally:
    """What a harness run did: operations faulted, processes killed, writes acknowledged, and losses."""

    faulted: int = 0
    kills: int = 0
    acknowledged: int = 0
    refused: int = 0
    lost: int = 0
    torn: int = 0
    slowest_next_write: float = 0.0
    problems: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("faulted", "kills", "acknowledged", "refused", "lost", "torn"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.slowest_next_write = max(self.slowest_next_write, other.slowest_next_write)
        self.problems += other.problems

    def next_write(self, vault: memfs.Vault) -> None:
        """The write after a fault: it must succeed at once (its time is recorded, not asserted)."""
        start = time.perf_counter()
        _bump(vault, "after.md")
        self.slowest_next_write = max(self.slowest_next_write, time.perf_counter() - start)


def _seed(vault: memfs.Vault) -> None:
    store = vault.memories(NS)
    for name, text in (("tea", "Alice drinks green tea."), ("seat", "Alice prefers the window seat.")):
        if not (vault.root / f"memories/{NS}/{name}.md").exists():
            store.add(text, title=name.capitalize(), path=f"{name}.md")
    session = vault.session("chat")
    if not session.history():
        session.append([{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])


def _bump(vault: memfs.Vault, name: str = "tea.md") -> None:
    store = vault.memories(NS)
    if name not in store:
        store.add("Alice drinks tea.", title="Tea", path=name)
    store.update(name, body=f"Alice drinks tea ({os.urandom(3).hex()}).\n")


def _tools(vault: memfs.Vault) -> MemoryTools:
    return MemoryTools(vault, NS, session="faults")


def _tool(command: str, **args: object) -> Action:
    def run(vault: memfs.Vault) -> None:
        result = _tools(vault).call({"command": command, **args})
        if result.is_error:
            raise memfs.ToolCallError(result.text)

    return run


def _prepare_for_rename(vault: memfs.Vault) -> None:
    store = vault.memories(NS)
    if "moved.md" in store:
        store.move("moved.md", "seat.md")


def _hand_edit(vault: memfs.Vault) -> None:
    path = vault.root / f"memories/{NS}/tea.md"
    path.write_text(path.read_text() + f"A person adds a line ({os.urandom(3).hex()}).\n")


def _batch(vault: memfs.Vault) -> None:
    store = vault.memories(NS)
    with vault.batch("import three"):
        for i in range(3):
            name = f"batch-{i}.md"
            if name in store:
                store.update(name, body=f"batch {i} {os.urandom(2).hex()}\n")
            else:
                store.add(f"batch {i}", title=f"Batch {i}", path=name)


def _undo(vault: memfs.Vault) -> None:
    vault.undo(author="memfs agent")


def _managed_append(vault: memfs.Vault) -> None:
    session = vault.session("managed", manager=memfs.SlidingWindowConversationManager(window_size=2))
    session.append([{"role": "user", "content": f"turn {os.urandom(2).hex()}"}])


#: name -> (preparation without faults, the faulted public write)
SCENARIOS: dict[str, tuple[Action | None, Action]] = {
    "memory add": (None, lambda v: v.memories(NS).add(f"note {os.urandom(3).hex()}", title="Note")),
    "memory update": (None, _bump),
    "memory delete": (lambda v: _bump(v, "gone.md"), lambda v: v.memories(NS).delete("gone.md")),
    "memory move": (_prepare_for_rename, lambda v: v.memories(NS).move("seat.md", "moved.md")),
    "memory restore": (lambda v: _bump(v, "old.md"), lambda v: v.memories(NS).restore("old.md", "HEAD~1")),
    "undo": (lambda v: _bump(v, "undo-me.md"), _undo),
    "batch": (None, _batch),
    "tool create": (None, lambda v: _tool("create", path=f"/memories/t-{os.urandom(3).hex()}.md", file_text="x\n")(v)),
    "tool str_replace": (None, _tool("str_replace", path="/memories/tea.md", old_str="Alice", new_str="Alice")),
    "tool insert": (None, _tool("insert", path="/memories/tea.md", insert_line=6, insert_text="more")),
    "tool delete": (lambda v: _bump(v, "bye.md"), _tool("delete", path="/memories/bye.md")),
    "tool rename": (_prepare_for_rename, _tool("rename", old_path="/memories/seat.md", new_path="/memories/moved.md")),
    "session append": (None, lambda v: v.session("chat").append([{"role": "user", "content": "more"}])),
    "session pop": (
        lambda v: v.session("chat").append([{"role": "user", "content": "to pop"}]),
        lambda v: v.session("chat").pop(),
    ),
    "session clear": (
        lambda v: v.session("short").append([{"role": "user", "content": "x"}]),
        lambda v: v.session("short").clear(),
    ),
    "conversation management": (None, _managed_append),
    "watcher commit": (_hand_edit, lambda v: v.engine.commit_outside_edits([f"memories/{NS}/tea.md"])),
}
FAST = ("memory update", "batch", "tool str_replace", "session append", "watcher commit")
#: what a killed scenario may legitimately take out of git (its commit may land before the kill)
MAY_REMOVE = {"memory delete": "gone.md", "tool delete": "bye.md", "memory move": "seat.md",
              "tool rename": "seat.md", "undo": "undo-me.md"}  # fmt: skip
KILLS = tuple(sorted(SCENARIOS))


def snapshot(vault: memfs.Vault) -> dict[str, bytes]:
    """Every file under the content folders, by vault path."""
    files = {}
    for top in ("memories", "sessions"):
        for path in sorted((vault.root / top).rglob("*")):
            if path.is_file() and not path.is_symlink():
                files[path.relative_to(vault.root).as_posix()] = path.read_bytes()
    return files


def committed(vault: memfs.Vault) -> dict[str, str]:
    """The blob id of every file under the content folders as HEAD has it."""
    out = subprocess.run(["git", "-C", str(vault.root), "ls-tree", "-r", "-z", "HEAD"],
                         capture_output=True, check=True).stdout.decode()  # fmt: skip
    found = {}
    for record in filter(None, out.split("\0")):
        meta, _, name = record.partition("\t")
        if name.startswith(("memories/", "sessions/")):
            found[name] = meta.split()[2]
    return found


def blob_ids(files: dict[str, bytes]) -> dict[str, str]:
    """The git blob id of each file's bytes (what HEAD must hold for them)."""
    return {rel: hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() for rel, data in files.items()}


def check(vault: memfs.Vault, tally: Tally, label: str) -> None:
    """The invariants every fault must leave true."""
    files = snapshot(vault)
    for rel, data in files.items():
        if _fs.TEMP_PREFIX in rel:
            tally.problems.append(f"{label}: temp file left: {rel}")
            continue
        try:
            if rel.startswith("sessions/"):
                parsed = transcript.parse(data, path=rel)
                if parsed.problems:
                    tally.torn += 1
                    tally.problems.append(f"{label}: {rel} has a broken entry: {parsed.problems[0].reason}")
            else:
                loads(data.decode("utf-8"), path=rel)
        except (memfs.DocumentError, UnicodeDecodeError) as exc:
            tally.torn += 1
            tally.problems.append(f"{label}: {rel} does not parse: {exc}")
    if (vault.root / ".memfs/journal").exists():
        tally.problems.append(f"{label}: the journal was left behind")


def run_scenario(root: Path, name: str, *, faults: tuple[str, ...] = ("enospc", "eio", "short"),
                 every: int = 1) -> Tally:  # fmt: skip
    """Fail each ``every``-th operation of one scenario with each fault; the invariants after each."""
    prepare, action = SCENARIOS[name]
    tally = Tally()
    with memfs.Vault.open(root, durable=False, lock_timeout=5, create=True) as vault:
        _seed(vault)
        if prepare:
            prepare(vault)
        with _fs.faults(_fs.FaultPlan(at=10**9)) as counting:
            action(vault)
        operations = len(counting.seen)
        for at in range(1, operations + 1, every):
            for fault in faults:
                if prepare:
                    prepare(vault)
                label = f"{name} #{at}/{operations} {fault}"
                files_before, head_before = snapshot(vault), vault.history.head()
                plan = _fs.FaultPlan(at=at, fault=fault)
                try:
                    with _fs.faults(plan):
                        action(vault)
                except (OSError, memfs.MemfsError):
                    tally.refused += 1
                    if snapshot(vault) != files_before:
                        tally.problems.append(f"{label}: a call that raised changed files")
                    if vault.history.head() != head_before:
                        tally.lost += 1
                        tally.problems.append(f"{label}: a call that raised left a commit")
                else:
                    tally.acknowledged += 1
                    on_disk = blob_ids(snapshot(vault))
                    if committed(vault) != on_disk:
                        tally.lost += 1
                        tally.problems.append(f"{label}: a call that returned is not all in git")
                tally.faulted += plan.fired
                check(vault, tally, label)
                tally.next_write(vault)
    with memfs.Vault.open(root, durable=False) as again:  # after a reopen the index matches the files
        stale = [f.message for f in again.doctor() if f.check == "index" and f.severity != "ok"]
        tally.problems += [f"{name}: {m}" for m in stale]
        fsck = subprocess.run(["git", "-C", str(root), "fsck", "--no-progress"], capture_output=True, text=True)
        if fsck.returncode:
            tally.problems.append(f"{name}: git fsck: {fsck.stderr.strip()[:200]}")
    return tally


_CHILD = """
import sys
import memfs
from memfs import _fs
sys.path.insert(0, sys.argv[3])
import faults
name, at = sys.argv[2], int(sys.argv[4])
with memfs.Vault.open(sys.argv[1], durable=True, commit_edits=False) as vault:
    _, action = faults.SCENARIOS[name]
    with _fs.faults(_fs.FaultPlan(at=at, fault="kill")):
        action(vault)
print("returned")
"""


def run_kills(root: Path, name: str, points: list[int]) -> Tally:
    """Kill a child process at each of ``points`` (operation numbers) of a scenario; check after each."""
    prepare, _ = SCENARIOS[name]
    tally = Tally()
    here = str(Path(__file__).parent)
    with memfs.Vault.open(root, durable=False, create=True) as vault:
        _seed(vault)
    for at in points:
        with memfs.Vault.open(root, durable=False) as vault:
            if prepare:
                prepare(vault)
            acknowledged = committed(vault)
            own = set(vault.engine.own_uncommitted())
        child = subprocess.run([sys.executable, "-c", _CHILD, str(root), name, here, str(at)],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        killed = child.returncode == -9
        tally.kills += killed
        if not killed and child.returncode != 0:
            tally.problems.append(f"{name} kill at {at}: child failed: {child.stderr.strip()[-300:]}")
            continue
        with memfs.Vault.open(root, durable=False, lock_timeout=5) as vault:  # recovery runs here
            label = f"{name} killed at #{at}"
            check(vault, tally, label)
            now = committed(vault)
            gone = sorted(p for p in set(acknowledged) - set(now) if not p.endswith("/" + MAY_REMOVE.get(name, "-")))
            if gone:
                tally.lost += len(gone)
                tally.problems.append(f"{label}: acknowledged files gone from git: {gone}")
            own |= set(vault.engine.own_uncommitted())  # a transcript's unacknowledged tail, not yet committed
            dirty = sorted(k for k, v in blob_ids(snapshot(vault)).items() if now.get(k) != v and k not in own)
            if dirty:
                tally.problems.append(f"{label}: files differ from git after recovery: {dirty[:3]}")
            tally.next_write(vault)
    return tally


def operations_of(root: Path, name: str) -> int:
    """How many operations a scenario performs (its fault points)."""
    prepare, action = SCENARIOS[name]
    with memfs.Vault.open(root, durable=True, create=True) as vault:
        _seed(vault)
        if prepare:
            prepare(vault)
        with _fs.faults(_fs.FaultPlan(at=10**9)) as counting:
            action(vault)
    return len(counting.seen)
