"""Fact recall: memory search over LoCoMo's observations, as shared/data/locomo-dev/README.md describes.

    python bench/fact_recall.py          # JSON on stdout, a minute or two

For each development conversation, in a fresh vault, every observation is stored as one memory (its
text as the body) through the public store API; every question of categories 1-4 with a gold fact
(a fact whose turn is among the question's evidence) searches the namespace, 10 hits. Reported: the
first-5 hit rate, Recall@5, Recall@10 and MRR@10, overall and per category, and the search latency.
Used to check that a change of the analyzer (accent folding, CJK bigrams) costs English nothing.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import memfs  # noqa: E402

_IDS = re.compile(r"D\d+:\d+")


def _facts(data: dict[str, Any]) -> list[tuple[str, set[str]]]:
    found = []
    for key, value in data.items():
        if key.endswith("_observation") and isinstance(value, dict):
            for items in value.values():
                for item in items:
                    text, ids = item[0], item[1] if len(item) > 1 else []
                    ids = [ids] if isinstance(ids, str) else ids
                    found.append((str(text), {i for raw in ids for i in _IDS.findall(str(raw))}))
    return found


def main() -> dict[str, Any]:
    """Measure and return the figures (also printed as JSON)."""
    scores: dict[str, dict[str, list[float]]] = {}
    latency: list[float] = []
    for path in sorted(corpus.DATA.glob("*.json")):
        data = json.loads(path.read_text())
        facts = _facts(data)
        with tempfile.TemporaryDirectory() as folder, memfs.Vault.open(folder, create=True, durable=False) as vault:
            store = vault.memories("facts")
            paths = []
            with store.together():
                for n, (text, _) in enumerate(facts):
                    store.write_text(f"f{n:05d}.md", text + "\n", create=True)
                    paths.append(f"memories/facts/f{n:05d}.md")
            turns = [ids for _, ids in facts]
            for q in data["qa"]:
                if q.get("category") not in (1, 2, 3, 4):
                    continue
                evidence = {i for raw in q.get("evidence", []) for i in _IDS.findall(str(raw))}
                gold = {paths[n] for n, ids in enumerate(turns) if ids & evidence}
                if not gold:
                    continue
                start = time.perf_counter()
                hits = [h.path for h in store.search(q["question"], k=10)]
                latency.append(time.perf_counter() - start)
                first = next((r for r, p in enumerate(hits, 1) if p in gold), None)
                row = {
                    "hit@5": float(first is not None and first <= 5),
                    "R@5": len(gold & set(hits[:5])) / len(gold),
                    "R@10": len(gold & set(hits)) / len(gold),
                    "MRR@10": 1 / first if first else 0.0,
                }
                for cat in ("all", str(q["category"])):
                    bucket = scores.setdefault(cat, {})
                    for name, value in row.items():
                        bucket.setdefault(name, []).append(value)
    result = {
        cat: {name: round(statistics.fmean(v), 3) for name, v in m.items()} | {"n": len(m["R@5"])}
        for cat, m in sorted(scores.items())
    }
    result["latency_ms"] = {
        "p50": round(statistics.median(latency) * 1000, 2),
        "p95": round(sorted(latency)[int(0.95 * (len(latency) - 1))] * 1000, 2),
    }
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
