"""The path gate's cost: a memory read through the gate beside a plain read of the same file, same run.

Every read memfs makes of a vault file (a search hit's snippet, ``get``, a tool's view) opens the
folders one by one with ``O_NOFOLLOW`` (``memfs._fs.read_vault_file``); the baseline is
``Path.read_bytes``, which follows whatever links it meets. Prints JSON.

    python bench/gate.py [--reads 20000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memfs import _fs  # noqa: E402


def p50_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rel = "memories/users/alice/travel/window-seats.md"  # a memory four folders down
        (root / rel).parent.mkdir(parents=True)
        (root / rel).write_bytes(b"---\ntitle: Window seats\n---\n" + b"Alice prefers window seats. " * 40)
        plain, gated = [], []
        for _ in range(args.reads):  # interleaved, so load on the machine weighs on both alike
            start = time.perf_counter()
            (root / rel).read_bytes()
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            _fs.read_vault_file(root, rel, limit=None)
            gated.append(time.perf_counter() - start)
    print(json.dumps({"reads": args.reads, "depth": rel.count("/"), "plain_read_p50_us": p50_us(plain),
                      "gated_read_p50_us": p50_us(gated),
                      "extra_per_read_us": round(p50_us(gated) - p50_us(plain), 2)}))  # fmt: skip


if __name__ == "__main__":
    main()
