"""The edge plan of one commit (design §6): create, reinforce, supersede, revive, end.

Pure: takes the relations with resolved endpoint ids and the user's stored edges for the same
(source, label) pairs, and says what to write. Relations are applied in batch order, so two
one_to_one sightings in one batch leave the later one current.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pegasus.models.batch import CleanRelation


@dataclass
class ResolvedRelation:
    source_id: str
    target_id: str
    relation: CleanRelation


@dataclass
class StoredEdge:
    id: str
    source_id: str
    label: str
    target_id: str
    superseded: bool
    cardinality: str
    confidence: float


@dataclass
class EdgePlan:
    create: list[dict[str, Any]] = field(default_factory=list)
    reinforce: list[dict[str, Any]] = field(default_factory=list)
    sightings: list[dict[str, Any]] = field(default_factory=list)
    supersede: list[dict[str, Any]] = field(default_factory=list)
    revive: list[dict[str, Any]] = field(default_factory=list)
    # (source_id, label, target_id) per kind of change, for the report
    created: list[tuple[str, str, str]] = field(default_factory=list)
    reinforced: list[tuple[str, str, str]] = field(default_factory=list)
    superseded: list[tuple[str, str, str]] = field(default_factory=list)
    revived: list[tuple[str, str, str]] = field(default_factory=list)
    ended: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # the edge each input relation landed on (None for one that ended a stored edge), in
    # input order
    relation_edges: list[str | None] = field(default_factory=list)


def sighting(conversation_id: str, at: datetime, relation: CleanRelation) -> str:
    """One conversation's sighting of an edge as stored in `r.sightings` (JSON text): whose
    words, when, and how sure. Forgetting a conversation removes its sighting, and the edge's
    words fall back to another's (design §10)."""
    return json.dumps({"conversation_id": conversation_id, "at": at.isoformat(),
                       "snippet": relation.snippet, "evidence": relation.evidence,
                       "confidence": relation.confidence}, ensure_ascii=False)


def plan_edges(
    relations: list[ResolvedRelation],
    stored: list[StoredEdge],
    user_id: str,
    conversation_id: str,
    at: datetime,
    initial_strength: float = 100.0,
) -> EdgePlan:
    """What to write for these relations, given the stored edges of their (source, label)s."""
    plan = EdgePlan()
    groups: dict[tuple[str, str], list[StoredEdge]] = {}
    for edge in stored:
        groups.setdefault((edge.source_id, edge.label), []).append(edge)
    touched: set[str] = set()
    # Only the final state of each edge is written, so A, B, A in one batch leaves A current.
    was_superseded = {edge.id: edge.superseded for edge in stored}
    superseded_by: dict[str, str | None] = {}
    edges: dict[str, StoredEdge] = {edge.id: edge for edge in stored}
    # This conversation's one sighting of each edge: where it is written (a created edge's
    # props, or the first sighting row), with the surest words of the batch, as the edge takes.
    sighted: dict[str, tuple[Any, Any, float]] = {}

    def sight(edge_id: str, holder: Any, key: Any, rel: CleanRelation) -> None:
        kept = sighted.get(edge_id)
        if kept is None or rel.confidence > kept[2]:
            holder, key = (holder, key) if kept is None else kept[:2]
            holder[key] = sighting(conversation_id, at, rel)
            sighted[edge_id] = (holder, key, rel.confidence)

    def supersede(edge: StoredEdge, by: str | None) -> None:
        edge.superseded = True
        superseded_by[edge.id] = by

    def create(item: ResolvedRelation, rel: CleanRelation) -> str:
        edge_id = str(uuid.uuid4())
        plan.create.append({
            "source_id": item.source_id, "target_id": item.target_id, "label": rel.label,
            "props": {
                "id": edge_id, "user_id": user_id, "strength": initial_strength,
                "strength_at_touch": initial_strength, "touched_at": at,
                "confidence": rel.confidence, "stability": rel.stability,
                "cardinality": rel.cardinality, "expires_at": rel.expires_at,
                "snippet": rel.snippet, "evidence": rel.evidence,
                "conversations": [conversation_id], "dormant": False, "expired": False,
                "created_at": at, "sightings": [None],
            },
        })
        sight(edge_id, plan.create[-1]["props"]["sightings"], 0, rel)
        plan.created.append((item.source_id, rel.label, item.target_id))
        edges[edge_id] = StoredEdge(edge_id, item.source_id, rel.label, item.target_id,
                                    False, rel.cardinality, rel.confidence)
        groups[(item.source_id, rel.label)].append(edges[edge_id])
        touched.add(edge_id)
        return edge_id

    for item in relations:
        rel = item.relation
        group = groups.setdefault((item.source_id, rel.label), [])
        existing = next((e for e in group if e.target_id == item.target_id), None)
        triple = (item.source_id, rel.label, item.target_id)
        if rel.status == "ended":
            if existing is None:
                # A past fact ("I lost my job at Door Dash" with no Door Dash stored): kept, in
                # the state a current edge ended by this claim would be in, so its words still
                # answer "when did I lose my job at Door Dash?" (design §3, "Past facts").
                edge_id = create(item, rel)
                supersede(edges[edge_id], None)
                plan.relation_edges.append(edge_id)
                plan.notes.append(f"{rel.source} -[{rel.label}]-> {rel.target}: "
                                  "kept as a past fact")
                continue
            plan.relation_edges.append(None)
            if not existing.superseded:
                supersede(existing, None)
            else:
                plan.notes.append(f"{rel.source} -[{rel.label}]-> {rel.target}: nothing current to end")
            continue
        one_to_one = rel.cardinality == "one_to_one" or (
            existing is not None and existing.cardinality == "one_to_one"
        )
        if existing is not None:
            edge_id = existing.id
            if edge_id not in touched:
                plan.reinforce.append({"source_id": item.source_id,
                                       "target_id": item.target_id, "edge_id": edge_id})
                plan.reinforced.append(triple)
            existing.superseded = False
            row = {
                "source_id": item.source_id, "target_id": item.target_id, "edge_id": edge_id,
                "confidence": rel.confidence,
                "snippet": rel.snippet, "evidence": rel.evidence, "sighting": None,
            }
            plan.sightings.append(row)
            sight(edge_id, row, "sighting", rel)
            existing.confidence = max(existing.confidence, rel.confidence)
        else:
            edge_id = create(item, rel)
        touched.add(edge_id)
        plan.relation_edges.append(edge_id)
        if one_to_one:
            for other in group:
                if other.target_id != item.target_id and not other.superseded:
                    supersede(other, edge_id)

    for edge_id, edge in edges.items():
        triple = (edge.source_id, edge.label, edge.target_id)
        before = was_superseded.get(edge_id, False)
        if edge.superseded and not before:
            by = superseded_by.get(edge_id)
            plan.supersede.append({"source_id": edge.source_id, "target_id": edge.target_id,
                                   "edge_id": edge_id, "by": by})
            (plan.ended if by is None else plan.superseded).append(triple)
        elif before and not edge.superseded:
            plan.revive.append({"source_id": edge.source_id, "target_id": edge.target_id,
                                "edge_id": edge_id})
            plan.revived.append(triple)
    return plan
