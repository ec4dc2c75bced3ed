"""Keys: the embedded names, aliases and relation labels recall seeds from (design §2)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from pegasus.embedding.centring import centre
from pegasus.embedding.centring import load as load_centre
from pegasus.embedding.embed import Embedder, pack_vector
from pegasus.merge.rules import StoredEntity
from pegasus.store import run
from pegasus.text import fold, label_phrase


def entity_key_id(entity_id: str, text: str) -> str:
    return f"e:{entity_id}:{fold(text)}"


def relation_key_id(label: str) -> str:
    return f"r:{label}"


def drop_stale_keys(tx: ManagedTransaction, user_id: str, lost_forms: dict[str, list[str]],
                    lost_labels: set[str]) -> None:
    """Drop the keys of forms entities lost and of labels no current edge has (design §2)."""
    key_ids = [entity_key_id(entity_id, form) for entity_id, forms in lost_forms.items()
               for form in forms] + [relation_key_id(label) for label in sorted(lost_labels)]
    if key_ids:
        run(tx, "write/drop_stale_keys", user_id=user_id, key_ids=key_ids)


def write_keys(tx: ManagedTransaction, embedder: Embedder, user_id: str, now: datetime,
               entities: list[StoredEntity], labels: set[str]) -> None:
    """Keys for the touched entities' names and aliases, and for relation labels in use."""
    wanted: dict[str, dict[str, Any]] = {}
    for entity in entities:
        for text in [entity.name, *entity.aliases]:
            key_id = entity_key_id(entity.id, text)
            wanted[key_id] = {"id": key_id, "text": text, "kind": "entity",
                              "entity_id": entity.id, "label": None, "phrase": fold(text)}
    for label in labels:
        key_id = relation_key_id(label)
        wanted[key_id] = {"id": key_id, "text": label, "kind": "relation", "entity_id": None,
                          "label": label, "phrase": label_phrase(label)}
    if not wanted:
        return
    existing = {r["id"] for r in run(tx, "read/key_ids", user_id=user_id, ids=list(wanted))}
    fresh = [row for key_id, row in wanted.items() if key_id not in existing]
    vectors = embedder.embed([row["phrase"] for row in fresh])
    mean, centre_id = load_centre(embedder.model_name, embedder.dimensions)
    rows = [
        {**{k: v for k, v in row.items() if k != "phrase"}, "centred": c.tolist(),
         "packed": pack_vector(vector)}
        for row, vector, c in zip(fresh, vectors, centre(vectors, mean), strict=True)
    ]
    # Keys that already exist keep their embedding; their text/ownership is refreshed.
    rows += [{**{k: v for k, v in row.items() if k != "phrase"}, "centred": None,
              "packed": None}
             for key_id, row in wanted.items() if key_id in existing]
    run(tx, "write/upsert_keys", user_id=user_id, now=now, rows=rows, centre_id=centre_id)
