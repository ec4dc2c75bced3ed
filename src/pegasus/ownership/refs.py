"""What a person's request names: a memory by id, an entity by id or by name."""

from __future__ import annotations

from typing import Any

from neo4j import ManagedTransaction

from pegasus.errors import AmbiguousEntityError, InvalidInputError, NotFoundError
from pegasus.extract.clean import clean_text
from pegasus.models.batch import MAX_NAME_CHARS
from pegasus.models.views import EntityChoice
from pegasus.store import run
from pegasus.text import fold


def edge_rows(tx: ManagedTransaction, user_id: str, edge_ids: list[str]) -> list[dict[str, Any]]:
    """{edge_id, source_id, target_id} of each of these memories the user has."""
    return run(tx, "ownership/edge_ends", user_id=user_id, edge_ids=edge_ids)


def one_edge(tx: ManagedTransaction, user_id: str, edge_id: str) -> dict[str, Any]:
    """The memory `edge_id` of this user; NotFoundError (404) when it has none by that id."""
    if not isinstance(edge_id, str) or not edge_id.strip() or len(edge_id) > 200:
        raise InvalidInputError("a memory id is a non-empty string of at most 200 characters")
    rows = edge_rows(tx, user_id, [edge_id])
    if not rows:
        raise NotFoundError(f"no memory {edge_id!r} in {user_id}'s memory")
    return rows[0]


def entity_name(value: str, what: str = "name") -> str:
    """A name a person typed, as it will be stored (control characters become spaces)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string")
    name = clean_text(value)
    if not name:
        raise InvalidInputError(f"{what} must not be empty")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(f"{what} is longer than {MAX_NAME_CHARS} characters")
    return name


def resolve_entity(tx: ManagedTransaction, user_id: str, ref: str) -> EntityChoice:
    """The one entity `ref` names: its id, else its name or an alias (case and spaces folded).
    NotFoundError when none; AmbiguousEntityError listing them when several (nothing done)."""
    ref = entity_name(ref, "entity")
    rows = run(tx, "ownership/entity_refs", user_id=user_id, ref=ref, folded=fold(ref))
    if rows and rows[0]["id"] == ref:
        return EntityChoice(**rows[0])
    if not rows:
        raise NotFoundError(f"no entity named {ref!r} in {user_id}'s memory")
    if len(rows) > 1:
        choices = [EntityChoice(**r) for r in rows]
        listed = "; ".join(f"{c.id} ({c.name}, {c.kind}, {c.memories} memories)"
                           for c in choices)
        raise AmbiguousEntityError(
            f"{len(rows)} entities are named {ref!r}: {listed}. Name one by its id; nothing "
            "was changed", [c.model_dump() for c in choices])
    return EntityChoice(**rows[0])
