"""The commit driver (design §5–§6): one conversation's batch, screened for secrets
(`pegasus.screen`), reviewed outside the write transaction, then written in one.

A round is a review (read transactions that clean the batch and let the pure planner
(`merge.planner`) resolve merges, each handing back the questions it could not answer with the
candidates' neighbourhoods; the reviewer is asked between them, outside any transaction, so a
transaction the driver retries never asks the LLM twice and holds no connection for its
latency; then the embedder is warmed) and a write pass (one write transaction under the
partition lock: apply the batch's forget requests, resolve again with the reviewer's answers,
write the `CommitPlan` through `cypher/write/*`). No transaction calls the LLM; any exception
in the write aborts it and leaves the graph as it was. What every writer shares (the lock,
keys, reinforcement) is the write library, `pegasus.write`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from neo4j import ManagedTransaction

from pegasus.embedding.embed import Embedder
from pegasus.errors import ConversationConflictError, ExtractionError, PegasusError
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
from pegasus.merge.snapshots import Advance, Snapshots, Token
from pegasus.models.batch import ExtractionBatch
from pegasus.models.reports import CommitReport
from pegasus.ownership.forget import forget_staged
from pegasus.ownership.requests import Applied, apply_requests
from pegasus.screen import screen_batch
from pegasus.settings import Settings
from pegasus.snippets import write_snippets
from pegasus.store import Store, run
from pegasus.text import fold, label_phrase
from pegasus.write.keys import drop_stale_keys, write_keys
from pegasus.write.merge_records import write_merge_records
from pegasus.write.partition import entity_row, lock_partition, partition_entities
from pegasus.write.reinforce import reinforce

log = logging.getLogger(__name__)
# A partition that keeps moving under a commit's review is given up after this many rounds.
REVIEW_ROUNDS = 3


def batch_hash(batch: ExtractionBatch, transcript: Any) -> str:
    """Identity of a commit's content, so a repeated commit is recognised as the same one."""
    payload = {"batch": batch.model_dump(mode="json"), "transcript": transcript}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class CommitJob:
    """One commit's inputs."""

    settings: Settings
    embedder: Embedder
    user_id: str
    conversation_id: str
    batch: ExtractionBatch
    at: datetime
    transcript: Any = None
    reviewer: Reviewer | None = None
    # A part of the conversation's recorded transcript, (first turn, end): the batch
    # consolidates those turns, the turns before them were consolidated by earlier commits
    # (design §9, "Consolidated during the session"). None: the whole conversation.
    segment: tuple[int, int] | None = None


@dataclass
class Review:
    """What a commit's review passes learnt, carried from round to round: the reviewer's
    answers, the requests the write found unasked (asked first next time), and the last
    resolution with the partition token it saw (the write reuses it while the token holds)."""

    answers: dict[ReviewKey, ReviewAnswer] = field(default_factory=dict)
    unasked: list[ReviewRequest] = field(default_factory=list)
    reviewed: tuple[Token, Resolution] | None = None


@dataclass(frozen=True)
class Written:
    """What the write pass did: its report, how the kept partition moves, what the batch's
    forget requests did (None when it had none)."""

    report: CommitReport
    advance: Advance | None = None
    applied: Applied | None = None


@dataclass(frozen=True)
class Question:
    """One review request with what the reviewer is shown of each candidate (read in the
    transaction that found it missing)."""

    request: ReviewRequest
    contexts: list[CandidateContext]


@dataclass(frozen=True)
class ReviewPass:
    """What one read transaction of the review found: the report when the batch is resolved
    (or already committed), else the questions to ask before resolving again. It changes
    nothing, so the driver may run it again."""

    report: CommitReport | None = None
    questions: list[Question] = field(default_factory=list)
    token: Token | None = None
    resolution: Resolution | None = None


class ReviewNeeded(Exception):  # noqa: N818 - a signal, not an error
    """The write found a pair the review pass did not ask about (the partition moved)."""

    def __init__(self, requests: list[ReviewRequest]) -> None:
        super().__init__(requests[0].proposed.name)
        self.requests = requests


def commit(store: Store, job: CommitJob, snapshots: Snapshots) -> CommitReport:
    """Screen the batch and its transcript for secrets (the one place every commit passes:
    nothing below, the reviewer LLM included, sees one), then review and write it."""
    screened = screen_batch(job.batch, job.transcript)
    job = replace(job, batch=screened.batch, transcript=screened.transcript)
    return screened.tell(_commit(store, job, snapshots))


def _commit(store: Store, job: CommitJob, snapshots: Snapshots) -> CommitReport:
    """Review, then write, one batch; again while the partition moves under the review."""
    review = Review()
    for _ in range(REVIEW_ROUNDS):
        reviewed = _review(store, job, snapshots, review)
        if reviewed.skipped:
            return reviewed
        try:
            written = store.write(lambda tx: write_pass(tx, job, snapshots, review))
        except ReviewNeeded as exc:
            log.info("a partition moved during review; reviewing again")
            review.unasked = exc.requests
            continue
        if written.advance is not None:  # written: the kept partition moves with it
            snapshots.advance(written.advance)
        report = written.report
        if written.applied is not None:
            applied = written.applied
            report.forgotten, report.retracted = applied.forgotten, applied.retracted
            report.notes += applied.notes
            if applied.forms:
                forget_staged(job.settings.home, job.user_id, None, applied.forms)
        return report
    raise PegasusError(f"the memory of {job.user_id!r} kept changing while this commit's merges "
                       "were reviewed; nothing was written, try again")


def _review(store: Store, job: CommitJob, snapshots: Snapshots, review: Review) -> CommitReport:
    """Read, ask the reviewer outside the transaction, read again (the partition may have
    moved), until no answer is missing; then warm the embedder for the write."""
    while True:
        passed = store.read(lambda tx: review_pass(tx, job, snapshots, review))
        if not passed.questions:
            break
        for question in passed.questions:
            review.answers[question.request.key] = _ask(job, question)
        review.unasked = []
    assert passed.report is not None  # a pass without questions has resolved the batch
    resolution = passed.resolution
    if resolution is not None:
        review.reviewed = (passed.token, resolution) if passed.token is not None else None
        # Warm the embedder's cache, so the write transaction does not wait for the model.
        job.embedder.embed(list(dict.fromkeys(
            [fold(f) for e in resolution.touched for f in [e.name, *e.aliases]]
            + [label_phrase(r.relation.label) for r in resolution.relations]
            + [r.relation.snippet for r in resolution.relations])))
    return passed.report


def review_pass(tx: ManagedTransaction, job: CommitJob, snapshots: Snapshots,
                review: Review) -> ReviewPass:
    """In a read transaction: resolve the batch with the answers so far, or hand back the
    questions still to ask (the write's unasked ones first); nothing is written, nothing asked."""
    partition = run(tx, "read/partition_state", user_id=job.user_id)
    self_id = partition[0]["self_id"] if partition else None
    token = (partition[0]["epoch"], partition[0]["version"]) if partition else None
    skipped = _committed_before(tx, job, batch_hash(job.batch, job.transcript))
    if skipped is not None:
        return ReviewPass(report=skipped)
    unasked = [r for r in review.unasked if r.key not in review.answers]
    if unasked:
        return ReviewPass(questions=[_question(tx, job, r) for r in unasked])
    resolution = _resolve(tx, job, snapshots, review, self_id, token)
    # Each answer may change later decisions in the batch: the caller asks and comes back
    # until none is missing.
    if resolution.requests:
        return ReviewPass(questions=[_question(tx, job, r) for r in resolution.requests])
    return ReviewPass(report=resolution.report, token=token, resolution=resolution)


def write_pass(tx: ManagedTransaction, job: CommitJob, snapshots: Snapshots,
               review: Review) -> Written:
    """The write transaction, holding the user's partition lock; never asks the reviewer
    (ReviewNeeded when a pair it did not ask about turns up)."""
    user_id = job.user_id
    state = lock_partition(tx, user_id, job.at)
    self_id = state["self_id"]
    token = (state["epoch"], state["version"])
    digest = batch_hash(job.batch, job.transcript)
    skipped = _committed_before(tx, job, digest)
    if skipped is not None:
        return Written(skipped)
    applied = None
    if job.batch.forget:
        # Forgetting first, in this transaction: what the batch says anew is kept, and a
        # commit that fails later forgets nothing. The partition changed: read its token again.
        applied = apply_requests(tx, user_id, job.batch.forget, job.at)
        partition = run(tx, "read/partition_state", user_id=user_id)
        token = (partition[0]["epoch"], partition[0]["version"])
    if review.reviewed is not None and review.reviewed[0] == token:
        resolution = review.reviewed[1]
    else:
        resolution = _resolve(tx, job, snapshots, review, self_id, token)
    if resolution.requests:
        raise ReviewNeeded(resolution.requests)
    plan = plan_commit(resolution, stored_edges(tx, user_id, resolution), job.settings, digest)
    version = write_plan(tx, job.embedder, job.settings, plan, job.segment)
    return Written(plan.report, Advance(user_id, token, (token[0], version), resolution.pool,
                                        job.at), applied)


def _committed_before(tx: ManagedTransaction, job: CommitJob, digest: str
                      ) -> CommitReport | None:
    """The skip report when this very batch was committed before; a conflict when the
    conversation was committed with other content; None when it was not committed."""
    state = run(tx, "read/conversation_state", user_id=job.user_id,
                conversation_id=job.conversation_id)[0]
    if job.segment is not None:
        # The recorded conversation was forgotten while its turns were being extracted: what
        # the model made of them is not written (it would bring back what the person erased;
        # found by CI, a consolidation finishing after `forget everything`).
        if not state["exists"]:
            return CommitReport(user_id=job.user_id, conversation_id=job.conversation_id,
                                skipped=True, notes=["the conversation was forgotten meanwhile; "
                                                     "nothing was written"])
        # Another worker consolidated these turns (or some of them) meanwhile: this batch is
        # not written; the caller reads the conversation again and extracts what is left.
        if state["extracted_turns"] != job.segment[0] or state["batch_hash"] == digest:
            return CommitReport(user_id=job.user_id, conversation_id=job.conversation_id,
                                skipped=True, notes=["these turns were consolidated "
                                                     "meanwhile; nothing changed"])
        return None
    if state["batch_hash"] is None:
        return None
    if state["batch_hash"] == digest:
        return CommitReport(user_id=job.user_id, conversation_id=job.conversation_id,
                            skipped=True, notes=["already committed; nothing changed"])
    raise ConversationConflictError(
        f"conversation {job.conversation_id!r} was already committed with other content; "
        "commit new material under a new conversation id"
    )


def _resolve(tx: ManagedTransaction, job: CommitJob, snapshots: Snapshots, review: Review,
             self_id: str | None, token: Token | None) -> Resolution:
    """Clean the batch and resolve it against the partition at `token`, with the answers so far."""
    settings = job.settings
    with snapshots.use(job.user_id, token,
                       lambda: partition_entities(tx, job.user_id)) as entities:
        snapshot = Snapshot(job.user_id, job.conversation_id, job.at, self_id, entities)
        clean = clean_batch(
            job.batch, known=lambda name: bool(entities.with_form(fold(name))),
            transcript=job.transcript, provisional_confidence=settings.provisional_confidence,
            max_entities=settings.max_batch_entities,
            max_relations=settings.max_batch_relations,
        )
        return resolve(snapshot, clean, settings, review.answers, job.reviewer is not None)


def _question(tx: ManagedTransaction, job: CommitJob, request: ReviewRequest) -> Question:
    """One request with each stored candidate's neighbourhood, read in the review's transaction."""
    return Question(request, [
        CandidateContext(c, [
            f"{r['source']} -[{r['label']}]-> {r['target']}"
            for r in run(tx, "read/entity_neighbourhood", user_id=job.user_id,
                         entity_id=c.id, limit=12, now=job.at)
        ] if stored else [])
        for c, stored in zip(request.candidates, request.in_graph, strict=True)
    ])


def _ask(job: CommitJob, question: Question) -> ReviewAnswer:
    """The reviewer's answer to one question; called outside any transaction."""
    assert job.reviewer is not None  # the planner asks only when a reviewer is configured
    try:
        return question.request.answer(job.reviewer.review(
            question.request.proposed, question.contexts, user_text(job.transcript) or ""))
    except ExtractionError as exc:  # an unusable answer is an answer too: not re-asked
        return exc


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
               plan: CommitPlan, segment: tuple[int, int] | None = None) -> int:
    """Write one commit's plan (of the turns `segment` of its conversation, else the whole);
    the caller's transaction makes it all or nothing. Returns the partition's new version."""
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
    write_merge_records(tx, user_id, now, [(r.id, r.fields) for r in plan.merge_records])
    conversation = plan.conversation
    run(tx, "write/commit_conversation", user_id=user_id, conversation_id=plan.conversation_id,
        now=now, summary=conversation.summary, importance=conversation.importance,
        tags=conversation.tags, batch_hash=plan.batch_hash, entity_ids=plan.mentioned,
        segment=segment is not None, extracted_turns=segment[1] if segment else None)
    write_keys(tx, embedder, user_id, now, [*plan.create_entities, *plan.update_entities],
               plan.key_labels)
    drop_stale_keys(tx, user_id, plan.lost_forms, plan.lost_labels)
    return run(tx, "write/partition_stats", user_id=user_id, now=now,
               self_id=plan.self_id)[0]["version"]
