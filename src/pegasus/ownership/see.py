"""Seeing one's memory: the memories, filtered and paged, and one memory's whole history."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from pegasus.errors import InvalidInputError
from pegasus.models.views import MEMORY_STATES, MemoryEdge, MemoryHistory, Overview, Sighting
from pegasus.ownership.refs import one_edge, resolve_entity
from pegasus.portable import native
from pegasus.settings import Settings
from pegasus.store import run

MAX_PAGE = 1000


def states_for(state: str | list[str]) -> list[str]:
    """The states a filter names: one state, several, or "all"."""
    wanted = [state] if isinstance(state, str) else list(state)
    if "all" in wanted:
        return list(MEMORY_STATES)
    unknown = [s for s in wanted if s not in MEMORY_STATES]
    if unknown or not wanted:
        raise InvalidInputError(f"unknown memory state {unknown[0] if unknown else ''!r}; one of "
                                f"{', '.join(MEMORY_STATES)} or all")
    return wanted


def memories(tx: ManagedTransaction, user_id: str, about: str | None, state: str | list[str],
             now: datetime, limit: int | None, offset: int = 0, newest_first: bool = False,
             said_from: datetime | None = None, said_until: datetime | None = None,
             lambdas: dict[str, float] | None = None, kind: str | None = None
             ) -> list[MemoryEdge]:
    """The user's memories in these states (about one entity, when named; their words said in
    [said_from, said_until), when given), one page; `lambdas` (the settings' decay_lambdas)
    give each its strength at `now`."""
    if limit is not None and not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be between 1 and {MAX_PAGE}")
    if offset < 0:
        raise InvalidInputError("offset must not be negative")
    entity_ids = [resolve_entity(tx, user_id, about).id] if about is not None else None
    rows = run(tx, "ownership/memories", user_id=user_id, entity_ids=entity_ids, rows=None,
               kind=kind,
               states=states_for(state), now=now, skip=offset,
               limit=limit if limit is not None else 2**62, newest_first=newest_first,
               said_from=said_from, said_until=said_until, lambdas=lambdas)
    return [MemoryEdge(**r) for r in rows]


def _iso(value: Any) -> str | None:
    return None if value is None else native(value).isoformat()


def sightings_of(props: dict[str, Any], said_in: str | None, said_at: Any) -> list[Sighting]:
    """Every sighting of a memory. Memories written before sightings were logged cite their
    conversations only: the words shown are attributed to the conversation that said them."""
    logged = [Sighting(**json.loads(s)) for s in props.get("sightings") or [] if s]
    seen = {s.conversation_id for s in logged}
    for conversation_id in props.get("conversations") or []:
        if conversation_id not in seen:
            mine = conversation_id == said_in
            logged.append(Sighting(
                conversation_id=conversation_id, at=_iso(said_at) if mine else None,
                snippet=props.get("snippet") if mine else None,
                evidence=props.get("evidence") if mine else None,
                confidence=props.get("confidence") if mine else None))
    return logged


def history(tx: ManagedTransaction, settings: Settings, user_id: str, edge_id: str,
            now: datetime) -> MemoryHistory:
    """One memory with every sighting, its reinforcements, its strength now, its successor."""
    where = [one_edge(tx, user_id, edge_id)]
    [edge] = [MemoryEdge(**r) for r in run(
        tx, "ownership/memories", user_id=user_id, entity_ids=None, rows=where, kind=None,
        states=list(MEMORY_STATES), now=now, skip=0, limit=1, newest_first=False,
        said_from=None, said_until=None, lambdas=settings.decay_lambdas)]
    row = run(tx, "ownership/memory", user_id=user_id, rows=where, now=now,
              lambdas=settings.decay_lambdas)[0]
    props = row["props"]
    return MemoryHistory(
        memory=edge, sightings=sightings_of(props, row["said_in"], row["said_at"]),
        said_at=_iso(row["said_at"]), reinforcements=props.get("reinforcements") or 0,
        reinforced_at=[_iso(t) for t in props.get("reinforced_at") or []],
        strength_now=row["strength_now"], superseded_by=props.get("superseded_by"),
        superseded_by_line=row["superseded_by_line"],
        used_in_open=[r["conversation_id"] for r in run(
            tx, "ownership/memory_uses", user_id=user_id, edge_id=edge.id)])


def overview(tx: ManagedTransaction, user_id: str, now: datetime) -> Overview:
    """The user's memory at a glance: counts and the last activity."""
    [row] = run(tx, "ownership/overview", user_id=user_id, now=now)
    return Overview(memories=row["memories"], open_conversations=row["open_conversations"],
                    kinds={k["kind"]: k["count"] for k in row["kinds"]},
                    last_activity=row["last_activity"])
