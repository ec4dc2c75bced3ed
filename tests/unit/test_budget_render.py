from hypothesis import given
from hypothesis import strategies as st

from pegasus.recall.budget import Reached, fire
from pegasus.settings import Settings

S = Settings()


def fire_(nodes):
    """`fire` with the design's slots (Settings is where the constants live)."""
    return fire(nodes, S.fire_threshold, S.budget_total, S.budget_forward, S.budget_reverse)


def node(name, score, direction="forward", convs=(), hop=1):
    return Reached(id=name, name=name, kind="THING", score=score, hop=hop,
                   seed=direction == "seed", forward=1.0 if direction == "forward" else 0.0,
                   reverse=1.0 if direction == "reverse" else 0.0, conversations=list(convs))


def test_nine_candidates_fire_eight_with_six_two_split():
    nodes = [node(f"f{i}", 0.9 - i * 0.05) for i in range(7)] + \
            [node(f"r{i}", 0.8 - i * 0.05, "reverse") for i in range(3)]
    fired = fire_(nodes)
    assert len(fired) == 8
    assert sorted(n.name for n in fired if n.direction == "reverse") == ["r0", "r1"]
    assert sorted(n.name for n in fired if n.direction != "reverse") == [f"f{i}" for i in range(6)]


def test_unused_reverse_slots_backfill_forward_and_vice_versa():
    fired = fire_([node(f"f{i}", 0.9 - i * 0.01) for i in range(10)] + [node("r", 0.5, "reverse")])
    assert len(fired) == 8 and sum(n.direction == "reverse" for n in fired) == 1
    fired = fire_([node("f", 0.9)] + [node(f"r{i}", 0.8 - i * 0.01, "reverse") for i in range(10)])
    assert len(fired) == 8 and sum(n.direction == "reverse" for n in fired) == 7


def test_below_threshold_never_fires_and_seeds_count_as_forward():
    fired = fire_([node("s", 1.0, "seed", hop=0), node("low", 0.29), node("edge", 0.30)])
    assert [n.name for n in fired] == ["s", "edge"]


@given(st.lists(st.tuples(st.floats(0, 3), st.sampled_from(["seed", "forward", "reverse"])),
                max_size=30))
def test_budget_bounds(items):
    fired = fire_([node(f"n{i}", s, d) for i, (s, d) in enumerate(items)])
    assert len(fired) <= 8 and all(n.score >= 0.30 for n in fired)
    assert sum(n.direction == "reverse" for n in fired) <= 8 - min(
        6, sum(1 for s, d in items if s >= 0.30 and d != "reverse"))
