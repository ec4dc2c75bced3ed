"""What a write did: commit, decay, merge undo, correction, erasure and import reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from pegasus.models.batch import Dropped

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
    # secrets replaced by a marker before anything was stored, by kind (pegasus.screen)
    secrets_removed: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class Recorded(BaseModel):
    """What recording turns did: the transcript's size, the turns recorded now (a resent one is
    not), whether the conversation is new, and its user turns not consolidated yet."""

    turns: int
    recorded: int = 0
    created: bool = False
    pending: int = 0


class Extracted(BaseModel):
    """What extracting a conversation's turns not consolidated yet did: `extracted` (with the
    commit's report), `empty` (no user turn left to extract), or `awaiting` (no model can:
    `why`); `turns`: how many of its turns are consolidated now."""

    outcome: Literal["extracted", "empty", "awaiting"]
    report: CommitReport | None = None
    why: str = ""
    turns: int = 0


class DecayReport(BaseModel):
    at: datetime
    edges: int = 0
    dormant_now: int = 0
    dormant_total: int = 0
    expired_now: int = 0
    batches: int = 0
    turns_purged: int = 0  # conversations whose recorded turns passed their retention


class UndoResult(BaseModel):
    """What `Memory.undo_merge` split: the survivor and the restored entity."""

    survivor: str
    restored: str
    restored_id: str
    edges_moved: int


class Correction(BaseModel):
    """What a correction changed: a retracted, restored or corrected memory, a renamed or
    merged entity."""

    action: str
    memory_id: str | None = None
    corrected_id: str | None = None  # the version a correction replaced (its history)
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
    # secrets replaced by a marker before anything was written, by kind (pegasus.screen)
    secrets_removed: dict[str, int] = Field(default_factory=dict)
