"""The plain values passed between modules: the batch contract, reports, recall results."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_PROPERTY_DEPTH = 32


def nesting_depth(value: Any, limit: int) -> int:
    """How deeply lists and dicts nest in `value`, counted up to `limit` + 1 (no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


KINDS = ("PERSON", "ORG", "PLACE", "EVENT", "THING", "TOPIC", "PREFERENCE", "OTHER")
CARDINALITIES = ("one_to_one", "one_to_many")


class _Lenient(BaseModel):
    """Accepts what an LLM plausibly emits; cleaning (extract/clean.py) fixes the rest."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class EntityIn(_Lenient):
    """A proposed entity (SPEC §3)."""

    name: str
    kind: str = "OTHER"
    aliases: list[str] = Field(default_factory=list)
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float = 0.5
    is_user: bool = False
    same_as_hint: str | None = None

    @field_validator("properties")
    @classmethod
    def _not_too_deep(cls, value: dict[str, Any]) -> dict[str, Any]:
        if nesting_depth(value, MAX_PROPERTY_DEPTH) > MAX_PROPERTY_DEPTH:
            raise ValueError(f"property values may nest at most {MAX_PROPERTY_DEPTH} levels")
        return value


class RelationIn(_Lenient):
    """A proposed memory edge (SPEC §3); `status: ended` says a claim stopped being true."""

    source: str
    relation: str
    target: str
    confidence: float = 0.5
    stability: str = "stable"
    cardinality: str = "one_to_many"
    expires_at: datetime | None = None
    status: str = "current"
    snippet: str | None = None
    evidence: str | None = None


class ConversationIn(_Lenient):
    summary: str = ""
    importance: float = 0.5
    tags: list[str] = Field(default_factory=list)


class ExtractionBatch(_Lenient):
    """What the extractor hands over for one conversation; `commit` accepts it directly."""

    entities: list[EntityIn] = Field(default_factory=list)
    relations: list[RelationIn] = Field(default_factory=list)
    conversation: ConversationIn = Field(default_factory=ConversationIn)


class Turn(BaseModel):
    """One turn of a transcript."""

    role: Literal["user", "assistant", "system"]
    content: str


# --- checked values (output of cleaning) --------------------------------------------------


class CleanEntity(BaseModel):
    name: str
    kind: str
    aliases: list[str]
    properties: dict[str, str | int | float | bool]
    confidence: float
    is_user: bool = False
    is_placeholder: bool = False
    provisional: bool = False  # made by cleaning for an unknown end of a relation
    same_as_hint: str | None = None


class CleanRelation(BaseModel):
    source: str
    label: str
    target: str
    confidence: float
    stability: str
    cardinality: str
    expires_at: datetime | None
    status: Literal["current", "ended"]
    snippet: str
    evidence: str


class Dropped(BaseModel):
    """An item that did not make it into the graph, and why."""

    item: str
    reason: str


class CleanBatch(BaseModel):
    entities: list[CleanEntity]
    relations: list[CleanRelation]
    conversation: ConversationIn
    notes: list[str] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)


# --- reports ----------------------------------------------------------------------------


class MergeOutcome(BaseModel):
    name: str
    into: str
    entity_id: str
    rule: str
    confidence: float | None = None


class CommitReport(BaseModel):
    """What one commit did; every dropped item carries its reason."""

    user_id: str
    conversation_id: str
    skipped: bool = False
    created: list[str] = Field(default_factory=list)
    merged: list[MergeOutcome] = Field(default_factory=list)
    flagged: list[MergeOutcome] = Field(default_factory=list)
    review_pending: list[dict[str, Any]] = Field(default_factory=list)
    provisional: list[str] = Field(default_factory=list)
    edges_created: list[str] = Field(default_factory=list)
    reinforced: list[str] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list)
    revived: list[str] = Field(default_factory=list)
    ended: list[str] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class FiredNode(BaseModel):
    """A node that fired in a recall, with how it was reached."""

    entity_id: str
    name: str
    kind: str
    score: float
    direction: Literal["seed", "forward", "reverse"]
    hop: int


class Recall(BaseModel):
    """The block injected into the model's context for one turn."""

    memory: list[str] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    nodes: list[FiredNode] = Field(default_factory=list)
    edge_ids: list[str] = Field(default_factory=list)

    def render(self) -> str:
        """`[MEMORY]` and `[CONTEXT]` blocks as text; empty when nothing fired."""
        parts: list[str] = []
        if self.memory:
            parts.append("[MEMORY]\n" + "\n".join(self.memory))
        if self.context:
            parts.append("[CONTEXT]\n" + "\n".join(f'- "{s}"' for s in self.context))
        return "\n\n".join(parts)

    def as_json(self) -> dict[str, Any]:
        """The `recall --json` shape (SPEC §9)."""
        return {
            "memory": self.memory,
            "context": self.context,
            "nodes": [
                {"name": n.name, "kind": n.kind, "score": round(n.score, 6),
                 "direction": n.direction, "hop": n.hop}
                for n in self.nodes
            ],
            "text": self.render(),
        }


class DecayReport(BaseModel):
    at: datetime
    edges: int = 0
    dormant_now: int = 0
    dormant_total: int = 0
    expired_now: int = 0
    batches: int = 0
