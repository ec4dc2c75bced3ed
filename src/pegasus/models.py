"""The plain values passed between modules: the batch contract, reports, recall results."""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from pegasus.recall.render import QuoteLine, render_block
from pegasus.vocab import Cardinality, Kind, RelationStatus, Stability

# --- limits of the batch contract (docs/reliability.md lists what each refusal looks like) ----
MAX_PROPERTY_DEPTH = 32
MAX_NAME_CHARS = 200  # entity names, aliases, relation ends, same_as_hint
MAX_ALIASES = 50
MAX_LABEL_CHARS = 100  # a relation label before cleaning (a clean one is 1-4 words)
MAX_WORD_CHARS = 40  # kind, stability, cardinality, status
MAX_SNIPPET_CHARS = 2000  # snippet and evidence
MAX_PROPERTIES = 50
MAX_PROPERTY_KEY_CHARS = 64
MAX_PROPERTY_VALUE_CHARS = 2000  # every string inside a property value
MAX_SUMMARY_CHARS = 4000
MAX_TAGS = 20
MAX_TAG_CHARS = 60
# One recorded turn (/turns, /remember, the proxy, imports): Settings.max_turn_chars, this by
# default. A whole transcript stays within Settings.max_transcript_chars (2,000,000).
MAX_TURN_CHARS = 200_000
# Neo4j stores integers as signed 64-bit; a larger one would fail inside the driver, so the
# contract refuses it instead of silently turning it into a string or a float.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

Name = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)]
Word = Annotated[str, StringConstraints(max_length=MAX_WORD_CHARS)]
Snippet = Annotated[str, StringConstraints(max_length=MAX_SNIPPET_CHARS)]


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


def property_problem(properties: dict[str, Any]) -> str | None:
    """Why a property map breaks the contract (with the path inside it), or None."""
    if len(properties) > MAX_PROPERTIES:
        return f"at most {MAX_PROPERTIES} properties (got {len(properties)})"
    if nesting_depth(properties, MAX_PROPERTY_DEPTH) > MAX_PROPERTY_DEPTH:
        return f"property values may nest at most {MAX_PROPERTY_DEPTH} levels"
    for key in properties:
        if len(str(key)) > MAX_PROPERTY_KEY_CHARS:
            return f"property key {str(key)[:40]!r}… longer than {MAX_PROPERTY_KEY_CHARS} characters"
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in properties.items()]
    while stack:
        path, value = stack.pop()
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            return f"{path}: integer outside the signed 64-bit range"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{path}: NaN and infinities are not numbers a memory can hold"
        if isinstance(value, str) and len(value) > MAX_PROPERTY_VALUE_CHARS:
            return f"{path}: text longer than {MAX_PROPERTY_VALUE_CHARS} characters"
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
    return None


def describe_validation_error(exc: ValidationError | Any) -> str:
    """The first problem of a (request) validation error on one line, led by the field's path."""
    errors = list(exc.errors())
    if not errors:
        return "invalid input"
    first = errors[0]
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.get("loc", ()))
    message = first.get("msg", "invalid").removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{path.lstrip('.') or 'batch'}: {message}{more}"


class _Lenient(BaseModel):
    """Accepts what an LLM plausibly emits; cleaning (extract/clean.py) fixes the rest."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False, allow_inf_nan=False)


class EntityIn(_Lenient):
    """A proposed entity (design §3)."""

    name: Name
    kind: Word = "OTHER"
    aliases: list[Name] = Field(default_factory=list, max_length=MAX_ALIASES)
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float = 0.5
    is_user: bool = False
    same_as_hint: Name | None = None

    @field_validator("properties")
    @classmethod
    def _storable(cls, value: dict[str, Any]) -> dict[str, Any]:
        problem = property_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class RelationIn(_Lenient):
    """A proposed memory edge (design §3); `status: ended` says a claim stopped being true."""

    source: Name
    relation: Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS)]
    target: Name
    confidence: float = 0.5
    stability: Word = "stable"
    cardinality: Word = "one_to_many"
    expires_at: datetime | None = None
    status: Word = "current"
    snippet: Snippet | None = None
    evidence: Snippet | None = None


class ConversationIn(_Lenient):
    summary: Annotated[str, StringConstraints(max_length=MAX_SUMMARY_CHARS)] = ""
    importance: float = 0.5
    tags: list[Annotated[str, StringConstraints(max_length=MAX_TAG_CHARS)]] = Field(
        default_factory=list, max_length=MAX_TAGS)


class ForgetIn(_Lenient):
    """A request the user made in the conversation to forget or retract what they said before
    (design §10): about one entity; with `relation` (and `target`), only those memories."""

    about: Name
    relation: Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS)] | None = None
    target: Name | None = None
    action: Literal["forget", "retract"] = "forget"
    snippet: Snippet | None = None  # the user's words asking for it (shown in the report only)


MAX_FORGET_REQUESTS = 50


class ExtractionBatch(_Lenient):
    """What the extractor hands over for one conversation; `commit` accepts it directly."""

    entities: list[EntityIn] = Field(default_factory=list)
    relations: list[RelationIn] = Field(default_factory=list)
    conversation: ConversationIn = Field(default_factory=ConversationIn)
    forget: list[ForgetIn] = Field(default_factory=list, max_length=MAX_FORGET_REQUESTS)


class Turn(BaseModel):
    """One turn of a transcript."""

    role: Literal["user", "assistant", "system"]
    content: str


# --- checked values (output of cleaning) --------------------------------------------------


class CleanEntity(BaseModel):
    name: str
    kind: Kind
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
    stability: Stability
    cardinality: Cardinality
    expires_at: datetime | None
    status: RelationStatus
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
    forgotten: list[str] = Field(default_factory=list)  # erased at the user's request (§10)
    retracted: list[str] = Field(default_factory=list)  # retracted at the user's request
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


class ShownSnippet(BaseModel):
    """A quoted memory: the user's words, when they were said, and (history) when it ended."""

    text: str
    edge_id: str
    said_at: datetime | None = None
    until: datetime | None = None
    score: float = 0.0

    @property
    def line(self) -> str:
        """The [CONTEXT] line (recall/render.py escapes the words)."""
        return QuoteLine(self.text, self.said_at.date() if self.said_at else None,
                         self.until.date() if self.until else None).render()


class Recall(BaseModel):
    """The block injected into the model's context for one turn."""

    memory: list[str] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)  # the quoted words, verbatim
    snippets: list[ShownSnippet] = Field(default_factory=list)  # the same, with their dates
    nodes: list[FiredNode] = Field(default_factory=list)
    edge_ids: list[str] = Field(default_factory=list)

    def render(self) -> str:
        """`[MEMORY]` and `[CONTEXT]` blocks as text; empty when nothing is relevant."""
        return render_block(self.memory, [s.line for s in self.snippets])

    def as_json(self) -> dict[str, Any]:
        """The `recall --json` shape (design §9, plus each snippet's dates)."""
        return {
            "memory": self.memory,
            "context": self.context,
            "snippets": [s.model_dump(mode="json") for s in self.snippets],
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
    turns_purged: int = 0  # conversations whose recorded turns passed their retention


# --- what the facade's inspection methods return (the HTTP API and MCP reuse them) -------


class MemoryState(StrEnum):
    """A memory's state (design §10), as `cypher/ownership/memories.cypher` names it: the one
    list of states (the listing's filter, the HTTP query's pattern, the CLI's help)."""

    CURRENT = "current"
    SUPERSEDED = "superseded"
    DORMANT = "dormant"
    EXPIRED = "expired"
    RETRACTED = "retracted"


MEMORY_STATES: tuple[str, ...] = tuple(MemoryState)


class MemoryEdge(BaseModel):
    """One memory edge of a user, in any state, as `Memory.memories` lists it."""

    id: str
    source_id: str
    source: str
    relation: str
    target_id: str
    target: str
    state: MemoryState = MemoryState.CURRENT
    strength: float | None = None
    strength_at_touch: float | None = None
    confidence: float | None = None
    touched_at: str | None = None  # ISO 8601, as stored
    created_at: str | None = None
    superseded_at: str | None = None
    retracted_at: str | None = None
    stability: str | None = None
    cardinality: str | None = None
    dormant: bool = False
    superseded: bool = False
    expired: bool = False
    snippet: str | None = None
    conversations: list[str] = Field(default_factory=list)
    said_at: str | None = None  # ISO 8601: when the words shown were said
    strength_now: float | None = None  # decayed to the asking instant

    @field_validator("conversations", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


class EdgeLine(BaseModel):
    """An edge shown with an entity: `source -[relation]-> target` and the user's words."""

    source: str
    relation: str
    target: str
    strength: float | None = None
    snippet: str | None = None


class EntityView(BaseModel):
    """An entity found by name (`Memory.entities`), with its strongest current edges."""

    id: str
    name: str
    kind: str
    aliases: list[str]
    confidence: float | None = None
    provisional: bool
    is_self: bool
    conversations: list[str]
    properties: dict[str, Any]
    edges: list[EdgeLine]


class MergeRecord(BaseModel):
    """A merge to inspect (flagged) or a pair waiting for review (pending), `Memory.merges`."""

    id: str
    status: str
    rule: str | None = None
    confidence: float | None = None
    kind: str | None = None
    absorbed_name: str | None = None
    survivor_name: str | None = None
    survivor_id: str | None = None
    candidate_names: list[str] | None = None
    conversation_id: str | None = None
    created_at: datetime | None = None

    @field_validator("created_at", mode="before")
    @classmethod
    def _native(cls, value: Any) -> Any:
        return value.to_native() if hasattr(value, "to_native") else value


class UndoResult(BaseModel):
    """What `Memory.undo_merge` split: the survivor and the restored entity."""

    survivor: str
    restored: str
    restored_id: str
    edges_moved: int


class Sighting(BaseModel):
    """One conversation's sighting of a memory: its words, when, and how sure."""

    conversation_id: str
    at: str | None = None  # ISO 8601
    snippet: str | None = None
    evidence: str | None = None
    confidence: float | None = None


class MemoryHistory(BaseModel):
    """One memory with its history (`Memory.memory`): every sighting, its reinforcements, the
    strength now, and what superseded it."""

    memory: MemoryEdge
    sightings: list[Sighting]
    said_at: str | None = None  # when the words shown for it were said
    reinforcements: int = 0
    reinforced_at: list[str] = Field(default_factory=list)  # the last 20, oldest first
    strength_now: float | None = None  # decayed to the asking instant
    superseded_by: str | None = None  # the id of the memory that replaced it
    superseded_by_line: str | None = None  # `source -[RELATION]-> target` of that memory


class EntityChoice(BaseModel):
    """An entity a name could mean, when it means several (nothing is done then)."""

    id: str
    name: str
    kind: str
    memories: int
    is_self: bool = False


class Correction(BaseModel):
    """What a correction changed: a retracted or restored memory, a renamed or merged entity."""

    action: str
    memory_id: str | None = None
    entity_id: str | None = None
    name: str | None = None
    aliases: list[str] = Field(default_factory=list)
    merge_record_id: str | None = None
    edges_moved: int = 0
    notes: list[str] = Field(default_factory=list)


class ForgetReport(BaseModel):
    """What an erasure removed (design §10). A second run of the same erasure removes nothing."""

    user_id: str
    scope: Literal["memory", "entity", "conversation", "everything"]
    memories: int = 0  # memory edges erased, with their snippets
    memories_changed: int = 0  # kept (seen elsewhere too) but lost the erased sighting
    memories_revived: int = 0  # superseded or ended by the erased conversation: current again
    entities: int = 0
    entities_changed: int = 0  # kept, but lost the names or properties the erased part gave
    keys: int = 0
    conversations: int = 0
    conversations_scrubbed: int = 0  # kept, but lost a summary, tags or turns naming it
    merge_records: int = 0
    staging_files: int = 0


class ImportReport(BaseModel):
    """What an import wrote (design §11)."""

    user_id: str
    source_user_id: str  # whose memory the file held
    entities: int = 0
    memories: int = 0
    conversations: int = 0
    merge_records: int = 0
    replaced: bool = False  # the user's memory was forgotten first
