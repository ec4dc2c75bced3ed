"""The export format, version 1: JSON Lines, one record per line, in this order: a header, the
entities, the memories, the conversations, the merge records (design §11). These models are
the format's definition; `schemas/pegasus-export-v1.schema.json` is generated from them
(`python -m pegasus.transfer.format`) and a test holds the two equal."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    TypeAdapter,
    WithJsonSchema,
    model_validator,
)

from pegasus.models.batch import (
    INT64_MAX,
    INT64_MIN,
    MAX_ALIASES,
    MAX_NAME_CHARS,
    MAX_PROPERTIES,
    MAX_PROPERTY_KEY_CHARS,
    MAX_PROPERTY_VALUE_CHARS,
    MAX_SNIPPET_CHARS,
    MAX_SUMMARY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TURN_CHARS,
    MAX_WORD_CHARS,
)
from pegasus.portable import INSTANT, decode_props
from pegasus.settings import Settings
from pegasus.vocab import Cardinality, Kind, Stability

FORMAT = "pegasus-memory-export"
VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parent / "pegasus-export-v1.schema.json"
# Fields a second export of an imported memory has anew: when it was exported, and the
# header's source user id when imported under another one. Everything else is identical.
REGENERATED = {"header": ["exported_at", "user_id"]}
MAX_ID_CHARS = 200  # every id: user, entity, memory, conversation, merge record
# A conversation's turns together hold at most what a recorded transcript may; one turn at
# most what one recorded turn may (models.MAX_TURN_CHARS, as on /turns and the proxy).
MAX_TRANSCRIPT_CHARS = Settings.model_fields["max_transcript_chars"].default
MAX_LIST = 10_000  # ids and instants an entity or a memory lists (conversations, sightings…)


def _iso(value: str) -> str:
    """An ISO 8601 instant kept as written (a sighting stores its text), but checked."""
    if not isinstance(value, str) or datetime.fromisoformat(value).tzinfo is None:
        raise ValueError("an ISO 8601 instant with its offset is expected")
    return value


def _real(value: Any) -> Any:
    # A property's integer past 64 bits must not pass as a float (its value would change).
    if not isinstance(value, float):
        raise ValueError("a floating-point number is expected")
    return value


def _instant(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {INSTANT}:
        return value[INSTANT]
    if isinstance(value, datetime):
        return value
    raise ValueError(f'an instant is written {{"{INSTANT}": ISO 8601}}')


Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Word = Annotated[str, StringConstraints(min_length=1, max_length=MAX_WORD_CHARS)]
Label = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+){0,3}$",
                                         max_length=MAX_NAME_CHARS)]
Words = Annotated[str, StringConstraints(max_length=MAX_SNIPPET_CHARS)]
Instant = AwareDatetime
IsoText = Annotated[str, AfterValidator(_iso)]
# An instant inside a merge record, where it is written {"$datetime": ISO 8601} (design §11).
Encoded = Annotated[
    AwareDatetime, BeforeValidator(_instant),
    PlainSerializer(lambda d: {INSTANT: d.isoformat()}, return_type=dict, when_used="json"),
    WithJsonSchema({"type": "object", "required": [INSTANT], "additionalProperties": False,
                    "properties": {INSTANT: {"type": "string", "format": "date-time"}}})]
Confidence = Annotated[float, Field(ge=0, le=1)]
Int64 = Annotated[StrictInt, Field(ge=INT64_MIN, le=INT64_MAX)]
Count = Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]
# An entity property as cleaning stores it (design §4): a scalar under a clean key; nested maps
# and lists were turned into text before they were stored, so a file never holds them.
PropertyKey = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$",
                                               max_length=MAX_PROPERTY_KEY_CHARS)]
PropertyValue = (StrictBool | Int64 | Annotated[StrictFloat, BeforeValidator(_real)]
                 | Annotated[str, StringConstraints(max_length=MAX_PROPERTY_VALUE_CHARS)])
Ids = Annotated[list[Id], Field(max_length=MAX_LIST)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Header(_Record):
    """The first line: which format, which version, whose memory (for the report only: an
    import always goes into the partition of the user it is run for)."""

    type: Literal["header"] = "header"
    format: Literal["pegasus-memory-export"] = FORMAT
    version: int
    user_id: Id
    exported_at: Instant
    with_turns: bool = False


class EntityRecord(_Record):
    """An entity: names, properties, confidence, the conversations that cited it."""

    type: Literal["entity"] = "entity"
    id: Id
    name: Name
    kind: Kind
    aliases: list[Name] = Field(default_factory=list, max_length=MAX_ALIASES)
    properties: dict[PropertyKey, PropertyValue] = Field(default_factory=dict,
                                                         max_length=MAX_PROPERTIES)
    confidence: Confidence | None = None
    conversations: Ids = Field(default_factory=list)
    provisional: bool = False
    is_self: bool = False
    created_at: Instant | None = None
    updated_at: Instant | None = None


class SightingRecord(_Record):
    """One conversation's sighting of a memory (stored as JSON text on the edge)."""

    conversation_id: Id
    at: IsoText | None = None
    snippet: Words | None = None
    evidence: Words | None = None
    confidence: Confidence | None = None


class MemoryRecord(_Record):
    """A memory edge with its full state, its words and every sighting."""

    type: Literal["memory"] = "memory"
    id: Id
    source_id: Id
    relation: Label
    target_id: Id
    strength: float
    strength_at_touch: float
    touched_at: Instant
    confidence: Confidence | None = None
    stability: Stability
    cardinality: Cardinality
    expires_at: Instant | None = None
    dormant: bool = False
    expired: bool = False
    superseded_at: Instant | None = None
    superseded_by: Id | None = None
    superseded_in: Id | None = None
    retracted_at: Instant | None = None
    snippet: Words
    evidence: Words | None = None
    said_at: Instant | None = None  # when the words shown were said
    said_in: Id | None = None  # and in which conversation
    conversations: Ids = Field(default_factory=list)
    sightings: list[SightingRecord] = Field(default_factory=list, max_length=MAX_LIST)
    reinforcements: Count = 0
    reinforced_at: list[Instant] = Field(default_factory=list, max_length=MAX_LIST)
    created_at: Instant | None = None


class TurnRecord(_Record):
    """One recorded turn."""

    role: Literal["user", "assistant", "system"]
    content: Annotated[str, StringConstraints(max_length=MAX_TURN_CHARS)]


class ConversationRecord(_Record):
    """A conversation: dates, summary, importance, tags, status, the entities it mentions;
    its recorded turns only when exported with them."""

    type: Literal["conversation"] = "conversation"
    id: Id
    status: Word | None = None
    summary: Annotated[str, StringConstraints(max_length=MAX_SUMMARY_CHARS)] | None = None
    importance: Confidence | None = None
    tags: list[Annotated[str, StringConstraints(max_length=MAX_TAG_CHARS)]] = Field(
        default_factory=list, max_length=MAX_TAGS)
    source: Word | None = None
    batch_hash: Id | None = None
    started_at: Instant | None = None
    ended_at: Instant | None = None
    committed_at: Instant | None = None
    closed_at: Instant | None = None
    mentions: Ids = Field(default_factory=list)
    read_log: list[Annotated[str, StringConstraints(max_length=3 * MAX_ID_CHARS + 2)]] = Field(
        default_factory=list, max_length=MAX_LIST)
    reads_reinforced: Count = 0
    turns: list[TurnRecord] | None = None

    @model_validator(mode="after")
    def _transcript_limit(self) -> ConversationRecord:
        if sum(len(t.content) for t in self.turns or []) > MAX_TRANSCRIPT_CHARS:
            raise ValueError(f"turns: longer than a transcript may be ({MAX_TRANSCRIPT_CHARS} "
                             "characters together)")
        return self


class AbsorbedEntity(_Record):
    """What a merge absorbed, as its record keeps it (JSON text): the cleaned entity, and for
    a merge by hand its id, conversations and provisional flag."""

    name: Name
    kind: Kind
    aliases: list[Name] = Field(max_length=MAX_ALIASES)
    properties: dict[PropertyKey, PropertyValue] = Field(max_length=MAX_PROPERTIES)
    confidence: Confidence | None
    is_user: bool = False
    is_placeholder: bool = False
    provisional: bool = False
    same_as_hint: Name | None = None
    id: Id | None = None
    conversations: Ids | None = None


class EntityBefore(_Record):
    """The survivor of a merge as it was before (JSON text), so undo gives it back."""

    id: Id
    name: Name
    kind: Kind
    aliases: list[Name] = Field(max_length=MAX_ALIASES)
    is_self: bool = False
    confidence: Confidence | None
    provisional: bool = False
    properties: dict[PropertyKey, PropertyValue] = Field(max_length=MAX_PROPERTIES)
    conversations: Ids


class EdgeBetween(_Record):
    """A memory a merge by hand took off (it ran between the two), kept to be put back; its
    `props` are the edge's stored properties as a merge record encodes them."""

    label: Label
    props: dict[str, Any]
    from_survivor: bool
    said_in: Id | None = None

    @model_validator(mode="after")
    def _edge(self) -> EdgeBetween:
        # The edge's stored properties, encoded as in a merge record: the memory line's fields,
        # and the partition's user id, which the importer replaces with the target's.
        props = decode_props({k: v for k, v in self.props.items() if k != "user_id"})
        sightings = [json.loads(s) if isinstance(s, str) else s
                     for s in props.pop("sightings", None) or []]
        MemoryRecord.model_validate({**props, "sightings": sightings, "source_id": "a",
                                     "target_id": "b", "relation": self.label})
        return self


def _json_text(model: type[BaseModel]) -> Any:
    """A string field that holds JSON text of `model` (a stored merge record keeps some of
    its parts so); checked whole, kept as written."""
    adapter = TypeAdapter(model | None)

    def check(value: str) -> str:
        adapter.validate_json(value)
        return value

    return Annotated[str, StringConstraints(max_length=64 * MAX_PROPERTY_VALUE_CHARS),
                     AfterValidator(check)]


AbsorbedText = _json_text(AbsorbedEntity)
BeforeText = _json_text(EntityBefore)
BetweenText = _json_text(EdgeBetween)


class MergeFields(_Record):
    """A merge record's fields, exactly those a merge, a pending pair or an undo writes."""

    status: Literal["merged", "flagged", "pending", "undone"]
    rule: Word
    confidence: Confidence | None = None
    kind: Kind
    absorbed_name: Name
    survivor_id: Id
    survivor_name: Name | None = None
    absorbed: AbsorbedText | None = None
    before: BeforeText | None = None
    conversation_id: Id | None = None
    edge_ids: Ids = Field(default_factory=list)
    candidate_ids: Ids | None = None
    candidate_names: list[Name] | None = None
    between: list[BetweenText] | None = Field(None, max_length=MAX_LIST)
    created_at: Encoded | None = None
    undone_at: Encoded | None = None
    restored_id: Id | None = None

    @model_validator(mode="after")
    def _complete(self) -> MergeFields:
        # What undo and review read must be there (a record without it crashed them).
        if self.status == "pending":
            if not self.candidate_ids or self.candidate_names is None:
                raise ValueError("a pending pair names its candidates (candidate_ids, "
                                 "candidate_names)")
        elif self.absorbed is None or self.survivor_name is None:
            raise ValueError(f"a {self.status} merge keeps what it absorbed (absorbed, "
                             "survivor_name)")
        if self.status == "flagged" and self.confidence is None:
            raise ValueError("a flagged merge has its confidence")
        if self.status == "undone" and (self.undone_at is None or self.restored_id is None):
            raise ValueError("an undone merge has undone_at and restored_id")
        return self


class MergeRecordRecord(_Record):
    """A merge (undoable) or a pair pending review, as stored (instants as
    {"$datetime": ISO 8601})."""

    type: Literal["merge_record"] = "merge_record"
    id: Id
    record: MergeFields


Record = Annotated[Header | EntityRecord | MemoryRecord | ConversationRecord | MergeRecordRecord,
                   Field(discriminator="type")]
RECORD = TypeAdapter(Record)
ORDER = ["header", "entity", "memory", "conversation", "merge_record"]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of the format."""
    schema = RECORD.json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"{FORMAT} v{VERSION}: one line",
            "description": "A JSON Lines file: a header line, then entity, memory, "
                           "conversation and merge_record lines, in that order.", **schema}


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(json_schema(), indent=2) + "\n")
    print(f"wrote {SCHEMA_FILE}")
