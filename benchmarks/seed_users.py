"""The load benchmark's users, loaded by whichever `pegasus` is first on the path: a baseline
checkout loads its own Neo4j, whose schema it knows (a serve refuses a database migrated by
newer code), with the same synthetic graphs as this checkout's.

    python benchmarks/seed_users.py BOLT_URI '["user", ...]'    (prints {user: [names]})
"""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta

from benchmarks.synthetic import conversations
from pegasus import Memory
from pegasus.settings import Settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def seed(mem: Memory, users: list[str]) -> dict[str, list[str]]:
    """200 synthetic edges per user (the same for every run); each user's entity names."""
    rng = random.Random(7)
    names = {}
    for user in users:
        for n, batch in enumerate(conversations(rng, edges=200)):
            mem.commit(user, f"seed-{n}", batch, at=T0 + timedelta(days=n))
        names[user] = sorted({n for m in mem.memories(user) for n in (m.source, m.target)}
                             - {"User"})
    return names


if __name__ == "__main__":
    with Memory(Settings(neo4j_uri=sys.argv[1])) as memory:
        memory.migrate()
        print(json.dumps(seed(memory, json.loads(sys.argv[2]))))
