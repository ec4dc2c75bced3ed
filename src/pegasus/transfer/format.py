"""The export format, version 1: JSON Lines, one record per line, in this order: a header, the
entities, the memories, the conversations, the merge records (design §11). These models are
the format's definition; `schemas/pegasus-export-v1.schema.json` is generated from them
(`python -m pegasus.transfer.format`) and a test holds the two equal."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from pegasus.models import (
    MAX_ALIASES,
    MAX_NAME_CHARS,
    MAX_SNIPPET_CHARS,
    MAX_SUMMARY_CHARS,
    MAX_TAGS,
    Sighting,
)
from pegasus.vocab import Cardinality, Kind, Stability

FORMAT = "pegasus-memory-export"
VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parent / "pegasus-export-v1.schema.json"
# Fields a second export of an imported memory has anew: when it was exported, and the
# header's source user id when imported under another one. Everything else is identical.
REGENERATED = {"header": ["exported_at", "user_id"]}

Id = Annotated[str, Field(min_length=1, max_length=200)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
Label = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+){0,3}$", max_length=100)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Header(_Record):
    """The first line: which format, which version, whose memory."""

    type: Literal["header"] = "header"
    format: Literal["pegasus-memory-export"] = FORMAT
    version: int
    user_id: Id
    exported_at: datetime
    with_turns: bool = False


class EntityRecord(_Record):
    """An entity: names, properties, confidence, the conversations that cited it."""

    type: Literal["entity"] = "entity"
    id: Id
    name: Name
    kind: Kind
    aliases: list[Name] = Field(default_factory=list, max_length=MAX_ALIASES)
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = None
    conversations: list[Id] = Field(default_factory=list)
    provisional: bool = False
    is_self: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None


class MemoryRecord(_Record):
    """A memory edge with its full state, its words and every sighting."""

    type: Literal["memory"] = "memory"
    id: Id
    source_id: Id
    relation: Label
    target_id: Id
    strength: float
    strength_at_touch: float
    touched_at: datetime
    confidence: float | None = None
    stability: Stability
    cardinality: Cardinality
    expires_at: datetime | None = None
    dormant: bool = False
    expired: bool = False
    superseded_at: datetime | None = None
    superseded_by: Id | None = None
    superseded_in: Id | None = None
    retracted_at: datetime | None = None
    snippet: str = Field(max_length=MAX_SNIPPET_CHARS)
    evidence: str | None = Field(None, max_length=MAX_SNIPPET_CHARS)
    said_at: datetime | None = None  # when the words shown were said
    said_in: Id | None = None  # and in which conversation
    conversations: list[Id] = Field(default_factory=list)
    sightings: list[Sighting] = Field(default_factory=list)
    reinforcements: int = 0
    reinforced_at: list[datetime] = Field(default_factory=list)
    created_at: datetime | None = None


class ConversationRecord(_Record):
    """A conversation: dates, summary, importance, tags, status, the entities it mentions;
    its recorded turns only when exported with them."""

    type: Literal["conversation"] = "conversation"
    id: Id
    status: str | None = None
    summary: str | None = Field(None, max_length=MAX_SUMMARY_CHARS)
    importance: float | None = None
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    source: str | None = None
    batch_hash: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    committed_at: datetime | None = None
    closed_at: datetime | None = None
    mentions: list[Id] = Field(default_factory=list)
    read_log: list[str] = Field(default_factory=list)
    reads_reinforced: int = 0
    turns: list[dict[str, Any]] | None = None


class MergeRecordRecord(_Record):
    """A merge (undoable) or a pair pending review, as stored (instants as ISO 8601)."""

    type: Literal["merge_record"] = "merge_record"
    id: Id
    record: dict[str, Any]


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
