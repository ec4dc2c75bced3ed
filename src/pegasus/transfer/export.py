"""Export one user's memory as JSON Lines (design §11), page by page: at no point is the
partition in one Python list, so a 100,000-edge user costs the memory of a page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from pegasus.errors import PegasusError
from pegasus.portable import native
from pegasus.store import Store
from pegasus.transfer.format import (
    VERSION,
    ConversationRecord,
    EntityRecord,
    Header,
    MemoryRecord,
    MergeFields,
    MergeRecordRecord,
)

PAGE = 500
EDGE_FIELDS = set(MemoryRecord.model_fields) - {"type", "source_id", "relation", "target_id",
                                                "said_at", "said_in"}
CONVERSATION_FIELDS = set(ConversationRecord.model_fields) - {"type", "mentions", "turns"}


def _line(record: Any) -> str:
    return record.model_dump_json(exclude_none=True) + "\n"


def _pages(store: Store, name: str, user_id: str) -> Iterator[list[dict[str, Any]]]:
    """Keyset pages of a user's nodes, ordered by id (every page query returns `id`)."""
    after = ""
    while rows := store.query(name, user_id=user_id, after=after, limit=PAGE):
        yield rows
        after = rows[-1]["id"]


def _memory(row: dict[str, Any]) -> MemoryRecord:
    props = {k: native(v) for k, v in row["props"].items() if k != "user_id"}
    unknown = set(props) - EDGE_FIELDS
    if unknown:
        raise PegasusError(f"memory {props.get('id')!r} has properties the export format "
                           f"does not know ({', '.join(sorted(unknown))}); nothing to export "
                           "safely")
    props["sightings"] = [json.loads(s) for s in props.get("sightings") or [] if s]
    return MemoryRecord(source_id=row["source_id"], relation=row["relation"],
                        target_id=row["target_id"], said_at=native(row["said_at"]),
                        said_in=row["said_in"], **props)


def export_lines(store: Store, user_id: str, now: datetime,
                 with_turns: bool = False) -> Iterator[str]:
    """The lines of the user's export: header, entities, memories, conversations, merge
    records; each kind in id order."""
    yield _line(Header(version=VERSION, user_id=user_id, exported_at=now, with_turns=with_turns))
    for page in _pages(store, "transfer/export_entities", user_id):
        for row in page:
            yield _line(EntityRecord(**{k: native(v) for k, v in row.items() if k != "properties"},
                                     properties={k: native(v) for k, v in row["properties"]}))
    for page in _pages(store, "transfer/export_entities", user_id):
        for row in store.stream("transfer/export_memories", user_id=user_id,
                                entity_ids=[r["id"] for r in page]):
            yield _line(_memory(row))
    for page in _pages(store, "transfer/export_conversations", user_id):
        for row in page:
            props = {k: native(v) for k, v in row["props"].items()}
            record = {k: v for k, v in props.items() if k in CONVERSATION_FIELDS}
            if with_turns:
                record["turns"] = [json.loads(t) for t in props.get("turns") or []]
            yield _line(ConversationRecord(mentions=row["mentions"], **record))
    for page in _pages(store, "transfer/export_merge_records", user_id):
        for row in page:
            yield _line(MergeRecordRecord(id=row["id"], record=MergeFields.from_node(row["props"])))
