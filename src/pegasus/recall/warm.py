"""Recall's queries run before the first recall, for a partition no user holds: Neo4j plans a
query at its first run (seconds on a busy machine), and a first proxied recall that paid for it
passed the proxy's memory budget and went without memory (#36).

Neo4j keys a cached plan on the query and on each list and string parameter's size rounded up
to a power of ten. What varies in size from one message to the next goes to recall's two big
queries in one map parameter (`walk_shape`, `$search`), whose contents are not part of the key,
so one rehearsal plans every message's shape; the user id's size is the caller's (each
configured user's id size is rehearsed)."""

from __future__ import annotations

from datetime import datetime

from pegasus.embedding.centring import centre
from pegasus.embedding.centring import load as load_centre
from pegasus.recall.engine import Query, RecallEngine
from pegasus.recall.history import spans_named
from pegasus.recall.seeds import Seeds
from pegasus.snippets import keyword_query

WORDS = ["warm", "up", "start"]
ID = 36  # an entity id's length


def rehearse(engine: RecallEngine, query: Query, user_id: str, now: datetime) -> None:
    """Run each query of a recall for `user_id` (an empty partition: each finds nothing) with
    the parameters a real recall passes."""
    vectors = engine.embedder.embed(WORDS)
    mean, _ = load_centre(engine.embedder.model_name, engine.embedder.dimensions)
    engine.search_keys(user_id, centre(vectors, mean), engine.recall.seed_threshold, query)
    ids = [str(i).rjust(ID) for i in range(len(WORDS))]  # blank-padded: ids no entity has
    engine.walk(user_id, Seeds({i: 1.0 for i in ids}, {"WARM": 1.0}, []), now, " " * ID,
                message=engine.message_vector(" ".join(WORDS), vectors),
                text=keyword_query(user_id, WORDS), query=query,
                # a day named: dateparser loads its tables on first use (~150 ms)
                spans=spans_named("on 4 December 2023", now))
    engine.forget_user(user_id)  # the depth hint search_keys left for it
