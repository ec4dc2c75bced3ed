"""The memory API under /v1/memory: recall, commit, remember, record turns, close, consolidate,
look an entity up, list merges. Every route acts for the API key's user only."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, Field

from pegasus.clock import aware
from pegasus.errors import ConfigError
from pegasus.models.batch import ExtractionBatch, Turn
from pegasus.models.reports import CommitReport, DecayReport
from pegasus.models.views import EntityView, MergeRecord
from pegasus.serve.http import (
    ID,
    ID_PATTERN,
    User,
    client_at,
    error_responses,
    in_thread,
    memory_of,
)

MEMORY_ERRORS = error_responses(400, 401, 422, 503)
router = APIRouter()


# --- request and response bodies -------------------------------------------------------


class RecallRequest(BaseModel):
    text: str = Field(max_length=2_000_000, description="The user's message")
    conversation_id: str | None = Field(None, min_length=1, max_length=200, pattern=ID_PATTERN,
                                        description="Log the read on this conversation")
    at: datetime | None = Field(None, description="A fixed clock (ISO-8601)")


class FiredNodeOut(BaseModel):
    name: str
    kind: str
    score: float
    direction: str
    hop: int


class RecallResponse(BaseModel):
    memory: list[str]
    context: list[str]
    nodes: list[FiredNodeOut]
    text: str


class CommitRequest(BaseModel):
    conversation_id: str = ID
    batch: ExtractionBatch
    transcript: list[Turn] | None = None
    at: datetime | None = None


class RememberRequest(BaseModel):
    conversation_id: str = ID
    turns: list[Turn] = Field(max_length=100_000)
    at: datetime | None = None


class RecordedTurn(Turn):
    id: str | None = Field(None, min_length=1, max_length=200, pattern=ID_PATTERN,
                           description="The client's id for this turn: a turn sent again "
                                       "with the same id is recorded once")


class TurnsRequest(BaseModel):
    conversation_id: str = Field(min_length=1, max_length=180, pattern=ID_PATTERN,
                                 description="The client's conversation id; after it was "
                                             "closed, turns go to its continuation (id.2 …)")
    turns: list[RecordedTurn] = Field(min_length=1, max_length=1_000)
    at: datetime | None = None


class TurnsResponse(BaseModel):
    conversation_id: str = Field(description="Where the turns were recorded")
    turns: int = Field(description="How many turns that conversation now holds")
    extraction: str = Field(description='Whether this conversation will be extracted when it '
                                        'closes: "on: <model> via <where>", or "off: <why and '
                                        'what to set>" (it then waits, turns kept)')


class CloseRequest(BaseModel):
    conversation_id: str = ID
    at: datetime | None = None


class CloseResponse(BaseModel):
    conversation_id: str
    reinforced: int


class ConsolidateRequest(BaseModel):
    at: datetime | None = None


# --- routes ------------------------------------------------------------------------------


@router.post("/v1/memory/recall", response_model=RecallResponse, responses=MEMORY_ERRORS,
             tags=["memory"], summary="What a message recalls ([MEMORY]/[CONTEXT])")
async def recall(body: RecallRequest, user: User, request: Request) -> dict[str, Any]:
    at = client_at(request, body.at)
    with request.app.state.metrics.recall_seconds.time():
        result = await in_thread(request, memory_of(request).recall, user, body.text,
                                 body.conversation_id, at)
    return result.as_json()


@router.post("/v1/memory/commit", response_model=CommitReport,
             responses=error_responses(400, 401, 409, 422, 503), tags=["memory"],
             summary="Commit an extraction batch (no LLM)")
async def commit(body: CommitRequest, user: User, request: Request) -> CommitReport:
    at = client_at(request, body.at)
    transcript = [t.model_dump() for t in body.transcript] if body.transcript else None
    return await in_thread(request, memory_of(request).commit, user, body.conversation_id,
                           body.batch, at, transcript, bounded=False)


@router.post("/v1/memory/remember", response_model=CommitReport,
             responses=error_responses(400, 401, 409, 413, 422, 502, 503), tags=["memory"],
             summary="Extract a transcript with the LLM, then commit it")
async def remember(body: RememberRequest, user: User, request: Request) -> CommitReport:
    at = client_at(request, body.at)
    memory = memory_of(request)
    if not memory.has_llm:
        raise ConfigError("no LLM configured (PEGASUS_LLM_MODEL): use /v1/memory/commit "
                          "with an extraction batch instead")
    return await in_thread(request, memory.remember, user, body.conversation_id,
                           body.turns, at, bounded=False)


@router.post("/v1/memory/turns", response_model=TurnsResponse,
             responses=error_responses(400, 401, 413, 422, 503), tags=["memory"],
             summary="Record turns of a conversation as they happen (closed later: "
                     "POST /v1/conversations/{id}/close, or after idle_close_s)")
async def turns(body: TurnsRequest, user: User, request: Request) -> dict[str, Any]:
    at = client_at(request, body.at)
    conversations = request.app.state.conversations

    def record() -> dict[str, Any]:
        conversation_id = conversations.resolve(user, body.conversation_id)
        count = conversations.record(
            user, conversation_id,
            [t.model_dump(exclude_none=True) for t in body.turns], at or aware(None),
            source="client")
        memory = request.app.state.memory
        return {"conversation_id": conversation_id, "turns": count,
                "extraction": memory.extraction_for(memory.model_of(user, None)).describe()}

    return await in_thread(request, record)


@router.post("/v1/memory/close", response_model=CloseResponse, responses=MEMORY_ERRORS,
             tags=["memory"], summary="Close a conversation: reinforce what its reads used")
async def close(body: CloseRequest, user: User, request: Request) -> dict[str, Any]:
    at = client_at(request, body.at)
    count = await in_thread(request, memory_of(request).close_conversation, user,
                            body.conversation_id, at)
    return {"conversation_id": body.conversation_id, "reinforced": count}


@router.post("/v1/memory/consolidate", response_model=DecayReport, responses=MEMORY_ERRORS,
             tags=["memory"], summary="The decay pass over this user's memory")
async def consolidate(body: ConsolidateRequest, user: User, request: Request
                      ) -> DecayReport:
    at = client_at(request, body.at)
    return await in_thread(request, memory_of(request).consolidate, at, user,
                           bounded=False)


@router.get("/v1/memory/entities/{name}", response_model=list[EntityView],
            responses=error_responses(400, 401, 404, 422, 503), tags=["memory"],
            summary="An entity by name or alias, with its strongest current edges")
async def entity(name: Annotated[str, Path(min_length=1, max_length=500)], user: User,
                 request: Request) -> list[EntityView]:
    return await in_thread(request, memory_of(request).entities, user, name)


@router.get("/v1/memory/merges", response_model=list[MergeRecord], responses=MEMORY_ERRORS,
            tags=["memory"], summary="Flagged merges to inspect (and pending candidates)")
async def merges(user: User, request: Request, pending: bool = False
                 ) -> list[MergeRecord]:
    return await in_thread(request, memory_of(request).merges, user, pending)
