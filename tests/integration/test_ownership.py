"""See, correct, forget (design §10) through the Python facade, on a real Neo4j."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from pegasus import Memory
from pegasus.errors import AmbiguousEntityError, ErasureInProgressError, NotFoundError, PegasusError
from pegasus.extract.extractor import Staging
from tests.helpers import call, rel, scripted_model

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 3, 8, 9, tzinfo=UTC)
T3 = datetime(2026, 3, 15, 9, tzinfo=UTC)

WORK = {
    "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"]},
                 {"name": "Acme", "kind": "ORG"}, {"name": "Lisbon", "kind": "PLACE"}],
    "relations": [
        rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline again",
            cardinality="one_to_one", confidence=0.6),
        rel("User", "WORKS_AT", "Acme", "I have been at Acme for three years"),
        rel("Sarah", "LIVES_IN", "Lisbon", "Sarah lives in Lisbon now"),
    ],
    "conversation": {"summary": "Work with Sarah at Acme", "tags": ["work"]},
}


@pytest.fixture
def mem(settings):
    with Memory(settings) as memory:
        yield memory


def key_texts(raw_driver, user_id):
    return sorted(r["t"] for r in raw_driver.execute_query(
        "MATCH (k:Key {user_id: $u}) RETURN k.text AS t", u=user_id).records)


def by_line(memories):
    return {f"{m.source} -[{m.relation}]-> {m.target}": m for m in memories}


def test_memories_lists_states_pages_and_one_history(mem, user_id):
    mem.commit(user_id, "c1", WORK, at=T1)
    mem.commit(user_id, "c2", {"relations": [
        rel("User", "HAS_BOSS", "Sarah", "Sarah, my boss, is on holiday", confidence=0.9),
        rel("User", "HAS_BOSS", "Tom", "my new boss is Tom", cardinality="one_to_one"),
    ], "entities": [{"name": "Tom", "kind": "PERSON"}]}, at=T2)
    current = by_line(mem.memories(user_id, at=T3))
    assert set(current) == {"User -[HAS_BOSS]-> Tom", "User -[WORKS_AT]-> Acme",
                            "Sarah -[LIVES_IN]-> Lisbon"}
    assert all(m.state == "current" for m in current.values())
    old = by_line(mem.memories(user_id, state="superseded", at=T3))
    assert set(old) == {"User -[HAS_BOSS]-> Sarah"}
    everything = mem.memories(user_id, state="all", at=T3)
    assert len(everything) == 4
    page1 = mem.memories(user_id, state="all", limit=3, at=T3)
    page2 = mem.memories(user_id, state="all", limit=3, offset=3, at=T3)
    assert [m.id for m in page1 + page2] == [m.id for m in everything]
    about = by_line(mem.memories(user_id, about="sarah k", state="all", at=T3))
    assert set(about) == {"User -[HAS_BOSS]-> Sarah", "Sarah -[LIVES_IN]-> Lisbon"}

    boss = old["User -[HAS_BOSS]-> Sarah"]
    story = mem.memory(user_id, boss.id, at=T3)
    assert [(s.conversation_id, s.snippet) for s in story.sightings] == [
        ("c1", "my boss Sarah moved the deadline again"),
        ("c2", "Sarah, my boss, is on holiday")]
    assert story.memory.snippet == "Sarah, my boss, is on holiday"  # the surer words show
    assert story.reinforcements == 1 and len(story.reinforced_at) == 1
    assert story.superseded_by == current["User -[HAS_BOSS]-> Tom"].id
    assert story.superseded_by_line == "User -[HAS_BOSS]-> Tom"
    assert 0 < story.strength_now < 100


def test_bad_input_gets_a_clear_error(mem, user_id):
    mem.commit(user_id, "c1", WORK, at=T1)
    with pytest.raises(NotFoundError, match="no memory 'nope'"):
        mem.memory(user_id, "nope")
    with pytest.raises(NotFoundError, match="no entity named 'Zed'"):
        mem.memories(user_id, about="Zed")
    with pytest.raises(PegasusError, match="unknown memory state 'gone'"):
        mem.memories(user_id, state="gone")
    with pytest.raises(PegasusError, match="limit must be"):
        mem.memories(user_id, limit=0)


def test_a_retracted_memory_is_never_recalled_and_can_come_back(mem, user_id):
    mem.commit(user_id, "c1", WORK, at=T1)
    lives = by_line(mem.memories(user_id))["Sarah -[LIVES_IN]-> Lisbon"]
    assert "Sarah lives in Lisbon now" in mem.recall(user_id, "where does Sarah live", at=T2).context
    assert mem.retract(user_id, lives.id, at=T2).action == "retracted"
    for text in ("where does Sarah live", "where did Sarah live before, previously?"):
        assert "Sarah lives in Lisbon now" not in mem.recall(user_id, text, at=T3).render()
    assert by_line(mem.memories(user_id, state="retracted"))["Sarah -[LIVES_IN]-> Lisbon"] \
        .retracted_at.startswith("2026-03-08")
    mem.retract(user_id, lives.id, undo=True)
    assert "Sarah lives in Lisbon now" in mem.recall(user_id, "where does Sarah live", at=T3).context
    # Retracted again, then said again in a new conversation: the newer words count.
    mem.retract(user_id, lives.id, at=T2)
    mem.commit(user_id, "c2", {"relations": [rel("Sarah", "LIVES_IN", "Lisbon",
                                                 "yes, Sarah really lives in Lisbon")]}, at=T3)
    assert by_line(mem.memories(user_id))["Sarah -[LIVES_IN]-> Lisbon"].state == "current"


def test_rename_and_aliases_move_the_keys(mem, user_id, raw_driver):
    mem.commit(user_id, "c1", WORK, at=T1)
    renamed = mem.rename_entity(user_id, "Sarah", "Sara Kowalski", at=T2)
    assert renamed.name == "Sara Kowalski" and renamed.aliases == ["Sarah K"]
    assert "Sarah" not in key_texts(raw_driver, user_id)
    assert "Sara Kowalski" in key_texts(raw_driver, user_id)
    assert {n.name for n in mem.recall(user_id, "Kowalski", at=T2).nodes} >= {"Sara Kowalski"}
    with pytest.raises(PegasusError, match="already names another entity"):
        mem.rename_entity(user_id, "Sara Kowalski", "acme")
    edited = mem.edit_aliases(user_id, "Sara Kowalski", add=["SK", "sk"], remove=["Sarah K"])
    assert edited.aliases == ["SK"] and edited.notes == ["'sk' already names it"]
    assert "Sarah K" not in key_texts(raw_driver, user_id)
    assert "SK" in key_texts(raw_driver, user_id)
    with pytest.raises(PegasusError, match="is the entity's name"):
        mem.edit_aliases(user_id, "SK", remove=["Sara Kowalski"])


def test_merge_by_hand_and_undo_restore_both(mem, user_id, raw_driver):
    mem.commit(user_id, "c1", WORK, at=T1)
    mem.commit(user_id, "c2", {
        "entities": [{"name": "Mara", "kind": "PERSON", "properties": {"team": "infra"}}],
        "relations": [rel("User", "KNOWS", "Mara", "I know Mara from the climbing gym"),
                      rel("Mara", "MANAGES", "Sarah", "Mara manages Sarah")]}, at=T2)
    before = sorted((m.source, m.relation, m.target, m.snippet)
                    for m in mem.memories(user_id, state="all"))
    merged = mem.merge_entities(user_id, "Sarah", "Mara", at=T3)
    assert merged.name == "Sarah" and set(merged.aliases) == {"Sarah K", "Mara"}
    assert merged.edges_moved == 1 and merged.notes  # Mara MANAGES Sarah was taken off
    lines = by_line(mem.memories(user_id, state="all"))
    assert "User -[KNOWS]-> Sarah" in lines and not any("Mara" in k for k in lines)
    assert {n.name for n in mem.recall(user_id, "Mara", at=T3).nodes} >= {"Sarah"}
    with pytest.raises(PegasusError, match="same entity"):  # Mara is Sarah's alias now
        mem.merge_entities(user_id, "Sarah", "Mara")
    undone = mem.undo_merge(user_id, merged.merge_record_id, at=T3)
    assert undone.restored == "Mara"
    after = sorted((m.source, m.relation, m.target, m.snippet)
                   for m in mem.memories(user_id, state="all"))
    assert after == before
    sally = mem.entities(user_id, "Mara")[0]
    assert sally.properties == {"team": "infra"} and sally.conversations == ["c2"]
    assert "Mara" in key_texts(raw_driver, user_id)


def test_forget_one_memory_takes_its_snippet_key_and_provisional_end(mem, user_id, raw_driver):
    mem.commit(user_id, "c1", {"relations": [
        rel("User", "PLAYS", "Oboe", "I play the oboe on Sundays")]}, at=T1)
    [edge] = mem.memories(user_id)
    assert "PLAYS" in key_texts(raw_driver, user_id)
    report = mem.forget_memory(user_id, edge.id)
    assert (report.memories, report.entities) == (1, 1)  # Oboe was a provisional end
    assert report.keys == 2  # "Oboe" and "PLAYS"
    assert key_texts(raw_driver, user_id) == ["User"]
    left = raw_driver.execute_query(
        "MATCH (s:Snippet {user_id: $u}) RETURN count(s) AS n", u=user_id).records[0]["n"]
    assert left == 0
    with pytest.raises(NotFoundError):
        mem.forget_memory(user_id, edge.id)
    assert mem.recall(user_id, "oboe Sundays", at=T2).render() == ""


def test_a_name_that_means_two_entities_lists_them_and_changes_nothing(mem, user_id):
    mem.commit(user_id, "c1", {"entities": [{"name": "Jordan", "kind": "PERSON"},
                                            {"name": "Jordan", "kind": "PLACE"}],
                               "relations": [rel("User", "KNOWS", "Jordan", "I know Jordan")]},
               at=T1)
    before = mem.memories(user_id, state="all", at=T3)
    with pytest.raises(AmbiguousEntityError, match="2 entities are named 'Jordan'") as info:
        mem.forget_entity(user_id, "Jordan")
    assert sorted(c["kind"] for c in info.value.choices) == ["PERSON", "PLACE"]
    assert mem.memories(user_id, state="all", at=T3) == before
    person = next(c["id"] for c in info.value.choices if c["kind"] == "PERSON")
    assert mem.forget_entity(user_id, person).entities == 1


def test_forget_a_conversation_keeps_what_others_said(mem, user_id):
    mem.commit(user_id, "c1", WORK, at=T1)
    mem.commit(user_id, "c2", {"relations": [
        rel("User", "HAS_BOSS", "Sarah", "Sarah is still my boss, sadly", confidence=0.9),
        rel("User", "HAS_BOSS", "Sarah", "Sarah is still my boss, sadly", confidence=0.9),
        rel("User", "LIKES", "Jazz", "I like jazz")],
        "conversation": {"summary": "jazz", "tags": ["music"]}}, at=T2)
    assert by_line(mem.memories(user_id))["User -[HAS_BOSS]-> Sarah"].snippet == \
        "Sarah is still my boss, sadly"
    report = mem.forget_conversation(user_id, "c2", at=T3)
    assert (report.memories, report.memories_changed, report.conversations) == (1, 1, 1)
    lines = by_line(mem.memories(user_id, state="all"))
    assert "User -[LIKES]-> Jazz" not in lines
    boss = lines["User -[HAS_BOSS]-> Sarah"]
    assert boss.snippet == "my boss Sarah moved the deadline again" and boss.conversations == ["c1"]
    story = mem.memory(user_id, boss.id)
    assert [s.conversation_id for s in story.sightings] == ["c1"]
    assert story.said_at.startswith("2026-03-01")
    recalled = mem.recall(user_id, "my boss still", at=T3).render()
    assert "sadly" not in recalled and "moved the deadline" in recalled
    again = mem.forget_conversation(user_id, "c2", at=T3)
    assert again.model_dump(exclude={"user_id", "scope"}) == dict.fromkeys(
        again.model_dump(exclude={"user_id", "scope"}), 0)


def test_forgetting_a_conversation_undoes_its_supersession_and_merges(mem, user_id):
    mem.commit(user_id, "c1", WORK, at=T1)
    mem.commit(user_id, "c2", {
        "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Bossy"],
                      "properties": {"desk": "4F"}}, {"name": "Tom", "kind": "PERSON"}],
        "relations": [rel("User", "HAS_BOSS", "Tom", "my new boss is Tom",
                          cardinality="one_to_one")]}, at=T2)
    assert by_line(mem.memories(user_id, state="superseded"))
    report = mem.forget_conversation(user_id, "c2", at=T3)
    assert report.memories_revived == 1 and report.entities == 1  # Tom
    assert "User -[HAS_BOSS]-> Sarah" in by_line(mem.memories(user_id))
    sarah = mem.entities(user_id, "Sarah")[0]
    assert sarah.aliases == ["Sarah K"] and sarah.properties == {} and sarah.conversations == ["c1"]


def test_forgetting_everything_then_learning_again(mem, user_id, settings):
    other = user_id + "-other"
    mem.commit(user_id, "c1", WORK, at=T1)
    mem.commit(other, "c1", WORK, at=T1)
    staged = Staging(settings.home, user_id, "c9")
    staged.append({"tool": "record_entity", "args": {"name": "Sarah"}})
    report = mem.forget_everything(user_id, at=T2)
    assert (report.memories, report.entities, report.conversations) == (3, 4, 1)
    assert report.staging_files == 1 and not staged.path.exists()
    assert mem.memories(user_id, state="all") == []
    assert mem.recall(user_id, "Sarah Acme Lisbon", at=T2).render() == ""
    assert len(mem.memories(other, state="all")) == 3
    assert mem.forget_everything(user_id).memories == 0
    mem.commit(user_id, "c1", WORK, at=T3)  # the same conversation id teaches from scratch
    assert len(mem.memories(user_id)) == 3


def test_a_commit_during_an_erasure_is_refused(mem, user_id, raw_driver):
    mem.commit(user_id, "c1", WORK, at=T1)
    raw_driver.execute_query("MATCH (p:Partition {user_id: $u}) SET p.erasing_since = $t",
                             u=user_id, t=T2)
    with pytest.raises(ErasureInProgressError, match="being forgotten"):
        mem.commit(user_id, "c2", WORK, at=T2)
    mem.forget_everything(user_id)  # an interrupted erasure is finished by running it again
    mem.commit(user_id, "c2", WORK, at=T2)
    assert len(mem.memories(user_id)) == 3


def test_forgetting_asked_for_in_conversation(settings, user_id):
    """The extractor records the user's request; the commit applies it and reports it."""
    first = scripted_model(
        _ai(call("record_entity", 1, name="Tom", kind="PERSON"),
            call("record_relation", 2, source="User", relation="HAS_BROTHER", target="Tom",
                 snippet="my brother Tom lives in Porto"),
            call("record_relation", 3, source="User", relation="HAS_SISTER", target="Ann",
                 snippet="my sister Ann is a nurse"),
            call("finish", 4)))
    with Memory(settings, llm=first) as mem:
        mem.remember(user_id, "c1", [{"role": "user", "content": "my brother Tom lives in Porto. "
                                                                   "my sister Ann is a nurse"}],
                     at=T1)
    second = scripted_model(
        _ai(call("record_forget", 1, about="Tom", action="forget",
                 snippet="forget what I told you about Tom"),
            call("record_forget", 2, about="User", relation="HAS_SISTER", target="Ann",
                 action="retract", snippet="I never said I have a sister"),
            call("record_forget", 3, about="Nobody", snippet="forget Nobody"),
            call("finish", 4)))
    with Memory(settings, llm=second) as mem:
        report = mem.remember(user_id, "c2", [
            {"role": "user", "content": "forget what I told you about Tom. "
                                        "I never said I have a sister"}], at=T2)
        assert report.forgotten == ["Tom (1 memories)"]
        assert report.retracted == ["User -[HAS_SISTER]-> Ann"]
        assert any("'Nobody'" in n for n in report.notes)
        assert [m.relation for m in mem.memories(user_id, state="all")] == ["HAS_SISTER"]
        assert mem.memories(user_id, state="retracted")[0].target == "Ann"


def _ai(*calls):
    from langchain_core.messages import AIMessage

    return AIMessage(content="", tool_calls=list(calls))


def test_turns_are_kept_for_their_retention_then_deleted(mem, user_id, raw_driver):
    mem.record_turns(user_id, "p1", [{"role": "user", "content": "hello there"}], at=T1)
    mem.commit(user_id, "p1", WORK, at=T1)
    mem.close_conversation(user_id, "p1", at=T1)
    assert mem.consolidate(at=T1, user_id=user_id).turns_purged == 0
    assert mem.consolidate(at=T2, user_id=user_id).turns_purged == 1  # 7 days later
    turns = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'p1'}) RETURN c.turns AS t, c.summary AS s",
        u=user_id).records[0]
    assert turns["t"] == [] and turns["s"] == "Work with Sarah at Acme"


def test_read_logs_are_cleared_once_reinforced(mem, user_id, raw_driver):
    mem.commit(user_id, "c1", WORK, at=T1)
    mem.recall(user_id, "my boss Sarah", conversation_id="c2", at=T2)
    assert mem.close_conversation(user_id, "c2", at=T2) >= 1
    logs = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'c2'}) RETURN c AS c", u=user_id).records[0]["c"]
    assert logs["read_log"] == [] and "read_log_applied" not in logs
    assert json.dumps(dict(logs), default=str).count("/") == 0  # no edge ids left


def test_the_self_node_survives_merges_and_is_not_forgotten_alone(mem, user_id):
    mem.commit(user_id, "c1", {"entities": [{"name": "Bill", "kind": "PERSON", "is_user": True},
                                            {"name": "Kid Curry", "kind": "PERSON"}],
                               "relations": [rel("Bill", "WORKS_AT", "Acme", "I work at Acme"),
                                             rel("Kid Curry", "LIKES", "Acme", "he likes Acme")]},
               at=T1)
    with pytest.raises(PegasusError, match="user's own node"):
        mem.forget_entity(user_id, "Bill")
    merged = mem.merge_entities(user_id, "Kid Curry", "Bill", at=T2)
    assert merged.name == "Bill" and "Kid Curry" in merged.aliases
    assert any("always survives" in n for n in merged.notes)
    assert {m.source for m in mem.memories(user_id)} == {"Bill"}
