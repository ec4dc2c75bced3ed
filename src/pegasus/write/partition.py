"""A user's partition as writers see it: its lock, its entities, an entity as Cypher takes it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from pegasus.errors import ErasureInProgressError, ImportInProgressError
from pegasus.merge.rules import StoredEntity
from pegasus.store import run
from pegasus.vocab import KIND_LABELS


def lock_partition(tx: ManagedTransaction, user_id: str, now: datetime) -> dict[str, Any]:
    """Take the user's partition lock for this transaction (every writer does, design §6);
    refused while the user's whole memory is being forgotten (design §10)."""
    state = run(tx, "write/lock_partition", user_id=user_id, now=now)[0]
    if state["erasing_since"] is not None:
        raise ErasureInProgressError(
            f"the memory of {user_id!r} is being forgotten (since "
            f"{state['erasing_since'].iso_format()[:19]}); nothing was written. If that erasure "
            "was interrupted, run `pegasus forget --everything` for this user again")
    if state["importing_since"] is not None:
        raise ImportInProgressError(
            f"a memory is being imported for {user_id!r} (since "
            f"{state['importing_since'].iso_format()[:19]}); nothing was written. If that import "
            "was interrupted, run `pegasus import --replace` for this user again")
    return state


def _entity(r: dict[str, Any]) -> StoredEntity:
    return StoredEntity(
        id=r["id"], name=r["name"], kind=r["kind"], aliases=list(r["aliases"]),
        is_self=r["is_self"], confidence=r["confidence"] or 0.0,
        provisional=r["provisional"], properties=dict(r["properties"]),
        conversations=list(r["conversations"]),
    )


def stored_entities(tx: ManagedTransaction, user_id: str,
                    ids: list[str] | None = None) -> list[StoredEntity]:
    """The user's entities as merge sees them: all, oldest first, or those with these ids."""
    return [_entity(r) for r in run(tx, "read/partition_entities", user_id=user_id, ids=ids)]


def partition_entities(tx: ManagedTransaction, user_id: str
                       ) -> tuple[list[StoredEntity], datetime | None]:
    """All of the user's entities, and when the newest was made (for `Snapshots`)."""
    rows = run(tx, "read/partition_entities", user_id=user_id, ids=None)
    made = [r["created_at"].to_native() for r in rows if r["created_at"] is not None]
    return [_entity(r) for r in rows], max(made, default=None)


def entity_row(entity: StoredEntity) -> dict[str, Any]:
    """An entity as `write/create_entities` and `write/update_entities` take it."""
    props: dict[str, Any] = {
        "name": entity.name, "kind": entity.kind, "aliases": entity.aliases,
        "confidence": entity.confidence, "conversations": entity.conversations,
        "provisional": entity.provisional, "is_self": entity.is_self,
    }
    props.update({f"p_{k}": v for k, v in entity.properties.items()})
    return {"id": entity.id, "kind_label": KIND_LABELS[entity.kind], "props": props}
