"""Stored vectors stay the running embedder's (#38): on migrate, the newest keys and snippets
are embedded again and compared with what is stored; only when one differs beyond the
tolerance is every key and snippet embedded anew. A store written by sentence-transformers
(before ONNX Runtime became the default) matches and is left as it is."""

from __future__ import annotations

import logging

import numpy as np

from pegasus.embedding.centring import centre
from pegasus.embedding.centring import load as load_centre
from pegasus.embedding.embed import Embedder, pack_vector, stored_vector
from pegasus.store import Store
from pegasus.text import fold, label_phrase

log = logging.getLogger(__name__)

TOLERANCE = 0.9999  # cosine: the two runtimes agree to ~1e-7, another model is far below
SAMPLE = 16


def _phrase(row: dict) -> str:
    """The words a stored vector was embedded from (as commit.write_keys embeds them)."""
    if row["node"] == "snippet":
        return row["text"]
    return label_phrase(row["label"]) if row["kind"] == "relation" else fold(row["text"])


def lowest_agreement(store: Store, embedder: Embedder, sample: int = SAMPLE) -> float | None:
    """The lowest cosine between a stored vector and the same words embedded now (None: the
    store holds no vector)."""
    rows = store.read("read/vector_sample", sample=sample)
    if not rows:
        return None
    fresh = embedder.embed([_phrase(r) for r in rows])
    stored = np.stack([stored_vector(r) for r in rows])
    norms = np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1)
    return float(((fresh * stored).sum(axis=1) / np.maximum(norms, 1e-12)).min())


def reembed(store: Store, embedder: Embedder, batch: int = 500) -> int:
    """Every key and snippet embedded again (keys centred again too); the count. Resumable:
    a run cut short is finished by the next migrate, which finds the rest still differing."""
    mean, centre_id = load_centre(embedder.model_name, embedder.dimensions)
    total = 0
    after = {"user_id": "", "id": ""}
    while rows := store.read("read/keys_after", batch=batch, **after):
        vectors = embedder.embed([_phrase({**r, "node": "key"}) for r in rows])
        store.write("write/reembed_keys", centre_id=centre_id, rows=[
            {"user_id": r["user_id"], "id": r["id"], "packed": pack_vector(v),
             "centred": c.tolist()}
            for r, v, c in zip(rows, vectors, centre(vectors, mean), strict=True)])
        total += len(rows)
        after = {"user_id": rows[-1]["user_id"], "id": rows[-1]["id"]}
    after = {"user_id": "", "id": ""}
    while rows := store.read("read/snippets_after", batch=batch, **after):
        vectors = embedder.embed([r["text"] for r in rows])
        store.write("write/reembed_snippets", rows=[
            {"user_id": r["user_id"], "id": r["id"], "packed": pack_vector(v),
             "vector": v.tolist()} for r, v in zip(rows, vectors, strict=True)])
        total += len(rows)
        after = {"user_id": rows[-1]["user_id"], "id": rows[-1]["id"]}
    return total


def keep_current(store: Store, embedder: Embedder) -> int:
    """Embed everything again if the stored vectors are not the running embedder's; the count
    embedded again (0 when they agree)."""
    agreement = lowest_agreement(store, embedder)
    if agreement is None or agreement >= TOLERANCE:
        return 0
    log.warning("stored vectors differ from %s on %s (lowest cosine %.4f): embedding every "
                "key and snippet again", embedder.model_name, embedder.runtime, agreement)
    return reembed(store, embedder)
