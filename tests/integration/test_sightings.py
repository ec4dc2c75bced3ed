"""Every sighting's words are searchable (design §2 "Snippet", §7.6): a memory said again in
other words keeps the earlier words findable, quoted with the day they were said; forgetting,
merging, importing and migrating carry the sightings' snippets along with the edge."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pegasus import Memory, cypher
from pegasus.snippets import sighting_id
from tests.helpers import rel

T1 = datetime(2026, 5, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 5, 9, 9, tzinfo=UTC)
T3 = datetime(2026, 5, 20, 9, tzinfo=UTC)

DOOR = "I deliver for Door Dash on weekends"
LOST = "Unfortunately I lost my job at Door Dash this month"


@pytest.fixture
def mem(settings, user_id):
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", {
            "entities": [{"name": "Gina", "kind": "PERSON", "is_user": True},
                         {"name": "Door Dash", "kind": "ORG"}],
            "relations": [rel("Gina", "WORKED_AT", "Door Dash", DOOR, confidence=0.6)]}, at=T1)
        memory.commit(user_id, "c2", {"relations": [
            rel("Gina", "WORKED_AT", "Door Dash", LOST, confidence=0.9)]}, at=T2)
        yield memory


def snippets(driver, user_id):
    """(text, id, edge_id, source_id, target_id, said_at, conversation_id) of every snippet."""
    return sorted(tuple(r.values()) for r in driver.execute_query(
        "MATCH (s:Snippet {user_id: $u}) RETURN s.text AS text, s.id AS id, s.edge_id AS edge, "
        "s.source_id AS source, s.target_id AS target, s.said_at AS said_at, "
        "s.conversation_id AS said_in", u=user_id).records)


def ends(driver, user_id):
    return {r["id"]: (r["s"], r["t"]) for r in driver.execute_query(
        "MATCH (s:Entity {user_id: $u})-[r]->(t:Entity) RETURN r.id AS id, s.id AS s, t.id AS t",
        u=user_id).records}


def test_the_surer_words_are_shown_and_the_earlier_words_still_find_the_memory(mem, user_id,
                                                                              raw_driver):
    [edge] = mem.memories(user_id)
    assert edge.snippet == LOST  # the surer sighting's words are the edge's own
    (source, target), = ends(raw_driver, user_id).values()
    assert snippets(raw_driver, user_id) == sorted([
        (DOOR, sighting_id(edge.id, DOOR), edge.id, source, target, T1, "c1"),
        (LOST, edge.id, edge.id, source, target, T2, "c2")])
    weekend = mem.recall(user_id, "deliveries on weekends", at=T3)
    assert weekend.context == [DOOR]  # the earlier words, dated as said, the edge shown once
    assert weekend.snippets[0].said_at == T1 and weekend.snippets[0].edge_id == edge.id
    lost = mem.recall(user_id, "when did I lose my job?", at=T3)
    assert lost.context == [LOST] and lost.snippets[0].said_at == T2
    both = mem.recall(user_id, "Door Dash", at=T3)
    assert len(both.context) == 1 and both.edge_ids == [edge.id]


def test_words_said_again_are_one_snippet_and_a_new_edge_has_only_its_own(mem, user_id,
                                                                         raw_driver):
    mem.commit(user_id, "c3", {"relations": [
        rel("Gina", "WORKED_AT", "Door Dash", DOOR, confidence=0.5),
        rel("Gina", "LIKES", "Dancing", "dance is my go-to for stress relief")]}, at=T3)
    texts = [s[0] for s in snippets(raw_driver, user_id)]
    assert sorted(texts) == sorted([DOOR, LOST, "dance is my go-to for stress relief"])
    [door] = [s for s in snippets(raw_driver, user_id) if s[0] == DOOR]
    assert door[5:] == (T1, "c1")  # the earliest sighting of those words


def test_forgetting_a_conversation_takes_its_words_out_of_the_index(mem, user_id, raw_driver):
    [edge] = mem.memories(user_id)
    mem.forget_conversation(user_id, "c1", at=T3)
    assert [s[0] for s in snippets(raw_driver, user_id)] == [LOST]
    assert mem.recall(user_id, "deliveries on weekends", at=T3).context == []
    assert mem.memories(user_id)[0].id == edge.id


def test_when_the_shown_words_are_forgotten_the_others_become_the_edges_own(mem, user_id,
                                                                           raw_driver):
    [edge] = mem.memories(user_id)
    mem.forget_conversation(user_id, "c2", at=T3)
    (source, target), = ends(raw_driver, user_id).values()
    assert snippets(raw_driver, user_id) == [(DOOR, edge.id, edge.id, source, target, T1, "c1")]
    assert mem.recall(user_id, "deliveries on weekends", at=T3).context == [DOOR]
    assert LOST not in mem.recall(user_id, "lost my job at Door Dash", at=T3).render()


def test_forgetting_the_memory_takes_every_snippet_of_it(mem, user_id, raw_driver):
    [edge] = mem.memories(user_id)
    mem.forget_memory(user_id, edge.id, at=T3)
    assert snippets(raw_driver, user_id) == []
    assert mem.recall(user_id, "deliveries on weekends", at=T3).render() == ""


def test_a_merge_by_hand_and_its_undo_move_every_snippet_with_the_edge(mem, user_id,
                                                                       raw_driver):
    mem.commit(user_id, "c3", {"entities": [{"name": "DoorDash Inc", "kind": "ORG"}],
                               "relations": [rel("Gina", "DRIVES_FOR", "DoorDash Inc",
                                                 "driving for DoorDash Inc", confidence=0.5)]},
               at=T2)
    mem.commit(user_id, "c4", {"relations": [rel("Gina", "DRIVES_FOR", "DoorDash Inc",
                                                 "I drive a Honda for DoorDash Inc",
                                                 confidence=0.9)]}, at=T3)

    def follow() -> None:  # every snippet names the ends its edge has now
        where = ends(raw_driver, user_id)
        rows = snippets(raw_driver, user_id)
        assert len(rows) == 4 and all(where[s[2]] == (s[3], s[4]) for s in rows)

    follow()
    merged = mem.merge_entities(user_id, "Door Dash", "DoorDash Inc", at=T3)
    follow()
    # (the other Door Dash memory under the best's 0.30 until round 4 session 4, over 0.25 now)
    assert mem.recall(user_id, "driving for DoorDash", at=T3).context == [
        "driving for DoorDash Inc", "I deliver for Door Dash on weekends"]
    mem.undo_merge(user_id, merged.merge_record_id, at=T3)
    follow()


def test_an_import_makes_the_sightings_snippets_again(mem, user_id, raw_driver, tmp_path):
    path = tmp_path / "gina.jsonl"
    path.write_text("".join(line + "\n" for line in mem.export(user_id, at=T3)))
    copy = user_id + "-copy"
    words = [s[0] for s in snippets(raw_driver, user_id)]
    mem.forget_everything(user_id)  # ids are kept: one server holds them in one partition
    mem.import_memory(copy, path, at=T3)
    assert [s[0] for s in snippets(raw_driver, copy)] == words
    assert mem.recall(copy, "deliveries on weekends", at=T3).context == [DOOR]


def test_migration_marks_older_edges_and_migrate_embeds_their_sightings(mem, user_id,
                                                                        raw_driver):
    """Edges stored before V0009: one snippet each, without edge_id. Its statements run again
    (they are idempotent) mark the edges seen twice; Memory.migrate embeds their words."""
    before = snippets(raw_driver, user_id)
    raw_driver.execute_query(
        "MATCH (s:Snippet {user_id: $u}) WHERE s.id <> s.edge_id DETACH DELETE s", u=user_id)
    raw_driver.execute_query("MATCH (s:Snippet {user_id: $u}) REMOVE s.edge_id", u=user_id)
    assert mem.recall(user_id, "deliveries on weekends", at=T3).context == []
    [v9] = [m for m in cypher.migrations() if m.version == 9]
    for statement in v9.statements:
        with raw_driver.session() as session:
            session.run(statement).consume()
    marks = raw_driver.execute_query(
        "MATCH (m:SnippetBackfill {user_id: $u}) RETURN count(m) AS n", u=user_id).records
    assert marks[0]["n"] == 1
    mem.migrate()
    assert snippets(raw_driver, user_id) == before
    assert mem.recall(user_id, "deliveries on weekends", at=T3).context == [DOOR]
    assert raw_driver.execute_query("MATCH (m:SnippetBackfill) RETURN count(m) AS n"
                                    ).records[0]["n"] == 0
