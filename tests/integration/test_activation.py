"""The activation Cypher against a hand-built graph with known strengths (docs/design.md)."""

import contextlib
from datetime import UTC, datetime

import numpy as np
import pytest

from pegasus import Memory
from pegasus.recall.seeds import Seeds
from tests.helpers import rel

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SPREAD = 0.6

# (source, label, target, strength); U is the self node and the seed.
EDGES = [
    ("U", "KNOWS", "A", 100.0), ("U", "LIKES", "B", 50.0), ("B", "WORKS_WITH", "A", 30.0),
    ("C", "MENTORS", "U", 20.0), ("A", "VISITED", "D", 40.0), ("U", "FOLLOWS", "H", 10.0),
    ("H", "LINKS_TO", "X1", 100.0), ("H", "LINKS_TO", "X2", 100.0), ("H", "LINKS_TO", "X3", 100.0),
]
# Edges that must carry nothing and count in no denominator.
HIDDEN = [("U", "WORKED_AT", "Z", 100.0, "superseded"), ("U", "MET", "Y", 100.0, "dormant"),
          ("A", "ATTENDS", "W", 100.0, "expired")]


def reference(edges, seeds: dict[str, float], fanout: int = 10**9, hubs=frozenset(),
              sources: int = 10**9):
    """The spreading rule computed by hand-written loops, the oracle for the Cypher; each seed
    starts at its graded activation and every node spreads along its `fanout` strongest edges
    (the graphs here have no ties at the cut), divided by the strength of all of them; a node
    in `hubs` spreads nothing; at hop 2 only the `sources` hottest hop-1 nodes spread."""
    def degree(n):
        return sum(s for a, _, b, s in edges if n in (a, b))

    def strongest(n):
        return sorted((e for e in edges if n in (e[0], e[2])), key=lambda e: -e[3])[:fanout]

    def spread(activation):
        out, fwd, rev = {}, {}, {}
        for u, act in activation.items():
            if u in hubs:
                continue
            d = degree(u)
            for a, _, b, s in strongest(u):
                if d == 0:
                    continue
                v = b if a == u else a
                c = act * s / d * SPREAD
                out[v] = out.get(v, 0.0) + c
                (fwd if a == u else rev)[v] = (fwd if a == u else rev).get(v, 0.0) + c
        return out, fwd, rev

    hop1, f1, r1 = spread(dict(seeds))
    hottest = sorted(hop1.items(), key=lambda kv: -kv[1])[:sources]
    hop2, f2, r2 = spread(dict(hottest))
    nodes = set(seeds) | set(hop1) | set(hop2)
    total = {n: seeds.get(n, 0.0) + hop1.get(n, 0.0) + hop2.get(n, 0.0) for n in nodes}
    hop = {n: 0 if n in seeds else (1 if n in hop1 else 2) for n in nodes}
    forward = {n: f1.get(n, 0.0) + f2.get(n, 0.0) for n in nodes}
    reverse = {n: r1.get(n, 0.0) + r2.get(n, 0.0) for n in nodes}
    return total, hop, forward, reverse, hop1


@contextlib.contextmanager
def narrowed(engine, **update):
    """The engine with some recall settings changed, restored afterwards."""
    shipped = engine.recall
    engine.recall = shipped.model_copy(update=update)
    try:
        yield
    finally:
        engine.recall = shipped


def walk_from_u(graph, user_id, **update):
    """The walk from U alone (activation 1.0) under changed settings: {name: score}, crossed."""
    mem, ids = graph
    with narrowed(mem.recall_engine, **update):
        reached, crossed = mem.recall_engine.activate(
            user_id, Seeds({ids["U"]: 1.0}, {}, []), NOW, None)
    return {n.name: n.score for n in reached}, crossed


@pytest.fixture
def graph(settings, raw_driver, user_id):
    with Memory(settings) as mem:
        names = {n for a, _, b, *_ in EDGES + HIDDEN for n in (a, b)} - {"U"}
        mem.commit(user_id, "c1", {
            "entities": [{"name": "U", "kind": "PERSON", "is_user": True}]
                        + [{"name": n, "kind": "THING"} for n in sorted(names)],
            "relations": [rel(a, lbl, b) for a, lbl, b, *_ in EDGES + HIDDEN],
        }, at=NOW)
        for a, lbl, b, s, *state in EDGES + HIDDEN:
            raw_driver.execute_query(
                "MATCH (x:Entity {user_id: $u, name: $a})-[r]->(y:Entity {user_id: $u, name: $b}) "
                "WHERE type(r) = $l SET r.strength = $s, "
                "r.superseded_at = CASE WHEN $state = 'superseded' THEN $now END, "
                "r.dormant = ($state = 'dormant'), "
                "r.expires_at = CASE WHEN $state = 'expired' THEN $now END",
                u=user_id, a=a, b=b, l=lbl, s=s, state=state[0] if state else "", now=NOW)
        ids = {r["name"]: r["id"] for r in raw_driver.execute_query(
            "MATCH (n:Entity {user_id: $u}) RETURN n.name AS name, n.id AS id", u=user_id).records}
        yield mem, ids


def test_activation_matches_the_formula_to_1e9(graph, user_id):
    mem, ids = graph
    reached, crossed = mem.recall_engine.activate(user_id, Seeds({ids["U"]: 1.0}, {}, []), NOW,
                                                  None)
    got = {n.name: n for n in reached}
    total, hop, forward, reverse, hop1 = reference(EDGES, {"U": 1.0})
    assert set(got) == set(total)
    for name in total:
        assert got[name].score == pytest.approx(total[name], abs=1e-9), name
        assert got[name].hop == hop[name], name
        assert got[name].forward == pytest.approx(forward[name], abs=1e-9)
        assert got[name].reverse == pytest.approx(reverse[name], abs=1e-9)
    # hand-checked values: deg(U) = 100 + 50 + 20 + 10 = 180
    assert hop1["A"] == pytest.approx(100 / 180 * 0.6)
    assert hop1["C"] == pytest.approx(20 / 180 * 0.6)
    # A is reached at hop 1 from U and at hop 2 from B (two paths add up)
    assert got["A"].score == pytest.approx(
        100 / 180 * 0.6 + (50 / 180 * 0.6) * 30 / 80 * 0.6, abs=1e-9)
    # the hub H (degree 310) dilutes: each X gets a small share of H's small activation
    assert got["X1"].score == pytest.approx((10 / 180 * 0.6) * 100 / 310 * 0.6, abs=1e-9)
    assert got["C"].direction == "reverse" and got["A"].direction == "forward"
    assert got["U"].direction == "seed" and got["D"].hop == 2
    for hidden in ("Z", "Y", "W"):
        assert hidden not in got
    assert len(crossed) == len(set(crossed))


def test_each_node_spreads_along_its_strongest_fanout_edges_only(graph, user_id, raw_driver):
    """fanout 3: U (edges 100, 50, 20, 10) spreads to A, B and C but not to H, which nothing
    else reaches, so neither are its X nodes; the shares still divide by all 180 of U's
    strength, and no edge left out is in the crossed list."""
    mem, ids = graph
    engine = mem.recall_engine
    got, crossed = walk_from_u(graph, user_id, fanout=3)
    assert got == pytest.approx(reference(EDGES, {"U": 1.0}, fanout=3)[0], abs=1e-9)
    assert set(got) == {"U", "A", "B", "C", "D"}
    assert got["A"] == pytest.approx(100 / 180 * 0.6 + (50 / 180 * 0.6) * 30 / 80 * 0.6)
    follows = raw_driver.execute_query(
        "MATCH (:Entity {user_id: $u})-[r:FOLLOWS]->() RETURN r.id AS id", u=user_id).records
    assert follows and follows[0]["id"] not in crossed
    # the wide walk does reach H through that edge
    reached, crossed = engine.activate(user_id, Seeds({ids["U"]: 1.0}, {}, []), NOW, None)
    assert "H" in {n.name for n in reached} and follows[0]["id"] in crossed


def test_the_second_hop_spreads_from_the_hottest_hop1_nodes_only(graph, user_id):
    """hop2_sources 2: hop 1 reaches A (100/180·0.6), B (50/180·0.6), C (20/180·0.6) and H
    (10/180·0.6); only A and B spread on, so H's X nodes are never reached and C sends
    nothing back to U, while every hop-1 node keeps its hop-1 score."""
    got, _ = walk_from_u(graph, user_id, hop2_sources=2)
    assert got == pytest.approx(reference(EDGES, {"U": 1.0}, sources=2)[0], abs=1e-9)
    assert set(got) == {"U", "A", "B", "C", "D", "H"}
    assert got["H"] == pytest.approx(10 / 180 * 0.6, abs=1e-9)
    assert got["C"] == pytest.approx(20 / 180 * 0.6, abs=1e-9)
    # U hears back from A (its edges 100 + 30 + 40) and B (50 + 30), not from C
    assert got["U"] == pytest.approx(
        1.0 + (100 / 180 * 0.6) * 100 / 170 * 0.6 + (50 / 180 * 0.6) * 50 / 80 * 0.6, abs=1e-9)
    full, *_ = reference(EDGES, {"U": 1.0})
    assert "X1" in full and full["U"] > got["U"]


def test_a_node_with_more_relationships_than_hub_edges_spreads_nothing(graph, user_id):
    """hub_edges 5: U has 7 relationships (4 current, 3 hidden: every one counts), A has 4.
    Seeded together, U is scored but spreads nothing, at hop 1 or when A reaches it at hop 2;
    A spreads as before."""
    mem, ids = graph
    engine = mem.recall_engine
    with narrowed(engine, hub_edges=5):
        reached, crossed = engine.activate(user_id, Seeds({ids["U"]: 1.0, ids["A"]: 0.5}, {}, []),
                                           NOW, None)
    got = {n.name: n.score for n in reached}
    total, *_ = reference(EDGES, {"U": 1.0, "A": 0.5}, hubs={"U"})
    assert got == pytest.approx(total, abs=1e-9)
    # A (edges 100 to U, 30 from B, 40 to D) reaches U, B and D; nothing reaches C or H via U
    assert set(got) == {"U", "A", "B", "D"}
    # U: its seed, A's share at hop 1, and B's share at hop 2 (B got its own from A)
    assert got["U"] == pytest.approx(
        1.0 + 0.5 * 100 / 170 * 0.6 + (0.5 * 30 / 170 * 0.6) * 50 / 80 * 0.6, abs=1e-9)
    assert got["D"] == pytest.approx(0.5 * 40 / 170 * 0.6, abs=1e-9)
    wide_reached, _ = engine.activate(user_id, Seeds({ids["U"]: 1.0, ids["A"]: 0.5}, {}, []),
                                      NOW, None)
    assert {"C", "H"} <= {n.name for n in wide_reached}, "at the shipped 1,000 U spreads"


def test_a_label_seed_seeds_the_ends_of_its_fanout_strongest_edges(graph, user_id, raw_driver):
    """A label seed reads the label's edges at the entity seeds and the self node (design,
    "Graded seeds"): with D seeded, VISITED's edges at D by strength are A→D 40, D→X3 9,
    D→X2 7, D→X1 5; fan-out 2 takes the two strongest."""
    mem, ids = graph
    for i, strength in enumerate((5.0, 7.0, 9.0)):
        raw_driver.execute_query(
            "MATCH (a:Entity {user_id: $u, name: 'D'}), (b:Entity {user_id: $u, name: $b}) "
            "CREATE (a)-[:VISITED {user_id: $u, id: $id, strength: $s}]->(b)",
            u=user_id, b=f"X{i + 1}", id=f"extra-{i}", s=strength)
    engine = mem.recall_engine
    with narrowed(engine, fanout=2):
        at_d, _ = engine.activate(user_id, Seeds({ids["D"]: 0.1}, {"VISITED": 0.5}, []), NOW,
                                  None)
        at_a, _ = engine.activate(user_id, Seeds({ids["A"]: 0.1}, {"VISITED": 0.5}, []), NOW,
                                  None)
    assert {n.name for n in at_d if n.seed} == {"A", "D", "X3"}
    # A's only VISITED edge is A→D: D's edges to the X nodes are not read from A
    assert {n.name for n in at_a if n.seed} == {"A", "D"}


def test_an_entity_seed_and_a_label_seed_at_it(graph, user_id):
    mem, ids = graph
    reached, _ = mem.recall_engine.activate(
        user_id, Seeds({ids["A"]: 0.9}, {"VISITED": 0.5}, []), NOW, None)
    got = {n.name: n.score for n in reached}
    # VISITED's current edge at A is A→D: D starts at the label's 0.5, A keeps its own 0.9.
    total, *_ = reference(EDGES, {"A": 0.9, "D": 0.5})
    assert got == pytest.approx(total, abs=1e-9)
    assert got["A"] > got["D"]  # a better match starts hotter


def test_a_label_seed_reads_no_edges_of_a_hub(graph, user_id):
    """hub_edges 5: the self node U (7 relationships) is a hub, so KNOWS (U→A) seeds nothing
    through it; at the shipped 1,000 it seeds A."""
    mem, ids = graph
    engine = mem.recall_engine
    with narrowed(engine, hub_edges=5):
        reached, _ = engine.activate(user_id, Seeds({}, {"KNOWS": 0.8}, []), NOW, ids["U"])
    assert reached == []
    reached, _ = engine.activate(user_id, Seeds({}, {"KNOWS": 0.8}, []), NOW, ids["U"])
    assert {n.name for n in reached if n.seed} == {"A"}


def test_a_relation_label_never_seeds_the_self_node(graph, user_id):
    mem, ids = graph
    reached, _ = mem.recall_engine.activate(user_id, Seeds({}, {"KNOWS": 0.8}, []), NOW,
                                            ids["U"])
    got = {n.name: n for n in reached}
    assert got["A"].seed and not got["U"].seed  # KNOWS is U → A; only A is a seed
    total, *_ = reference(EDGES, {"A": 0.8})
    assert {n: v.score for n, v in got.items()} == pytest.approx(total, abs=1e-9)


def test_scores_stay_within_bounds(graph, user_id):
    mem, ids = graph
    reached, _ = mem.recall_engine.activate(
        user_id, Seeds({i: 1.0 for i in ids.values()}, {}, []), NOW, None)
    seeds = len(ids)
    for node in reached:
        # a node receives at most 0.6 of each neighbour's activation per hop
        assert 0.0 <= node.score <= 1.0 + SPREAD * seeds + SPREAD * SPREAD * seeds


def test_a_label_seed_reaches_only_current_edges_of_that_type(graph, user_id):
    """Label seeds match by dynamic type (`[r:$(label)]`): a superseded WORKED_AT, a dormant
    MET and an expired ATTENDS seed nothing, and an unknown label matches no edge."""
    mem, _ = graph
    for label in ("WORKED_AT", "MET", "ATTENDS", "NEVER_USED"):
        reached, crossed = mem.recall_engine.activate(
            user_id, Seeds({}, {label: 0.9}, []), NOW, None)
        assert reached == [] and crossed == [], label


def test_the_walk_adds_the_co_episode_bonus_and_offers_the_hottest_nodes_edges(
        graph, user_id, raw_driver):
    """read/recall_walk (design §7.7): +bonus once to each reached non-seed node sharing a
    conversation with a hot node (the seed U is hot), none to the seed nor to a node of another
    conversation; the candidates are the current edges of the `expand_nodes` hottest nodes,
    the self node left out, and the faded ones of the seed, named at 1.0 (design §7.6: the
    dormant MET and the WORKED_AT ended with nothing in its place)."""
    mem, ids = graph
    raw_driver.execute_query(
        "MATCH (n:Entity {user_id: $u, name: 'X1'}) SET n.conversations = ['c9']", u=user_id)
    engine, seeds = mem.recall_engine, Seeds({ids["U"]: 1.0}, {}, [])
    plain, _ = engine.activate(user_id, seeds, NOW, None)
    with narrowed(engine, expand_nodes=1, co_episode_bonus=0.15):
        reached, _, found = engine.walk(user_id, seeds, NOW, ids["U"], message=np.zeros(384),
                                        expand_threshold=0.0)
    before = {n.name: n.score for n in plain}
    after = {n.name: n.score for n in reached}
    assert after.keys() == before.keys() and {"U", "X1", "A"} <= before.keys()
    assert after["U"] == before["U"] and after["X1"] == before["X1"]
    assert all(after[n] == before[n] + 0.15 for n in before if n not in ("U", "X1"))
    hottest = max((n for n in after if n != "U"), key=after.__getitem__)
    assert hottest == "A"
    assert sorted((c.source, c.label, c.target) for c in found) == sorted(
        [(a, label, b) for a, label, b, _ in EDGES if hottest in (a, b)]
        + [("U", "WORKED_AT", "Z"), ("U", "MET", "Y")])
