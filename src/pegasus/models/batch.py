"""The extraction batch contract (its limits, what an LLM may hand over) and its cleaned form."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from pegasus.vocab import Cardinality, Kind, RelationStatus, Stability

# --- limits of the batch contract (docs/reliability.md lists what each refusal looks like) ----
MAX_PROPERTY_DEPTH = 32
MAX_NAME_CHARS = 200  # entity names, aliases, relation ends, same_as_hint
MAX_ALIASES = 50
MAX_LABEL_CHARS = 100  # a relation label before cleaning (a clean one is 1-4 words)
MAX_WORD_CHARS = 40  # kind, stability, cardinality, status
MAX_SNIPPET_CHARS = 2000  # snippet and evidence
MAX_PROPERTIES = 50
# What one stored entity holds: merges add a batch's forms and properties up, to this; past it a
# merge keeps what the entity has and says so in the commit's notes (design §5).
MAX_ENTITY_ALIASES = 500
MAX_ENTITY_PROPERTIES = 500
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

