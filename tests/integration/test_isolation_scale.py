"""Tenant isolation at scale (design §12): 10,000 random probes over 50 users sharing names."""

import random
from datetime import UTC, datetime

import pytest

from pegasus import Memory

NAMES = ["Sarah", "Bill", "Maya", "Priya", "Tom", "Acme", "Lisbon", "Tokyo", "Globex", "jazz",
         "cello", "Northwind", "Omar", "Lena", "chess"]
LABELS = ["KNOWS", "WORKS_AT", "LIKES", "VISITED", "HAS_BOSS", "PLAYS", "HAS_PARTNER"]
FILLER = ["boss", "trip", "partner", "weekend", "music", "work", "deadline", "again", "today"]
AT = datetime(2026, 8, 1, tzinfo=UTC)


@pytest.mark.slow  # 10,000 recalls: minutes; the attack tests beside it run in the inner loop
def test_ten_thousand_probes_never_cross_a_partition(settings, raw_driver):
    rng = random.Random(2026)
    users = [f"iso-{i:02d}" for i in range(50)]
    with Memory(settings) as mem:
        for user in users:
            names = rng.sample(NAMES, 8)
            relations = []
            for j in range(12):
                a, b = rng.sample(["User", *names], 2)
                relations.append({"source": a, "relation": rng.choice(LABELS), "target": b,
                                  "snippet": f"[{user}] {a} and {b}, story {j}"})
            mem.commit(user, "c1", {"entities": [{"name": n, "kind": "THING"} for n in names],
                                    "relations": relations}, at=AT)
        owner = {r["id"]: r["u"] for r in raw_driver.execute_query(
            "MATCH (n:Entity) WHERE n.user_id STARTS WITH 'iso-' RETURN n.id AS id, n.user_id AS u"
        ).records}
        fired = 0
        for _ in range(10_000):
            user = rng.choice(users)
            words = rng.sample(NAMES, 2) + rng.sample(FILLER, 2)
            recall = mem.recall(user, " ".join(words), at=AT)
            for node in recall.nodes:
                assert owner[node.entity_id] == user
            for snippet in recall.context:
                assert snippet.startswith(f"[{user}]")
            fired += bool(recall.nodes)
    assert fired > 5_000  # the probes did recall things: this is not a test of empty results
