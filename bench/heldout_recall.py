"""Fact recall on a corpus the fusion weight was not tuned on: PrefEval's stated preferences (issue #25).

    pip install -e '.[dev,bench]'
    python bench/heldout_recall.py --prefeval <PrefEval>/benchmark_dataset/explicit_preference \\
        [--pool topic|all] [--weights 0.5 0.6 0.8]   # JSON on stdout

The weight of the model in memfs's fused score (``semantic.SEMANTIC_WEIGHT``) was chosen on the
LoCoMo development conversations (bench/fact_recall.py). This runs the same rankings, with the same
code, on another public corpus: PrefEval ("Do LLMs Recognize Your Preferences? Evaluating
Personalized Preference Following in LLMs", Zhao et al., 2025, arXiv 2502.09597; the public repository
amazon-science/PrefEval, CC BY-NC 4.0), its explicit preferences: 1,000 things a user says of
themselves in 20 topics ("I have a severe peanut allergy, so I must avoid any foods containing
peanuts"), each with a request the user makes later in other words, where the preference matters
("I'm visiting Thailand next month. What are some authentic Thai restaurants you would recommend?").

Each preference is stored as one memory (its text as the body) through ``MemoryStore.add``; each
request is searched (10 hits) and its gold facts are the memories holding its own preference's text
(a dozen preferences appear in two topics: both copies count). ``--pool topic`` (the default): a
fresh vault per topic, 31-62 memories, all on the same subject; ``--pool all``: the 1,000 in one
vault. The rows and metrics are bench/fact_recall.py's (its ``measure``), ``by_category`` per topic.
``paired``: each other ranking against memfs as shipped on the same questions: how many questions
only one of the two has a gold fact in its first 5, and a 95% bootstrap interval (2,000 resamples of
the questions, seed 0) of the difference in first-5 hit rate and in MRR@10 (memfs minus the other).
Nothing of PrefEval is kept in this repository: give the folder of a checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fact_recall  # noqa: E402

from memfs import semantic  # noqa: E402


def topic(path: Path) -> list[dict[str, str]]:
    """One topic file of PrefEval's explicit preferences: its entries (``preference``, ``question``)."""
    entries = json.loads(path.read_text())
    if not isinstance(entries, list) or not all("preference" in e and "question" in e for e in entries):
        raise SystemExit(f"{path}: not a PrefEval explicit-preference file (a list of preference/question entries)")
    return entries


def conversation(name: str, entries: list[tuple[str, dict[str, str]]]) -> dict[str, Any]:
    """Facts and questions in bench/facts.py's shape: one fact a preference, its request the question."""
    facts = [{"text": e["preference"].strip()} for _, e in entries]
    same: dict[str, set[int]] = {}
    for i, fact in enumerate(facts):
        same.setdefault(fact["text"], set()).add(i)
    questions = [
        {"text": e["question"].strip(), "category": category, "gold": same[e["preference"].strip()]}
        for category, e in entries
    ]
    return {"name": name, "facts": facts, "questions": questions}


def conversations(folder: Path, pool: str) -> list[dict[str, Any]]:
    """PrefEval's topics as vaults: one a topic (``pool="topic"``) or all in one (``pool="all"``)."""
    topics = [(path.stem, [(path.stem, e) for e in topic(path)]) for path in sorted(folder.glob("*.json"))]
    if pool == "all":
        return [conversation("all", [entry for _, entries in topics for entry in entries])]
    return [conversation(name, entries) for name, entries in topics]


def paired(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], resamples: int = 2000) -> dict[str, Any]:
    """memfs against another ranking on the same questions (rows in the same order): who wins where."""
    hits = np.array([[a["hit@5"], b["hit@5"]] for a, b in zip(ours, theirs, strict=True)])
    mrr = np.array([a["MRR@10"] - b["MRR@10"] for a, b in zip(ours, theirs, strict=True)])
    hit = hits[:, 0] - hits[:, 1]
    picks = np.random.default_rng(0).integers(0, len(hit), size=(resamples, len(hit)))
    out: dict[str, Any] = {"only_memfs_hits@5": int((hit > 0).sum()), "only_other_hits@5": int((hit < 0).sum())}
    for name, diff in (("hit@5", hit), ("MRR@10", mrr)):
        means = diff[picks].mean(axis=1)
        out[f"{name}_diff"] = round(float(diff.mean()), 3)
        out[f"{name}_diff_95"] = [round(float(np.quantile(means, q)), 3) for q in (0.025, 0.975)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefeval", type=Path, required=True, help="<PrefEval>/benchmark_dataset/explicit_preference")
    parser.add_argument("--pool", choices=("topic", "all"), default="topic", help="a vault per topic, or one vault")
    parser.add_argument("--weights", type=float, nargs="*", default=[], help="other shares of the model to try")
    args = parser.parse_args()
    if not args.prefeval.is_dir():
        parser.error(
            f"--prefeval {args.prefeval}: no such folder (give <PrefEval>/benchmark_dataset/explicit_preference)"
        )
    convs = conversations(args.prefeval, args.pool)
    if not convs or not convs[0]["facts"]:
        parser.error(f"--prefeval {args.prefeval}: no topic files (*.json) in it")
    embedder = semantic.default_embedder()
    results = fact_recall.measure(convs, args.weights, embedder)
    report = {
        "corpus": "PrefEval explicit_preference",
        "data": str(args.prefeval),
        "pool": args.pool,
        "vaults": len(convs),
        "facts": sum(len(c["facts"]) for c in convs),
        "questions": sum(len(c["questions"]) for c in convs),
        "embedder": embedder.model_id if embedder else None,
        "semantic_weight": semantic.SEMANTIC_WEIGHT,
        "load": os.getloadavg()[0],
    }
    report |= {name: fact_recall.summary(rows, lat) for name, (rows, lat) in results.items()}
    if "memfs" in results:
        ours = results["memfs"][0]
        report["paired"] = {name: paired(ours, rows) for name, (rows, _) in results.items() if name != "memfs"}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
