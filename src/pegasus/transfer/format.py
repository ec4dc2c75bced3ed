"""The export format, version 1: JSON Lines, one record per line, in this order: a header, the
entities, the memories, the conversations, the merge records, and (from minor version 1) an
end line that counts them, so a reader knows the file is whole (design §11). From minor
version 2 a memory carries its corrections in place (design §10) and a conversation how far
its turns were consolidated. These models are
the format's definition; `schemas/pegasus-export-v1.schema.json` is generated from them
(`python -m pegasus.transfer.format`) and a test holds the two equal."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    field_validator,
    model_validator,
)

from pegasus.clock import now
from pegasus.merge import records
from pegasus.models.batch import (
    MAX_ENTITY_ALIASES,
    MAX_ENTITY_PROPERTIES,
    MAX_SUMMARY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TURN_CHARS,
)
from pegasus.models.fields import (
    MAX_ID_CHARS,
    MAX_LIST,
    Confidence,
    Count,
    Id,
    Ids,
    Instant,
    IsoText,
    Label,
    Name,
    PropertyKey,
    PropertyValue,
    Word,
    Words,
)
from pegasus.portable import decode_props, strict_json
from pegasus.settings import Settings
from pegasus.vocab import Cardinality, Kind, Stability, Surface

FORMAT: Final = "pegasus-memory-export"
VERSION = 1
# Minor versions add what an older reader of the same version can do without: 1 added the end
# line, 2 the fields in ADDED. A header without `minor` is 1.0 (files exported before it), read
# as they always were; a file holds only what its minor version has.
MINOR = 2
# The fields each minor version added, by record type. 2: a memory's corrections (a correction
# names the version it corrects, both versions say through which surface, the corrected one
# when: design §10), and a conversation's place in its life (design §9).
ADDED: dict[int, dict[str, tuple[str, ...]]] = {2: {
    "memory": ("corrects", "corrected_at", "corrected_via"),
    "conversation": ("extracted_turns", "awaiting_extraction", "last_active_at",
                     "last_read_at", "extracted_at"),
}}
SCHEMA_FILE = Path(__file__).resolve().parent / "pegasus-export-v1.schema.json"
# Fields a second export of an imported memory has anew: when it was exported, and the
# header's source user id when imported under another one. Everything else is identical.
REGENERATED = {"header": ["exported_at", "user_id"]}
# A conversation's turns together hold at most what a recorded transcript may; one turn at
# most what one recorded turn may (models.MAX_TURN_CHARS, as on /turns and the proxy).
MAX_TRANSCRIPT_CHARS = Settings.model_fields["max_transcript_chars"].default
# How far past this server's clock a file's `touched_at` may lie: the exporting machine's
# clock may run ahead of this one's, by a day at most.
IMPORT_CLOCK_SKEW = timedelta(days=1)


def _not_ahead(value: datetime) -> datetime:
    # What a file says happened (a memory said, touched, reinforced, a conversation closed)
    # cannot lie ahead of this server's clock by more than its skew (design §6, "Who sets
    # the clock"): a memory dated 9999 would never decay and be quoted with that date.
    if value > now() + IMPORT_CLOCK_SKEW:
        raise ValueError(f"{value.isoformat()} lies in the future (what a file says happened "
                         "cannot have happened yet)")
    return value


# An instant of the past (every date of a file but a memory's `expires_at`).
Past = Annotated[Instant, AfterValidator(_not_ahead)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Header(_Record):
    """The first line: which format, which version, whose memory (for the report only: an
    import always goes into the partition of the user it is run for)."""

    type: Literal["header"] = "header"
    format: Literal["pegasus-memory-export"] = FORMAT
    version: int
    minor: Count = 0
    user_id: Id
    exported_at: Past
    with_turns: bool = False


class EntityRecord(_Record):
    """An entity: names, properties, confidence, the conversations that cited it."""

    type: Literal["entity"] = "entity"
    id: Id
    name: Name
    kind: Kind
    aliases: list[Name] = Field(default_factory=list, max_length=MAX_ENTITY_ALIASES)
    properties: dict[PropertyKey, PropertyValue] = Field(default_factory=dict,
                                                         max_length=MAX_ENTITY_PROPERTIES)
    confidence: Confidence | None = None
    conversations: Ids = Field(default_factory=list)
    provisional: bool = False
    is_self: bool = False
    created_at: Past | None = None
    updated_at: Past | None = None


class SightingRecord(_Record):
    """One conversation's sighting of a memory (stored as JSON text on the edge)."""

    @field_validator("at")
    @classmethod
    def _a_past_instant(cls, value: str | None) -> str | None:
        # IsoText has checked it is an ISO 8601 instant with its offset
        if value is not None:
            _not_ahead(datetime.fromisoformat(value))
        return value

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
    touched_at: Past
    confidence: Confidence | None = None
    stability: Stability
    cardinality: Cardinality
    expires_at: Instant | None = None
    dormant: bool = False
    expired: bool = False
    superseded_at: Past | None = None
    superseded_by: Id | None = None
    superseded_in: Id | None = None
    retracted_at: Past | None = None
    # 1.2 on (CORRECTION_FIELDS). Who corrected it is the partition's owner: never in the file,
    # the importer writes the user it imports for.
    corrects: Id | None = None  # a correction: the id of the version it replaced
    corrected_at: Past | None = None  # a corrected version: when the person corrected it
    corrected_via: Surface | None = None  # either: through which surface
    snippet: Words
    evidence: Words | None = None
    said_at: Past | None = None  # when the words shown were said
    said_in: Id | None = None  # and in which conversation
    conversations: Ids = Field(default_factory=list)
    sightings: list[SightingRecord] = Field(default_factory=list, max_length=MAX_LIST)
    reinforcements: Count = 0
    reinforced_at: list[Past] = Field(default_factory=list, max_length=MAX_LIST)
    created_at: Past | None = None



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
    started_at: Past | None = None
    ended_at: Past | None = None
    committed_at: Past | None = None
    closed_at: Past | None = None
    mentions: Ids = Field(default_factory=list)
    # three ids, each escaped ("/" → "%2F": up to three characters for one)
    read_log: list[Annotated[str, StringConstraints(max_length=9 * MAX_ID_CHARS + 2)]] = Field(
        default_factory=list, max_length=MAX_LIST)
    reads_reinforced: Count = 0
    turns: list[TurnRecord] | None = None
    # 1.2 on (ADDED). With its turns only: how many of them are consolidated (the next
    # extraction reads the rest), and that it closed waiting for an LLM to extract them.
    extracted_turns: Count | None = None
    awaiting_extraction: Literal[True] | None = None
    last_active_at: Past | None = None  # its last recorded turn
    last_read_at: Past | None = None  # its last recall
    extracted_at: Past | None = None  # extracted from the backlog (turns kept from then)

    @model_validator(mode="after")
    def _transcript_limit(self) -> ConversationRecord:
        if sum(len(t.content) for t in self.turns or []) > MAX_TRANSCRIPT_CHARS:
            raise ValueError(f"turns: longer than a transcript may be ({MAX_TRANSCRIPT_CHARS} "
                             "characters together)")
        return self

    @model_validator(mode="after")
    def _of_its_turns(self) -> ConversationRecord:
        if self.turns is None:
            for field in ("extracted_turns", "awaiting_extraction"):
                if getattr(self, field) is not None:
                    raise ValueError(f"{field}: only with the conversation's turns")
        elif (self.extracted_turns or 0) > len(self.turns):
            raise ValueError(f"extracted_turns: {self.extracted_turns} of "
                             f"{len(self.turns)} turns")
        return self


# What a stored memory holds that names its partition's owner: never a memory record's (the
# importer writes the user it imports for), kept in a merge record's taken-off memories.
OWNER_PROPS = ("user_id", "corrected_by")


class EdgeBetween(records.EdgeBetween):
    """A memory a merge by hand took off, as a file may hold it: a memory the format accepts
    (undo writes it back as it is; the importer puts its own user id in it)."""

    @model_validator(mode="after")
    def _edge(self) -> EdgeBetween:
        # An edge's own properties only: its ends and label are the record's, never the file's
        # (a map here passed the check and broke the undo).
        placed = sorted(set(self.props) & {"source_id", "target_id", "relation", "type"})
        if placed:
            raise ValueError(f"props: {placed[0]!r} is not a property a memory stores")
        props = decode_props({k: v for k, v in self.props.items() if k not in OWNER_PROPS})
        sightings = [strict_json(s) if isinstance(s, str) else s
                     for s in props.pop("sightings", None) or []]
        MemoryRecord.model_validate({**props, "sightings": sightings, "source_id": "a",
                                     "target_id": "b", "relation": self.label})
        return self


if TYPE_CHECKING:  # to the type checker, a part stored as text is its model
    BetweenText = EdgeBetween
else:
    BetweenText = records.stored_as_text(EdgeBetween)


class MergeFields(records.MergeFields):
    """A merge record's fields (merge/records.py), its taken-off memories checked as memories."""

    # Narrower than the base's list (an import's records are read, never appended to).
    between: list[BetweenText] = Field(  # type: ignore[assignment]
        default_factory=list, max_length=MAX_LIST)


class MergeRecordRecord(_Record):
    """A merge (undoable) or a pair pending review, as stored (instants as
    {"$datetime": ISO 8601})."""

    type: Literal["merge_record"] = "merge_record"
    id: Id
    record: MergeFields

    @field_validator("record", mode="before")
    @classmethod
    def _upgraded(cls, value: Any) -> Any:
        # A file exported before V0011 may hold a record in either older shape.
        return records.upgrade(value) if isinstance(value, dict) else value


class End(_Record):
    """The last line (minor version 1 on): how many records of each kind the file holds. A file
    whose header says minor 1 or later and that does not end with it was cut short (an export
    that failed mid-way, a copy that stopped): an import refuses it."""

    type: Literal["end"] = "end"
    entities: Count
    memories: Count
    conversations: Count
    merge_records: Count


Record = Annotated[Header | EntityRecord | MemoryRecord | ConversationRecord | MergeRecordRecord
                   | End, Field(discriminator="type")]
RECORD = TypeAdapter(Record)
ORDER = ["header", "entity", "memory", "conversation", "merge_record", "end"]
# The end line's field for each kind it counts.
COUNTED = {"entity": "entities", "memory": "memories", "conversation": "conversations",
           "merge_record": "merge_records"}


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of the format."""
    schema = RECORD.json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"{FORMAT} v{VERSION}: one line",
            "description": "A JSON Lines file: a header line, then entity, memory, "
                           "conversation and merge_record lines, in that order, then (minor "
                           "version 1 on: the header's `minor`) an end line counting them; a "
                           "file whose header has minor >= 1 and that lacks the end line is "
                           "incomplete. A memory's correction fields (corrects, corrected_at, "
                           "corrected_via) are minor version 2 on.", **schema}


if __name__ == "__main__":
    SCHEMA_FILE.write_text(json.dumps(json_schema(), indent=2) + "\n")
    print(f"wrote {SCHEMA_FILE}")
