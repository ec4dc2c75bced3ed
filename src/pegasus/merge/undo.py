"""Undoing a merge from its record (design §5, beyond the write-up): both nodes as they were.

A merge made by hand (design §10) records the absorbed entity whole (its id, conversations) and
the memories that ran between the two, which the merge had to take off; undo restores those too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from pegasus.embedding.embed import Embedder
from pegasus.errors import NotFoundError, PegasusError
from pegasus.merge.records import EdgeBetween, MergeFields
from pegasus.merge.rules import StoredEntity
from pegasus.portable import decode_props
from pegasus.snippets import write_snippets
from pegasus.store import run
from pegasus.text import fold
from pegasus.write.keys import drop_stale_keys, write_keys
from pegasus.write.partition import entity_row, lock_partition, stored_entities


def revert_record(survivor: StoredEntity, record: MergeFields) -> set[str]:
    """Take back from `survivor` what the merge of `record` gave it: the absorbed forms, the
    properties it added or overwrote, its confidence and kind, its conversations. The property
    keys touched (a key the merge added must be removed in the graph too)."""
    absorbed, before = record.absorbed, record.before
    # A merged or flagged record keeps both (MergeFields refuses one without them).
    assert absorbed is not None and before is not None
    added = {fold(f) for f in [absorbed.name, *absorbed.aliases]} - {
        fold(f) for f in [before.name, *before.aliases]}
    survivor.aliases = [a for a in survivor.aliases if fold(a) not in added]
    for key in absorbed.properties:
        if key in before.properties:
            survivor.properties[key] = before.properties[key]
        else:
            survivor.properties.pop(key, None)
    survivor.confidence = before.confidence
    survivor.kind = before.kind  # a provisional node's kind comes back
    survivor.provisional = before.provisional
    gave = set(absorbed.conversations)
    survivor.conversations = [c for c in survivor.conversations
                              if c not in gave or c in before.conversations]
    return set(before.properties) | set(absorbed.properties)


def undo_in_tx(tx: ManagedTransaction, embedder: Embedder, user_id: str, record_id: str,
               now: datetime) -> dict:
    """Split a merge: the survivor gets back what it had, the absorbed entity is restored."""
    lock_partition(tx, user_id, now)
    rows = run(tx, "read/merge_record", user_id=user_id, record_id=record_id)
    if not rows:
        raise NotFoundError(f"no merge record {record_id!r} for this user")
    record = MergeFields.from_node(rows[0]["record"])
    if record.status not in ("merged", "flagged"):
        raise PegasusError(f"merge record {record_id!r} is {record.status}; nothing to undo")
    if not rows[0]["survivor_exists"]:
        raise NotFoundError("the surviving entity of this merge no longer exists")
    absorbed = record.absorbed
    assert absorbed is not None  # a merged or flagged record keeps it (MergeFields checks)
    [survivor] = stored_entities(tx, user_id, ids=[record.survivor_id])
    had = survivor.forms()
    touched = revert_record(survivor, record)
    restored = StoredEntity(
        id=absorbed.id, name=absorbed.name, kind=absorbed.kind,
        aliases=list(absorbed.aliases), confidence=absorbed.confidence,
        properties=dict(absorbed.properties), conversations=list(absorbed.conversations),
        provisional=absorbed.provisional,
    )
    row = entity_row(survivor)
    for key in touched:
        row["props"].setdefault(f"p_{key}", None)  # a property the merge added is removed again
    run(tx, "write/update_entities", user_id=user_id, now=now, rows=[row])
    run(tx, "write/create_entities", user_id=user_id, now=now, rows=[entity_row(restored)])
    moved = run(tx, "write/move_edges", user_id=user_id, rows=[
        {"edge_id": e, "survivor_id": survivor.id, "restored_id": restored.id}
        for e in record.edge_ids])
    if record.between:
        _restore_between(tx, embedder, user_id, now, survivor.id, restored.id, record.between)
    write_keys(tx, embedder, user_id, now, [survivor, restored],
               {e.label for e in record.between})
    drop_stale_keys(tx, user_id, {survivor.id: [f for f in had if f not in survivor.forms()]},
                    set())
    run(tx, "write/partition_stats", user_id=user_id, now=now, self_id=None)
    run(tx, "write/mark_merge_undone", user_id=user_id, record_id=record_id, now=now,
        restored_id=restored.id)
    return {"survivor": survivor.name, "restored": restored.name, "restored_id": restored.id,
            "edges_moved": (moved[0]["moved"] if moved else 0) + len(record.between)}


def _restore_between(tx: ManagedTransaction, embedder: Embedder, user_id: str, now: datetime,
                     survivor_id: str, restored_id: str, between: list[EdgeBetween]) -> None:
    """Recreate the memories that ran between the two entities, with their snippets."""
    rows: list[dict[str, Any]] = []
    for edge in between:
        ends = (survivor_id, restored_id) if edge.from_survivor else (restored_id, survivor_id)
        rows.append({"source_id": ends[0], "target_id": ends[1], "label": edge.label,
                     "props": decode_props(edge.props)})
    run(tx, "write/create_edges", user_id=user_id, rows=rows)
    for edge, row in zip(between, rows, strict=True):
        write_snippets(tx, embedder, user_id, edge.said_in or "", now,
                       [{"source_id": row["source_id"], "target_id": row["target_id"],
                         "edge_id": row["props"]["id"]}])
