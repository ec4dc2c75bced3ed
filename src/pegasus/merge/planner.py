"""The commit planner (design §5–§6): what one cleaned batch does to one partition.

Pure: no Neo4j, no LLM, no model. It runs in two steps, because which stored edges matter
depends on the merge decisions:

1. `resolve(snapshot, clean, ...)` decides every entity — merged into a stored node (rule or
   review answer), the self node, a new or provisional node, or a new node left pending for
   review — and gives each relation its endpoint ids. A pair that needs the reviewer and has no
   answer yet comes back as a `ReviewRequest`; the caller asks and resolves again.
2. `plan_commit(resolution, stored_edges, ...)` adds the edge plan (`merge.plan.plan_edges`),
   the merge records with the edges they made, the keys to keep, and the report.

`commit.write_plan` writes a `CommitPlan` in one transaction.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from pegasus.errors import ExtractionError
from pegasus.extract.clean import clamp_confidence
from pegasus.merge.plan import EdgePlan, ResolvedRelation, StoredEdge, plan_edges
from pegasus.merge.records import AbsorbedEntity, EntityBefore, MergeFields
from pegasus.merge.rules import Pool, StoredEntity, band, match
from pegasus.models.batch import (
    MAX_ENTITY_ALIASES,
    MAX_ENTITY_PROPERTIES,
    CleanBatch,
    CleanEntity,
    ConversationIn,
    Dropped,
)
from pegasus.models.reports import CommitReport, MergeOutcome
from pegasus.settings import Settings
from pegasus.text import fold, is_placeholder

log = logging.getLogger(__name__)

SELF_DEFAULT_NAME = "User"

# A review is asked once per (proposed name, candidates); a candidate made earlier in the same
# batch has no stable id between passes, so it is named by its folded name instead.
ReviewKey = tuple[str, tuple[str, ...]]
ReviewAnswer = dict[str, float] | ExtractionError  # confidence per candidate token
NEW_TOKEN = "new:"


@dataclass
class Snapshot:
    """The partition as the planner sees it: the user's entities and self node. The entities
    are a `Pool` the planner never changes (a list is indexed into one); each resolution plans
    in an overlay over it."""

    user_id: str
    conversation_id: str
    at: datetime
    self_id: str | None
    entities: Pool

    def __post_init__(self) -> None:
        if not isinstance(self.entities, Pool):
            self.entities = Pool(self.entities)


@dataclass
class ReviewRequest:
    """A proposed entity and the candidates the reviewer must score."""

    key: ReviewKey
    proposed: CleanEntity
    candidates: list[StoredEntity]
    tokens: list[str]  # per candidate: its id, or "new:<name>" for one made in this batch

    @property
    def in_graph(self) -> list[bool]:
        """Per candidate: stored (True), or made earlier in this batch (no neighbourhood yet)."""
        return [not t.startswith(NEW_TOKEN) for t in self.tokens]

    def answer(self, scores_by_id: Mapping[str, float]) -> dict[str, float]:
        """The reviewer's scores (by candidate id) as the planner looks them up (by token)."""
        return {t: scores_by_id[c.id] for c, t in zip(self.candidates, self.tokens, strict=True)
                if c.id in scores_by_id}


@dataclass
class MergeRecordPlan:
    """One `:MergeRecord` to write: a merge (undoable) or a pair pending review."""

    id: str
    fields: MergeFields
    forms: list[str] = field(default_factory=list)  # the absorbed entity's names (merges)


@dataclass
class Resolution:
    """Step 1: every entity decided, every relation given its ends."""

    snapshot: Snapshot
    pool: Pool
    self_id: str | None
    created: dict[str, StoredEntity]
    updated: dict[str, StoredEntity]
    relations: list[ResolvedRelation]
    merge_records: list[MergeRecordPlan]
    report: CommitReport
    conversation: ConversationIn
    requests: list[ReviewRequest]  # not empty: unfinished, ask these and resolve again

    @property
    def triples(self) -> list[dict[str, str]]:
        """(source, label, target) of every relation: step 2 needs the stored edge of each."""
        seen = dict.fromkeys((r.source_id, r.relation.label, r.target_id) for r in self.relations)
        return [{"source_id": s, "label": label, "target_id": t} for s, label, t in seen]

    def one_to_one_pairs(self, between: list[StoredEdge]) -> list[dict[str, str]]:
        """The (source, label) pairs whose other stored edges step 2 needs as well: those a
        relation of the batch, or a stored edge it lands on, makes one-to-one."""
        pairs = dict.fromkeys(
            [(r.source_id, r.relation.label) for r in self.relations
             if r.relation.cardinality == "one_to_one"]
            + [(e.source_id, e.label) for e in between if e.cardinality == "one_to_one"])
        return [{"source_id": s, "label": label} for s, label in pairs]

    @property
    def updated_only(self) -> list[StoredEntity]:
        """Stored entities this batch changed (not those it created)."""
        return [e for i, e in self.updated.items() if i not in self.created]

    @property
    def touched(self) -> list[StoredEntity]:
        return [*self.created.values(), *self.updated_only]


@dataclass
class CommitPlan:
    """Everything one commit writes (step 2), and the report it returns."""

    user_id: str
    conversation_id: str
    at: datetime
    batch_hash: str
    self_id: str | None
    create_entities: list[StoredEntity]
    update_entities: list[StoredEntity]
    edges: EdgePlan
    merge_records: list[MergeRecordPlan]
    key_labels: set[str]  # relation labels in current use, whose keys are kept
    # Keys this commit may have made stale (design §2), so the write checks only those: per
    # changed entity, the forms it had and has no more; labels whose edges it superseded and
    # that no relation of the batch keeps current.
    lost_forms: dict[str, list[str]]
    lost_labels: set[str]
    conversation: ConversationIn
    report: CommitReport

    @property
    def provisional(self) -> list[StoredEntity]:
        return [e for e in self.create_entities if e.provisional]

    @property
    def pending_reviews(self) -> list[MergeRecordPlan]:
        return [r for r in self.merge_records if r.fields.status == "pending"]

    @property
    def mentioned(self) -> list[str]:
        """Ids of the entities this conversation created or touched."""
        return list(dict.fromkeys(e.id for e in [*self.create_entities, *self.update_entities]))


class _Unanswered(Exception):  # noqa: N818 - a signal
    def __init__(self, request: ReviewRequest) -> None:
        super().__init__(request.proposed.name)
        self.request = request


class _Resolver:
    """Step 1's state for one batch against one snapshot."""

    def __init__(self, snapshot: Snapshot, settings: Settings,
                 reviews: Mapping[ReviewKey, ReviewAnswer], reviewing: bool) -> None:
        self.snapshot = snapshot
        self.settings = settings
        self.reviews = reviews
        self.reviewing = reviewing
        self.pool = Pool(over=snapshot.entities)
        self.self_id = snapshot.self_id
        self.created: dict[str, StoredEntity] = {}
        self.updated: dict[str, StoredEntity] = {}
        self.names: dict[str, str] = {}  # folded surface form in this batch → entity id
        self.merge_records: list[MergeRecordPlan] = []
        self.requests: list[ReviewRequest] = []
        self.report = CommitReport(user_id=snapshot.user_id,
                                   conversation_id=snapshot.conversation_id)

    # --- helpers --------------------------------------------------------------------------

    def _touch(self, entity: StoredEntity) -> StoredEntity:
        entity = self.pool.edit(entity.id)
        if entity.id not in self.created and entity.id not in self.updated:
            self.updated[entity.id] = entity
        if self.snapshot.conversation_id not in entity.conversations:
            entity.conversations.append(self.snapshot.conversation_id)
        return entity

    def _new(self, proposed: CleanEntity, is_self: bool = False) -> StoredEntity:
        entity = StoredEntity(
            id=str(uuid.uuid4()), name=proposed.name, kind=proposed.kind,
            aliases=list(proposed.aliases), is_self=is_self, confidence=proposed.confidence,
            provisional=proposed.provisional, properties=dict(proposed.properties),
            conversations=[self.snapshot.conversation_id],
        )
        self.pool.add(entity)
        self.created[entity.id] = entity
        (self.report.provisional if entity.provisional else self.report.created).append(
            entity.name)
        return entity

    def _absorb(self, target: StoredEntity, proposed: CleanEntity) -> StoredEntity:
        """The surviving node takes the sighting: alias, properties, citation, max confidence.
        Returns the batch's copy of it, the one to go on with."""
        target = self.pool.edit(target.id)
        forms = set(target.forms())
        full = 0
        for form in [proposed.name, *proposed.aliases]:
            if fold(form) in forms or is_placeholder(form):
                continue
            if len(target.aliases) >= MAX_ENTITY_ALIASES:
                full += 1
                continue
            target.aliases.append(form)
            forms.add(fold(form))
        properties = dict(target.properties)
        for key, value in proposed.properties.items():
            if key in properties or len(properties) < MAX_ENTITY_PROPERTIES:
                properties[key] = value
            else:
                full += 1
        if full:
            self.report.notes.append(
                f"{target.name!r} holds its {MAX_ENTITY_ALIASES} aliases and "
                f"{MAX_ENTITY_PROPERTIES} properties at most: {full} more not added")
        target.properties = properties
        target.confidence = max(target.confidence, proposed.confidence)
        if target.provisional and not proposed.provisional:
            target.provisional = False  # a real sighting confirms a provisional node
            if target.kind == "OTHER":
                target.kind = proposed.kind
        self.pool.update(target)
        return self._touch(target)

    def _record(self, proposed: CleanEntity, target: StoredEntity, rule: str,
                confidence: float | None, status: str, before: StoredEntity) -> None:
        conversation_id = self.snapshot.conversation_id
        self.merge_records.append(MergeRecordPlan(
            id=str(uuid.uuid4()), forms=[proposed.name, *proposed.aliases],
            fields=MergeFields(
                status=status, rule=rule, confidence=confidence, survivor_id=target.id,
                survivor_name=target.name, absorbed_name=proposed.name, kind=proposed.kind,
                absorbed=AbsorbedEntity(
                    id=str(uuid.uuid4()), name=proposed.name, kind=proposed.kind,
                    aliases=proposed.aliases, properties=proposed.properties,
                    confidence=proposed.confidence, provisional=proposed.provisional,
                    conversations=[conversation_id]),
                before=EntityBefore.of(before), conversation_id=conversation_id)))

    def _request(self, proposed: CleanEntity, candidates: list[StoredEntity]) -> ReviewRequest:
        tokens = [f"{NEW_TOKEN}{fold(c.name)}" if c.id in self.created else c.id
                  for c in candidates]
        return ReviewRequest((fold(proposed.name), tuple(sorted(tokens))), proposed,
                             candidates, tokens)

    # --- decisions ------------------------------------------------------------------------

    def ensure_self(self, proposed: CleanEntity | None) -> StoredEntity:
        """The self node, created on first need; a learned name replaces a placeholder name."""
        if self.self_id is not None:
            node = self.pool[self.self_id]
            if proposed is not None and proposed.is_user:
                before = copy.deepcopy(node)
                node = self.pool.edit(node.id)
                if is_placeholder(node.name):
                    node.name = proposed.name  # _absorb re-indexes it
                node = self._absorb(node, proposed)
                if fold(before.name) != fold(node.name):
                    self.report.notes.append(f"the user is now named {node.name}")
            else:
                node = self._touch(node)
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

    def resolve_entity(self, proposed: CleanEntity) -> StoredEntity:
        if proposed.is_user or proposed.is_placeholder:
            return self.ensure_self(proposed)
        found = match(proposed, self.pool, self.settings.fuzzy_similarity)
        target = found.merge_target
        if target is not None and found.rule is not None:  # a merge target comes with its rule
            before = copy.deepcopy(target)
            target = self._absorb(target, proposed)
            if target.id not in self.created:
                self.report.merged.append(MergeOutcome(
                    name=proposed.name, into=target.name, entity_id=target.id, rule=found.rule))
                if fold(proposed.name) != fold(target.name) or proposed.aliases:
                    self._record(proposed, target, found.rule, None, "merged", before)
            return target
        candidates = found.review_candidates
        if not candidates:
            return self._new(proposed)
        if not self.reviewing:
            return self._pending(proposed, candidates)
        request = self._request(proposed, candidates)
        answer = self.reviews.get(request.key)
        if answer is None:
            # Not asked yet: the resolution stops here; the caller asks and resolves again
            # (later decisions may depend on this answer, so none is guessed).
            raise _Unanswered(request)
        if isinstance(answer, ExtractionError):
            # An unusable review must not cost the conversation: decide as with no reviewer.
            # No name, no answer: both hold the user's words (docs/privacy.md, "Logs").
            log.warning("a merge review's answer was unusable, pair left pending")
            self.report.notes.append(f"{proposed.name}: the reviewer's answer was unusable, "
                                     f"left for review ({answer})")
            return self._pending(proposed, candidates)
        score = dict(zip((c.id for c in candidates), (answer.get(t, 0.0) for t in request.tokens),
                         strict=True))
        best = sorted(candidates, key=lambda c: score[c.id], reverse=True)[0]
        confidence = clamp_confidence(score[best.id], default=0.0)
        decision = band(confidence, self.settings.review_merge_silent,
                        self.settings.review_merge_flagged)
        if decision == "separate":
            self.report.notes.append(
                f"{proposed.name}: reviewer kept it apart from {best.name} ({confidence:.2f})")
            return self._new(proposed)
        before = copy.deepcopy(best)
        best = self._absorb(best, proposed)
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
        self.merge_records.append(MergeRecordPlan(id=str(uuid.uuid4()), fields=MergeFields(
            status="pending", rule="review", absorbed_name=proposed.name, kind=proposed.kind,
            survivor_id=entity.id, candidate_ids=[c.id for c in candidates],
            candidate_names=[c.name for c in candidates],
            conversation_id=self.snapshot.conversation_id,
        )))
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


def resolve(snapshot: Snapshot, clean: CleanBatch, settings: Settings,
            reviews: Mapping[ReviewKey, ReviewAnswer] | None = None,
            reviewing: bool = False) -> Resolution:
    """Step 1. With `reviewing`, the first review pair missing from `reviews` ends the
    resolution early, as its one request (nothing of an unfinished resolution is written)."""
    r = _Resolver(snapshot, settings, reviews or {}, reviewing)
    try:
        return _resolve(r, snapshot, clean)
    except _Unanswered as stop:
        r.requests.append(stop.request)
        return Resolution(snapshot=snapshot, pool=r.pool, self_id=r.self_id, created=r.created,
                          updated=r.updated, relations=[], merge_records=r.merge_records,
                          report=r.report, conversation=clean.conversation,
                          requests=r.requests)


def _resolve(r: _Resolver, snapshot: Snapshot, clean: CleanBatch) -> Resolution:
    r.report.notes += clean.notes
    r.report.dropped += clean.dropped
    # The self node is designated once: the source of the first relation ever observed.
    designate_first_source = snapshot.self_id is None and not any(
        e.is_user or e.is_placeholder for e in clean.entities
    ) and bool(clean.relations) and not is_placeholder(clean.relations[0].source)

    for proposed in clean.entities:
        entity = r.resolve_entity(proposed)
        for form in [proposed.name, *proposed.aliases]:
            r.names.setdefault(fold(form), entity.id)
        if proposed.is_user or proposed.is_placeholder:
            r.names[fold(proposed.name)] = entity.id

    relations: list[ResolvedRelation] = []
    for relation in clean.relations:
        source_id = r.resolve_name(relation.source)
        target_id = r.resolve_name(relation.target)
        if designate_first_source and r.self_id is None and source_id is not None:
            node = r.pool.edit(source_id)
            node.is_self = True
            r.self_id = source_id
            r._touch(node)
        item = f"{relation.source} -[{relation.label}]-> {relation.target}"
        if source_id is None or target_id is None:
            r.report.dropped.append(Dropped(item=item, reason="an end could not be resolved"))
            continue
        if source_id == target_id:
            r.report.dropped.append(Dropped(item=item, reason="both ends are the same entity"))
            continue
        relations.append(ResolvedRelation(source_id, target_id, relation))
    return Resolution(snapshot=snapshot, pool=r.pool, self_id=r.self_id, created=r.created,
                      updated=r.updated, relations=relations, merge_records=r.merge_records,
                      report=r.report, conversation=clean.conversation, requests=r.requests)


def plan_commit(resolution: Resolution, stored_edges: list[StoredEdge], settings: Settings,
                batch_hash: str) -> CommitPlan:
    """Step 2: the edge plan against the stored edges of the resolution's (source, label)s."""
    snap = resolution.snapshot
    report = resolution.report.model_copy(deep=True)
    edges = plan_edges(resolution.relations, copy.deepcopy(stored_edges), snap.user_id,
                       snap.conversation_id, snap.at, settings.initial_strength)
    report.notes += edges.notes
    created_edges = {row["props"]["id"] for row in edges.create}
    records = []
    for record in resolution.merge_records:
        # The edges this conversation made for the absorbed name, so an undo can move them.
        forms = {fold(f) for f in record.forms}  # none for a pending pair
        fields = record.fields.model_copy(update={"edge_ids": [
            edge_id for item, edge_id in zip(resolution.relations, edges.relation_edges,
                                             strict=True)
            if edge_id in created_edges
            and (fold(item.relation.source) in forms or fold(item.relation.target) in forms)
        ]})
        records.append(MergeRecordPlan(record.id, fields, record.forms))
    pool = resolution.pool

    def lines(triples: list[tuple[str, str, str]]) -> list[str]:
        return [f"{pool[s].name} -[{lbl}]-> {pool[t].name}" for s, lbl, t in triples]

    key_labels = {r.relation.label for r in resolution.relations
                  if r.relation.status == "current"}
    lost_forms = {}
    for entity in resolution.updated_only:
        was = snap.entities.get(entity.id)
        gone = [f for f in dict.fromkeys(was.forms()) if f not in set(entity.forms())] if was else []
        if gone:
            lost_forms[entity.id] = gone
    report.edges_created = lines(edges.created)
    report.reinforced = lines(edges.reinforced)
    report.superseded = lines(edges.superseded)
    report.revived = lines(edges.revived)
    report.ended = lines(edges.ended)
    return CommitPlan(
        user_id=snap.user_id, conversation_id=snap.conversation_id, at=snap.at,
        batch_hash=batch_hash, self_id=resolution.self_id,
        create_entities=list(resolution.created.values()),
        update_entities=resolution.updated_only,
        edges=edges, merge_records=records,
        key_labels=key_labels, lost_forms=lost_forms,
        lost_labels={label for _, label, _ in [*edges.superseded, *edges.ended]} - key_labels,
        conversation=resolution.conversation, report=report,
    )
