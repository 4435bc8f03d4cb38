"""The fault harness (tests/faults.py) over every public write path: nothing acknowledged is lost."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from faults import FAST, KILLS, SCENARIOS, Tally, operations_of, run_kills, run_scenario


def assert_clean(tally: Tally) -> None:
    assert tally.problems == [], "\n".join(tally.problems[:20])
    assert tally.lost == 0 and tally.torn == 0


@pytest.mark.parametrize("name", FAST)
def test_a_fault_at_any_operation_loses_nothing(tmp_path: Path, name: str) -> None:
    tally = run_scenario(tmp_path / "vault", name, faults=("enospc", "short", "full"))
    assert tally.faulted >= 3 and tally.refused >= 1
    assert_clean(tally)


@pytest.mark.faults
@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - set(FAST)))
def test_every_write_path_survives_a_fault_at_any_operation(tmp_path: Path, name: str) -> None:
    tally = run_scenario(tmp_path / "vault", name, faults=("enospc", "eio", "short", "full"))
    assert tally.faulted >= 1
    assert_clean(tally)


@pytest.mark.faults
@pytest.mark.parametrize("name", KILLS)
def test_a_kill_at_random_operations_loses_nothing_acknowledged(tmp_path: Path, name: str) -> None:
    operations = operations_of(tmp_path / "count", name)
    points = sorted(random.Random(name).sample(range(1, operations + 1), min(3, operations)))  # all: make faults
    tally = run_kills(tmp_path / "vault", name, points)
    assert tally.kills >= 1
    assert_clean(tally)


def test_the_harness_counts_operations_of_every_scenario(tmp_path: Path) -> None:
    assert operations_of(tmp_path / "vault", "memory update") >= 8  # temp file, fsync, swap, git objects, ...
