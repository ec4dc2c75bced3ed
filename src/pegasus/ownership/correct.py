"""Correcting one's memory (design §10): retract a memory, rename an entity, edit its aliases,
merge two entities by hand. Each runs in one write transaction under the partition lock."""

from __future__ import annotations

import copy
import uuid
from datetime import datetime

from neo4j import ManagedTransaction

from pegasus.embed import Embedder
from pegasus.errors import InvalidInputError
from pegasus.merge.records import AbsorbedEntity, EdgeBetween, EntityBefore, MergeFields
from pegasus.merge.rules import StoredEntity
from pegasus.models.batch import MAX_ENTITY_ALIASES
from pegasus.models.reports import Correction
from pegasus.ownership.refs import entity_name, one_edge, resolve_entity
from pegasus.portable import encode_props
from pegasus.store import run
from pegasus.text import fold
from pegasus.write.keys import drop_stale_keys, write_keys
from pegasus.write.merge_records import write_merge_records
from pegasus.write.partition import entity_row, lock_partition, stored_entities


def retract(tx: ManagedTransaction, user_id: str, edge_id: str, now: datetime,
            undo: bool = False) -> Correction:
    """Mark a memory wrong (never recalled again, kept with the date), or take that back."""
    lock_partition(tx, user_id, now)
    row = one_edge(tx, user_id, edge_id)
    run(tx, "ownership/retract", user_id=user_id, rows=[row], retract=not undo, now=now)
    return Correction(action="restored" if undo else "retracted", memory_id=edge_id)


def _save(tx: ManagedTransaction, embedder: Embedder, user_id: str, now: datetime,
          entity: StoredEntity, had: list[str]) -> None:
    """Write a corrected entity: its node, keys for its forms, none for the forms it lost."""
    run(tx, "write/update_entities", user_id=user_id, now=now, rows=[entity_row(entity)])
    write_keys(tx, embedder, user_id, now, [entity], set())
    drop_stale_keys(tx, user_id, {entity.id: [f for f in had if f not in entity.forms()]},
                    set())
    run(tx, "write/partition_stats", user_id=user_id, now=now, self_id=None)


def _entity(tx: ManagedTransaction, user_id: str, ref: str) -> StoredEntity:
    [entity] = stored_entities(tx, user_id, ids=[resolve_entity(tx, user_id, ref).id])
    return entity


def _refuse_taken(tx: ManagedTransaction, user_id: str, entity: StoredEntity, name: str) -> None:
    """A name another entity already has is a merge, not a rename."""
    others = [r for r in run(tx, "ownership/entity_refs", user_id=user_id, ref=name,
                             folded=fold(name)) if r["id"] != entity.id]
    if others:
        raise InvalidInputError(
            f"{name!r} already names another entity ({others[0]['name']}, {others[0]['id']}); "
            "if they are the same, merge them (`pegasus correct merge`)")


def rename(tx: ManagedTransaction, embedder: Embedder, user_id: str, ref: str, new_name: str,
           now: datetime) -> Correction:
    """Give an entity another name; the old one is dropped (it was wrong), keys re-embedded."""
    lock_partition(tx, user_id, now)
    entity = _entity(tx, user_id, ref)
    name = entity_name(new_name, "new name")
    _refuse_taken(tx, user_id, entity, name)
    had = entity.forms()
    entity.name = name
    entity.aliases = [a for a in entity.aliases if fold(a) != fold(name)]
    _save(tx, embedder, user_id, now, entity, had)
    return Correction(action="renamed", entity_id=entity.id, name=entity.name,
                      aliases=entity.aliases)


def edit_aliases(tx: ManagedTransaction, embedder: Embedder, user_id: str, ref: str,
                 add: list[str], remove: list[str], now: datetime) -> Correction:
    """Add or remove an entity's aliases (its name stays: rename to change that)."""
    lock_partition(tx, user_id, now)
    entity = _entity(tx, user_id, ref)
    notes: list[str] = []
    dropped = {fold(entity_name(a, "alias")) for a in remove}
    if fold(entity.name) in dropped:
        raise InvalidInputError(f"{entity.name!r} is the entity's name, not an alias; rename it "
                                "instead; nothing was changed")
    missing = dropped - {fold(a) for a in entity.aliases}
    notes += [f"{form!r} was not an alias" for form in sorted(missing)]
    had = entity.forms()
    entity.aliases = [a for a in entity.aliases if fold(a) not in dropped]
    for alias in (entity_name(a, "alias") for a in add):
        if fold(alias) in entity.forms():
            notes.append(f"{alias!r} already names it")
            continue
        entity.aliases.append(alias)
    if len(entity.aliases) > MAX_ENTITY_ALIASES:
        raise InvalidInputError(f"an entity has at most {MAX_ENTITY_ALIASES} aliases; nothing was changed")
    _save(tx, embedder, user_id, now, entity, had)
    return Correction(action="aliases", entity_id=entity.id, name=entity.name,
                      aliases=entity.aliases, notes=notes)


def merge(tx: ManagedTransaction, embedder: Embedder, user_id: str, keep_ref: str,
          absorb_ref: str, now: datetime) -> Correction:
    """Merge two entities the person says are one (design §10): the kept one takes the other's
    names as aliases, its properties where it has none, its conversations and memories. The
    memories between the two would point at one node: they are taken off and kept in the
    merge record, so `undo_merge` puts everything back. The self node always survives."""
    lock_partition(tx, user_id, now)
    keep, absorb = resolve_entity(tx, user_id, keep_ref), resolve_entity(tx, user_id, absorb_ref)
    notes: list[str] = []
    if keep.id == absorb.id:
        raise InvalidInputError(f"{keep_ref!r} and {absorb_ref!r} are the same entity; nothing to merge")
    if absorb.is_self:
        keep, absorb = absorb, keep
        notes.append(f"kept {keep.name} (the user's own node), which always survives")
    entities = {e.id: e for e in stored_entities(tx, user_id, ids=[keep.id, absorb.id])}
    survivor, absorbed = entities[keep.id], entities[absorb.id]
    before = copy.deepcopy(survivor)
    between = run(tx, "ownership/edges_between_entities", user_id=user_id, a_id=survivor.id,
                  b_id=absorbed.id)
    taken_off = run(tx, "ownership/forget_edges", user_id=user_id, rows=between)[0]
    moving = [r["edge_id"] for r in run(tx, "ownership/entity_edges", user_id=user_id,
                                        entity_id=absorbed.id)]
    moved = run(tx, "write/move_edges", user_id=user_id, rows=[
        {"edge_id": e, "survivor_id": absorbed.id, "restored_id": survivor.id} for e in moving])
    for form in [absorbed.name, *absorbed.aliases]:
        if fold(form) not in survivor.forms():
            survivor.aliases.append(form)
    survivor.properties = {**absorbed.properties, **survivor.properties}
    survivor.conversations = list(dict.fromkeys([*survivor.conversations,
                                                 *absorbed.conversations]))
    survivor.confidence = max(survivor.confidence, absorbed.confidence)
    survivor.provisional = survivor.provisional and absorbed.provisional
    record_id = str(uuid.uuid4())
    run(tx, "ownership/forget_entities", user_id=user_id, entity_ids=[absorbed.id])
    write_merge_records(tx, user_id, now, [(record_id, MergeFields(
        status="merged", rule="manual", survivor_id=survivor.id, survivor_name=survivor.name,
        absorbed_name=absorbed.name, kind=absorbed.kind,
        absorbed=AbsorbedEntity(
            id=absorbed.id, name=absorbed.name, kind=absorbed.kind, aliases=absorbed.aliases,
            properties=absorbed.properties, confidence=absorbed.confidence,
            provisional=absorbed.provisional, conversations=absorbed.conversations),
        before=EntityBefore.of(before), edge_ids=moving,
        between=[EdgeBetween(label=r["label"], props=encode_props(r["props"]),
                             from_survivor=r["from_a"], said_in=r["said_in"])
                 for r in between],
    ))])
    drop_stale_keys(tx, user_id, {}, set(taken_off["labels"]))
    _save(tx, embedder, user_id, now, survivor, before.forms())
    if between:
        notes.append(f"{len(between)} memories between the two were taken off (they would "
                     "point at one node); undoing the merge puts them back")
    return Correction(action="merged", entity_id=survivor.id, name=survivor.name,
                      aliases=survivor.aliases, merge_record_id=record_id,
                      edges_moved=moved[0]["moved"] if moved else 0, notes=notes)
