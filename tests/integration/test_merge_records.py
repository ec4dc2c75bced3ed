"""Merge records are one typed model (merge/records.py), written and read the same way by every
merge, undo, the merge list and export. Records stored before V0011 came in two shapes (a merge
by the rules kept the batch's cleaned entity, a merge by hand the stored one); the migration
rewrites both, and they read back, list and undo after it."""

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from pegasus import Memory, cypher
from pegasus.merge.records import MergeFields
from tests.helpers import rel

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 3, 2, 9, tzinfo=UTC)
T3 = datetime(2026, 3, 3, 9, tzinfo=UTC)


@pytest.fixture
def mem(settings):
    with Memory(settings) as memory:
        yield memory


def stored(raw_driver, user_id: str) -> dict[str, dict]:
    """Each merge record's node properties, by its rule."""
    rows = raw_driver.execute_query(
        "MATCH (m:MergeRecord {user_id: $u}) RETURN m.rule AS rule, properties(m) AS props",
        u=user_id).records
    return {r["rule"]: dict(r["props"]) for r in rows}


def set_props(raw_driver, user_id: str, record_id: str, props: dict) -> None:
    raw_driver.execute_query("MATCH (m:MergeRecord {user_id: $u, id: $id}) SET m += $props",
                             u=user_id, id=record_id, props=props)


def test_both_older_shapes_read_back_list_and_undo_after_the_migration(mem, user_id,
                                                                        raw_driver):
    mem.commit(user_id, "c1", {
        "entities": [{"name": "Sarah Kim", "kind": "PERSON", "aliases": ["Sarah"]},
                     {"name": "Mara", "kind": "PERSON"}, {"name": "Ines", "kind": "PERSON"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah Kim"), rel("User", "KNOWS", "Mara"),
                      rel("User", "PLAYS_CHESS_WITH", "Ines")]}, at=T1)
    by_rules = mem.commit(user_id, "c2", {
        "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["SK"],
                      "properties": {"team": "design"}}],
        "relations": [rel("User", "LIKES", "Sarah")]}, at=T2)
    assert [m.into for m in by_rules.merged] == ["Sarah Kim"]
    ines_id = mem.entities(user_id, "Ines")[0].id
    mem.merge_entities(user_id, "Mara", "Ines", at=T3)
    records = stored(raw_driver, user_id)
    rules, manual = records["alias"], records["manual"]

    # The shapes the code before V0011 wrote: the cleaned entity of the batch (merge/planner.py)
    # and the stored entity with its id and conversations but no conversation id
    # (ownership/correct.py), both with json.dumps' separators; no `between` by the rules.
    old_absorbed = json.loads(rules["absorbed"])
    set_props(raw_driver, user_id, rules["id"], {"between": None, "absorbed": json.dumps({
        "name": old_absorbed["name"], "kind": old_absorbed["kind"],
        "aliases": old_absorbed["aliases"], "properties": old_absorbed["properties"],
        "confidence": old_absorbed["confidence"], "is_user": False, "is_placeholder": False,
        "provisional": False, "same_as_hint": None})})
    set_props(raw_driver, user_id, manual["id"], {
        "conversation_id": None, "absorbed": json.dumps(json.loads(manual["absorbed"])),
        "before": json.dumps(json.loads(manual["before"]))})
    with pytest.raises(ValidationError):
        MergeFields.from_node(stored(raw_driver, user_id)["alias"])

    [v11] = [m for m in cypher.migrations() if m.version == 11]
    for statement in v11.statements:
        with raw_driver.session() as session:
            session.run(statement).consume()
    assert raw_driver.execute_query(
        "MATCH (m:MergeRecordToUpgrade {user_id: $u}) RETURN count(m) AS n", u=user_id
    ).records[0]["n"] == 2
    mem.migrate()
    assert raw_driver.execute_query("MATCH (m:MergeRecordToUpgrade) RETURN count(m) AS n"
                                    ).records[0]["n"] == 0

    after = {rule: MergeFields.from_node(props)
             for rule, props in stored(raw_driver, user_id).items()}
    assert after["alias"].absorbed.name == "Sarah"
    assert after["alias"].absorbed.conversations == ["c2"] and after["alias"].absorbed.id
    assert after["alias"].absorbed.properties == {"team": "design"}
    assert after["alias"].between == [] and after["alias"].conversation_id == "c2"
    assert (after["manual"].absorbed.id, after["manual"].absorbed.conversations) == (
        ines_id, ["c1"])
    assert [e.label for e in after["manual"].between] == []
    assert after["manual"].before.name == "Mara"
    listed = {r.rule: r for r in mem.merges(user_id, include_merged=True)}
    assert {rule: r.absorbed_name for rule, r in listed.items()} == {
        "alias": "Sarah", "manual": "Ines"}

    undone = mem.undo_merge(user_id, manual["id"], at=T3)
    assert (undone.restored, undone.restored_id) == ("Ines", ines_id)
    undone = mem.undo_merge(user_id, rules["id"], at=T3)
    assert undone.restored == "Sarah" and undone.survivor == "Sarah Kim"
    [sarah_kim] = mem.entities(user_id, "Sarah Kim")
    assert "SK" not in sarah_kim.aliases and "team" not in sarah_kim.properties
    assert {r.status for r in mem.merges(user_id, include_merged=True)} == set()
    assert sorted(MergeFields.from_node(p).status
                  for p in stored(raw_driver, user_id).values()) == ["undone", "undone"]


def test_every_merge_writes_the_one_shape_and_export_reads_it_back(mem, user_id, raw_driver):
    """A merge by the rules and one by hand write records that read back as the one model,
    and an export holds the same fields."""
    mem.commit(user_id, "c1", {
        "entities": [{"name": "Sarah Kim", "kind": "PERSON", "aliases": ["Sarah"]},
                     {"name": "Mara", "kind": "PERSON"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah Kim"), rel("Sarah Kim", "KNOWS", "Mara")]},
        at=T1)
    mem.commit(user_id, "c2", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                               "relations": [rel("User", "LIKES", "Sarah")]}, at=T2)
    mem.merge_entities(user_id, "Sarah Kim", "Mara", at=T3)
    records = {rule: MergeFields.from_node(p) for rule, p in stored(raw_driver, user_id).items()}
    assert sorted(records) == ["alias", "manual"]
    for fields in records.values():
        assert fields.absorbed is not None and fields.before is not None
        assert fields.absorbed.conversations and fields.absorbed.id
    assert [e.label for e in records["manual"].between] == ["KNOWS"]
    exported = [json.loads(line) for line in mem.export(user_id)]
    lines = {r["record"]["rule"]: r["record"] for r in exported if r["type"] == "merge_record"}
    for rule, fields in records.items():
        assert MergeFields.model_validate(lines[rule]).model_dump() == fields.model_dump()
