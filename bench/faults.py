"""The whole fault harness (``make faults``): every write path failed at every operation, killed at
200 random operations, and an agent racing an editor for 2,000 edits a side. Prints JSON figures
and exits non-zero if anything acknowledged was lost or anything torn was left.

    python bench/faults.py [--kills 200] [--race 2000] [--only NAME] [--seed TEXT]

CI runs a sample of it (``make faults-ci``): every path faulted at every operation as here, but
fewer kills and a shorter race, with the kill points drawn from a seed that changes with each
commit, so successive runs of CI cover different points while any one run can be repeated.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from faults import KILLS, SCENARIOS, Tally, operations_of, run_kills, run_scenario  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200, help="kill points per write path")
    parser.add_argument("--race", type=int, default=2000, help="edits per side in the agent-editor race")
    parser.add_argument("--only", help="one scenario")
    parser.add_argument(
        "--seed", default="", help="drawn with each path's name into its kill points (a commit id in CI)"
    )
    args = parser.parse_args()
    names = [args.only] if args.only else sorted(SCENARIOS)
    machine = f"{os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}"
    report: dict[str, object] = {"date": date.today().isoformat(), "seed": args.seed, "machine": machine}
    total = Tally()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        faults: dict[str, object] = {}
        for name in names:
            tally = run_scenario(Path(scratch) / f"f-{len(faults)}", name, faults=("enospc", "eio", "short", "full"))
            faults[name] = {"operations faulted": tally.faulted, "acknowledged": tally.acknowledged,
                            "refused": tally.refused, "lost": tally.lost, "torn": tally.torn}  # fmt: skip
            total.add(tally)
        report["faults"] = faults
        kills: dict[str, object] = {}
        for name in [n for n in KILLS if n in names]:
            operations = operations_of(Path(scratch) / f"count-{name}".replace(" ", "-"), name)
            points = sorted(random.Random(name + args.seed).choices(range(1, operations + 1), k=args.kills))
            tally = run_kills(Path(scratch) / f"k-{len(kills)}", name, points)
            kills[name] = {"kills": tally.kills, "lost": tally.lost, "torn": tally.torn,
                           "slowest next write (s)": round(tally.slowest_next_write, 3)}  # fmt: skip
            total.add(tally)
        report["kills"] = kills
    if args.race and not args.only:
        env = {**os.environ, "MEMFS_RACE_EDITS": str(args.race)}
        test = str(HERE.parent / "tests" / "test_race.py")
        race = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
                              env=env, capture_output=True, text=True)  # fmt: skip
        last = race.stdout.strip().splitlines()[-1] if race.stdout.strip() else race.stderr[-300:]
        report["race"] = {"edits per side": args.race, "passed": race.returncode == 0, "result": last}
        if race.returncode:
            total.problems.append("agent-editor race: " + race.stdout[-1500:])
    report["total"] = {"operations faulted": total.faulted, "kills": total.kills, "acknowledged": total.acknowledged,
                       "refused": total.refused, "lost": total.lost, "torn": total.torn,
                       "slowest next write (s)": round(total.slowest_next_write, 3),
                       "problems": total.problems[:20], "seconds": round(time.perf_counter() - started)}  # fmt: skip
    print(json.dumps(report, indent=2))
    return 1 if total.problems or total.lost or total.torn else 0


if __name__ == "__main__":
    sys.exit(main())
