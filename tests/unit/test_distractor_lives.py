"""The ×10 harness's distractors (benchmarks/recall_quality.py): another conversation's speaker
is committed as another person, never as the user, and the peers are given the same facts."""

from benchmarks.recall_quality import other_life

EVAN = {
    "entities": [
        {"name": "Evan", "kind": "PERSON", "is_user": True, "confidence": 0.95},
        {"name": "Sam", "kind": "PERSON", "confidence": 0.9},
    ],
    "relations": [
        {"source": "User", "relation": "IS_READING", "target": "Dune", "confidence": 0.9,
         "snippet": "I'm currently reading Dune."},
        {"source": "Sam", "relation": "VISITED", "target": "me", "confidence": 0.8,
         "snippet": "Sam visited me."},
    ],
}


def test_the_speaker_becomes_a_person_of_that_name_not_the_user():
    batch = other_life(EVAN, "Evan")
    assert [(e["name"], e["is_user"]) for e in batch["entities"] if "is_user" in e] == [
        ("Evan", False)]
    assert [(r["source"], r["target"]) for r in batch["relations"]] == [
        ("Evan", "Dune"), ("Sam", "Evan")]
    # the words stay the speaker's, and the input is not changed
    assert batch["relations"][0]["snippet"] == "I'm currently reading Dune."
    assert EVAN["relations"][0]["source"] == "User" and EVAN["entities"][0]["is_user"] is True


def test_a_batch_without_the_speaker_gets_the_person_it_names():
    batch = other_life({"entities": [], "relations": [
        {"source": "I", "relation": "LIKES", "target": "Tea", "snippet": "I like tea."}]}, "Maria")
    assert batch["entities"] == [{"name": "Maria", "kind": "PERSON", "confidence": 0.9}]
    assert batch["relations"][0]["source"] == "Maria"
