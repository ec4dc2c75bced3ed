"""The commit planner without Neo4j: snapshot + cleaned batch → CommitPlan."""

import copy
from datetime import UTC, datetime

from pegasus.errors import ExtractionError
from pegasus.extract.clean import clean_batch
from pegasus.merge.plan import StoredEdge
from pegasus.merge.planner import Snapshot, plan_commit, resolve
from pegasus.merge.rules import StoredEntity
from pegasus.models.batch import ExtractionBatch
from pegasus.settings import Settings

AT = datetime(2026, 3, 1, tzinfo=UTC)
SETTINGS = Settings()


def snapshot(*entities, self_id=None):
    return Snapshot("ann", "c9", AT, self_id, list(entities))


def clean(entities=(), relations=(), known=()):
    batch = ExtractionBatch.model_validate({"entities": list(entities),
                                            "relations": list(relations)})
    return clean_batch(batch, known=lambda name: name.lower() in known)


def rel(source, relation, target, **extra):
    return {"source": source, "relation": relation, "target": target,
            "snippet": f"{source} {relation} {target}", **extra}


def plan(snap, batch, stored_edges=(), **kw):
    resolution = resolve(snap, batch, SETTINGS, **kw)
    assert resolution.requests == []
    return plan_commit(resolution, list(stored_edges), SETTINGS, "hash")


ME = StoredEntity("me", "Ann", "PERSON", is_self=True, conversations=["c1"])
SARAH = StoredEntity("sarah", "Sarah Kim", "PERSON", aliases=["Sarah"], conversations=["c1"])


def test_first_batch_makes_the_self_node_the_entities_and_edges():
    out = plan(snapshot(), clean([{"name": "Acme", "kind": "ORG"}],
                                 [rel("User", "WORKS_AT", "Acme")]))
    names = {e.name: e for e in out.create_entities}
    assert set(names) == {"User", "Acme"} and names["User"].is_self
    assert out.self_id == names["User"].id and out.update_entities == []
    assert [(r["source_id"], r["label"], r["target_id"]) for r in out.edges.create] == [
        (names["User"].id, "WORKS_AT", names["Acme"].id)]
    assert out.report.edges_created == ["User -[WORKS_AT]-> Acme"]
    assert out.key_labels == {"WORKS_AT"} and set(out.mentioned) == {e.id for e in names.values()}


def test_an_alias_merges_into_the_stored_node_with_an_undoable_record():
    snap = snapshot(ME, SARAH, self_id="me")
    before = copy.deepcopy(list(snap.entities))
    out = plan(snap, clean([{"name": "Sarah", "kind": "PERSON", "aliases": ["SK"]}],
                           [rel("User", "HAS_BOSS", "Sarah")]))
    assert out.create_entities == []
    sarah = next(e for e in out.update_entities if e.id == "sarah")
    assert sarah.aliases == ["Sarah", "SK"] and "c9" in sarah.conversations
    assert [(m.name, m.into, m.rule) for m in out.report.merged] == [
        ("Sarah", "Sarah Kim", "alias")]
    [record] = out.merge_records
    assert record.fields.status == "merged" and record.fields.survivor_id == "sarah"
    assert record.fields.edge_ids == [out.edges.create[0]["props"]["id"]]
    assert record.fields.absorbed.conversations == ["c9"]
    assert (record.fields.before.name, record.fields.before.aliases) == ("Sarah Kim", ["Sarah"])
    assert list(snap.entities) == before, "the snapshot is not changed by planning"


def test_a_stored_one_to_one_edge_is_superseded_by_the_new_target():
    snap = snapshot(ME, StoredEntity("acme", "Acme", "ORG"), self_id="me")
    stored = [StoredEdge("e1", "me", "WORKS_AT", "acme", False, "one_to_one", 0.9)]
    out = plan(snap, clean([{"name": "Globex", "kind": "ORG"}],
                           [rel("User", "WORKS_AT", "Globex", cardinality="one_to_one")]),
               stored)
    assert [r["edge_id"] for r in out.edges.supersede] == ["e1"]
    assert out.report.superseded == ["Ann -[WORKS_AT]-> Acme"]
    assert stored[0].superseded is False, "the stored edges given are not changed"


def test_an_unknown_end_becomes_a_provisional_node():
    out = plan(snapshot(ME, self_id="me"), clean([], [rel("User", "LIKES", "Zorblax")]))
    assert [e.name for e in out.provisional] == ["Zorblax"]
    assert out.report.provisional == ["Zorblax"]


def test_a_look_alike_without_a_reviewer_is_a_new_node_left_pending():
    out = plan(snapshot(ME, SARAH, self_id="me"),
               clean([{"name": "Sara Kim", "kind": "PERSON"}], [rel("User", "KNOWS", "Sara Kim")]))
    assert [e.name for e in out.create_entities] == ["Sara Kim"]
    [pending] = out.pending_reviews
    assert pending.fields.candidate_ids == ["sarah"] and pending.fields.edge_ids == []


def test_with_a_reviewer_the_first_unanswered_pair_is_asked_then_decided():
    snap = snapshot(ME, SARAH, self_id="me")
    batch = clean([{"name": "Sara Kim", "kind": "PERSON"}], [rel("User", "KNOWS", "Sara Kim")])
    first = resolve(snap, batch, SETTINGS, {}, reviewing=True)
    [request] = first.requests
    assert [c.id for c in request.candidates] == ["sarah"] and first.relations == []
    answers = {request.key: request.answer({"sarah": 0.95})}
    out = plan(snap, batch, reviews=answers, reviewing=True)
    assert out.create_entities == [] and out.report.merged[0].rule == "review"
    flagged = plan(snap, batch, reviews={request.key: request.answer({"sarah": 0.7})},
                   reviewing=True)
    assert [m.into for m in flagged.report.flagged] == ["Sarah Kim"]
    apart = plan(snap, batch, reviews={request.key: request.answer({"sarah": 0.1})},
                 reviewing=True)
    assert [e.name for e in apart.create_entities] == ["Sara Kim"] and not apart.pending_reviews


def test_an_unusable_review_answer_leaves_the_pair_pending():
    snap = snapshot(ME, SARAH, self_id="me")
    batch = clean([{"name": "Sara Kim", "kind": "PERSON"}], [rel("User", "KNOWS", "Sara Kim")])
    [request] = resolve(snap, batch, SETTINGS, {}, reviewing=True).requests
    out = plan(snap, batch, reviews={request.key: ExtractionError("no JSON")}, reviewing=True)
    assert len(out.pending_reviews) == 1
    assert any("unusable" in n for n in out.report.notes)


def test_a_candidate_made_earlier_in_the_batch_is_named_by_its_name_not_a_fresh_id():
    batch = clean([{"name": "Sara Kim", "kind": "PERSON"}, {"name": "Sarah Kim", "kind": "PERSON"}],
                  [rel("User", "KNOWS", "Sarah Kim")])
    keys = {resolve(snapshot(ME, self_id="me"), batch, SETTINGS, {}, reviewing=True)
            .requests[0].key for _ in range(2)}
    assert keys == {("sarah kim", ("new:sara kim",))}


def test_the_plan_names_the_keys_it_may_have_made_stale():
    placeholder = StoredEntity("me", "User", "PERSON", is_self=True, conversations=["c1"])
    snap = snapshot(placeholder, StoredEntity("acme", "Acme", "ORG"), self_id="me")
    stored = [StoredEdge("e1", "me", "WORKS_AT", "acme", False, "one_to_many", 0.9),
              StoredEdge("e2", "me", "LIKES", "acme", False, "one_to_many", 0.9)]
    out = plan(snap, clean([{"name": "Ann", "kind": "PERSON", "is_user": True}],
                           [rel("User", "WORKS_AT", "Acme", status="ended"),
                            rel("User", "LIKES", "Acme", status="ended"),
                            rel("User", "LIKES", "Jazz")], known=("acme",)), stored)
    assert out.lost_forms == {"me": ["user"]}, "the self node's placeholder name is gone"
    # WORKS_AT may be on no current edge now; LIKES stays current through Jazz
    assert out.lost_labels == {"WORKS_AT"}
