"""Correcting a memory in place (design §10): the correction is recalled at once, the old
version stays as history (never recalled), undo puts it back; only the owner can do either."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pegasus import Memory
from pegasus.errors import NotFoundError, PegasusError
from tests.helpers import rel

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 3, 8, 9, tzinfo=UTC)
T3 = datetime(2026, 3, 15, 9, tzinfo=UTC)

HOME = {
    "entities": [{"name": "Porto", "kind": "PLACE"}, {"name": "Ines", "kind": "PERSON"},
                 {"name": "Santo António", "kind": "ORG"}],
    "relations": [
        rel("User", "LIVES_IN", "Porto", "I live in Porto, near the river",
            cardinality="one_to_one"),
        rel("Ines", "WORKS_AT", "Santo António", "Ines works at Santo António as a nurse"),
    ],
    "conversation": {"summary": "Home and Ines", "tags": ["home"]},
}


@pytest.fixture
def mem(settings):
    with Memory(settings) as memory:
        yield memory


def line(m):
    return f"{m.source} -[{m.relation}]-> {m.target}"


def by_line(memories):
    return {line(m): m for m in memories}


def test_a_correction_is_recalled_at_once_and_the_old_version_is_history(mem, user_id):
    mem.commit(user_id, "c1", HOME, at=T1)
    lives = by_line(mem.memories(user_id))["User -[LIVES_IN]-> Porto"]
    result = mem.correct_memory(user_id, lives.id, target="Lisbon",
                                words="I live in Lisbon, in Alfama", at=T2, via="page")
    assert result.action == "corrected" and result.corrected_id == lives.id
    assert result.notes == ["a new entity was made for the other end"]

    recalled = mem.recall(user_id, "where do I live", at=T2).render()
    assert "I live in Lisbon, in Alfama" in recalled
    assert "Porto" not in recalled
    # Not even as history: the person said the old version was wrong.
    history = mem.recall(user_id, "where did I live before, previously?", at=T3).render()
    assert "near the river" not in history and "Porto" not in history

    now = by_line(mem.memories(user_id, at=T2))
    assert "User -[LIVES_IN]-> Lisbon" in now and "User -[LIVES_IN]-> Porto" not in now
    fixed = now["User -[LIVES_IN]-> Lisbon"]
    assert fixed.id == result.memory_id and fixed.corrects == lives.id
    assert fixed.snippet == "I live in Lisbon, in Alfama"
    assert fixed.created_at == lives.created_at  # it was always Lisbon: the date it began stays
    old = by_line(mem.memories(user_id, state="superseded", at=T2))["User -[LIVES_IN]-> Porto"]
    assert old.corrected_at.startswith("2026-03-08") and old.corrected_via == "page"
    story = mem.memory(user_id, lives.id, at=T2)
    assert story.superseded_by == fixed.id
    assert story.superseded_by_line == "User -[LIVES_IN]-> Lisbon"

    # Said again later, the correction is reinforced: the old version stays history.
    mem.commit(user_id, "c2", {"relations": [
        rel("User", "LIVES_IN", "Lisbon", "Lisbon is home", cardinality="one_to_one")]}, at=T3)
    after = by_line(mem.memories(user_id, state="all", at=T3))
    assert after["User -[LIVES_IN]-> Lisbon"].id == fixed.id
    assert after["User -[LIVES_IN]-> Lisbon"].conversations == ["c2"]
    assert after["User -[LIVES_IN]-> Porto"].state == "superseded"


def test_words_and_dates_alone_and_undo_puts_the_old_version_back(mem, user_id, raw_driver):
    mem.commit(user_id, "c1", HOME, at=T1)
    works = by_line(mem.memories(user_id))["Ines -[WORKS_AT]-> Santo António"]
    ends = datetime(2026, 9, 1, tzinfo=UTC)
    fixed = mem.correct_memory(user_id, works.id, words="Ines works at Santo António until "
                               "September", until=ends, at=T2, via="cli")
    current = by_line(mem.memories(user_id, at=T2))["Ines -[WORKS_AT]-> Santo António"]
    assert current.id == fixed.memory_id and current.expires_at.startswith("2026-09-01")
    assert "until September" in mem.recall(user_id, "where does Ines work", at=T2).render()
    # Keyword search finds the new words at once (its :Snippet was written with it).
    snippets = raw_driver.execute_query(
        "MATCH (s:Snippet {user_id: $u, id: $id}) RETURN s.text AS t", u=user_id,
        id=fixed.memory_id).records
    assert [r["t"] for r in snippets] == ["Ines works at Santo António until September"]

    undone = mem.correct_memory(user_id, fixed.memory_id, undo=True, at=T3)
    assert undone.action == "correction undone" and undone.memory_id == works.id
    back = by_line(mem.memories(user_id, state="all", at=T3))
    assert back["Ines -[WORKS_AT]-> Santo António"].id == works.id
    assert back["Ines -[WORKS_AT]-> Santo António"].state == "current"
    assert back["Ines -[WORKS_AT]-> Santo António"].corrected_at is None
    assert len(back) == 2
    assert "as a nurse" in mem.recall(user_id, "where does Ines work", at=T3).render()
    assert raw_driver.execute_query(
        "MATCH (s:Snippet {user_id: $u, id: $id}) RETURN s", u=user_id,
        id=fixed.memory_id).records == []


def test_undo_removes_the_entity_the_correction_made(mem, user_id):
    mem.commit(user_id, "c1", HOME, at=T1)
    lives = by_line(mem.memories(user_id))["User -[LIVES_IN]-> Porto"]
    fixed = mem.correct_memory(user_id, lives.id, target="Braga", at=T2)
    assert mem.entity(user_id, "Braga").name == "Braga"
    mem.correct_memory(user_id, fixed.memory_id, undo=True, at=T3)
    with pytest.raises(NotFoundError):
        mem.entity(user_id, "Braga")
    assert mem.entity(user_id, "Porto").name == "Porto"


def test_bad_corrections_change_nothing(mem, user_id):
    mem.commit(user_id, "c1", HOME, at=T1)
    lives = by_line(mem.memories(user_id))["User -[LIVES_IN]-> Porto"]
    before = sorted((line(m), m.state, m.snippet) for m in mem.memories(user_id, state="all"))
    for kwargs, message in [
        ({"target": "porto"}, "changes nothing"),
        ({"words": "   "}, "must not be empty"),
        ({"words": "x" * 2001}, "longer than"),
        ({"via": "email", "words": "x"}, "unknown surface"),
        ({"until": T3, "no_end": True}, "not both"),
        # Dates a person cannot mean: an end before the start, a start still to come.
        ({"until": datetime(2026, 2, 1, tzinfo=UTC)}, r"end \(until 2026-02-01\) before it "
                                                      r"began \(since 2026-03-01\)"),
        ({"since": T3}, "since 2026-03-15, a day still to come"),
        ({"since": datetime(2026, 3, 5, tzinfo=UTC), "until": datetime(2026, 3, 4, tzinfo=UTC)},
         "before it began"),
    ]:
        with pytest.raises(PegasusError, match=message):
            mem.correct_memory(user_id, lives.id, at=T2, **kwargs)
    with pytest.raises(PegasusError, match="not a correction"):
        mem.correct_memory(user_id, lives.id, undo=True, at=T2)
    with pytest.raises(PegasusError, match="itself"):
        mem.correct_memory(user_id, lives.id, target="User", at=T2)
    assert sorted((line(m), m.state, m.snippet)
                  for m in mem.memories(user_id, state="all")) == before
    mem.retract(user_id, lives.id, at=T2)
    with pytest.raises(PegasusError, match="retracted"):
        mem.correct_memory(user_id, lives.id, words="I live in Braga", at=T2)
    mem.retract(user_id, lives.id, undo=True, at=T2)
    fixed = mem.correct_memory(user_id, lives.id, words="I live in Porto, by the sea", at=T2)
    with pytest.raises(PegasusError, match="already replaced"):
        mem.correct_memory(user_id, lives.id, words="again", at=T3)
    second = mem.correct_memory(user_id, fixed.memory_id, words="Porto, by the sea", at=T3)
    with pytest.raises(PegasusError, match="undo that first"):
        mem.correct_memory(user_id, fixed.memory_id, undo=True, at=T3)
    mem.correct_memory(user_id, second.memory_id, undo=True, at=T3)
    mem.correct_memory(user_id, fixed.memory_id, undo=True, at=T3)
    assert sorted((line(m), m.state, m.snippet)
                  for m in mem.memories(user_id, state="all")) == before


def test_another_user_cannot_correct_or_undo_yours(mem, user_id):
    mem.commit(user_id, "c1", HOME, at=T1)
    mem.commit("mallory", "c1", HOME, at=T1)
    lives = by_line(mem.memories(user_id))["User -[LIVES_IN]-> Porto"]
    with pytest.raises(NotFoundError):
        mem.correct_memory("mallory", lives.id, words="I live in Mordor", at=T2)
    fixed = mem.correct_memory(user_id, lives.id, words="I live in Porto, Foz", at=T2)
    with pytest.raises(NotFoundError):
        mem.correct_memory("mallory", fixed.memory_id, undo=True, at=T2)
    # Naming the victim's entity by id as the other end finds nothing of Mallory's either:
    # a new entity of that name is made in Mallory's own partition.
    theirs = by_line(mem.memories("mallory"))["User -[LIVES_IN]-> Porto"]
    mem.correct_memory("mallory", theirs.id, target=lives.target_id, at=T2)
    assert by_line(mem.memories(user_id, at=T2))["User -[LIVES_IN]-> Porto"].snippet == \
        "I live in Porto, Foz"
    assert all(m.target_id != lives.target_id for m in mem.memories("mallory", state="all"))


def test_a_persons_own_today_is_never_a_day_still_to_come(mem, user_id):
    """At 12:00 UTC it is already tomorrow in Kiribati (UTC+14): "since tomorrow (UTC)" is
    someone's today, and is kept; the day after is refused."""
    mem.commit(user_id, "c1", HOME, at=T1)
    lives = by_line(mem.memories(user_id))["User -[LIVES_IN]-> Porto"]
    noon = datetime(2026, 3, 8, 12, tzinfo=UTC)
    with pytest.raises(PegasusError, match="a day still to come"):
        mem.correct_memory(user_id, lives.id, at=noon, since=datetime(2026, 3, 10, tzinfo=UTC))
    done = mem.correct_memory(user_id, lives.id, at=noon, since=datetime(2026, 3, 9, tzinfo=UTC))
    assert done.corrected_id == lives.id and done.memory_id not in (None, lives.id)
