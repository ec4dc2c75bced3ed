"""Snippets found by meaning (the snippet_meaning index, V0012): a question in other words than
the memory said, within one user's partition."""

from datetime import UTC, datetime

import numpy as np

from pegasus import Memory
from pegasus.embedding.embed import unpack_vector
from pegasus.migrations import index_snippets
from tests.helpers import flood, rel

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
PUPPY = "we finally brought home a golden retriever, she chews every shoe in the house"
QUESTION = "does he have any animals?"


def _pets(snippet: str = PUPPY) -> dict:
    return {"entities": [{"name": "Tom", "kind": "PERSON", "is_user": True},
                         {"name": "Daisy", "kind": "THING"},
                         {"name": "Lisbon", "kind": "PLACE"}],
            "relations": [rel("User", "OWNS", "Daisy", snippet=snippet),
                          rel("User", "LIVES_IN", "Lisbon",
                              snippet="the rent in Lisbon went up again this spring")]}


def test_a_question_in_other_words_finds_the_memory_by_meaning(settings, user_id):
    """No word of the question is in the snippet and none names its ends: only the meaning
    index makes it a candidate."""
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", _pets(), at=T0)
        found = mem.explain(user_id, QUESTION, at=T0)
        engine = mem.recall_engine  # it keeps the recall settings it was built with
        engine.recall = engine.recall.model_copy(update={"meaning_candidates": 0})
        blind = mem.explain(user_id, QUESTION, at=T0)
    assert PUPPY in found.recall.context
    assert found.ranked[0].snippet == PUPPY and found.ranked[0].text_score == 0.0
    assert [c.snippet for c in blind.ranked] == []


def test_another_users_snippets_never_come_by_meaning_however_many_are_nearer(settings,
                                                                              user_id):
    """The attack: Mallory stores many snippets worded exactly like the victim's likely
    questions. The index filters by user inside the search, so none is a candidate of the
    victim's, and they do not crowd the victim's own (farther) snippet out of the limit."""
    mallory = user_id + "-mallory"
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", _pets(), at=T0)
        mem.commit(mallory, "c1", flood("Pet", "OWNS", "does he have any animals?", 30), at=T0)
        victim = mem.explain(user_id, QUESTION, at=T0)
        theirs = mem.explain(mallory, QUESTION, at=T0)
    assert {c.snippet for c in victim.ranked} <= set(
        s for s in [PUPPY, "the rent in Lisbon went up again this spring"])
    assert PUPPY in victim.recall.context
    assert PUPPY not in {c.snippet for c in theirs.ranked}
    assert all(s.startswith("does he have any animals") for s in theirs.recall.context)


def test_snippets_written_before_the_meaning_index_get_its_vector_on_migrate(settings, user_id,
                                                                             raw_driver):
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", _pets(), at=T0)
        raw_driver.execute_query("MATCH (s:Snippet {user_id: $u}) REMOVE s.embedding",
                                 u=user_id)
        assert index_snippets(mem.store) == 2
        assert index_snippets(mem.store) == 0
        rows = raw_driver.execute_query(
            "MATCH (s:Snippet {user_id: $u}) RETURN s.embedding AS v, s.embedding_f32 AS p",
            u=user_id).records
        assert len(rows) == 2
        for r in rows:
            assert np.allclose(np.array(r["v"]), unpack_vector(r["p"]))
        assert PUPPY in mem.recall(user_id, QUESTION, at=T0).context


def _meaning_vectors(raw_driver, user: str) -> dict[str, bool]:
    """Each snippet's text -> whether its index vector is its packed embedding."""
    rows = raw_driver.execute_query(
        "MATCH (s:Snippet {user_id: $u}) RETURN s.text AS t, s.embedding AS v, "
        "s.embedding_f32 AS p", u=user).records
    return {r["t"]: r["v"] is not None and bool(np.allclose(np.array(r["v"]),
                                                           unpack_vector(r["p"])))
            for r in rows}


def test_every_write_of_a_snippets_words_keeps_its_meaning_vector(settings, user_id,
                                                                  raw_driver, tmp_path):
    """Commit, another sighting's words, forgetting the conversation whose words an edge
    showed (the edge falls back to the other's), and an import: the vector the index holds is
    always the one of the words the snippet holds."""
    later = "Daisy the golden retriever turned two today"
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", _pets(), at=T0)
        mem.commit(user_id, "c2", {
            "entities": [{"name": "Daisy", "kind": "THING"}],
            "relations": [rel("User", "OWNS", "Daisy", snippet=later)]}, at=T0)
        assert _meaning_vectors(raw_driver, user_id) == {
            PUPPY: True, later: True, "the rent in Lisbon went up again this spring": True}
        mem.forget_conversation(user_id, "c1", at=T0)
        assert _meaning_vectors(raw_driver, user_id) == {later: True}
        assert later in mem.recall(user_id, "does he have any animals?", at=T0).context
        dump = tmp_path / "export.jsonl"
        dump.write_text("".join(line.rstrip("\n") + "\n" for line in mem.export(user_id,
                                                                                at=T0)))
        # An id lives in one partition: the copy comes back after the original is gone.
        mem.forget_everything(user_id, at=T0)
        assert _meaning_vectors(raw_driver, user_id) == {}
        mem.import_memory(user_id, dump, at=T0)
        assert _meaning_vectors(raw_driver, user_id) == {later: True}
        assert later in mem.recall(user_id, "does he have any animals?", at=T0).context
