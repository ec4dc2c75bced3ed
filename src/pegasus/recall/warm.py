"""Recall's queries run before the first recall, for a partition no user holds: Neo4j plans a
query at its first run (seconds on a busy machine), and a first proxied recall that paid for it
passed the proxy's memory budget and went without memory (#36).

Neo4j keys a cached plan on the query and on each list and string parameter's size rounded up
to a power of ten (exact for 0 and 1), so one rehearsal plans one shape only: each query is run
in the shapes a usual message gives (one word or a few; one seed or a few; no, one or a few
relation labels). A rarer shape (a message of over ten content words) is planned on first use."""

from __future__ import annotations

from datetime import datetime

from pegasus.centring import centre
from pegasus.centring import load as load_centre
from pegasus.recall.engine import Query, RecallEngine
from pegasus.recall.seeds import Seeds
from pegasus.snippets import keyword_query

WORDS = ["warm", "up", "start"]
SEED_SHAPES = [(1, 0), (1, 1), (3, 0), (3, 1), (3, 3)]  # (entity seeds, relation labels)
ID = 36  # an entity id's length (its size bucket)


def rehearse(engine: RecallEngine, query: Query, user_id: str, now: datetime) -> None:
    """Run each query of a recall for `user_id` (an empty partition: each finds nothing) in
    the shapes of usual messages, with the parameters a real recall passes."""
    vectors = engine.embedder.embed(WORDS)
    mean, _ = load_centre(engine.embedder.model_name, engine.embedder.dimensions)
    engine.partition(user_id, query)
    for count in (1, len(WORDS)):
        engine.search_keys(user_id, centre(vectors[:count], mean),
                           engine.settings.seed_threshold, query)
    ids = [str(i).rjust(ID) for i in range(3)]  # blank-padded: ids no entity has
    message = engine.message_vector(" ".join(WORDS), vectors)
    s = engine.settings
    for seeds, labels in SEED_SHAPES:
        for count in (1, len(WORDS)):
            engine.walk(user_id, Seeds({i: 1.0 for i in ids[:seeds]},
                                       {f"WARM_{i}": 1.0 for i in range(labels)}, []),
                        now, " " * ID, message, keyword_query(user_id, WORDS[:count]), False,
                        s.expand_threshold, s.expand_nodes, s.co_episode_bonus, query)
    engine.forget_user(user_id)  # the depth hint search_keys left for it
