import subprocess
import sys

import pytest

from pegasus import Memory
from pegasus.errors import NotFoundError, PegasusError
from tests.helpers import ScriptedReviewer, edges, entities, rel

FIRST = {"entities": [{"name": "Sarah", "kind": "PERSON", "properties": {"role": "manager"},
                       "confidence": 0.8}],
         "relations": [rel("User", "HAS_BOSS", "Sarah", snippet="my boss Sarah")]}
SECOND = {"entities": [{"name": "Sarah Kim", "kind": "PERSON", "aliases": ["SK"],
                        "properties": {"role": "climber", "city": "Oslo"}, "confidence": 0.95}],
          "relations": [rel("User", "CLIMBS_WITH", "Sarah Kim", snippet="I climb with Sarah Kim"),
                        rel("Sarah Kim", "LIVES_IN", "Oslo", snippet="Sarah Kim lives in Oslo")]}


def node_state(driver, user_id, name):
    n = next(e for e in entities(driver, user_id) if e["name"] == name)
    return {k: v for k, v in n.items() if k not in ("updated_at",)}


def test_flagged_merge_is_listed_and_undo_restores_both_nodes_and_edges(
        settings, raw_driver, user_id, neo4j_env):
    with Memory(settings) as plain:
        plain.commit(user_id, "c1", FIRST)
    sarah_before = node_state(raw_driver, user_id, "Sarah")
    edges_before = {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)}
    with Memory(settings, reviewer=ScriptedReviewer({"Sarah": 0.8})) as mem:
        report = mem.commit(user_id, "c2", SECOND)
        assert [(f.name, f.into) for f in report.flagged] == [("Sarah Kim", "Sarah")]
        merged = node_state(raw_driver, user_id, "Sarah")
        assert merged["aliases"] == ["Sarah Kim", "SK"] and merged["p_city"] == "Oslo"
        [flag] = mem.merges(user_id)
        assert flag.status == "flagged" and flag.absorbed_name == "Sarah Kim"
        assert flag.confidence == 0.8

        listed = subprocess.run([sys.executable, "-m", "pegasus", "review", "--user", user_id],
                                env=neo4j_env, capture_output=True, text=True, timeout=120).stdout
        assert flag.id in listed and "Sarah Kim → Sarah" in listed

        result = mem.undo_merge(user_id, flag.id)
        assert result.edges_moved == 2
        assert mem.merges(user_id) == []
        with pytest.raises(PegasusError, match="undone"):
            mem.undo_merge(user_id, flag.id)
        with pytest.raises(NotFoundError):
            mem.undo_merge(user_id, "no-such-record")

    assert node_state(raw_driver, user_id, "Sarah") == sarah_before
    # the survivor's keys for the absorbed forms were stale after the undo: dropped, and the
    # restored node has its own
    keys = raw_driver.execute_query(
        "MATCH (k:Key {user_id: $u, kind: 'entity'}) MATCH (n:Entity {user_id: $u, id: k.entity_id})"
        " RETURN n.name AS n, k.text AS t ORDER BY n, t", u=user_id).records
    assert [(r["n"], r["t"]) for r in keys] == [
        ("Oslo", "Oslo"), ("Sarah", "Sarah"), ("Sarah Kim", "SK"), ("Sarah Kim", "Sarah Kim"),
        ("User", "User")]
    kim = node_state(raw_driver, user_id, "Sarah Kim")
    assert kim["aliases"] == ["SK"] and kim["p_role"] == "climber" and kim["p_city"] == "Oslo"
    assert kim["conversations"] == ["c2"] and kim["labels"] == ["Entity", "Person"]
    after = {(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)}
    assert after == edges_before | {("User", "CLIMBS_WITH", "Sarah Kim"),
                                    ("Sarah Kim", "LIVES_IN", "Oslo")}
    moved = next(p for a, t, b, p in edges(raw_driver, user_id) if t == "CLIMBS_WITH")
    assert moved["snippet"] == "I climb with Sarah Kim" and moved["conversations"] == ["c2"]
    with Memory(settings) as mem:
        recall = mem.recall(user_id, "climbing with Sarah Kim", at=None)
    assert "I climb with Sarah Kim" in recall.context
    moved_ids = {p["id"] for a, t, b, p in edges(raw_driver, user_id) if t == "CLIMBS_WITH"}
    assert moved_ids <= set(recall.edge_ids)
    assert recall.as_json()["context"] == recall.context
