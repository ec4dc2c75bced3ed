"""Merge records in the graph: written by merges (commit, by hand), read by undo and the merge
list, all through the one model (`merge.records.MergeFields`); and the rewrite of the records
V0011 marked (`upgrade_stored`, a data step of `pegasus.migrations`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction
from pydantic import ValidationError

from pegasus.errors import MigrationError
from pegasus.merge.records import MergeFields, upgrade
from pegasus.portable import native
from pegasus.store import Store, run


def write_merge_records(tx: ManagedTransaction, user_id: str, now: datetime,
                        records: list[tuple[str, MergeFields]]) -> None:
    """Create each (id, fields) record in the user's partition, made `now`."""
    if records:
        run(tx, "write/merge_records", user_id=user_id, now=now,
            rows=[{"id": record_id, "props": fields.props()} for record_id, fields in records])


def merge_records(store: Store, user_id: str, statuses: list[str]
                  ) -> list[tuple[str, MergeFields]]:
    """The user's records in these statuses, newest first."""
    return [(r["id"], MergeFields.from_node(r["record"]))
            for r in store.read("read/merge_records", user_id=user_id, statuses=statuses)]


def upgrade_stored(store: Store, batch: int = 500) -> int:
    """Rewrite every record V0011 marked (written before it, in either older shape) in the
    one shape, and take the mark off; resumable. How many were rewritten."""
    done = 0
    while rows := store.read("read/marked_merge_records", limit=batch):
        store.write("write/upgrade_merge_records", rows=[
            {"user_id": r["user_id"], "id": r["id"], "props": _upgraded(r).props()}
            for r in rows])
        done += len(rows)
    return done


def _upgraded(row: dict[str, Any]) -> MergeFields:
    try:
        return MergeFields.model_validate(upgrade(
            {k: native(v) for k, v in row["record"].items() if k not in ("user_id", "id")}))
    except (ValidationError, KeyError, ValueError) as exc:
        raise MigrationError(f"merge record {row['id']!r} cannot be read in either shape "
                             f"written before V0011 ({exc.__class__.__name__}: "
                             f"{str(exc).splitlines()[0]}); it was left as it was"
                             ) from exc
