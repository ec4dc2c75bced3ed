"""Commit one conversation's batch in one write transaction (design §5–§6).

Inside the transaction: lock the user's partition, read its snapshot, clean the batch, let the
pure planner (`merge.planner`) decide merges and edges, and write its `CommitPlan` through
`cypher/write/*` (`write_plan`). Any exception aborts the transaction and leaves the graph as it
was. The review pass runs the same planning in a read transaction and asks the reviewer.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from neo4j import ManagedTransaction

from pegasus import vocab
from pegasus.centring import centre
from pegasus.centring import load as load_centre
from pegasus.embed import Embedder, pack_vector
from pegasus.errors import (
    ConversationConflictError,
    ErasureInProgressError,
    ExtractionError,
    ImportInProgressError,
)
from pegasus.extract.clean import clean_batch, user_text
from pegasus.merge.plan import StoredEdge
from pegasus.merge.planner import (
    CommitPlan,
    Resolution,
    ReviewAnswer,
    ReviewKey,
    ReviewRequest,
    Snapshot,
    plan_commit,
    resolve,
)
from pegasus.merge.review import CandidateContext, Reviewer
from pegasus.merge.rules import StoredEntity
from pegasus.merge.snapshots import Advance, Snapshots, Token
from pegasus.models.batch import ExtractionBatch
from pegasus.models.reports import CommitReport
from pegasus.settings import Settings
from pegasus.snippets import write_snippets
from pegasus.store import run
from pegasus.text import fold, label_phrase

if TYPE_CHECKING:
    from collections.abc import Callable

    from pegasus.ownership.requests import Applied

log = logging.getLogger(__name__)

KIND_LABELS = vocab.KIND_LABELS


def batch_hash(batch: ExtractionBatch, transcript: Any) -> str:
    """Identity of a commit's content, so a repeated commit is recognised as the same one."""
    payload = {"batch": batch.model_dump(mode="json"), "transcript": transcript}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class CommitJob:
    settings: Settings
    embedder: Embedder
    user_id: str
    conversation_id: str
    batch: ExtractionBatch
    at: datetime
    transcript: Any = None
    reviewer: Reviewer | None = None
    review_cache: dict[ReviewKey, ReviewAnswer] = field(default_factory=dict)
    snapshots: Snapshots = field(default_factory=lambda: Snapshots(0))
    # Set by the write phase: what to fold into `snapshots` once the transaction committed.
    advance: Advance | None = None
    # Set by the review phase: its finished resolution and the partition token it saw. The
    # write reuses it when the token under the lock is the same (nothing changed in between).
    reviewed: tuple[Token, Resolution] | None = None
    # "review": a read-only pass that asks the reviewer and embeds, outside any write
    # transaction; "write": the transaction itself, which never calls the LLM (design §6).
    phase: Literal["review", "write"] = "write"
    # The batch's forget requests, applied by the write phase in its own transaction (design
    # §10), and what they did once applied. Given by the caller: the ownership functions that
    # apply them build on this module.
    forget: Callable[[ManagedTransaction], Applied] | None = None
    applied: Applied | None = None
    # Requests the write found unasked (the partition moved, or forgetting changed it): the
    # next review pass asks them first.
    unasked: list[ReviewRequest] = field(default_factory=list)


class ReviewNeeded(Exception):  # noqa: N818 - a signal, not an error
    """The write found a pair the review pass did not ask about (the partition moved)."""

    def __init__(self, requests: list[ReviewRequest]) -> None:
        super().__init__(requests[0].proposed.name)
        self.requests = requests


def _entity(r: dict[str, Any]) -> StoredEntity:
    return StoredEntity(
        id=r["id"], name=r["name"], kind=r["kind"], aliases=list(r["aliases"]),
        is_self=r["is_self"], confidence=r["confidence"] or 0.0,
        provisional=r["provisional"], properties=dict(r["properties"]),
        conversations=list(r["conversations"]),
    )


def stored_entities(tx: ManagedTransaction, user_id: str,
                    ids: list[str] | None = None) -> list[StoredEntity]:
    """The user's entities as merge sees them: all, oldest first, or those with these ids."""
    return [_entity(r) for r in run(tx, "read/partition_entities", user_id=user_id, ids=ids)]


def _partition(tx: ManagedTransaction, user_id: str
               ) -> tuple[list[StoredEntity], datetime | None]:
    """All of the user's entities, and when the newest was made (for `Snapshots`)."""
    rows = run(tx, "read/partition_entities", user_id=user_id, ids=None)
    made = [r["created_at"].to_native() for r in rows if r["created_at"] is not None]
    return [_entity(r) for r in rows], max(made, default=None)


def entity_key_id(entity_id: str, text: str) -> str:
    return f"e:{entity_id}:{fold(text)}"


def relation_key_id(label: str) -> str:
    return f"r:{label}"


def entity_row(entity: StoredEntity) -> dict[str, Any]:
    """An entity as `write/create_entities` and `write/update_entities` take it."""
    props: dict[str, Any] = {
        "name": entity.name, "kind": entity.kind, "aliases": entity.aliases,
        "confidence": entity.confidence, "conversations": entity.conversations,
        "provisional": entity.provisional, "is_self": entity.is_self,
    }
    props.update({f"p_{k}": v for k, v in entity.properties.items()})
    return {"id": entity.id, "kind_label": KIND_LABELS[entity.kind], "props": props}


def lock_partition(tx: ManagedTransaction, user_id: str, now: datetime) -> dict[str, Any]:
    """Take the user's partition lock for this transaction (every writer does, design §6);
    refused while the user's whole memory is being forgotten (design §10)."""
    state = run(tx, "write/lock_partition", user_id=user_id, now=now)[0]
    if state["erasing_since"] is not None:
        raise ErasureInProgressError(
            f"the memory of {user_id!r} is being forgotten (since "
            f"{state['erasing_since'].iso_format()[:19]}); nothing was written. If that erasure "
            "was interrupted, run `pegasus forget --everything` for this user again")
    if state["importing_since"] is not None:
        raise ImportInProgressError(
            f"a memory is being imported for {user_id!r} (since "
            f"{state['importing_since'].iso_format()[:19]}); nothing was written. If that import "
            "was interrupted, run `pegasus import --replace` for this user again")
    return state


def _ask(tx: ManagedTransaction, job: CommitJob, request: ReviewRequest) -> ReviewAnswer:
    """The reviewer's answer to one request, with each stored candidate's neighbourhood."""
    contexts = [
        CandidateContext(c, [
            f"{r['source']} -[{r['label']}]-> {r['target']}"
            for r in run(tx, "read/entity_neighbourhood", user_id=job.user_id,
                         entity_id=c.id, limit=12, now=job.at)
        ] if stored else [])
        for c, stored in zip(request.candidates, request.in_graph, strict=True)
    ]
    try:
        return request.answer(job.reviewer.review(request.proposed, contexts,
                                                  user_text(job.transcript) or ""))
    except ExtractionError as exc:  # an unusable answer is an answer too: not re-asked
        return exc


def commit_in_tx(tx: ManagedTransaction, job: CommitJob) -> CommitReport:
    """The whole commit. In the "write" phase it runs inside one managed write transaction,
    holding the user's partition lock; the "review" phase runs the same planning in a read
    transaction, asking the reviewer and embedding, and stops before any write."""
    settings, user_id = job.settings, job.user_id
    if job.phase == "write":
        partition = [lock_partition(tx, user_id, job.at)]
    else:
        partition = run(tx, "read/partition_state", user_id=user_id)
    self_id = partition[0]["self_id"] if partition else None
    token = (partition[0]["epoch"], partition[0]["version"]) if partition else None
    digest = batch_hash(job.batch, job.transcript)
    state = run(tx, "read/conversation_state", user_id=user_id,
                conversation_id=job.conversation_id)[0]
    if state["batch_hash"] is not None:
        if state["batch_hash"] == digest:
            return CommitReport(user_id=user_id, conversation_id=job.conversation_id,
                                skipped=True, notes=["already committed; nothing changed"])
        raise ConversationConflictError(
            f"conversation {job.conversation_id!r} was already committed with other content; "
            "commit new material under a new conversation id"
        )

    if job.phase == "write" and job.forget is not None:
        # Forgetting first, in this transaction: what the batch says anew is kept, and a
        # commit that fails later forgets nothing. The partition changed: read its token again.
        job.applied = job.forget(tx)
        partition = run(tx, "read/partition_state", user_id=user_id)
        token = (partition[0]["epoch"], partition[0]["version"])
    reviewing = job.reviewer is not None

    def planned() -> Resolution:
        with job.snapshots.use(user_id, token, lambda: _partition(tx, user_id)) as entities:
            snapshot = Snapshot(user_id, job.conversation_id, job.at, self_id, entities)
            clean = clean_batch(
                job.batch, known=lambda name: bool(entities.with_form(fold(name))),
                transcript=job.transcript, provisional_confidence=settings.provisional_confidence,
                max_entities=settings.max_batch_entities,
                max_relations=settings.max_batch_relations,
            )
            return resolve(snapshot, clean, settings, job.review_cache, reviewing)

    if job.phase == "review" and job.unasked:
        for request in job.unasked:
            job.review_cache[request.key] = _ask(tx, job, request)
        job.unasked = []
    if job.phase == "write" and token is not None and job.reviewed is not None \
            and job.reviewed[0] == token:
        resolution = job.reviewed[1]
    else:
        resolution = planned()
    # Each answer may change later decisions in the batch: resolve again until none is missing.
    while resolution.requests:
        if job.phase == "write":
            raise ReviewNeeded(resolution.requests)
        for request in resolution.requests:
            job.review_cache[request.key] = _ask(tx, job, request)
        resolution = planned()
    if job.phase == "review":
        job.reviewed = (token, resolution) if token is not None else None
        # Warm the embedder's cache, so the write transaction does not wait for the model.
        job.embedder.embed(list(dict.fromkeys(
            [fold(f) for e in resolution.touched for f in [e.name, *e.aliases]]
            + [label_phrase(r.relation.label) for r in resolution.relations]
            + [r.relation.snippet for r in resolution.relations])))
        return resolution.report

    plan = plan_commit(resolution, stored_edges(tx, user_id, resolution), settings, digest)
    version = write_plan(tx, job.embedder, settings, plan)
    job.advance = Advance(user_id, token, (token[0], version) if token else None,
                          resolution.pool, job.at)
    return plan.report


def _edges(rows: list[dict[str, Any]]) -> list[StoredEdge]:
    return [StoredEdge(r["id"], r["source_id"], r["label"], r["target_id"], r["superseded"],
                       r["cardinality"] or "one_to_many", r["confidence"] or 0.0) for r in rows]


def stored_edges(tx: ManagedTransaction, user_id: str, resolution: Resolution
                 ) -> list[StoredEdge]:
    """The stored edges the edge plan needs: the one each relation lands on, and every edge of
    a (source, label) pair that is one-to-one (its other targets may be superseded)."""
    triples = resolution.triples
    if not triples:
        return []
    between = _edges(run(tx, "read/edges_between", user_id=user_id, triples=triples))
    pairs = resolution.one_to_one_pairs(between)
    if not pairs:
        return between
    grouped = _edges(run(tx, "read/edges_from_sources", user_id=user_id, pairs=pairs))
    return list({e.id: e for e in [*between, *grouped]}.values())


def write_plan(tx: ManagedTransaction, embedder: Embedder, settings: Settings,
               plan: CommitPlan) -> int:
    """Write one commit's plan; the caller's transaction makes it all or nothing. Returns the
    partition's new version."""
    user_id, now = plan.user_id, plan.at
    if plan.create_entities:
        run(tx, "write/create_entities", user_id=user_id, now=now,
            rows=[entity_row(e) for e in plan.create_entities])
    if plan.update_entities:
        run(tx, "write/update_entities", user_id=user_id, now=now,
            rows=[entity_row(e) for e in plan.update_entities])
    edges = plan.edges
    if edges.create:
        run(tx, "write/create_edges", user_id=user_id, rows=edges.create)
    edge_params = {"user_id": user_id, "now": now, "conversation_id": plan.conversation_id}
    if edges.reinforce:
        reinforce(tx, settings, user_id, edges.reinforce, now)
    if edges.sightings:
        run(tx, "write/edge_sightings", rows=edges.sightings, **edge_params)
    if edges.revive:
        run(tx, "write/revive_edges", rows=edges.revive, **edge_params)
    if edges.supersede:
        run(tx, "write/supersede_edges", rows=edges.supersede, **edge_params)
    write_snippets(tx, embedder, user_id, plan.conversation_id, now, [
        *({"source_id": row["source_id"], "target_id": row["target_id"],
           "edge_id": row["props"]["id"]} for row in edges.create),
        *({"source_id": row["source_id"], "target_id": row["target_id"],
           "edge_id": row["edge_id"]} for row in edges.sightings),
    ])
    if plan.merge_records:
        run(tx, "write/merge_records", user_id=user_id, now=now,
            rows=[{"id": r.id, "props": r.props} for r in plan.merge_records])
    conversation = plan.conversation
    run(tx, "write/commit_conversation", user_id=user_id, conversation_id=plan.conversation_id,
        now=now, summary=conversation.summary, importance=conversation.importance,
        tags=conversation.tags, batch_hash=plan.batch_hash, entity_ids=plan.mentioned)
    write_keys(tx, embedder, user_id, now, [*plan.create_entities, *plan.update_entities],
               plan.key_labels)
    drop_stale_keys(tx, user_id, plan.lost_forms, plan.lost_labels)
    return run(tx, "write/partition_stats", user_id=user_id, now=now,
               self_id=plan.self_id)[0]["version"]


def drop_stale_keys(tx: ManagedTransaction, user_id: str, lost_forms: dict[str, list[str]],
                    lost_labels: set[str]) -> None:
    """Drop the keys of forms entities lost and of labels no current edge has (design §2)."""
    key_ids = [entity_key_id(entity_id, form) for entity_id, forms in lost_forms.items()
               for form in forms] + [relation_key_id(label) for label in sorted(lost_labels)]
    if key_ids:
        run(tx, "write/drop_stale_keys", user_id=user_id, key_ids=key_ids)


def reinforce(tx: ManagedTransaction, settings: Settings, user_id: str,
              rows: list[dict[str, str]], now: datetime) -> int:
    """Apply the +bump reinforcement to edges given as {source_id, target_id, edge_id} (a
    target of None: looked for among the source's edges)."""
    result = run(tx, "write/reinforce", user_id=user_id, rows=rows, now=now,
                 lambdas=settings.decay_lambdas, bump=settings.reinforce_bump,
                 max_strength=settings.max_strength)
    return result[0]["reinforced"] if result else 0


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
