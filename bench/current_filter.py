"""The cost of searching only current memories: the default search beside ``history=True``, same run.

A vault of ``--memories`` memories (bench/corpus.py) where a share is superseded
(``superseded_by``), a share expired (``expires`` passed) and a share timed but current (an
``expires`` far ahead); the LoCoMo questions are searched (top 10, snippets) once with the
current-only filter (the default) and once without it (``history=True``), interleaved so load
on the machine weighs on both alike. Every default hit is checked to be current. Prints JSON.

    python bench/current_filter.py [--memories 3000] [--queries 300]
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

import corpus  # noqa: E402

import memfs  # noqa: E402


def p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e3, 2)


def mark(root: Path, paths: list[str], superseded: float, expired: float, timed: float) -> dict[str, int]:
    """Give shares of the memories validity keys (written straight to disk, indexed by the open)."""
    counts = {"superseded": 0, "expired": 0, "timed_current": 0}
    for i, rel in enumerate(paths):
        share = (i * 7919 % 1000) / 1000  # spread over the corpus, the same every run
        if share < superseded:
            key, value, kind = "superseded_by", f"mem_BENCH{(i + 1) % len(paths):020d}", "superseded"
        elif share < superseded + expired:
            key, value, kind = "expires", "2020-01-01", "expired"
        elif share < superseded + expired + timed:
            key, value, kind = "expires", "2999-01-01", "timed_current"
        else:
            continue
        text = (root / rel).read_text()
        (root / rel).write_text(text.replace("\n---\n", f"\n{key}: {value}\n---\n", 1))
        counts[kind] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--superseded", type=float, default=0.10)
    parser.add_argument("--expired", type=float, default=0.05)
    parser.add_argument("--timed", type=float, default=0.05)
    args = parser.parse_args()
    questions = corpus.questions(args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        memfs.Vault.open(root, create=True, durable=False).close()
        paths = corpus.write_vault(root, corpus.memories(args.memories))
        counts = mark(root, paths, args.superseded, args.expired, args.timed)
        with memfs.Vault.open(root, durable=False) as vault:
            vault.freshness = None  # the filter's cost alone, not the change check's
            for q in questions[:20]:  # warm the searcher and the stemmer cache
                vault.search(q)
                vault.search(q, history=True)
            current, history, wrong, short = [], [], 0, 0
            for q in questions:
                start = time.perf_counter()
                hits = vault.search(q, k=10)
                current.append(time.perf_counter() - start)
                start = time.perf_counter()
                every = vault.search(q, k=10, history=True)
                history.append(time.perf_counter() - start)
                wrong += sum(h.state != "current" for h in hits)
                short += len(hits) < min(10, len(every))
    print(json.dumps({
        "memories": args.memories, "queries": len(questions), **counts,
        "current_only_p50_ms": p50_ms(current), "history_p50_ms": p50_ms(history),
        "extra_p50_ms": round(p50_ms(current) - p50_ms(history), 2),
        "non_current_hits_returned": wrong, "searches_with_fewer_than_k_hits": short,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
