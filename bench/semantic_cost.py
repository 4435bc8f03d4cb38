"""What search by meaning costs: per search at N memories, per memory embedded, and what a write pays.

    python bench/semantic_cost.py [--memories 10000] [--queries 100] [--keep DIR]   # JSON on stdout

``--keep DIR`` keeps the vault and its vectors in DIR and, on a later run with the same DIR and
sizes, opens it again instead of writing and embedding it anew (about 8 minutes of CPU at 10,000
memories): the search figures can then be taken again when the machine is quiet. A reused vault
reports no ``embed`` figures.

A vault of N memories stitched from LoCoMo turns, 15-40 words each (the size of what an extractor
writes; ``--words 100 400`` for bench/run.py's longer ones), written straight to disk as
bench/run.py does, then opened with the bundled model and embedded at once (``Vault.reindex``):

- ``embed``: CPU ms per memory embedded (one thread of the engine, as a search's budget spends it),
  over all N, and over a sample of 100 memories of 100-400 words;
- ``search``: LoCoMo questions searched across the vault, by words and meaning and by words alone
  (``semantic=False``), alternating, wall ms p50/p95; their difference is what meaning adds (the
  query's embedding included); ``query_embedding`` is the model's part alone;
- ``write``: ``MemoryStore.add`` p50 with the model and without it (a write embeds nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus  # noqa: E402

import memfs  # noqa: E402
from memfs.semantic import E5Embedder  # noqa: E402


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 2), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
            "n": len(ordered)}  # fmt: skip


def short_memories(n: int, words: tuple[int, int], seed: int = 3) -> list[dict[str, object]]:
    turns, _ = corpus.turns_and_questions()
    rng = random.Random(seed)
    out = []
    for i in range(n):
        target, picked = rng.randint(*words), []
        j = rng.randrange(len(turns))
        while len(picked) < target:
            picked += turns[j % len(turns)].split()
            j += rng.randint(1, 50)
        body = " ".join(picked[:target])
        out.append({"namespace": f"users/u{i % 20}", "slug": f"m{i:06d}", "title": " ".join(picked[:4]),
                    "type": "fact", "tags": [f"t{i % 30}"], "body": body})  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--words", type=int, nargs=2, default=(15, 40))
    parser.add_argument("--keep", type=Path, help="keep the embedded vault here, and reuse it if it is there")
    args = parser.parse_args()
    model = E5Embedder(threads=1)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="memfs-semantic-cost-"))
    made = folder / f"made-{args.memories}-{args.words[0]}-{args.words[1]}"
    report: dict[str, Any] = {"memories": args.memories, "words": list(args.words), "model": model.model_id,
                              "load_at_start": round(os.getloadavg()[0], 2)}  # fmt: skip
    try:
        reused = made.exists()
        if not reused:
            shutil.rmtree(folder / "vault", ignore_errors=True)
            corpus.write_vault(folder / "vault", short_memories(args.memories, tuple(args.words)))
        vault = memfs.Vault.open(folder / "vault", create=True, durable=False, embedder=model)
        start = time.process_time()
        embedded = vault.reindex().embedded
        report["reused_vault"] = reused
        if not reused:
            report["embed"] = {
                "memories": embedded,
                "cpu_ms_per_memory": round((time.process_time() - start) * 1000 / max(1, embedded), 2),
            }
            sample = [str(m["body"]) for m in corpus.memories(100, seed=5)]
            start = time.process_time()
            for text in sample:
                model.embed_passages([text])
            report["embed"]["cpu_ms_per_memory_100_400_words"] = round((time.process_time() - start) * 1000 / 100, 2)
        questions = corpus.questions(args.queries)
        vault.search(questions[0])
        both: dict[str, list[float]] = {"by_meaning": [], "by_words": [], "query_embedding": []}
        for q in questions[1:]:
            for name, by_meaning in (("by_meaning", True), ("by_words", False)):
                start = time.perf_counter()
                vault.search(q, k=10, semantic=by_meaning)
                both[name].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            model.embed_queries([q + " "])  # not the cached one
            both["query_embedding"].append((time.perf_counter() - start) * 1000)
        report["search"] = {name: stats(samples) for name, samples in both.items()}
        report["search"]["meaning_adds_p50_ms"] = round(
            statistics.median(a - b for a, b in zip(both["by_meaning"], both["by_words"], strict=True)), 2
        )
        writes: dict[str, list[float]] = {"with_model": [], "without_model": []}
        if args.keep:  # what this run writes is not kept: the next run searches the same vault
            vault.close()
            shutil.copytree(folder / "vault", folder / "scratch", symlinks=True, dirs_exist_ok=False)
            made.touch()
            vault = memfs.Vault.open(folder / "scratch", durable=False, embedder=model)
        plain = memfs.Vault.open(vault.root, durable=False, embedder=None)
        for i in range(30):
            for name, v in (("with_model", vault), ("without_model", plain)):
                start = time.perf_counter()
                v.memories("users/w").add(f"Write {name} {i}: the parcel arrives on day {i}.")
                writes[name].append((time.perf_counter() - start) * 1000)
        plain.close()
        report["write"] = {name: stats(samples) for name, samples in writes.items()}
        vault.close()
        report["load_at_end"] = round(os.getloadavg()[0], 2)
    finally:
        shutil.rmtree(folder / "scratch" if args.keep else folder, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
