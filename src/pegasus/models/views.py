"""What the facade's inspection methods return (the HTTP API, MCP and the page reuse them)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, field_validator

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
    expires_at: str | None = None  # ISO 8601: when a time-bound memory ends
    corrects: str | None = None  # a correction: the id of the version it replaced
    corrected_at: str | None = None  # a corrected version: when the person corrected it
    corrected_via: str | None = None  # ... through which surface (page, api, cli, mcp, python)
    said_in: str | None = None  # the conversation its shown words came from
    source_is_self: bool = False  # an end is the person's own node
    target_is_self: bool = False

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

    # A view of the stored record (merge/records.py), as the API has always shown it.

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
    used_in_open: list[str] = Field(default_factory=list)  # open conversations that recalled it


class Overview(BaseModel):
    """One user's memory at a glance: current memories, entities by kind (the person's own
    node left out), open conversations, and the last activity (ISO 8601)."""

    memories: int = 0
    kinds: dict[str, int] = Field(default_factory=dict)
    open_conversations: int = 0
    last_activity: str | None = None


class EntityChoice(BaseModel):
    """An entity a name could mean, when it means several (nothing is done then)."""

    id: str
    name: str
    kind: str
    memories: int
    is_self: bool = False


