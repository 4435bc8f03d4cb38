"""A file system that answers a write with 0 bytes written (full, FUSE): refused, rolled back, nothing lost.

``os.write`` may return 0 for a non-empty buffer instead of raising ENOSPC. A loop that asks again
would spin forever at full CPU holding the vault lock; memfs treats it as a full disk. The fault
seam's ``stall`` makes every write from the planned one on write nothing, through the real code.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from faults import Tally, run_scenario

import memfs
from memfs import _fs


def assert_clean(tally: Tally) -> None:
    assert tally.problems == [], "\n".join(tally.problems[:20])
    assert tally.lost == 0 and tally.torn == 0


STALLED = ["session append", "memory update", "batch", "session pop", "conversation management", "undo"]


@pytest.mark.parametrize("name", STALLED)
def test_a_write_that_makes_no_progress_is_a_full_disk_at_any_operation(tmp_path: Path, name: str) -> None:
    tally = run_scenario(tmp_path / "vault", name, faults=("stall",))
    assert tally.faulted >= 1 and tally.refused >= 1
    assert_clean(tally)


def test_a_stalled_session_append_raises_enospc_and_the_transcript_reads_as_before(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "vault", create=True) as vault:
        session = vault.session("chat")
        session.append([{"role": "user", "content": "message 1"}, {"role": "assistant", "content": "message 2"}])
        path = vault.root / "sessions/chat.md"
        before, head = path.read_bytes(), vault.history.head()
        with _fs.faults(_fs.FaultPlan(at=1, fault="stall", only="write")), pytest.raises(OSError) as raised:
            session.append([{"role": "user", "content": "message 3 " * 500}])
        assert raised.value.errno == errno.ENOSPC and "wrote nothing" in str(raised.value)
        assert path.read_bytes() == before and vault.history.head() == head
        session.append([{"role": "user", "content": "message 3"}])  # the lock was let go; the next write works
        assert [m["content"] for m in session.history()] == ["message 1", "message 2", "message 3"]


def test_write_all_and_write_back_refuse_a_write_of_nothing(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for write in (_fs.write_all, _fs.write_back):
            with _fs.faults(_fs.FaultPlan(at=1, fault="stall")) as plan, pytest.raises(OSError) as raised:
                write(fd, b"some bytes")
            assert raised.value.errno == errno.ENOSPC and plan.stalls == 1
        assert os.fstat(fd).st_size == 0
    finally:
        os.close(fd)
