"""Memories said when the message says (V0013, the snippet_said index): "what was I doing on
December 4?" is answered by what was said that day, whatever its words, within one user's
partition only."""

from datetime import UTC, datetime, timedelta

from pegasus import Memory
from tests.helpers import flood, rel

DAY = datetime(2023, 12, 4, 15, 30, tzinfo=UTC)
FENCE = "spent the whole afternoon fixing the fence with my neighbour Joe"
QUESTION = "What was I doing on December 4, 2023?"
LATER = DAY + timedelta(days=31)  # after every day below


def _said(name: str, snippet: str) -> dict:
    return {"entities": [{"name": "Sam", "kind": "PERSON", "is_user": True},
                         {"name": name, "kind": "THING"}],
            "relations": [rel("User", "MENTIONED", name, snippet=snippet)]}


def _other_days(mem: Memory, user: str) -> None:
    for i, (name, words) in enumerate([("Lisbon", "the rent in Lisbon went up again"),
                                       ("Bread", "baked sourdough bread for the first time"),
                                       ("Guitar", "my guitar lessons start next Tuesday")]):
        mem.commit(user, f"other-{i}", _said(name, words), at=DAY + timedelta(days=10 * (i + 1)))


def test_a_day_the_message_names_finds_what_was_said_that_day(settings, user_id):
    """No word of the question is in the memory, and meaning is not asked: only the day makes
    it a candidate; without the day's channel nothing is."""
    settings.meaning_candidates = 0
    with Memory(settings) as mem:
        _other_days(mem, user_id)
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        found = mem.explain(user_id, QUESTION, at=LATER)
        engine = mem.recall_engine  # it keeps the recall settings it was built with
        engine.recall = engine.recall.model_copy(update={"when_candidates": 0})
        blind = mem.explain(user_id, QUESTION, at=LATER)
    assert found.recall.context[0] == FENCE
    assert [c.snippet for c in found.ranked if c.when] == [FENCE]
    assert FENCE not in [c.snippet for c in blind.ranked]


def test_a_month_named_holds_its_days_and_no_other(settings, user_id):
    settings.when_told_within_days = 0  # (else the first week of January too)
    with Memory(settings) as mem:
        _other_days(mem, user_id)  # 14 and 24 December 2023, 3 January 2024
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        found = mem.explain(user_id, "What happened in December 2023?",
                            at=LATER)
    assert sorted(c.snippet for c in found.ranked if c.when) == sorted(
        [FENCE, "the rent in Lisbon went up again", "baked sourdough bread for the first time"])


def test_another_users_memories_of_that_day_never_come_however_many(settings, user_id):
    """The attack: Mallory stores many memories said on the day the victim asks about. The
    day's search runs inside the victim's partition (its index is keyed by user first), so
    none is a candidate of the victim's, and they do not crowd the victim's own out."""
    mallory = user_id + "-mallory"
    with Memory(settings) as mem:
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        mem.commit(mallory, "that-day",
                   flood("Thing", "MENTIONED", "what was I doing on December 4, 2023?", 40),
                   at=DAY)
        victim = mem.explain(user_id, QUESTION, at=LATER)
        theirs = mem.explain(mallory, QUESTION, at=LATER)
    assert [c.snippet for c in victim.ranked] == [FENCE]
    assert victim.recall.context == [FENCE]
    assert FENCE not in [c.snippet for c in theirs.ranked]


def test_the_index_is_made_by_migrate(settings, raw_driver):
    with Memory(settings) as mem:
        mem.migrate()
    rows = raw_driver.execute_query(
        "SHOW INDEXES YIELD name, labelsOrTypes, properties, state "
        "WHERE name = 'snippet_said' RETURN *").records
    assert [(r["labelsOrTypes"], r["properties"], r["state"]) for r in rows] == [
        (["Snippet"], ["user_id", "said_at"], "ONLINE")]
