"""A store embedded by another runtime keeps working: re-embedded only if its vectors differ."""

from datetime import UTC, datetime

import numpy as np
import pytest

from pegasus import Memory
from pegasus.embedding.embed import unpack_vector
from pegasus.embedding.vectors import keep_current, lowest_agreement
from tests.helpers import rel

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BATCH = {
    "entities": [
        {"name": "Bill", "kind": "PERSON", "is_user": True, "confidence": 0.95},
        {"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"], "confidence": 0.9},
        {"name": "Acme", "kind": "ORGANIZATION", "confidence": 0.9},
    ],
    "relations": [
        rel("User", "HAS_BOSS", "Sarah", confidence=0.9, stability="mutable",
            cardinality="one_to_one", snippet="my boss Sarah moved the deadline again",
            evidence="my boss Sarah"),
        rel("User", "WORKS_AT", "Acme", confidence=0.9, stability="mutable",
            cardinality="one_to_one", snippet="I've been at Acme for three years",
            evidence="at Acme"),
    ],
    "conversation": {"summary": "Work", "importance": 0.6, "tags": ["work"]},
}
ASK = "How is Sarah doing at Acme?"


def stored(raw_driver, user_id) -> dict[str, bytes]:
    rows = raw_driver.execute_query(
        "MATCH (n {user_id: $u}) WHERE (n:Key OR n:Snippet) AND n.embedding_f32 IS NOT NULL "
        "RETURN labels(n)[0] + ':' + n.id AS id, n.embedding_f32 AS packed", u=user_id).records
    return {r["id"]: r["packed"] for r in rows}


@pytest.mark.slow  # the reference embedder loads torch
def test_a_store_embedded_by_sentence_transformers_is_kept_as_it_is(settings, raw_driver,
                                                                    user_id):
    reference = settings.model_copy(update={"embedding_runtime": "sentence-transformers"})
    with Memory(reference) as old:
        old.commit(user_id, "c1", BATCH, at=T0)
        block_before = old.recall(user_id, ASK, None, T0).render()
    before = stored(raw_driver, user_id)
    assert len(before) == 8  # Bill, Sarah, Sarah K, Acme, two relation keys, two snippets
    with Memory(settings) as new:
        assert new.settings.embedding_runtime == "onnx"
        assert lowest_agreement(new.store, new.embedder) >= 0.9999
        new.migrate()
        assert stored(raw_driver, user_id) == before  # not one vector written again
        assert new.recall(user_id, ASK, None, T0).render() == block_before
    assert "Sarah" in block_before and "Acme" in block_before


def test_vectors_of_another_model_are_embedded_again_on_migrate(settings, raw_driver, user_id):
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", BATCH, at=T0)
        block_before = mem.recall(user_id, ASK, None, T0).render()
        right = stored(raw_driver, user_id)
        # Another model's vectors: random unit vectors, raw and centred.
        rng = np.random.default_rng(1)
        for node_id in right:
            label, node = node_id.split(":", 1)
            vector = rng.normal(size=384).astype("<f4")
            vector /= np.linalg.norm(vector)
            raw_driver.execute_query(
                "MATCH (n {user_id: $u, id: $id}) WHERE $label IN labels(n) "
                "SET n.embedding_f32 = $packed "
                "SET n.centred = CASE WHEN n:Key THEN $list END",
                u=user_id, id=node, label=label, packed=vector.tobytes(), list=vector.tolist())
        assert lowest_agreement(mem.store, mem.embedder) < 0.5
        assert keep_current(mem.store, mem.embedder) == len(right)
        again = stored(raw_driver, user_id)
        assert again.keys() == right.keys()
        for node_id, packed in right.items():
            assert unpack_vector(again[node_id]) @ unpack_vector(packed) >= 0.9999
        assert keep_current(mem.store, mem.embedder) == 0  # now they agree: nothing to do
        mem.embedder.forget()
        assert mem.recall(user_id, ASK, None, T0).render() == block_before
