"""The fixed centre of an embedding model's key space (design §7.2).

Seed scores are cosines of vectors centred on one mean μ per model: s(w, k) = cos(w − μ, k − μ).
μ is the mean embedding of a reference vocabulary (the model's own tokenizer vocabulary, every
whole lower-case word of three letters or more), computed once and shipped as package data for
the default model. Because μ is fixed, keys are stored already centred (`k.centred`), and the
vector index's own cosine *is* the seed score: the index can answer "which of this user's keys
score above the threshold" without any rescoring (docs/decisions.md, "Seeds from the index").

    python -m pegasus.embedding.centring            # recompute the shipped centre of the default model
    python -m pegasus.embedding.centring --model M  # compute (and cache) the centre of another model
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from pegasus.errors import ConfigError

_WORD = re.compile(r"[a-z]{3,}")


def _shipped_name(model: str) -> str:
    return "centre-" + re.sub(r"[^A-Za-z0-9.-]+", "_", model) + ".json"


def reference_vocabulary(model: str) -> list[str]:
    """The whole words of the model's tokenizer vocabulary (vocab.txt), in file order."""
    from pegasus.embedding.embed import model_path

    vocab = Path(model_path(model)) / "vocab.txt"
    if not vocab.exists():
        raise ConfigError(
            f"{model} has no vocab.txt to compute its key centre from; compute one with "
            "`python -m pegasus.embedding.centring --model ...` from a model folder that has it"
        )
    return [w for w in (line.strip() for line in vocab.open(encoding="utf-8"))
            if _WORD.fullmatch(w)]


def compute(model: str, dimensions: int) -> dict:
    """The centre of `model`: the mean of its reference vocabulary's embeddings."""
    from pegasus.embedding.embed import Embedder

    words = reference_vocabulary(model)
    vectors = Embedder(model, dimensions).embed(words)
    mean = vectors.mean(axis=0)
    return {
        "model": model,
        "vocabulary": "tokenizer vocab.txt, whole lower-case words of 3+ letters",
        "words": len(words),
        "vocabulary_sha256": hashlib.sha256("\n".join(words).encode()).hexdigest(),
        "mean": [round(float(x), 8) for x in mean],
    }


def _cache_file(model: str) -> Path:
    from pegasus.settings import Settings

    return Settings().home / "centres" / _shipped_name(model)


@cache
def load(model: str, dimensions: int) -> tuple[np.ndarray, str]:
    """(μ, its id) for `model`: the shipped file, else a cached one, else computed and cached.

    The id (a hash of μ's values) is written on every centred key, so keys centred on another
    μ are found and centred again (`migrations.centre_keys`)."""
    shipped = resources.files("pegasus") / "data" / _shipped_name(model)
    if shipped.is_file():
        data = json.loads(shipped.read_text(encoding="utf-8"))
    else:
        path = _cache_file(model)
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
        else:
            data = compute(model, dimensions)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data), encoding="utf-8")
    mean = np.asarray(data["mean"], dtype=np.float64)
    if mean.shape != (dimensions,):
        raise ConfigError(f"the key centre of {model} has {mean.size} values, not {dimensions}")
    centre_id = hashlib.sha256(mean.astype("<f8").tobytes()).hexdigest()[:16]
    return mean, centre_id


def centre(vectors: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """(v − μ) / ‖v − μ‖ per row; a row equal to μ stays zero."""
    vectors = np.atleast_2d(vectors)
    shifted = vectors - mean
    norms = np.linalg.norm(shifted, axis=1, keepdims=True)
    return np.divide(shifted, norms, out=np.zeros_like(shifted), where=norms > 1e-12)


def main() -> None:
    from pegasus.settings import Settings

    parser = argparse.ArgumentParser(description="compute an embedding model's key centre")
    parser.add_argument("--model", default=Settings().embedding_model)
    parser.add_argument("--dimensions", type=int, default=Settings().embedding_dimensions)
    args = parser.parse_args()
    data = compute(args.model, args.dimensions)
    target = (Path(__file__).parent.parent / "data" / _shipped_name(args.model)
              if args.model == Settings().embedding_model else _cache_file(args.model))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")
    print(f"{target}: mean of {data['words']} words")


if __name__ == "__main__":
    main()
