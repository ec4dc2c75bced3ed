"""Commit one conversation's batch in one write transaction (design §5–§6).

Inside the transaction: lock the user's partition, read its entities, clean the batch, decide
merges, plan the edges, write everything through `cypher/write/*`. Any exception aborts the
transaction and leaves the graph as it was.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from neo4j import ManagedTransaction

from pegasus import vocab
from pegasus.centring import centre
from pegasus.embed import Embedder, pack_vector
from pegasus.errors import ConversationConflictError, ExtractionError
from pegasus.extract.clean import clamp_confidence, clean_batch, user_text
from pegasus.merge.plan import ResolvedRelation, StoredEdge, plan_edges
from pegasus.merge.review import CandidateContext, Reviewer
from pegasus.merge.rules import Pool, StoredEntity, band, match
from pegasus.models import (
    CleanEntity,
    CommitReport,
    Dropped,
    ExtractionBatch,
    MergeOutcome,
)
from pegasus.settings import Settings
from pegasus.snippets import write_snippets
from pegasus.store import run
from pegasus.text import fold, is_placeholder, label_phrase

log = logging.getLogger(__name__)

KIND_LABELS = vocab.KIND_LABELS
SELF_DEFAULT_NAME = "User"


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
    review_cache: dict[tuple[str, tuple[str, ...]], dict[str, float] | ExtractionError] = field(
        default_factory=dict)
    # "review": a read-only pass that asks the reviewer and embeds, outside any write
    # transaction; "write": the transaction itself, which never calls the LLM (design §6).
    phase: Literal["review", "write"] = "write"


class ReviewNeeded(Exception):  # noqa: N818 - a signal, not an error
    """The write found a pair the review pass did not ask about (the partition moved)."""


class _Resolver:
    """Merge decisions for one batch against one partition (state for a single commit)."""

    def __init__(self, job: CommitJob, stored: list[StoredEntity], self_id: str | None) -> None:
        self.job = job
        self.pool = Pool(stored)
        self.by_id = self.pool.by_id
        self.self_id = self_id
        self.created: dict[str, StoredEntity] = {}
        self.updated: dict[str, StoredEntity] = {}
        self.names: dict[str, str] = {}  # folded surface form in this batch → entity id
        self.merge_records: list[dict[str, Any]] = []
        self.report = CommitReport(user_id=job.user_id, conversation_id=job.conversation_id)

    # --- helpers --------------------------------------------------------------------------

    def _touch(self, entity: StoredEntity) -> StoredEntity:
        if entity.id not in self.created and entity.id not in self.updated:
            self.updated[entity.id] = entity
        if self.job.conversation_id not in entity.conversations:
            entity.conversations.append(self.job.conversation_id)
        return entity

    def _new(self, proposed: CleanEntity, is_self: bool = False) -> StoredEntity:
        entity = StoredEntity(
            id=str(uuid.uuid4()), name=proposed.name, kind=proposed.kind,
            aliases=list(proposed.aliases), is_self=is_self, confidence=proposed.confidence,
            provisional=proposed.provisional, properties=dict(proposed.properties),
            conversations=[self.job.conversation_id],
        )
        self.pool.add(entity)
        self.created[entity.id] = entity
        (self.report.provisional if entity.provisional else self.report.created).append(
            entity.name)
        return entity

    def _absorb(self, target: StoredEntity, proposed: CleanEntity) -> None:
        """The surviving node takes the sighting: alias, properties, citation, max confidence."""
        forms = set(target.forms())
        for form in [proposed.name, *proposed.aliases]:
            if fold(form) not in forms and not is_placeholder(form):
                target.aliases.append(form)
                forms.add(fold(form))
        target.properties = {**target.properties, **proposed.properties}
        target.confidence = max(target.confidence, proposed.confidence)
        if target.provisional and not proposed.provisional:
            target.provisional = False  # a real sighting confirms a provisional node
            if target.kind == "OTHER":
                target.kind = proposed.kind
        self.pool.update(target)
        self._touch(target)

    def _record(self, proposed: CleanEntity, target: StoredEntity, rule: str,
                confidence: float | None, status: str, before: StoredEntity | None) -> None:
        self.merge_records.append({
            "id": str(uuid.uuid4()),
            "forms": [proposed.name, *proposed.aliases],
            "props": {
                "status": status, "rule": rule, "confidence": confidence,
                "survivor_id": target.id, "survivor_name": target.name,
                "absorbed_name": proposed.name, "kind": proposed.kind,
                "absorbed": proposed.model_dump_json(),
                "before": json.dumps(before.__dict__ if before else None, default=str),
                "conversation_id": self.job.conversation_id,
            },
        })

    def _candidates(self, proposed: CleanEntity, candidates: list[StoredEntity], tx
                    ) -> dict[str, float]:
        key = (fold(proposed.name), tuple(sorted(c.id for c in candidates)))
        if key not in self.job.review_cache and self.job.phase == "write":
            raise ReviewNeeded(proposed.name)
        if key not in self.job.review_cache:  # a retried pass does not ask twice
            contexts = [
                CandidateContext(c, [
                    f"{r['source']} -[{r['label']}]-> {r['target']}"
                    for r in run(tx, "read/entity_neighbourhood", user_id=self.job.user_id,
                                 entity_id=c.id, limit=12, now=self.job.at)
                ] if c.id not in self.created else [])
                for c in candidates
            ]
            conversation = _transcript_text(self.job.transcript)
            try:
                self.job.review_cache[key] = self.job.reviewer.review(proposed, contexts,
                                                                      conversation)
            except ExtractionError as exc:  # an unusable answer is an answer too: not re-asked
                self.job.review_cache[key] = exc
        answer = self.job.review_cache[key]
        if isinstance(answer, ExtractionError):
            raise answer
        return answer

    # --- decisions ------------------------------------------------------------------------

    def ensure_self(self, proposed: CleanEntity | None) -> StoredEntity:
        """The self node, created on first need; a learned name replaces a placeholder name."""
        if self.self_id is not None:
            node = self.by_id[self.self_id]
            if proposed is not None and proposed.is_user:
                before = copy.deepcopy(node)
                if is_placeholder(node.name):
                    node.name = proposed.name  # _absorb re-indexes it
                self._absorb(node, proposed)
                if fold(before.name) != fold(node.name):
                    self.report.notes.append(f"the user is now named {node.name}")
            else:
                self._touch(node)
            return node
        name = proposed.name if proposed is not None and proposed.is_user else SELF_DEFAULT_NAME
        seed = CleanEntity(
            name=name, kind="PERSON",
            aliases=list(proposed.aliases) if proposed is not None and proposed.is_user else [],
            properties=dict(proposed.properties) if proposed is not None else {},
            confidence=proposed.confidence if proposed is not None else 1.0,
        )
        node = self._new(seed, is_self=True)
        self.self_id = node.id
        return node

    def resolve_entity(self, proposed: CleanEntity, tx: ManagedTransaction) -> StoredEntity:
        if proposed.is_user or proposed.is_placeholder:
            return self.ensure_self(proposed)
        settings = self.job.settings
        found = match(proposed, self.pool, settings.fuzzy_similarity)
        target = found.merge_target
        if target is not None:
            before = copy.deepcopy(target)
            self._absorb(target, proposed)
            if target.id not in self.created:
                self.report.merged.append(MergeOutcome(
                    name=proposed.name, into=target.name, entity_id=target.id, rule=found.rule))
                if fold(proposed.name) != fold(target.name) or proposed.aliases:
                    self._record(proposed, target, found.rule, None, "merged", before)
            return target
        candidates = found.review_candidates
        if not candidates:
            return self._new(proposed)
        if self.job.reviewer is None:
            return self._pending(proposed, candidates)
        try:
            scores = self._candidates(proposed, candidates, tx)
        except ExtractionError as exc:
            # An unusable review must not cost the conversation: decide as with no reviewer.
            log.warning("merge review of %r unusable, pair left pending: %s", proposed.name, exc)
            self.report.notes.append(f"{proposed.name}: the reviewer's answer was unusable, "
                                     f"left for review ({exc})")
            return self._pending(proposed, candidates)
        ranked = sorted(candidates, key=lambda c: scores.get(c.id, 0.0), reverse=True)
        best = ranked[0]
        confidence = clamp_confidence(scores.get(best.id, 0.0), default=0.0)
        decision = band(confidence, settings.review_merge_silent, settings.review_merge_flagged)
        if decision == "separate":
            self.report.notes.append(
                f"{proposed.name}: reviewer kept it apart from {best.name} ({confidence:.2f})")
            return self._new(proposed)
        before = copy.deepcopy(best)
        self._absorb(best, proposed)
        outcome = MergeOutcome(name=proposed.name, into=best.name, entity_id=best.id,
                               rule="review", confidence=confidence)
        flagged = decision == "merge_flagged"
        (self.report.flagged if flagged else self.report.merged).append(outcome)
        self._record(proposed, best, "review", confidence, "flagged" if flagged else "merged",
                     before)
        return best

    def _pending(self, proposed: CleanEntity, candidates: list[StoredEntity]) -> StoredEntity:
        """A new entity, its candidate pair recorded for later review (design §5, no reviewer)."""
        entity = self._new(proposed)
        self.report.review_pending.append(
            {"name": proposed.name, "candidates": [c.name for c in candidates]})
        self.merge_records.append({"id": str(uuid.uuid4()), "props": {
            "status": "pending", "rule": "review", "absorbed_name": proposed.name,
            "kind": proposed.kind, "survivor_id": entity.id,
            "candidate_ids": [c.id for c in candidates],
            "candidate_names": [c.name for c in candidates],
            "conversation_id": self.job.conversation_id,
        }})
        return entity

    def resolve_name(self, name: str) -> str | None:
        """Entity id of a relation end: self placeholder, a name from this batch, a stored name."""
        if is_placeholder(name):
            return self.ensure_self(None).id
        folded = fold(name)
        if folded in self.names:
            return self.names[folded]
        stored = self.pool.with_form(folded)
        if not stored:
            return None
        best = max(stored, key=lambda e: (not e.provisional, e.confidence, len(e.conversations)))
        if len(stored) > 1:
            self.report.notes.append(f"{name}: several entities carry this name, used {best.kind}")
        return self._touch(best).id


def _transcript_text(transcript: Any) -> str:
    return user_text(transcript) or ""


def _stored_entities(tx: ManagedTransaction, user_id: str) -> list[StoredEntity]:
    rows = run(tx, "read/partition_entities", user_id=user_id)
    return [
        StoredEntity(
            id=r["id"], name=r["name"], kind=r["kind"], aliases=list(r["aliases"]),
            is_self=r["is_self"], confidence=r["confidence"] or 0.0,
            provisional=r["provisional"], properties=dict(r["properties"]),
            conversations=list(r["conversations"]),
        )
        for r in rows
    ]


def _entity_props(entity: StoredEntity) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": entity.name, "kind": entity.kind, "aliases": entity.aliases,
        "confidence": entity.confidence, "conversations": entity.conversations,
        "provisional": entity.provisional, "is_self": entity.is_self,
    }
    props.update({f"p_{k}": v for k, v in entity.properties.items()})
    return props


def commit_in_tx(tx: ManagedTransaction, job: CommitJob) -> CommitReport:
    """The whole commit. In the "write" phase it runs inside one managed write transaction,
    holding the user's partition lock; the "review" phase runs the same resolution in a read
    transaction, asking the reviewer and embedding, and stops before any write."""
    settings, user_id, now = job.settings, job.user_id, job.at
    if job.phase == "write":
        self_id = run(tx, "write/lock_partition", user_id=user_id, now=now)[0]["self_id"]
    else:
        partition = run(tx, "read/partition_state", user_id=user_id)
        self_id = partition[0]["self_id"] if partition else None
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

    stored = _stored_entities(tx, user_id)
    stored_forms = {form for e in stored for form in e.forms()}
    clean = clean_batch(
        job.batch, known=lambda name: fold(name) in stored_forms, transcript=job.transcript,
        provisional_confidence=settings.provisional_confidence,
        max_entities=settings.max_batch_entities, max_relations=settings.max_batch_relations,
    )
    resolver = _Resolver(job, stored, self_id)
    report = resolver.report
    report.notes += clean.notes
    report.dropped += clean.dropped

    # The self node is designated once: the source of the first relation ever observed.
    designate_first_source = self_id is None and not any(
        e.is_user or e.is_placeholder for e in clean.entities
    ) and bool(clean.relations) and not is_placeholder(clean.relations[0].source)

    for proposed in clean.entities:
        entity = resolver.resolve_entity(proposed, tx)
        for form in [proposed.name, *proposed.aliases]:
            resolver.names.setdefault(fold(form), entity.id)
        if proposed.is_user or proposed.is_placeholder:
            resolver.names[fold(proposed.name)] = entity.id

    resolved: list[ResolvedRelation] = []
    for relation in clean.relations:
        source_id = resolver.resolve_name(relation.source)
        target_id = resolver.resolve_name(relation.target)
        if designate_first_source and resolver.self_id is None and source_id is not None:
            node = resolver.by_id[source_id]
            node.is_self = True
            resolver.self_id = source_id
            resolver._touch(node)
        item = f"{relation.source} -[{relation.label}]-> {relation.target}"
        if source_id is None or target_id is None:
            report.dropped.append(Dropped(item=item, reason="an end could not be resolved"))
            continue
        if source_id == target_id:
            report.dropped.append(Dropped(item=item, reason="both ends are the same entity"))
            continue
        resolved.append(ResolvedRelation(source_id, target_id, relation))

    pairs = [{"source_id": s, "label": lbl}
             for s, lbl in dict.fromkeys((r.source_id, r.relation.label) for r in resolved)]
    stored_edges = [
        StoredEdge(r["id"], r["source_id"], r["label"], r["target_id"], r["superseded"],
                   r["cardinality"] or "one_to_many", r["confidence"] or 0.0)
        for r in (run(tx, "read/edges_from_sources", user_id=user_id, pairs=pairs) if pairs else [])
    ]
    plan = plan_edges(resolved, stored_edges, user_id, job.conversation_id, now,
                      settings.initial_strength)
    report.notes += plan.notes
    if job.phase == "review":
        # Warm the embedder's cache, so the write transaction does not wait for the model.
        touched = [*resolver.created.values(), *resolver.updated.values()]
        job.embedder.embed(list(dict.fromkeys(
            [fold(f) for e in touched for f in [e.name, *e.aliases]]
            + [label_phrase(r.relation.label) for r in resolved]
            + [r.relation.snippet for r in resolved])))
        return report

    # --- writes -------------------------------------------------------------------------
    created = list(resolver.created.values())
    if created:
        run(tx, "write/create_entities", user_id=user_id, now=now, rows=[
            {"id": e.id, "kind_label": KIND_LABELS[e.kind], "props": _entity_props(e)}
            for e in created
        ])
    updated = [e for e in resolver.updated.values() if e.id not in resolver.created]
    if updated:
        run(tx, "write/update_entities", user_id=user_id, now=now,
            rows=[{"id": e.id, "kind_label": KIND_LABELS[e.kind], "props": _entity_props(e)}
                  for e in updated])
    if plan.create:
        run(tx, "write/create_edges", user_id=user_id, rows=plan.create)
    edge_params = {"user_id": user_id, "now": now, "conversation_id": job.conversation_id}
    if plan.reinforce:
        reinforce(tx, settings, user_id, plan.reinforce, now)
    if plan.sightings:
        run(tx, "write/edge_sightings", rows=plan.sightings, **edge_params)
    if plan.revive:
        run(tx, "write/revive_edges", rows=plan.revive, **edge_params)
    if plan.supersede:
        run(tx, "write/supersede_edges", rows=plan.supersede, **edge_params)
    write_snippets(tx, job.embedder, user_id, job.conversation_id, now, [
        *({"source_id": row["source_id"], "edge_id": row["props"]["id"]} for row in plan.create),
        *({"source_id": row["source_id"], "edge_id": row["edge_id"]} for row in plan.sightings),
    ])
    created_edges = {row["props"]["id"] for row in plan.create}
    for record in resolver.merge_records:
        # The edges this conversation made for the absorbed name, so an undo can move them.
        forms = {fold(f) for f in record.pop("forms", [])}
        record["props"]["edge_ids"] = [
            edge_id for item, edge_id in zip(resolved, plan.relation_edges, strict=True)
            if edge_id in created_edges
            and (fold(item.relation.source) in forms or fold(item.relation.target) in forms)
        ]
    if resolver.merge_records:
        run(tx, "write/merge_records", user_id=user_id, now=now, rows=resolver.merge_records)

    mentioned = list(dict.fromkeys([*resolver.created, *resolver.updated]))
    run(tx, "write/commit_conversation", user_id=user_id, conversation_id=job.conversation_id,
        now=now, summary=clean.conversation.summary, importance=clean.conversation.importance,
        tags=clean.conversation.tags, batch_hash=digest, entity_ids=mentioned)
    write_keys(tx, job.embedder, user_id, now, [*created, *updated],
               {r.relation.label for r in resolved if r.relation.status == "current"})
    run(tx, "write/drop_stale_keys", user_id=user_id)
    run(tx, "write/partition_stats", user_id=user_id, now=now, self_id=resolver.self_id)

    name_of = {e.id: e.name for e in resolver.pool}

    def lines(triples: list[tuple[str, str, str]]) -> list[str]:
        return [f"{name_of[s]} -[{lbl}]-> {name_of[t]}" for s, lbl, t in triples]

    report.edges_created = lines(plan.created)
    report.reinforced = lines(plan.reinforced)
    report.superseded = lines(plan.superseded)
    report.revived = lines(plan.revived)
    report.ended = lines(plan.ended)
    return report


def reinforce(tx: ManagedTransaction, settings: Settings, user_id: str,
              rows: list[dict[str, str]], now: datetime) -> int:
    """Apply the +bump reinforcement to edges given as {source_id, edge_id}."""
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
            key_id = f"e:{entity.id}:{fold(text)}"
            wanted[key_id] = {"id": key_id, "text": text, "kind": "entity",
                              "entity_id": entity.id, "label": None, "phrase": fold(text)}
    for label in labels:
        key_id = f"r:{label}"
        wanted[key_id] = {"id": key_id, "text": label, "kind": "relation", "entity_id": None,
                          "label": label, "phrase": label_phrase(label)}
    if not wanted:
        return
    existing = {r["id"] for r in run(tx, "read/key_ids", user_id=user_id)}
    fresh = [row for key_id, row in wanted.items() if key_id not in existing]
    vectors = embedder.embed([row["phrase"] for row in fresh])
    mean, centre_id = embedder.centre()
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
