"""Correcting one's memory (design §10): retract a memory, correct it in place, rename an
entity, edit its aliases, merge two entities by hand. Each runs in one write transaction under
the partition lock. Every text a correction writes (a name, an alias, a memory's other end and
words) is screened for secrets like every other word stored (design §15)."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from neo4j import ManagedTransaction

from pegasus.clock import aware
from pegasus.embedding.embed import Embedder
from pegasus.errors import InvalidInputError, NotFoundError
from pegasus.extract.clean import clean_text
from pegasus.merge.records import AbsorbedEntity, EdgeBetween, EntityBefore, MergeFields
from pegasus.merge.rules import StoredEntity
from pegasus.models.batch import MAX_ENTITY_ALIASES, MAX_SNIPPET_CHARS
from pegasus.models.reports import Correction
from pegasus.ownership.refs import entity_name, one_edge, resolve_entity
from pegasus.portable import encode_props, native
from pegasus.screen import Screen, summary
from pegasus.snippets import write_snippets
from pegasus.store import run
from pegasus.text import fold
from pegasus.vocab import SURFACES
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


def _new_name(checker: Screen, value: str, what: str) -> str:
    """A name a person gives, as it will be stored: checked, and a secret in it replaced by its
    marker (design §15)."""
    return entity_name(checker(entity_name(value, what)), what)


def _told(checker: Screen, correction: Correction) -> Correction:
    if checker.found:
        correction.notes.append(summary(checker.found))
    return correction


def rename(tx: ManagedTransaction, embedder: Embedder, user_id: str, ref: str, new_name: str,
           now: datetime) -> Correction:
    """Give an entity another name; the old one is dropped (it was wrong), keys re-embedded."""
    lock_partition(tx, user_id, now)
    entity = _entity(tx, user_id, ref)
    checker = Screen()
    name = _new_name(checker, new_name, "new name")
    _refuse_taken(tx, user_id, entity, name)
    had = entity.forms()
    entity.name = name
    entity.aliases = [a for a in entity.aliases if fold(a) != fold(name)]
    _save(tx, embedder, user_id, now, entity, had)
    return _told(checker, Correction(action="renamed", entity_id=entity.id, name=entity.name,
                                     aliases=entity.aliases))


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
    checker = Screen()
    for alias in (_new_name(checker, a, "alias") for a in add):
        if fold(alias) in entity.forms():
            notes.append(f"{alias!r} already names it")
            continue
        entity.aliases.append(alias)
    if len(entity.aliases) > MAX_ENTITY_ALIASES:
        raise InvalidInputError(f"an entity has at most {MAX_ENTITY_ALIASES} aliases; nothing was changed")
    _save(tx, embedder, user_id, now, entity, had)
    return _told(checker, Correction(action="aliases", entity_id=entity.id, name=entity.name,
                                     aliases=entity.aliases, notes=notes))


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


def _words(checker: Screen, value: str) -> str:
    # screened like every word stored (design §15): a secret typed into a correction is not kept
    words = clean_text(checker(value)) if isinstance(value, str) else ""
    if not words:
        raise InvalidInputError("the memory's words must not be empty; nothing was changed")
    if len(words) > MAX_SNIPPET_CHARS:
        raise InvalidInputError(f"the memory's words are longer than {MAX_SNIPPET_CHARS} "
                                "characters; nothing was changed")
    return words


def _instant(value: Any) -> datetime | None:
    """A stored instant as an aware UTC datetime: written back as the driver returns it, it
    would be stored with a named zone ("…Z[UTC]") unlike every other instant."""
    return None if value is None else aware(native(value))


def _other_end(tx: ManagedTransaction, embedder: Embedder, user_id: str, ref: str, kind: str,
               now: datetime) -> tuple[str, bool]:
    """The entity `ref` names (id, name or alias), or a new one of `kind` when none does: a
    person correcting "Porto" to "Lisbon" need not have mentioned Lisbon before."""
    try:
        return resolve_entity(tx, user_id, ref).id, False
    except NotFoundError:
        entity = StoredEntity(id=str(uuid.uuid4()), name=entity_name(ref, "other end"),
                              kind=kind, confidence=1.0)
        run(tx, "write/create_entities", user_id=user_id, now=now, rows=[entity_row(entity)])
        write_keys(tx, embedder, user_id, now, [entity], set())
        return entity.id, True


def check_dates(since: datetime | None, began: datetime | None, ends: datetime | None,
                now: datetime) -> None:
    """Refuse dates a person cannot mean: a memory made true since a day still to come, or
    one that ends before it began (by day: the page sends days). Today is the latest today of
    any time zone (UTC+14), so a person east of UTC is never refused their own today."""
    day = (now.astimezone(UTC) + timedelta(hours=14)).date()
    if since is not None and since.astimezone(UTC).date() > day:
        raise InvalidInputError(f"it cannot be true since {since.astimezone(UTC).date()}, a day "
                                f"still to come: give today ({day}) or an earlier day; nothing "
                                "was changed")
    if began is not None and ends is not None \
            and ends.astimezone(UTC).date() < began.astimezone(UTC).date():
        raise InvalidInputError(f"it would end (until {ends.astimezone(UTC).date()}) before it "
                                f"began (since {began.astimezone(UTC).date()}): give an end on "
                                "or after its start; nothing was changed")


def correct_memory(tx: ManagedTransaction, embedder: Embedder, user_id: str, edge_id: str,
                   now: datetime, initial_strength: float, target: str | None = None,
                   words: str | None = None, since: datetime | None = None,
                   until: datetime | None = None, no_end: bool = False,
                   via: str = "python") -> Correction:
    """Change what a memory says (design §10, "Correct in place"): its other end, its words,
    when it began (`since`) or ends (`until`; `no_end` drops the end). The correction is a new
    current memory, as strong as a new one, with the person's words; the corrected version
    stays as its history (superseded by it, with who, through which surface and when) and is
    never recalled again. `undo_correction` takes it back."""
    if via not in SURFACES:
        raise InvalidInputError(f"unknown surface {via!r}; one of {', '.join(SURFACES)}")
    if until is not None and no_end:
        raise InvalidInputError("give an end date or say it has none, not both; nothing was changed")
    # The other end and the words are screened together (a password the words state is masked
    # in the other end too), before anything is looked up or written: the other end may become
    # a new entity's name and its keys.
    checker = Screen()
    checker.learn(v for v in (target, words) if isinstance(v, str))
    if target is not None:
        target = _new_name(checker, target, "other end")
    lock_partition(tx, user_id, now)
    where = one_edge(tx, user_id, edge_id)
    [old] = run(tx, "ownership/correction_edge", user_id=user_id, rows=[where])
    props = old["props"]
    if props.get("retracted_at") is not None:
        raise InvalidInputError("this memory was retracted (marked wrong); restore it before "
                           "correcting it; nothing was changed")
    if props.get("superseded_at") is not None:
        raise InvalidInputError("this memory was already replaced by a newer one; correct that one; "
                           "nothing was changed")
    target_id, created = old["target_id"], False
    if target is not None and fold(target) != fold(old["target"]) \
            and target != old["target_id"]:
        target_id, created = _other_end(tx, embedder, user_id, target, old["target_kind"], now)
        if target_id == old["source_id"]:
            raise InvalidInputError("a memory cannot link an entity to itself; nothing was changed")
    snippet = _words(checker, words) if words is not None else props.get("snippet")
    expires_at = None if no_end else (until if until is not None
                                      else _instant(props.get("expires_at")))
    began = since if since is not None else _instant(props.get("created_at"))
    if since is not None or until is not None:
        check_dates(since, began, expires_at, now)
    unchanged = (target_id == old["target_id"] and snippet == props.get("snippet")
                 and expires_at == _instant(props.get("expires_at"))
                 and began == _instant(props.get("created_at")))
    if unchanged:
        raise InvalidInputError("the correction changes nothing (same other end, words and dates)")
    if target_id != old["target_id"]:
        same = run(tx, "read/edges_between", user_id=user_id, triples=[
            {"source_id": old["source_id"], "label": old["label"], "target_id": target_id}])
        if same:
            raise InvalidInputError(
                f"a memory {old['source']} -[{old['label']}]-> that end already exists "
                f"({same[0]['id']}); retract or forget this one instead; nothing was changed")
    new_id = str(uuid.uuid4())
    new_props = {
        "id": new_id, "user_id": user_id, "strength": initial_strength,
        "strength_at_touch": initial_strength, "touched_at": now, "confidence": 1.0,
        "stability": props.get("stability"), "cardinality": props.get("cardinality"),
        "expires_at": expires_at,
        "expired": expires_at is not None and expires_at <= now,
        "snippet": snippet,
        "evidence": snippet if words is not None else props.get("evidence"),
        "conversations": [], "sightings": [], "dormant": False, "created_at": began,
        "corrects": edge_id, "corrected_via": via,
    }
    new_row = {"source_id": old["source_id"], "target_id": target_id, "edge_id": new_id}
    run(tx, "write/create_edges", user_id=user_id, rows=[
        {"source_id": old["source_id"], "target_id": target_id, "label": old["label"],
         "props": new_props}])
    run(tx, "ownership/mark_corrected", user_id=user_id, now=now, undo=False,
        rows=[{**where, "by": new_id, "via": via}])
    write_snippets(tx, embedder, user_id, None, now, [new_row])
    run(tx, "write/partition_stats", user_id=user_id, now=now, self_id=None)
    notes = ["a new entity was made for the other end"] if created else []
    return _told(checker, Correction(action="corrected", memory_id=new_id,
                                     corrected_id=edge_id, notes=notes))


def undo_correction(tx: ManagedTransaction, user_id: str, edge_id: str, now: datetime
                    ) -> Correction:
    """Take a correction back: the correction `edge_id` is erased and the version it
    corrected is current again. Refused once the correction has a life of its own (said
    again in a conversation, or itself corrected or replaced)."""
    lock_partition(tx, user_id, now)
    where = one_edge(tx, user_id, edge_id)
    [new] = run(tx, "ownership/correction_edge", user_id=user_id, rows=[where])
    props = new["props"]
    corrected_id = props.get("corrects")
    if corrected_id is None:
        raise InvalidInputError("this memory is not a correction; nothing to undo")
    if props.get("superseded_at") is not None:
        raise InvalidInputError("this correction was itself replaced or corrected since; undo that "
                           "first; nothing was changed")
    if props.get("conversations"):
        raise InvalidInputError("a conversation has said this correction again since; it is yours "
                           "now (retract or correct it instead); nothing was changed")
    old_where = one_edge(tx, user_id, corrected_id)
    run(tx, "ownership/forget_edges", user_id=user_id, rows=[where])
    run(tx, "ownership/mark_corrected", user_id=user_id, now=now, undo=True,
        rows=[{**old_where, "by": None, "via": None}])
    made = [r["id"] for r in run(tx, "ownership/orphans", user_id=user_id,
                                 entity_ids=[new["target_id"]], provisional_only=False)
            if new["target_id"] != old_where["target_id"]]
    if made:  # the other end the correction brought in is held by nothing else now
        run(tx, "ownership/forget_entities", user_id=user_id, entity_ids=made)
    run(tx, "write/partition_stats", user_id=user_id, now=now, self_id=None)
    return Correction(action="correction undone", memory_id=corrected_id, corrected_id=edge_id)
