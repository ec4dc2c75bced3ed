"""Bringing a database up to this version, in one ordered list: the schema files of
`cypher/schema` first (versioned, checksummed, applied once under the migration lock, by
`Store.migrate_schema`), then the data steps below, in order, then a wait until every index is
online. Each data step is idempotent and resumable: it finds what is left to do in the graph,
so a run cut short is finished by the next, and two servers starting at once may both run it
(the same writes) without the lock, which could not bound a re-embedding anyway."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pegasus.embedding.centring import centre, load
from pegasus.embedding.embed import Embedder, stored_vector, unpack_vector
from pegasus.embedding.vectors import keep_current
from pegasus.snippets import backfill_sightings
from pegasus.store import Store
from pegasus.write.merge_records import upgrade_stored

log = logging.getLogger(__name__)

AWAIT_INDEXES_S = 300


def centre_keys(store: Store, batch: int = 2000) -> int:
    """Give every key its centred vector (design §7.3): keys written before V0006, or centred
    on another model's centre. The count centred."""
    settings = store.settings
    mean, centre_id = load(settings.embedding_model, settings.embedding_dimensions)
    total = 0
    while rows := store.read("read/keys_to_centre", centre_id=centre_id, batch=batch):
        raw = np.array([stored_vector(r) for r in rows])
        store.write("write/centre_keys", centre_id=centre_id, rows=[
            {"user_id": r["user_id"], "id": r["id"], "centred": c.tolist()}
            for r, c in zip(rows, centre(raw, mean), strict=True)])
        total += len(rows)
    return total


def index_snippets(store: Store, batch: int = 2000) -> int:
    """Give every snippet written before V0012 its vector as a list, from its packed copy, so
    the snippet_meaning index holds it. The count."""
    total = 0
    while rows := store.read("read/snippets_to_index", batch=batch):
        store.write("write/reembed_snippets", rows=[
            {"user_id": r["user_id"], "id": r["id"], "packed": r["packed"],
             "vector": unpack_vector(r["packed"]).tolist()} for r in rows])
        total += len(rows)
    return total


@dataclass(frozen=True)
class DataStep:
    """One data migration: what it does to the graph, and the log line of its count."""

    run: Callable[[Store, Embedder], int]
    done: str  # "%d …", logged when it did anything


DATA_STEPS: tuple[DataStep, ...] = (
    DataStep(lambda store, _: centre_keys(store), "centred %d keys on the model's centre"),
    DataStep(lambda store, _: index_snippets(store), "indexed the meaning of %d snippets"),
    DataStep(keep_current, "embedded %d keys and snippets again with the running embedder"),
    DataStep(backfill_sightings, "indexed the sightings' words of %d memories"),
    DataStep(lambda store, _: upgrade_stored(store),
             "rewrote %d merge records in the one shape"),
)


def await_indexes(store: Store) -> None:
    """Wait until every index is online (a vector index populates after its creation)."""
    store.read("maintenance/await_indexes", timeout_s=AWAIT_INDEXES_S)


def migrate(store: Store, embedder: Embedder) -> list[str]:
    """Apply the schema files still pending, then every data step in order, then wait for the
    indexes; the names of the schema files applied."""
    applied = store.migrate_schema()
    for step in DATA_STEPS:
        if done := step.run(store, embedder):
            log.info(step.done, done)
    await_indexes(store)
    return applied
