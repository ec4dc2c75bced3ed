import math
from datetime import UTC, datetime, timedelta

import pytest

from pegasus import Memory
from pegasus.embedding.centring import load as load_centre
from pegasus.errors import ConversationConflictError, InvalidBatchError
from tests.helpers import ScriptedReviewer, edges, entities, rel, snapshot

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def mem(settings):
    with Memory(settings) as memory:
        yield memory


def test_first_commit_builds_entities_edges_keys_and_conversation(mem, raw_driver, user_id):
    report = mem.commit(user_id, "c1", {
        "entities": [
            {"name": "Bill", "kind": "PERSON", "is_user": True, "confidence": 0.95},
            {"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"],
             "properties": {"role": "manager"}, "confidence": 0.9},
        ],
        "relations": [rel("User", "HAS_BOSS", "Sarah", confidence=0.9, stability="mutable",
                          cardinality="one_to_one",
                          snippet="my boss Sarah moved the deadline again, honestly I'm exhausted",
                          evidence="my boss Sarah")],
        "conversation": {"summary": "Work stress", "importance": 0.6, "tags": ["work"]},
    }, at=T0)
    assert report.created == ["Bill", "Sarah"]
    assert report.edges_created == ["Bill -[HAS_BOSS]-> Sarah"]
    nodes = {e["name"]: e for e in entities(raw_driver, user_id)}
    assert nodes["Bill"]["is_self"] is True and nodes["Bill"]["labels"] == ["Entity", "Person"]
    assert nodes["Sarah"]["p_role"] == "manager" and nodes["Sarah"]["aliases"] == ["Sarah K"]
    assert nodes["Sarah"]["conversations"] == ["c1"]
    [(a, t, b, p)] = edges(raw_driver, user_id)
    assert (a, t, b) == ("Bill", "HAS_BOSS", "Sarah")
    assert p["strength"] == 100.0 and p["strength_at_touch"] == 100.0
    assert p["touched_at"].to_native() == T0 and p["stability"] == "mutable"
    assert p["snippet"].startswith("my boss Sarah moved") and p["evidence"] == "my boss Sarah"
    assert p["user_id"] == user_id and p["dormant"] is False
    keys = raw_driver.execute_query(
        "MATCH (k:Key {user_id: $u}) RETURN k.text AS t, k.kind AS kind, size(k.centred) AS d, "
        "k.centre_id AS centre",
        u=user_id).records
    assert sorted((k["t"], k["kind"]) for k in keys) == [
        ("Bill", "entity"), ("HAS_BOSS", "relation"), ("Sarah", "entity"), ("Sarah K", "entity")]
    assert {k["d"] for k in keys} == {384}
    assert {k["centre"] for k in keys} == {load_centre("all-MiniLM-L6-v2", 384)[1]}
    part = raw_driver.execute_query("MATCH (p:Partition {user_id: $u}) RETURN p", u=user_id
                                    ).records[0]["p"]
    assert part["key_count"] == 4
    assert part["self_id"] == nodes["Bill"]["id"]
    conv = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'c1'})-[:MENTIONS]->(n) "
        "RETURN c.summary AS s, c.tags AS tags, collect(n.name) AS names", u=user_id).records[0]
    assert conv["s"] == "Work stress" and sorted(conv["names"]) == ["Bill", "Sarah"]


def test_sam_the_person_never_merges_with_sam_the_org(mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {"entities": [{"name": "Sam", "kind": "ORG"}],
                               "relations": [rel("User", "WORKS_AT", "Sam")]})
    report = mem.commit(user_id, "c2", {"entities": [{"name": "Sam", "kind": "PERSON"}],
                                        "relations": [rel("User", "KNOWS", "Sam")]})
    assert report.merged == [] and report.created == ["Sam"]
    kinds = sorted(e["kind"] for e in entities(raw_driver, user_id) if e["name"] == "Sam")
    assert kinds == ["ORG", "PERSON"]


def test_bill_merges_into_william_smith(mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {"entities": [{"name": "William Smith", "kind": "PERSON"}],
                               "relations": [rel("User", "KNOWS", "William Smith")]})
    report = mem.commit(user_id, "c2", {"entities": [{"name": "Bill", "kind": "PERSON"}],
                                        "relations": [rel("User", "PLAYS_GOLF_WITH", "Bill")]})
    assert [(m.name, m.into, m.rule) for m in report.merged] == [("Bill", "William Smith", "nickname")]
    william = next(e for e in entities(raw_driver, user_id) if e["name"] == "William Smith")
    assert william["aliases"] == ["Bill"] and william["conversations"] == ["c1", "c2"]
    assert {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)} == {
        ("User", "KNOWS", "William Smith"), ("User", "PLAYS_GOLF_WITH", "William Smith")}
    record = raw_driver.execute_query(
        "MATCH (m:MergeRecord {user_id: $u}) RETURN m", u=user_id).records[0]["m"]
    assert record["status"] == "merged" and record["absorbed_name"] == "Bill"
    assert record["survivor_id"] == william["id"]


def test_alias_claimed_by_two_nodes_goes_to_review(mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {
        "entities": [{"name": "Sarah Kim", "kind": "PERSON", "aliases": ["SK"]},
                     {"name": "Sam Kerr", "kind": "PERSON", "aliases": ["SK"]}],
        "relations": [rel("User", "KNOWS", "Sarah Kim"), rel("User", "KNOWS", "Sam Kerr")]})
    report = mem.commit(user_id, "c2", {"entities": [{"name": "SK", "kind": "PERSON"}],
                                        "relations": [rel("User", "EMAILED", "SK")]})
    assert report.merged == []
    assert report.review_pending == [{"name": "SK", "candidates": ["Sam Kerr", "Sarah Kim"]}]
    assert len(entities(raw_driver, user_id)) == 4  # User, Sarah Kim, Sam Kerr, SK


def test_sarah_kim_versus_sarah_only_nominates(mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                               "relations": [rel("User", "HAS_BOSS", "Sarah")]})
    report = mem.commit(user_id, "c2", {"entities": [{"name": "Sarah Kim", "kind": "PERSON"}],
                                        "relations": [rel("User", "KNOWS", "Sarah Kim")]})
    assert report.merged == [] and report.created == ["Sarah Kim"]
    assert report.review_pending == [{"name": "Sarah Kim", "candidates": ["Sarah"]}]
    pending = raw_driver.execute_query(
        "MATCH (m:MergeRecord {user_id: $u, status: 'pending'}) RETURN m.candidate_names AS c",
        u=user_id).records
    assert [r["c"] for r in pending] == [["Sarah"]]


def test_placeholders_land_on_the_self_node_across_conversations(mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {"relations": [rel("User", "LIVES_IN", "Paris")],
                               "entities": [{"name": "Paris", "kind": "PLACE"}]})
    mem.commit(user_id, "c2", {"relations": [rel("me", "LIKES", "Jazz")],
                               "entities": [{"name": "Jazz", "kind": "TOPIC"}]})
    mem.commit(user_id, "c3", {"entities": [{"name": "Bill", "kind": "PERSON", "is_user": True}],
                               "relations": [rel("I", "OWNS", "Bike")]})
    selves = [e for e in entities(raw_driver, user_id) if e.get("is_self")]
    assert len(selves) == 1 and selves[0]["name"] == "Bill"
    assert selves[0]["conversations"] == ["c1", "c2", "c3"]
    assert {(a, t) for a, t, _, _ in edges(raw_driver, user_id)} == {
        ("Bill", "LIVES_IN"), ("Bill", "LIKES"), ("Bill", "OWNS")}


def test_first_relation_source_becomes_the_self_node(mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {"entities": [{"name": "Dana", "kind": "PERSON"},
                                            {"name": "Rex", "kind": "OTHER"}],
                               "relations": [rel("Dana", "HAS_DOG", "Rex")]})
    mem.commit(user_id, "c2", {"relations": [rel("me", "WALKS", "Rex")]})
    selves = [e["name"] for e in entities(raw_driver, user_id) if e.get("is_self")]
    assert selves == ["Dana"]
    assert {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)} == {
        ("Dana", "HAS_DOG", "Rex"), ("Dana", "WALKS", "Rex")}


def test_one_unknown_end_creates_a_provisional_node(mem, raw_driver, user_id):
    report = mem.commit(user_id, "c1", {"relations": [rel("User", "WORKS_AT", "Initech")]})
    assert report.provisional == ["Initech"]
    node = next(e for e in entities(raw_driver, user_id) if e["name"] == "Initech")
    assert node["provisional"] is True and node["confidence"] == 0.3 and node["kind"] == "OTHER"


def test_failed_commit_leaves_the_graph_exactly_as_before(mem, raw_driver, user_id, monkeypatch):
    mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                               "relations": [rel("User", "HAS_BOSS", "Sarah")]}, at=T0)
    before = snapshot(raw_driver)
    import pegasus.commit as commit_module

    def explode(*args, **kwargs):
        raise RuntimeError("injected failure after the entity and edge writes")

    monkeypatch.setattr(commit_module, "write_keys", explode)
    with pytest.raises(RuntimeError, match="injected"):
        mem.commit(user_id, "c2", {
            "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sally"]},
                         {"name": "Acme", "kind": "ORG"}],
            "relations": [rel("User", "HAS_BOSS", "Sarah"), rel("User", "WORKS_AT", "Acme")]},
            at=T0 + timedelta(days=3))
    assert snapshot(raw_driver) == before


def test_committing_the_same_conversation_twice_changes_nothing(mem, raw_driver, user_id):
    batch = {"entities": [{"name": "Sarah", "kind": "PERSON"}],
             "relations": [rel("User", "HAS_BOSS", "Sarah")]}
    mem.commit(user_id, "c1", batch, at=T0)
    before = snapshot(raw_driver)
    again = mem.commit(user_id, "c1", batch, at=T0 + timedelta(days=5))
    assert again.skipped is True
    assert snapshot(raw_driver) == before
    with pytest.raises(ConversationConflictError):
        mem.commit(user_id, "c1", {"relations": [rel("User", "LIKES", "Sarah")]})
    assert snapshot(raw_driver) == before


def test_supersession_and_revival(mem, raw_driver, user_id):
    acme = {"entities": [{"name": "Acme", "kind": "ORG"}],
            "relations": [rel("User", "WORKS_AT", "Acme", cardinality="one_to_one")]}
    globex = {"entities": [{"name": "Globex", "kind": "ORG"}],
              "relations": [rel("User", "WORKS_AT", "Globex", cardinality="one_to_one")]}
    mem.commit(user_id, "c1", acme, at=T0)
    report = mem.commit(user_id, "c2", globex, at=T0 + timedelta(days=1))
    assert report.superseded == ["User -[WORKS_AT]-> Acme"]
    by_target = {b: p for _, _, b, p in edges(raw_driver, user_id)}
    assert by_target["Acme"]["superseded_at"].to_native() == T0 + timedelta(days=1)
    assert by_target["Acme"]["superseded_by"] == by_target["Globex"]["id"]
    assert by_target["Globex"].get("superseded_at") is None
    assert [b for _, _, b, _ in edges(raw_driver, user_id, include_superseded=False)] == ["Globex"]
    revived = mem.commit(user_id, "c3", acme | {"conversation": {"summary": "back at Acme"}},
                         at=T0 + timedelta(days=2))
    assert revived.revived == ["User -[WORKS_AT]-> Acme"]
    assert revived.superseded == ["User -[WORKS_AT]-> Globex"]
    assert [b for _, _, b, _ in edges(raw_driver, user_id, include_superseded=False)] == ["Acme"]


def test_ended_claim_supersedes_and_adds_nothing(mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {"entities": [{"name": "Acme", "kind": "ORG"}],
                               "relations": [rel("User", "WORKS_AT", "Acme")]}, at=T0)
    report = mem.commit(user_id, "c2", {"relations": [rel("User", "WORKS_AT", "Acme",
                                                          status="ended", snippet="I quit Acme")]})
    assert report.ended == ["User -[WORKS_AT]-> Acme"] and report.edges_created == []
    [(_, _, _, p)] = edges(raw_driver, user_id)
    assert p["superseded_at"] is not None and p.get("superseded_by") is None
    keys = raw_driver.execute_query(
        "MATCH (k:Key {user_id: $u, kind: 'relation'}) RETURN k.label AS l", u=user_id).records
    assert keys == []  # WORKS_AT is on no current edge any more: its key is stale


def test_reobservation_reinforces_with_decay_and_refreshes_snippet_only_if_surer(
        mem, raw_driver, user_id):
    first = rel("User", "HAS_BOSS", "Sarah", stability="mutable", confidence=0.7,
                snippet="my boss Sarah")
    mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                               "relations": [first]}, at=T0)
    lower = first | {"confidence": 0.5, "snippet": "Sarah, my boss, again"}
    mem.commit(user_id, "c2", {"relations": [lower]}, at=T0 + timedelta(days=10))
    [(_, _, _, p)] = edges(raw_driver, user_id)
    expected = 100 * math.exp(-0.020 * 10) + 15
    assert p["strength"] == pytest.approx(expected, abs=1e-9)
    assert p["strength_at_touch"] == pytest.approx(expected, abs=1e-9)
    assert p["snippet"] == "my boss Sarah" and p["confidence"] == 0.7
    assert p["conversations"] == ["c1", "c2"]
    higher = first | {"confidence": 0.95, "snippet": "Sarah is definitely my boss now"}
    mem.commit(user_id, "c3", {"relations": [higher]}, at=T0 + timedelta(days=10))
    [(_, _, _, p)] = edges(raw_driver, user_id)
    assert p["strength"] == 100.0  # capped
    assert p["snippet"] == "Sarah is definitely my boss now" and p["confidence"] == 0.95


def test_invalid_batch_is_a_clear_error_and_writes_nothing(mem, raw_driver, user_id):
    before = snapshot(raw_driver)
    with pytest.raises(InvalidBatchError, match="not an extraction batch"):
        mem.commit(user_id, "c1", {"entities": "Sarah"})
    with pytest.raises(InvalidBatchError, match="not an extraction batch"):
        mem.commit(user_id, "c1", {"relations": [{"source": "User"}]})
    assert snapshot(raw_driver) == before


def test_commits_never_touch_another_users_partition(mem, raw_driver, user_id):
    other = user_id + "-other"
    mem.commit(other, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                             "relations": [rel("User", "HAS_BOSS", "Sarah")]}, at=T0)
    before = snapshot(raw_driver)
    mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                               "relations": [rel("User", "HAS_BOSS", "Sarah")]}, at=T0)
    other_after = [e for e in entities(raw_driver, other)]
    assert [e["conversations"] for e in other_after] == [["c1"], ["c1"]]
    assert len(edges(raw_driver, other)) == 1 and len(edges(raw_driver, user_id)) == 1
    assert before[0][0] in snapshot(raw_driver)[0]


@pytest.mark.parametrize("score, merged, flagged", [(0.95, True, False), (0.80, True, True),
                                                     (0.60, False, False)])
def test_review_bands_through_commit(settings, raw_driver, user_id, score, merged, flagged):
    reviewer = ScriptedReviewer({"Sarah": score})
    with Memory(settings, reviewer=reviewer) as mem:
        mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                                   "relations": [rel("User", "HAS_BOSS", "Sarah")]})
        report = mem.commit(user_id, "c2", {"entities": [{"name": "Sarah Kim", "kind": "PERSON"}],
                                            "relations": [rel("User", "EMAILED", "Sarah Kim")]})
    assert reviewer.calls == [("Sarah Kim", ["Sarah"])]
    names = sorted(e["name"] for e in entities(raw_driver, user_id))
    assert names == (["Sarah", "User"] if merged else ["Sarah", "Sarah Kim", "User"])
    assert bool(report.flagged) == flagged
    assert bool(report.merged) == (merged and not flagged)


def test_highest_qualifying_candidate_wins(settings, raw_driver, user_id):
    reviewer = ScriptedReviewer({"Sarah Jones": 0.75, "Sarah Kim": 0.93})
    with Memory(settings) as plain:  # no reviewer: the two stay apart
        plain.commit(user_id, "c1", {"entities": [{"name": "Sarah Jones", "kind": "PERSON"},
                                                  {"name": "Sarah Kim", "kind": "PERSON"}],
                                     "relations": [rel("User", "KNOWS", "Sarah Jones"),
                                                   rel("User", "LIKES", "Sarah Kim")]})
    with Memory(settings, reviewer=reviewer) as mem:
        report = mem.commit(user_id, "c2", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                                            "relations": [rel("User", "EMAILED", "Sarah")]})
    assert [(name, sorted(c)) for name, c in reviewer.calls] == [("Sarah", ["Sarah Jones", "Sarah Kim"])]
    assert [(m.into, m.confidence) for m in report.merged] == [("Sarah Kim", 0.93)]
    assert {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)} >= {
        ("User", "EMAILED", "Sarah Kim")}


def test_a_provisional_end_stays_provisional_through_review_and_a_real_sighting_confirms_it(
        mem, raw_driver, user_id):
    mem.commit(user_id, "c1", {"relations": [rel("User", "WORKS_AT", "Initech")]})
    report = mem.commit(user_id, "c2", {"relations": [rel("User", "SUES", "Initech Legal")]})
    assert report.review_pending == [{"name": "Initech Legal", "candidates": ["Initech"]}]
    assert report.provisional == ["Initech Legal"]
    nodes = {e["name"]: e for e in entities(raw_driver, user_id)}
    assert nodes["Initech Legal"]["provisional"] is True
    mem.commit(user_id, "c3", {"entities": [{"name": "Initech", "kind": "OTHER", "confidence": 0.2}],
                               "relations": [rel("User", "LIKES", "Initech")]})
    assert next(e for e in entities(raw_driver, user_id) if e["name"] == "Initech")[
        "provisional"] is False


def test_an_unusable_review_leaves_the_pair_pending_and_commits_the_rest(
        settings, raw_driver, user_id):
    """Found by fuzzing the HTTP API: an LLM reviewer answering no JSON failed the commit."""
    from langchain_core.messages import AIMessage

    from pegasus.merge.llm_review import LLMReviewer
    from tests.helpers import scripted_model

    reviewer = LLMReviewer(scripted_model(AIMessage(content="I'd rather not say.")))
    with Memory(settings, reviewer=reviewer) as mem:
        mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                                   "relations": [rel("User", "HAS_BOSS", "Sarah")]})
        report = mem.commit(user_id, "c2", {"entities": [{"name": "Sarah Kim", "kind": "PERSON"}],
                                            "relations": [rel("User", "EMAILED", "Sarah Kim")]})
        assert report.review_pending == [{"name": "Sarah Kim", "candidates": ["Sarah"]}]
        assert any("reviewer's answer was unusable" in n for n in report.notes)
        assert [r.absorbed_name for r in mem.merges(user_id, include_pending=True)] == [
            "Sarah Kim"]
    assert sorted(e["name"] for e in entities(raw_driver, user_id)) == [
        "Sarah", "Sarah Kim", "User"]
    assert ("User", "EMAILED", "Sarah Kim") in {(a, t, b) for a, t, b, _ in
                                               edges(raw_driver, user_id)}


def test_a_provisional_node_is_absorbed_when_the_real_entity_arrives(settings, raw_driver,
                                                                      user_id):
    with Memory(settings) as mem:
        first = mem.commit(user_id, "c1", {"relations": [
            rel("User", "WORKS_AT", "Northwind", snippet="I work at Northwind")]})
        assert first.provisional == ["Northwind"]
        later = mem.commit(user_id, "c2", {
            "entities": [{"name": "northwind", "kind": "ORG", "properties": {"city": "Oslo"}}],
            "relations": [rel("Northwind", "LOCATED_IN", "Oslo", snippet="Northwind is in Oslo")]})
    assert [(m.name, m.into, m.rule) for m in later.merged] == [
        ("northwind", "Northwind", "provisional")]
    [northwind] = [e for e in entities(raw_driver, user_id) if e["name"] == "Northwind"]
    assert northwind["kind"] == "ORG" and northwind["labels"] == ["Entity", "Org"]
    assert northwind["provisional"] is False and northwind["p_city"] == "Oslo"
    assert {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)} == {
        ("User", "WORKS_AT", "Northwind"), ("Northwind", "LOCATED_IN", "Oslo")}


def test_an_ended_relation_with_an_unknown_end_is_kept_as_a_past_fact(settings, raw_driver,
                                                                       user_id):
    """"I quit Initech" with no Initech stored: the memory is kept, already ended (design §3,
    "Past facts"); the current job stays current; "I'm back at Initech" makes it current."""
    at = datetime(2026, 3, 1, tzinfo=UTC)
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", {"relations": [
            rel("User", "WORKS_AT", "Globex", cardinality="one_to_one",
                snippet="I work at Globex")]}, at=at)
        report = mem.commit(user_id, "c2", {"relations": [
            rel("User", "WORKS_AT", "Initech", status="ended", cardinality="one_to_one",
                snippet="I quit Initech last year")]}, at=at + timedelta(days=1))
        assert report.dropped == [] and report.provisional == ["Initech"]
        assert report.ended == ["User -[WORKS_AT]-> Initech"]
        kept = {t: p for _, label, t, p in edges(raw_driver, user_id) if label == "WORKS_AT"}
        assert kept["Initech"]["snippet"] == "I quit Initech last year"
        assert kept["Initech"]["superseded_at"].to_native() == at + timedelta(days=1)
        assert kept["Initech"].get("superseded_by") is None
        assert kept["Globex"].get("superseded_at") is None  # a past job ends no current one
        mem.commit(user_id, "c3", {"relations": [
            rel("User", "WORKS_AT", "Initech", status="ended", snippet="I left Initech")]},
            at=at + timedelta(days=2))
        assert [t for _, label, t, _ in edges(raw_driver, user_id)
                if label == "WORKS_AT"].count("Initech") == 1  # ended once, kept once
        mem.commit(user_id, "c4", {"relations": [
            rel("User", "WORKS_AT", "Initech", cardinality="one_to_one",
                snippet="I'm back at Initech")]}, at=at + timedelta(days=3))
        again = {t: p for _, label, t, p in edges(raw_driver, user_id) if label == "WORKS_AT"}
    assert again["Initech"].get("superseded_at") is None
    assert again["Globex"].get("superseded_at") is not None


def test_a_kept_partition_is_reused_and_read_again_when_another_writer_moved_it(
        settings, raw_driver, user_id):
    """Commits of one process reuse the partition they planned against (design §5,
    "Snapshots"); a write by another process, or an undo, makes the next commit read it again.
    The graph is the same as with nothing kept."""
    batches = [
        {"entities": [{"name": "Sarah Kim", "kind": "PERSON"}],
         "relations": [rel("User", "HAS_BOSS", "Sarah Kim")]},
        {"entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["SK"]}],
         "relations": [rel("User", "CLIMBS_WITH", "Sarah")]},  # nominates Sarah Kim: pending
        {"entities": [{"name": "Bill", "kind": "PERSON", "is_user": True}],
         "relations": [rel("User", "LIKES", "Jazz")]},  # renames the self node: kept pool dropped
        {"relations": [rel("SK", "LIVES_IN", "Oslo")]},
    ]

    def graph(user):
        return (sorted((e["name"], tuple(e.get("aliases") or ()), e["kind"])
                       for e in entities(raw_driver, user)),
                sorted((a, t, b) for a, t, b, _ in edges(raw_driver, user)))

    with Memory(settings) as mem, Memory(settings) as other:
        mem.commit(user_id, "c0", batches[0], at=T0)
        reads = mem.snapshots.reads  # the first commit made the partition: read under the lock
        mem.commit(user_id, "c1", batches[1], at=T0 + timedelta(hours=1))
        assert mem.snapshots.reads == reads, "the second commit planned against the kept pool"
        other.commit(user_id, "x", {"relations": [rel("User", "READS", "Dune")]},
                     at=T0 + timedelta(hours=2))
        mem.commit(user_id, "c2", batches[2], at=T0 + timedelta(hours=3))
        assert mem.snapshots.reads == reads + 1, "another writer moved the partition: read again"
        mem.commit(user_id, "c3", batches[3], at=T0 + timedelta(hours=4))
        assert mem.snapshots.reads == reads + 2, "a renamed entity drops the kept pool"
        kept = graph(user_id)
    twin = user_id + "-twin"
    with Memory(settings.model_copy(update={"snapshot_users": 0})) as fresh:
        for i, batch in enumerate(batches[:2]):
            fresh.commit(twin, f"c{i}", batch, at=T0 + timedelta(hours=i))
        fresh.commit(twin, "x", {"relations": [rel("User", "READS", "Dune")]},
                     at=T0 + timedelta(hours=2))
        for i, batch in enumerate(batches[2:], start=2):
            fresh.commit(twin, f"c{i}", batch, at=T0 + timedelta(hours=i + 1))
        # nothing kept: each commit reads once (its write reuses the review pass's plan when
        # the partition did not move), the first twice (its partition is made under the lock)
        assert fresh.snapshots.reads == 5 + 1
    assert graph(twin) == kept
    assert ("Bill", "LIVES_IN", "Oslo") not in kept[1] and ("Sarah", "LIVES_IN", "Oslo") in kept[1]
