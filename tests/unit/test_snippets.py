"""Which of a memory's sightings get a snippet of their own (design §2, "Snippet"): pure."""

import json

from pegasus.snippets import sighting_id, sighting_words


def sighting(conversation, at, snippet, confidence=0.8):
    return json.dumps({"conversation_id": conversation, "at": at, "snippet": snippet,
                       "evidence": None, "confidence": confidence})


def test_each_distinct_text_not_shown_once_at_its_earliest_sighting():
    logged = [sighting("c1", "2026-01-02T09:00:00+00:00", "I deliver on weekends"),
              sighting("c2", "2026-01-09T09:00:00+00:00", "I lost my job"),
              sighting("c3", "2026-01-01T09:00:00+00:00", "I deliver on weekends"),
              sighting("c4", "2026-01-05T09:00:00+00:00", None),  # logged without words
              None]  # edges written before sightings were logged hold a null
    assert sighting_words("I lost my job", logged) == {
        "I deliver on weekends": {"at": "2026-01-01T09:00:00+00:00", "conversation_id": "c3"}}
    assert sighting_words(None, []) == {}


def test_a_sighting_snippet_id_is_its_edge_and_words():
    a = sighting_id("edge-1", "I deliver on weekends")
    assert a == sighting_id("edge-1", "I deliver on weekends") and a.startswith("edge-1/")
    assert a != sighting_id("edge-1", "I deliver on Sundays")
    assert a != sighting_id("edge-2", "I deliver on weekends")
