"""Import an export file into an empty partition (design §11): the file is checked whole first
(nothing is written when any line breaks the format), then written in batches, with the keys,
the snippet embeddings and their centring computed anew."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neo4j import ManagedTransaction
from pydantic import ValidationError

from pegasus.commit import KIND_LABELS, write_keys
from pegasus.embed import pack_vector
from pegasus.errors import InvalidExportError, PartitionNotEmptyError
from pegasus.merge.rules import StoredEntity
from pegasus.models import ImportReport, describe_validation_error
from pegasus.portable import decode_props
from pegasus.snippets import sync_sightings, user_key
from pegasus.store import run
from pegasus.transfer.format import (
    FORMAT,
    ORDER,
    RECORD,
    VERSION,
    ConversationRecord,
    EntityRecord,
    MemoryRecord,
)

if TYPE_CHECKING:
    from pegasus.memory import Memory

BATCH = 500


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, record) of every non-empty line; the first problem as one clear line."""
    try:
        yield from _parsed(path)
    except UnicodeDecodeError as exc:
        raise InvalidExportError(f"{path.name}: not UTF-8 text ({exc.reason})") from exc


def _parsed(path: Path) -> Iterator[tuple[int, Any]]:
    first = True
    with path.open(encoding="utf-8") as lines:
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise InvalidExportError(f"line {number}: not JSON ({exc})") from exc
            if first:
                _check_header(data, number)
                first = False
            try:
                yield number, RECORD.validate_python(data)
            except ValidationError as exc:
                kind = data.get("type") if isinstance(data, dict) else None
                problem = describe_validation_error(exc).removeprefix(f"{kind}.")
                raise InvalidExportError(f"line {number} ({kind or 'record'}): {problem}"
                                         ) from exc


def _check_header(data: Any, number: int) -> None:
    if not isinstance(data, dict) or data.get("type") != "header" or data.get("format") != FORMAT:
        raise InvalidExportError(f"line {number}: not a {FORMAT} file (its first line must be "
                                 "the header)")
    if data.get("version") != VERSION:
        raise InvalidExportError(f"line {number}: version: format version "
                                 f"{data.get('version')!r} is unknown; this Pegasus reads "
                                 f"version {VERSION}")


def check(path: Path) -> Any:
    """Read the whole file once without writing; its header. Refuses records out of order, a
    memory whose end is no exported entity, two self nodes."""
    header, place, selves = None, 0, 0
    entity_ids: set[str] = set()
    for number, record in _records(path):
        rank = ORDER.index(record.type)
        if header is not None and rank == 0 or rank < place:
            raise InvalidExportError(f"line {number} ({record.type}): out of order; the format "
                                     f"keeps {', '.join(ORDER)} in that order")
        place = rank
        if record.type == "header":
            header = record
        elif isinstance(record, EntityRecord):
            entity_ids.add(record.id)
            selves += record.is_self
            if selves > 1:
                raise InvalidExportError(f"line {number} (entity): is_self: a second self node")
        elif isinstance(record, MemoryRecord):
            for end in (record.source_id, record.target_id):
                if end not in entity_ids:
                    raise InvalidExportError(f"line {number} (memory): source_id/target_id: "
                                             f"{end!r} is no entity of the file")
    if header is None:
        raise InvalidExportError("line 1: the file is empty")
    return header


def _entity_row(record: EntityRecord) -> tuple[dict[str, Any], StoredEntity]:
    props = record.model_dump(exclude={"type", "id", "properties"}, exclude_none=True)
    props.update({f"p_{k}": v for k, v in record.properties.items()})
    entity = StoredEntity(id=record.id, name=record.name, kind=record.kind,
                          aliases=list(record.aliases))
    return {"id": record.id, "kind_label": KIND_LABELS[record.kind], "props": props}, entity


def _memory_row(record: MemoryRecord) -> dict[str, Any]:
    props = record.model_dump(exclude={"type", "source_id", "relation", "target_id", "said_at",
                                       "said_in", "sightings"}, exclude_none=True)
    props["sightings"] = [s.model_dump_json() for s in record.sightings]
    return {"source_id": record.source_id, "target_id": record.target_id,
            "relation": record.relation, "said_at": record.said_at, "said_in": record.said_in,
            "props": props}


def _conversation_row(record: ConversationRecord) -> dict[str, Any]:
    props = record.model_dump(exclude={"type", "id", "mentions", "turns"}, exclude_none=True)
    if record.turns is not None:
        props["turns"] = [json.dumps(t, ensure_ascii=False) for t in record.turns]
    return {"id": record.id, "mentions": record.mentions, "props": props}


def import_file(memory: Memory, user_id: str, path: Path, now: datetime,
                replace: bool = False) -> ImportReport:
    """Import `path` as `user_id`'s memory (any user id: a copy under another works)."""
    header = check(path)
    store, embedder = memory.store, memory.embedder
    if replace:
        memory.forget_everything(user_id, at=now)
    state = store.execute("transfer/begin_import", user_id=user_id, now=now)[0]
    if state["holds"]:
        raise PartitionNotEmptyError(
            f"{user_id} already has memories: importing would mix two memories; forget them "
            "first or import with replace (--replace), which forgets them")
    report = ImportReport(user_id=user_id, source_user_id=header.user_id, replaced=replace)
    labels: set[str] = set()
    self_id = None
    pending: dict[str, list[Any]] = {kind: [] for kind in ORDER[1:]}

    def flush(kind: str) -> None:
        batch, pending[kind] = pending[kind], []
        if not batch:
            return
        if kind == "entity":
            rows, entities = zip(*(_entity_row(r) for r in batch), strict=True)

            def entities_and_keys(tx: ManagedTransaction) -> None:
                run(tx, "transfer/import_entities", user_id=user_id, rows=list(rows))
                write_keys(tx, embedder, user_id, now, list(entities), set())

            store.write(entities_and_keys)
            report.entities += len(batch)
        elif kind == "memory":
            vectors = embedder.embed([r.snippet for r in batch])
            rows = [{**_memory_row(r), "packed": pack_vector(v)}
                    for r, v in zip(batch, vectors, strict=True)]
            def memories(tx: ManagedTransaction) -> None:
                run(tx, "transfer/import_memories", user_id=user_id,
                    user_key=user_key(user_id), rows=rows)
                sync_sightings(tx, embedder, user_id, [
                    {"edge_id": r["props"]["id"], "source_id": r["source_id"],
                     "target_id": r["target_id"]} for r in rows])

            store.write(memories)
            report.memories += len(batch)
        elif kind == "conversation":
            store.write(lambda tx: run(tx, "transfer/import_conversations", user_id=user_id,
                                        rows=[_conversation_row(r) for r in batch]))
            report.conversations += len(batch)
        else:
            store.write(lambda tx: run(tx, "transfer/import_merge_records", user_id=user_id,
                                        rows=[{"id": r.id, "props": decode_props(r.record)}
                                              for r in batch]))
            report.merge_records += len(batch)

    for _, record in _records(path):
        if record.type == "header":
            continue
        if isinstance(record, EntityRecord) and record.is_self:
            self_id = record.id
        if isinstance(record, MemoryRecord) and record.superseded_at is None:
            labels.add(record.relation)
        if pending["entity"] and record.type != "entity":
            flush("entity")
        pending[record.type].append(record)
        if len(pending[record.type]) >= BATCH:
            flush(record.type)
    for kind in pending:
        flush(kind)
    store.write(lambda tx: write_keys(tx, embedder, user_id, now, [], labels))
    store.execute("transfer/end_import", user_id=user_id, self_id=self_id, now=now)
    return report

