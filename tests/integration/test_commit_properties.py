"""Random, hostile batches through the real commit path (design §4, §12)."""

import contextlib
import re
import uuid

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from pegasus import Memory
from pegasus.errors import InvalidBatchError

LABEL = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+){0,3}$")
HOSTILE = ["a]->(b) DETACH DELETE n //", "x`) MATCH (n) DETACH DELETE n //", "'; DROP",
           "}) RETURN 1 //", "\x00\x1f\x7f", "Ω名前", "$(user_id)"]
names = st.one_of(st.sampled_from(["User", "me", "I", "Sarah", "sarah", "SARAH ", "Acme", "",
                                   "Bill", "William Smith", *HOSTILE]), st.text(max_size=10))
labels = st.one_of(st.sampled_from(["HAS_BOSS", "has boss", "works-at", "", "A_B_C_D_E",
                                    "1ABC", *HOSTILE]), st.text(max_size=12))
batches = st.fixed_dictionaries({
    "entities": st.lists(st.fixed_dictionaries({
        "name": names,
        "kind": st.sampled_from(["person", "ORG", "weird", "", "Location", "PREFERENCE"]),
        "aliases": st.lists(names, max_size=2),
        "confidence": st.floats(allow_nan=True, allow_infinity=True),
        "is_user": st.booleans(),
    }), max_size=5),
    "relations": st.lists(st.fixed_dictionaries({
        "source": names, "relation": labels, "target": names,
        "snippet": st.one_of(st.none(), st.text(max_size=15), st.sampled_from(HOSTILE)),
        "stability": st.sampled_from(["stable", "MUTABLE", "nope", "ephemeral"]),
        "cardinality": st.sampled_from(["one_to_one", "one_to_many", "many"]),
        "status": st.sampled_from(["current", "ended", "???"]),
        "confidence": st.floats(allow_nan=True, allow_infinity=True),
    }), max_size=6),
})


def test_random_batches_keep_every_invariant(settings, raw_driver):
    settings_fixture = settings
    user_id = f"prop-{uuid.uuid4().hex[:8]}"
    other = f"prop-other-{uuid.uuid4().hex[:8]}"
    counter = iter(range(10_000))

    with Memory(settings_fixture) as mem:
        mem.commit(other, "seed", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                                   "relations": [{"source": "User", "relation": "HAS_BOSS",
                                                  "target": "Sarah", "snippet": "boss Sarah"}]})
        other_before = raw_driver.execute_query(
            "MATCH (n {user_id: $u}) RETURN count(n) AS n", u=other).records[0]["n"]

        @hsettings(max_examples=60, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow])
        @given(batch=batches)
        def check(batch):
            # the documented error is allowed; anything else fails the test
            with contextlib.suppress(InvalidBatchError):
                mem.commit(user_id, f"c{next(counter)}", batch)
            bad = raw_driver.execute_query(
                "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.user_id = $u OR a.user_id = $u "
                "RETURN a = b AS loop, type(r) AS t, r.snippet AS s, a.user_id AS au, "
                "b.user_id AS bu, r.user_id AS ru", u=user_id).records
            for row in bad:
                assert not row["loop"]
                assert LABEL.match(row["t"]), row["t"]
                assert row["s"] and row["s"].strip()
                assert row["au"] == row["bu"] == row["ru"] == user_id
            stray = raw_driver.execute_query(
                "MATCH (n) WHERE n.user_id IS NULL "
                "AND NOT any(label IN labels(n) WHERE label STARTS WITH 'Pegasus') "
                "RETURN count(n) AS n"
            ).records[0]["n"]
            assert stray == 0
            selves = raw_driver.execute_query(
                "MATCH (n:Entity {user_id: $u, is_self: true}) RETURN count(n) AS n", u=user_id
            ).records[0]["n"]
            assert selves <= 1

        check()
        after = raw_driver.execute_query(
            "MATCH (n {user_id: $u}) RETURN count(n) AS n", u=other).records[0]["n"]
        assert after == other_before  # another user's partition was never touched
