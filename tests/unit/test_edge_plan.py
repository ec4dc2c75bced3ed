import json
from datetime import UTC, datetime

from pegasus.merge.plan import ResolvedRelation, StoredEdge, plan_edges
from pegasus.models.batch import CleanRelation

AT = datetime(2026, 1, 1, tzinfo=UTC)


def rel(target, label="WORKS_AT", cardinality="one_to_one", status="current", confidence=0.9):
    return ResolvedRelation("u", target, CleanRelation(
        source="U", label=label, target=target, confidence=confidence, stability="mutable",
        cardinality=cardinality, expires_at=None, status=status, snippet="s", evidence="s"))


def test_one_to_one_new_target_supersedes_current():
    plan = plan_edges([rel("globex")], [StoredEdge("e1", "u", "WORKS_AT", "acme", False,
                                                    "one_to_one", 0.9)], "x", "c", AT)
    assert len(plan.create) == 1
    assert plan.supersede == [{"source_id": "u", "target_id": "acme", "edge_id": "e1",
                               "by": plan.create[0]["props"]["id"]}]


def test_reobserving_superseded_edge_revives_it_and_supersedes_the_other():
    stored = [StoredEdge("acme", "u", "WORKS_AT", "acme", True, "one_to_one", 0.9),
              StoredEdge("globex", "u", "WORKS_AT", "globex", False, "one_to_one", 0.9)]
    plan = plan_edges([rel("acme")], stored, "x", "c", AT)
    assert plan.create == [] and [r["edge_id"] for r in plan.reinforce] == ["acme"]
    assert [r["edge_id"] for r in plan.revive] == ["acme"]
    assert [(r["edge_id"], r["by"]) for r in plan.supersede] == [("globex", "acme")]


def test_a_b_a_in_one_batch_leaves_a_current_and_reinforced_once():
    stored = [StoredEdge("acme", "u", "WORKS_AT", "acme", False, "one_to_one", 0.9)]
    plan = plan_edges([rel("acme"), rel("globex"), rel("acme")], stored, "x", "c", AT)
    assert [r["edge_id"] for r in plan.reinforce] == ["acme"]
    new_id = plan.create[0]["props"]["id"]
    assert [(r["edge_id"], r["by"]) for r in plan.supersede] == [(new_id, "acme")]
    assert plan.revive == []


def test_one_to_many_never_supersedes():
    stored = [StoredEdge("e1", "u", "LIKES", "tea", False, "one_to_many", 0.9)]
    plan = plan_edges([rel("coffee", "LIKES", "one_to_many")], stored, "x", "c", AT)
    assert plan.supersede == [] and len(plan.create) == 1


def test_ended_supersedes_without_replacement_and_adds_nothing():
    stored = [StoredEdge("e1", "u", "WORKS_AT", "acme", False, "one_to_one", 0.9)]
    plan = plan_edges([rel("acme", status="ended")], stored, "x", "c", AT)
    assert plan.create == [] and plan.supersede == [
        {"source_id": "u", "target_id": "acme", "edge_id": "e1", "by": None}]
    assert plan.ended == [("u", "WORKS_AT", "acme")]


def test_an_ended_claim_with_nothing_stored_is_kept_as_a_past_fact():
    """"I lost my job at Door Dash" with no Door Dash stored: the edge is made and ended in
    the same plan (the state an ended current edge is in), and no other edge of the label is
    touched, one_to_one or not: a past job does not end the current one."""
    stored = [StoredEdge("e1", "u", "WORKS_AT", "acme", False, "one_to_one", 0.9)]
    plan = plan_edges([rel("doordash", status="ended")], stored, "x", "c", AT)
    [made] = plan.create
    assert made["target_id"] == "doordash" and made["props"]["snippet"] == "s"
    assert plan.supersede == [{"source_id": "u", "target_id": "doordash",
                               "edge_id": made["props"]["id"], "by": None}]
    assert plan.ended == [("u", "WORKS_AT", "doordash")]
    assert plan.relation_edges == [made["props"]["id"]]
    assert plan.notes == ["U -[WORKS_AT]-> doordash: kept as a past fact"]


def test_an_ended_claim_of_an_edge_ended_before_changes_nothing():
    stored = [StoredEdge("e1", "u", "WORKS_AT", "acme", True, "one_to_one", 0.9)]
    plan = plan_edges([rel("acme", status="ended")], stored, "x", "c", AT)
    assert plan.create == [] and plan.supersede == [] and plan.revive == []
    assert plan.relation_edges == [None]
    assert plan.notes == ["U -[WORKS_AT]-> acme: nothing current to end"]


def test_a_past_fact_said_again_as_current_is_current_again():
    """Ended, then "I'm back at Door Dash": the ended edge is revived, not duplicated."""
    stored = [StoredEdge("e1", "u", "WORKS_AT", "doordash", True, "one_to_one", 0.9)]
    plan = plan_edges([rel("doordash")], stored, "x", "c", AT)
    assert plan.create == [] and [r["edge_id"] for r in plan.revive] == ["e1"]


def test_new_edge_starts_at_full_strength():
    plan = plan_edges([rel("acme")], [], "x", "c", AT)
    props = plan.create[0]["props"]
    assert props["strength"] == props["strength_at_touch"] == 100.0
    assert props["touched_at"] == AT and props["user_id"] == "x" and props["conversations"] == ["c"]


def worded(target, snippet, confidence):
    item = rel(target, label="LIKES", cardinality="one_to_many", confidence=confidence)
    item.relation.snippet = item.relation.evidence = snippet
    return item


def test_each_conversation_logs_one_sighting_with_its_surest_words():
    """Forgetting a conversation takes back its sighting (design §10): the created edge's and
    the stored edge's sightings hold the words the batch was surest of, once per edge."""
    stored = [StoredEdge("tea", "u", "LIKES", "tea", False, "one_to_many", 0.5)]
    plan = plan_edges([worded("jazz", "jazz, a bit", 0.4), worded("jazz", "I love jazz", 0.8),
                       worded("tea", "tea is fine", 0.3), worded("tea", "tea, always", 0.7),
                       worded("tea", "tea!", 0.6)], stored, "x", "c", AT)
    [created] = plan.create
    [logged] = [json.loads(s) for s in created["props"]["sightings"]]
    assert logged == {"conversation_id": "c", "at": AT.isoformat(), "snippet": "I love jazz",
                      "evidence": "I love jazz", "confidence": 0.8}
    tea = [r["sighting"] for r in plan.sightings if r["edge_id"] == "tea"]
    assert tea[1:] == [None, None]
    assert json.loads(tea[0])["snippet"] == "tea, always"
