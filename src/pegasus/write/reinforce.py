"""The +bump reinforcement of memory edges (design §7.10), shared by commits and closes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from neo4j import ManagedTransaction

from pegasus.settings import Settings
from pegasus.store import run


def reinforce(tx: ManagedTransaction, settings: Settings, user_id: str,
              rows: Sequence[Mapping[str, str | None]], now: datetime) -> int:
    """Apply the +bump reinforcement to edges given as {source_id, target_id, edge_id} (a
    target of None: looked for among the source's edges)."""
    result = run(tx, "write/reinforce", user_id=user_id, rows=rows, now=now,
                 lambdas=settings.decay_lambdas, bump=settings.reinforce_bump,
                 max_strength=settings.max_strength)
    return result[0]["reinforced"] if result else 0
