"""Fact recall: memory search over stored facts, asked in other words (issue #25).

    pip install -e '.[dev,bench]'
    python bench/fact_recall.py [--data DIR] [--weights 0.5 0.6 0.7 0.8]   # JSON on stdout

The protocol of ../shared/data/locomo-dev/README.md, "Fact recall": for each conversation a fresh
vault, every observation stored as one memory (its text as the body) through ``MemoryStore.add``,
and every question of categories 1-4 with a gold fact searched in that namespace, 10 hits. Reported
beside each other, on the same facts in the same run:

- ``memfs``: ``MemoryStore.search`` as shipped (words and meaning fused when the model is installed);
- ``memfs_lexical``: the same with ``semantic=False`` (BM25F alone, as before issue #25);
- ``bm25s``: bm25s with English stop words and PyStemmer's Snowball English stemmer;
- ``model``: the bundled embedding model alone (cosine of the question's and the fact's vectors);
- ``weights`` (with ``--weights``): memfs with other shares of the model in the fused score.

Each row: the first-5 hit rate (a gold fact in the first 5), Recall@5 and @10 (share of the gold
facts), MRR@10, overall and per category, and search latency (p50, p95 ms, the query's embedding
included). ``--data`` takes another folder of LoCoMo-format conversations (the held-out protocol).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus  # noqa: E402
import facts  # noqa: E402

import memfs  # noqa: E402
from memfs import semantic  # noqa: E402


def summary(rows: list[dict[str, Any]], latencies: list[float] | None = None) -> dict[str, Any]:
    metrics = ("hit@5", "R@5", "R@10", "MRR@10")
    out: dict[str, Any] = {m: round(statistics.fmean(r[m] for r in rows), 3) for m in metrics}
    cats: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        cats.setdefault(row["category"], []).append(row)
    out["by_category"] = {c: {"hit@5": round(statistics.fmean(r["hit@5"] for r in rs), 3), "n": len(rs)}
                          for c, rs in sorted(cats.items())}  # fmt: skip
    if latencies:
        ordered = sorted(latencies)
        out["latency_ms"] = {"p50": round(statistics.median(ordered), 2),
                             "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2)}  # fmt: skip
    return out


def memfs_rows(conv: dict[str, Any], folder: Path, weights: list[float]) -> dict[str, tuple[list[Any], list[float]]]:
    """Per setting, the per-question rows and latencies of memfs's own search over a fresh vault."""
    vault = memfs.Vault.open(folder / "vault", create=True, durable=False)
    store = memfs.MemoryStore(vault, "facts")
    index_of: dict[str, int] = {}
    with vault.batch("facts"):
        for i, fact in enumerate(conv["facts"]):
            index_of[store.add(fact["text"]).path] = i
    vault.engine.catalog.embed()  # what `memfs reindex` does after a bulk import: no search pays for it
    settings: dict[str, tuple[bool, float]] = {"memfs": (True, semantic.SEMANTIC_WEIGHT), "memfs_lexical": (False, 0)}
    settings |= {f"memfs_w{w}": (True, w) for w in weights}
    out: dict[str, tuple[list[Any], list[float]]] = {}
    for name, (by_meaning, weight) in settings.items():
        if by_meaning and vault.semantic is None:
            continue
        vault.engine.catalog.semantic_weight = weight
        rows, latencies = [], []
        for q in conv["questions"]:
            start = time.perf_counter()
            hits = store.search(q["text"], k=10, semantic=by_meaning)
            latencies.append((time.perf_counter() - start) * 1000)
            ranked = [index_of[h.path] for h in hits if h.path in index_of]
            rows.append(facts.scores(ranked, q["gold"]) | {"category": q["category"]})
        out[name] = (rows, latencies)
    vault.close()
    return out


def bm25s_rows(conv: dict[str, Any]) -> list[dict[str, Any]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    texts = [f["text"] for f in conv["facts"]]
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    rows = []
    for q in conv["questions"]:
        tokens = bm25s.tokenize([q["text"]], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = retriever.retrieve(tokens, k=min(10, len(texts)), show_progress=False)
        ranked = [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
        rows.append(facts.scores(ranked, q["gold"]) | {"category": q["category"]})
    return rows


def model_rows(conv: dict[str, Any], embedder: semantic.Embedder) -> tuple[list[dict[str, Any]], list[float]]:
    passages = semantic.normalized(embedder.embed_passages([f["text"] for f in conv["facts"]]), embedder.dimension)
    rows, latencies = [], []
    for q in conv["questions"]:
        start = time.perf_counter()
        vector = semantic.normalized(embedder.embed_queries([q["text"]]), embedder.dimension)[0]
        ranked = list(np.argsort(-(passages @ vector), kind="stable")[:10])
        latencies.append((time.perf_counter() - start) * 1000)
        rows.append(facts.scores([int(i) for i in ranked], q["gold"]) | {"category": q["category"]})
    return rows, latencies


def measure(
    conversations: list[dict[str, Any]], weights: list[float], embedder: semantic.Embedder | None
) -> dict[str, tuple[list[dict[str, Any]], list[float]]]:
    """Per ranking, the rows and latencies of every question of ``conversations`` (a fresh vault each)."""
    results: dict[str, tuple[list[Any], list[float]]] = {}
    for conv in conversations:
        with tempfile.TemporaryDirectory() as tmp:
            for name, (rows, lat) in memfs_rows(conv, Path(tmp), weights).items():
                results.setdefault(name, ([], []))[0].extend(rows)
                results[name][1].extend(lat)
        results.setdefault("bm25s", ([], []))[0].extend(bm25s_rows(conv))
        if embedder is not None:
            rows, lat = model_rows(conv, embedder)
            results.setdefault("model", ([], []))[0].extend(rows)
            results["model"][1].extend(lat)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=corpus.DATA, help="a folder of LoCoMo-format conversations")
    parser.add_argument("--weights", type=float, nargs="*", default=[], help="other shares of the model to try")
    args = parser.parse_args()
    conversations = facts.conversations(args.data)
    if not conversations:
        parser.error(f"no conversations (*.json) in {args.data}")
    embedder = semantic.default_embedder()
    results = measure(conversations, args.weights, embedder)
    report = {
        "data": str(args.data), "conversations": [c["name"] for c in conversations],
        "facts": sum(len(c["facts"]) for c in conversations),
        "questions": sum(len(c["questions"]) for c in conversations),
        "model": embedder.model_id if embedder else None, "semantic_weight": semantic.SEMANTIC_WEIGHT,
        "load": os.getloadavg()[0],
    }  # fmt: skip
    report |= {name: summary(rows, lat) for name, (rows, lat) in results.items()}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
