"""Export one user's memory as JSON Lines (design §11), page by page: at no point is the
partition in one Python list, so a 100,000-edge user costs the memory of a page.

One transaction reads it all, under the user's partition lock (`transfer/export_lock`): no
commit, correction, forget, undo or import of that user lands while it reads, so the file is
one state of the partition's entities, memories, mentions and merge records. Neo4j reads at
read-committed isolation, so what writers that take no lock change (a close's reinforcement,
the decay pass, turns being recorded) may show in one record and not the next; each record is
read whole. The last line counts what came before it: a file without it was cut short."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from typing import Any

from neo4j import Transaction

from pegasus.errors import ErasureInProgressError, PegasusError
from pegasus.portable import native
from pegasus.store import Store, rows, run
from pegasus.transfer.format import (
    COUNTED,
    MINOR,
    OWNER_PROPS,
    VERSION,
    ConversationRecord,
    End,
    EntityRecord,
    Header,
    MemoryRecord,
    MergeFields,
    MergeRecordRecord,
)

PAGE = 500
# Neo4j ends an export's transaction after this long unless the caller gives its own bound
# (Settings.export_timeout_s).
TIMEOUT_S = 600.0
EDGE_FIELDS = set(MemoryRecord.model_fields) - {"type", "source_id", "relation", "target_id",
                                                "said_at", "said_in"}
CONVERSATION_FIELDS = set(ConversationRecord.model_fields) - {"type", "mentions", "turns"}
# A conversation's fields that go with its turns only (a count of turns the file does not hold
# would hide the next turns recorded from consolidation).
WITH_TURNS = {"extracted_turns", "awaiting_extraction"}
# What the product stores on a conversation that no file carries, each for its reason
# (docs/decisions.md, "Corrections travel"); every other stored property is a field above.
# A test writes through every path and holds the stored properties to these two sets.
CONVERSATION_LEFT_OUT = frozenset({
    "user_id",  # the partition: the import writes the user it imports for
    "turn_ids",  # the ids a client sent its turns under, to drop a resend to that server
    "model",  # the model a client asked the proxy for picks the LLM a server calls: a
              # file must not (the importing server's own setting and clients decide)
    "extraction_note", "awaiting_since", "extraction_lease_until",  # the backlog's progress,
    "close_requested_at", "close_attempts", "close_error", "close_next_at",  # and a close's,
    "close_lease_until", "close_holder", "read_log_applied",  # on the exporting server
    "turns_purged_at",  # when retention emptied `turns`: nothing reads it
})


def _line(record: Any) -> str:
    return record.model_dump_json(exclude_none=True) + "\n"


def _pages(tx: Transaction, name: str, user_id: str) -> Iterator[list[dict[str, Any]]]:
    """Keyset pages of a user's nodes, ordered by id (every page query returns `id`)."""
    after = ""
    while page := run(tx, name, user_id=user_id, after=after, limit=PAGE):  # type: ignore[arg-type]
        yield page
        after = page[-1]["id"]


def _memory(row: dict[str, Any]) -> MemoryRecord:
    props = {k: native(v) for k, v in row["props"].items() if k not in OWNER_PROPS}
    unknown = set(props) - EDGE_FIELDS
    if unknown:
        raise PegasusError(f"memory {props.get('id')!r} has properties the export format "
                           f"does not know ({', '.join(sorted(unknown))}); nothing to export "
                           "safely")
    props["sightings"] = [json.loads(s) for s in props.get("sightings") or [] if s]
    return MemoryRecord(source_id=row["source_id"], relation=row["relation"],
                        target_id=row["target_id"], said_at=native(row["said_at"]),
                        said_in=row["said_in"], **props)


def _records(tx: Transaction, user_id: str, with_turns: bool) -> Iterator[Any]:
    """The records after the header: entities, memories, conversations, merge records; each
    kind in id order."""
    for page in _pages(tx, "transfer/export_entities", user_id):
        for row in page:
            yield EntityRecord(**{k: native(v) for k, v in row.items() if k != "properties"},
                               properties={k: native(v) for k, v in row["properties"]})
    for page in _pages(tx, "transfer/export_entities", user_id):
        for row in rows(tx, "transfer/export_memories", user_id=user_id,
                        entity_ids=[r["id"] for r in page]):
            yield _memory(row)
    for page in _pages(tx, "transfer/export_conversations", user_id):
        for row in page:
            props = {k: native(v) for k, v in row["props"].items()}
            record = {k: v for k, v in props.items() if k in CONVERSATION_FIELDS - WITH_TURNS}
            if with_turns:
                record["turns"] = [json.loads(t) for t in props.get("turns") or []]
                # retention empties the turns and leaves the count: none left to consolidate
                if props.get("extracted_turns") is not None:
                    record["extracted_turns"] = min(props["extracted_turns"],
                                                    len(record["turns"]))
                if props.get("awaiting_extraction"):
                    record["awaiting_extraction"] = True
            yield ConversationRecord(mentions=row["mentions"], **record)
    for page in _pages(tx, "transfer/export_merge_records", user_id):
        for row in page:
            yield MergeRecordRecord(id=row["id"], record=MergeFields.from_node(row["props"]))


def export_lines(store: Store, user_id: str, now: datetime, with_turns: bool = False,
                 timeout_s: float = TIMEOUT_S) -> Iterator[str]:
    """The lines of the user's export: header, entities, memories, conversations, merge
    records, the end line, streamed from one transaction. The header comes once the
    transaction holds the partition lock, so an unreachable Neo4j fails the first line; a
    failure after it raises (the end line never comes)."""
    return store.stream(partial(_lines, user_id=user_id, now=now, with_turns=with_turns),
                        timeout_s=timeout_s)


def _lines(tx: Transaction, user_id: str, now: datetime, with_turns: bool) -> Iterator[str]:
    state = next(rows(tx, "transfer/export_lock", user_id=user_id))
    if state["erasing_since"] is not None:
        raise ErasureInProgressError(f"the memory of {user_id!r} is being forgotten; "
                                     "nothing was exported. Export after that erasure")
    yield _line(Header(version=VERSION, minor=MINOR, user_id=user_id, exported_at=now,
                       with_turns=with_turns))
    counts = dict.fromkeys(COUNTED.values(), 0)
    for record in _records(tx, user_id, with_turns):
        counts[COUNTED[record.type]] += 1
        yield _line(record)
    yield _line(End(**counts))
