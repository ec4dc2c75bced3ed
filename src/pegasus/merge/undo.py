"""Undoing a merge from its record (design §5, beyond the write-up): both nodes as they were."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from neo4j import ManagedTransaction

from pegasus.commit import drop_stale_keys, entity_row, stored_entities, write_keys
from pegasus.embed import Embedder
from pegasus.errors import NotFoundError, PegasusError
from pegasus.merge.rules import StoredEntity
from pegasus.models import CleanEntity
from pegasus.store import run
from pegasus.text import fold


def undo_in_tx(tx: ManagedTransaction, embedder: Embedder, user_id: str, record_id: str,
               now: datetime) -> dict:
    """Split a merge: the survivor gets back what it had, the absorbed entity is restored."""
    run(tx, "write/lock_partition", user_id=user_id, now=now)
    rows = run(tx, "read/merge_record", user_id=user_id, record_id=record_id)
    if not rows:
        raise NotFoundError(f"no merge record {record_id!r} for this user")
    record = rows[0]["record"]
    if record["status"] not in ("merged", "flagged"):
        raise PegasusError(f"merge record {record_id!r} is {record['status']}; nothing to undo")
    if not rows[0]["survivor_exists"]:
        raise NotFoundError("the surviving entity of this merge no longer exists")
    absorbed = CleanEntity.model_validate_json(record["absorbed"])
    before = json.loads(record["before"])
    [survivor] = stored_entities(tx, user_id, ids=[record["survivor_id"]])
    had = survivor.forms()
    added = {fold(f) for f in [absorbed.name, *absorbed.aliases]} - {
        fold(f) for f in [before["name"], *before["aliases"]]}
    survivor.aliases = [a for a in survivor.aliases if fold(a) not in added]
    for key in absorbed.properties:
        if key in before["properties"]:
            survivor.properties[key] = before["properties"][key]
        else:
            survivor.properties.pop(key, None)
    survivor.confidence = before["confidence"]
    survivor.kind = before.get("kind", survivor.kind)  # a provisional node's kind comes back
    survivor.provisional = before.get("provisional", survivor.provisional)
    if record["conversation_id"] not in before["conversations"]:
        survivor.conversations = [c for c in survivor.conversations
                                  if c != record["conversation_id"]]
    restored = StoredEntity(
        id=str(uuid.uuid4()), name=absorbed.name, kind=absorbed.kind,
        aliases=list(absorbed.aliases), confidence=absorbed.confidence,
        properties=dict(absorbed.properties), conversations=[record["conversation_id"]],
    )
    row = entity_row(survivor)
    for key in set(before["properties"]) | set(absorbed.properties):
        row["props"].setdefault(f"p_{key}", None)  # a property the merge added is removed again
    run(tx, "write/update_entities", user_id=user_id, now=now, rows=[row])
    run(tx, "write/create_entities", user_id=user_id, now=now, rows=[entity_row(restored)])
    moved = run(tx, "write/move_edges", user_id=user_id, rows=[
        {"edge_id": e, "survivor_id": survivor.id, "restored_id": restored.id}
        for e in record.get("edge_ids") or []])
    write_keys(tx, embedder, user_id, now, [survivor, restored], set())
    drop_stale_keys(tx, user_id, {survivor.id: [f for f in had if f not in survivor.forms()]},
                    set())
    run(tx, "write/partition_stats", user_id=user_id, now=now, self_id=None)
    run(tx, "write/mark_merge_undone", user_id=user_id, record_id=record_id, now=now,
        restored_id=restored.id)
    return {"survivor": survivor.name, "restored": restored.name, "restored_id": restored.id,
            "edges_moved": moved[0]["moved"] if moved else 0}
