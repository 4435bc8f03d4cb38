"""Injection's relevance floor on the labelled set of issue #15: what the block holds, floor off and on.

    python bench/injection.py                   # also part of bench/run.py (--only injection)
    python bench/injection.py --memories 10000  # and the floor's cost in a vault of that many memories
    python bench/injection.py --semantic        # with the bundled embedding model: the floor by similarity

The labelled set is ``bench/data/injection.json`` (hand-written; its ``about`` notes say how and in
what order): example_vault's memories under one ``LongTermMemory`` over its three namespaces, with
questions split into a ``tune`` and a ``test`` half, twelve ``long`` messages, and a ``short`` set
(a vault of one-sentence memories, as an extractor writes them, with its own two halves and twelve
``added`` questions: several things at once, generic words). Each
question lists the memories a good answer needs (``relevant``) and those that would do no harm
(``acceptable``); for some nothing stored is relevant. Each question is the newest user message,
and what counts is what the block holds (``context_for``, the default budget). Prints JSON:

- ``before`` (``min_term_share=0, min_score_share=0``: every hit, as before the floor) and
  ``after`` (the defaults), per group (``tune``, ``test``, ``long``, ``short_tune``,
  ``short_test``, ``added``, and ``both_tune``/``both_test``: the two vaults' halves together):
  ``precision`` (injected memories that are relevant or acceptable), ``recall`` (relevant memories
  injected), ``f1``, ``empty_right`` (questions with nothing relevant stored whose block is empty),
  ``empty_wrong`` (questions with something relevant whose block is empty), ``per_question``.
- ``--semantic``: the vaults have the bundled model; the floor by words stays as chosen (the default
  shares) and the sweep is of ``min_similarity``, the cosine above which the model's hits join
  whatever words they share; ``chosen_on_tune`` is what ``SIMILARITY_FLOOR`` was set from.
- ``sweep``: ``both_tune`` and ``both_test`` for a grid of the two shares; ``chosen_on_tune`` is the
  pair with the best F1 on ``both_tune`` (ties: the higher recall, then the lower shares), which is
  what the defaults were set from.
- ``latency``: ``context_for`` per example_vault question, floor off and on alternating, p50 ms.
- ``misses``: on the test halves and the added questions with the defaults, the questions whose
  block holds a memory that is not acceptable, or lacks a relevant one.
- ``cost`` (with ``--memories``): in a vault of that many generated memories (``bench/corpus.py``),
  a ``LongTermMemory`` over three of its namespaces, CPU time per question (p50 ms): ``context_for``
  with the floor off and on, alternating, and the floor's one index call,
  ``Vault.document_frequencies``, alone.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import memfs  # noqa: E402
from memfs.longterm import SCORE_SHARE, SIMILARITY_FLOOR, TERM_SHARE  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "injection.json"
VAULT = ROOT / "example_vault"
_ENTRY = re.compile(r'^<memory path="([^"]*)"', re.M)
TERM_SHARES = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)
SIMILARITIES = (0.8, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87, 0.88, 0.9, 1.0)
EMBEDDER: Any = None  # what the vaults search with: None (words alone), or the bundled model (--semantic)
SCORE_SHARES = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def say(message: str) -> None:
    print(f"[injection] {message}", file=sys.stderr, flush=True)


def load(path: Path = DATA) -> dict[str, Any]:
    """The labelled set, checked: every label names a memory of its vault."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(data.get(key), list) for key in ("questions", "stores")):
        raise ValueError(f"{path}: needs 'stores' and 'questions' lists")
    short = data.get("short")
    if not isinstance(short, dict) or not isinstance(short.get("memories"), list):
        raise ValueError(f"{path}: needs a 'short' set with its 'memories'")
    held = {f"{short['stores'][0]}/{m['name']}" for m in short["memories"]}
    for rows, known in ((data["questions"] + data.get("long", []), None),
                        (short["questions"] + short.get("added", []), held)):  # fmt: skip
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("question"), str):
                raise ValueError(f"{path}: a question needs a 'question' string: {row!r:.200}")
            for name in row.get("relevant", []) + row.get("acceptable", []):
                if (name not in known) if known is not None else not (VAULT / "memories" / name).is_file():
                    raise ValueError(f"{path}: {row['question']!r} names {name}, which its vault does not hold")
    return data


def groups(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The questions by group: the halves of each vault's set, the long messages and the added questions."""
    short = data["short"]["questions"]
    return {"tune": [q for q in data["questions"] if q["half"] == "tune"],
            "test": [q for q in data["questions"] if q["half"] == "test"],
            "long": data.get("long", []),
            "short_tune": [q for q in short if q["half"] == "tune"],
            "short_test": [q for q in short if q["half"] == "test"],
            "added": data["short"].get("added", [])}  # fmt: skip


def merged(*scores: dict[str, Any]) -> dict[str, Any]:
    """Two groups' figures as one (counts added, ratios recomputed from them)."""
    total = {k: sum(s[k] for s in scores) for k in ("questions", "injected", "right", "found", "wanted",
                                                     "nothing_relevant", "nothing_empty", "empty_wrong")}  # fmt: skip
    return figures(total)


def figures(c: dict[str, int]) -> dict[str, Any]:
    precision = c["right"] / c["injected"] if c["injected"] else 1.0
    recall = c["found"] / c["wanted"] if c["wanted"] else 1.0
    return {**c, "precision": round(precision, 3), "recall": round(recall, 3),
            "f1": round(2 * precision * recall / (precision + recall), 3) if precision + recall else 0.0,
            "empty_right": round(c["nothing_empty"] / c["nothing_relevant"], 3) if c["nothing_relevant"] else None,
            "per_question": round(c["injected"] / max(1, c["questions"]), 2)}  # fmt: skip


def shown(manager: memfs.LongTermMemory, question: str) -> list[str]:
    block = manager.context_for([{"role": "user", "content": question}])
    return [html.unescape(p) for p in _ENTRY.findall(block)]


def score(manager: memfs.LongTermMemory, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision, recall and empty blocks of ``manager``'s injection for ``questions``."""
    c = dict.fromkeys(("injected", "right", "found", "wanted", "nothing_relevant", "nothing_empty", "empty_wrong"), 0)
    for q in questions:
        got = shown(manager, q["question"])
        relevant, fine = set(q["relevant"]), set(q["relevant"]) | set(q["acceptable"])
        c["injected"] += len(got)
        c["right"] += sum(p in fine for p in got)
        c["wanted"] += len(relevant)
        c["found"] += sum(p in relevant for p in got)
        if not relevant:
            c["nothing_relevant"] += 1
            c["nothing_empty"] += not got
        elif not got:
            c["empty_wrong"] += 1
    return figures({"questions": len(questions), **c})


def misses(manager: memfs.LongTermMemory, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for q in questions:
        got = shown(manager, q["question"])
        fine = set(q["relevant"]) | set(q["acceptable"])
        noise, lost = [p for p in got if p not in fine], [p for p in q["relevant"] if p not in got]
        if noise or lost:
            out.append({"question": q["question"], "injected_wrongly": noise, "relevant_left_out": lost})
    return out


def latency(managers: dict[str, memfs.LongTermMemory], questions: list[dict[str, Any]]) -> dict[str, Any]:
    """``context_for`` per question with each manager, alternating, three rounds."""
    samples: dict[str, list[float]] = {name: [] for name in managers}
    for _ in range(3):
        for q in questions:
            for name, manager in managers.items():
                start = time.perf_counter()
                manager.context_for([{"role": "user", "content": q["question"]}])
                samples[name].append((time.perf_counter() - start) * 1000)
    return {name: {"p50_ms": round(statistics.median(s), 2), "n": len(s)} for name, s in samples.items()}


def short_vault(folder: Path, data: dict[str, Any]) -> memfs.Vault:
    """A vault of the short set's one-sentence memories, written through the store as an extractor's are."""
    vault = memfs.Vault.open(folder, create=True, durable=False, embedder=EMBEDDER)
    store = vault.memories(data["stores"][0])
    with vault.batch("the short set"):
        for m in data["memories"]:
            store.add(m["body"], title=m["title"], path=m["name"])
    return vault


def run() -> dict[str, Any]:
    data = load()
    parts = groups(data)
    folder = Path(tempfile.mkdtemp(prefix="memfs-injection-"))
    try:
        shutil.copytree(VAULT, folder / "vault")
        example = memfs.Vault.open(folder / "vault", create=True, durable=False, embedder=EMBEDDER)
        short = short_vault(folder / "short", data["short"])
        where = {"tune": example, "test": example, "long": example, "short_tune": short, "short_test": short,
                 "added": short}  # fmt: skip
        stores = {example: data["stores"], short: data["short"]["stores"]}

        def measure(term: float, share: float, names: tuple[str, ...] = tuple(parts)) -> dict[str, Any]:
            """With --semantic, ``share`` is the similarity floor."""
            out = {}
            for name in names:
                vault = where[name]
                floors = {"min_similarity": share} if EMBEDDER else {"min_score_share": share}
                manager = memfs.LongTermMemory(vault, stores=stores[vault], min_term_share=term, **floors)
                out[name] = score(manager, parts[name])
            for half in ("tune", "test"):
                if half in out and f"short_{half}" in out:
                    out[f"both_{half}"] = merged(out[half], out[f"short_{half}"])
            return out

        say("before (no floor) and after (the defaults)")
        result: dict[str, Any] = {"labelled_set": str(DATA.relative_to(ROOT)),
                                  "defaults": {"min_term_share": TERM_SHARE, "min_score_share": SCORE_SHARE},
                                  "before": measure(0, -1 if EMBEDDER else 0),
                                  "after": measure(TERM_SHARE, SIMILARITY_FLOOR if EMBEDDER else SCORE_SHARE),
                                  }  # fmt: skip
        if EMBEDDER:
            result["defaults"] = {"min_term_share": TERM_SHARE, "min_similarity": SIMILARITY_FLOOR,
                                  "model": EMBEDDER.model_id}  # fmt: skip
        say("sweep")
        sweep = []
        second = "min_similarity" if EMBEDDER else "min_score_share"
        for term in (TERM_SHARE,) if EMBEDDER else TERM_SHARES:  # by meaning: the floor by words as chosen
            for share in SIMILARITIES if EMBEDDER else SCORE_SHARES:
                row = measure(term, share, ("tune", "test", "short_tune", "short_test"))
                sweep.append({"min_term_share": term, second: share,
                              **{h: {k: row[h][k] for k in ("precision", "recall", "f1", "empty_right")}
                                 for h in ("both_tune", "both_test")}})  # fmt: skip
        best = max(sweep, key=lambda r: (r["both_tune"]["f1"], r["both_tune"]["recall"], -r["min_term_share"],
                                         -r[second]))  # fmt: skip
        result["chosen_on_tune"] = {k: best[k] for k in ("min_term_share", second)}
        result["sweep"] = sweep
        say("latency, floor off and on")
        result["latency"] = latency({"off": memfs.LongTermMemory(example, stores=data["stores"], min_term_share=0,
                                                                 min_score_share=0),
                                     "on": memfs.LongTermMemory(example, stores=data["stores"])},
                                    data["questions"])  # fmt: skip
        result["misses"] = {}
        for name in ("test", "short_test", "added"):
            vault = where[name]
            result["misses"][name] = misses(memfs.LongTermMemory(vault, stores=stores[vault]), parts[name])
        example.close()
        short.close()
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cost(size: int, rounds: int = 2) -> dict[str, Any]:
    """CPU time per question of ``context_for`` (floor off, on) and of the floor's index call, at ``size`` memories."""
    import corpus

    folder = Path(tempfile.mkdtemp(prefix="memfs-injection-cost-"))
    try:
        items = corpus.memories(size, seed=1)
        say(f"cost: writing a vault of {size} memories")
        corpus.write_vault(folder / "vault", items)
        vault = memfs.Vault.open(folder / "vault", create=True, durable=False, embedder=EMBEDDER)
        stores = sorted({str(item["namespace"]) for item in items})[:3]
        managers = {"off": memfs.LongTermMemory(vault, stores=stores, min_term_share=0, min_score_share=0),
                    "on": memfs.LongTermMemory(vault, stores=stores)}  # fmt: skip
        questions = corpus.questions(100)
        vault.search(questions[0])  # the index built before anything is timed
        samples: dict[str, list[float]] = {"off": [], "on": [], "document_frequencies": []}
        for _ in range(rounds):
            for q in questions:
                for name, manager in managers.items():
                    start = time.process_time()
                    manager.context_for([{"role": "user", "content": q}])
                    samples[name].append((time.process_time() - start) * 1000)
                start = time.process_time()
                vault.document_frequencies(q, namespaces=stores)
                samples["document_frequencies"].append((time.process_time() - start) * 1000)
        counted = vault.document_frequencies("", namespaces=stores)[0]
        vault.close()
        figures = {name: {"p50_cpu_ms": round(statistics.median(s), 2), "n": len(s)} for name, s in samples.items()}
        return {"memories": size, "in_the_stores": counted, "stores": stores, **figures}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=0, help="also measure the floor's cost at this many memories")
    parser.add_argument("--semantic", action="store_true", help="search by meaning with the bundled model")
    args = parser.parse_args()
    global EMBEDDER
    EMBEDDER = memfs.semantic.E5Embedder() if args.semantic else None
    from run import machine

    result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine(), **run()}
    if args.memories:
        result["cost"] = cost(args.memories)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
