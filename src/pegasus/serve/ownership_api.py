"""See, correct, forget, export and import one's memory (design §10–§11) under /v1/memory, each
scoped to the key's user: an id of another user's memory is not found (404), never forbidden,
so existence does not leak."""

from __future__ import annotations

import tempfile
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from pegasus.models.reports import Correction, ForgetReport, ImportReport, UndoResult
from pegasus.models.views import MEMORY_STATES, MemoryEdge, MemoryHistory
from pegasus.serve.http import (
    ID_PATTERN,
    User,
    client_at,
    error_responses,
    in_thread,
    memory_of,
    refuse_while_down,
    streamed_export,
)
from pegasus.transfer import history
from pegasus.transfer.history import HistoryReport

router = APIRouter()
found = error_responses(400, 401, 404, 409, 422, 503)

EntityPath = Annotated[str, Path(min_length=1, max_length=200, pattern=ID_PATTERN,
                                 description="Name, alias or id")]
MemoryPath = Annotated[str, Path(min_length=1, max_length=200, pattern=ID_PATTERN)]


# --- request bodies --------------------------------------------------------------------


class MemoriesPage(BaseModel):
    memories: list[MemoryEdge]
    next_offset: int | None = Field(description="The offset of the next page; null at the end")


class RetractRequest(BaseModel):
    undo: bool = Field(False, description="Take the retraction back")
    at: datetime | None = None


class MemoryPatch(BaseModel):
    other_end: str | None = Field(None, min_length=1, max_length=200, pattern=ID_PATTERN,
                                  description="The right other end: an entity's name, alias "
                                  "or id (a new entity of the old one's kind when none has it)")
    words: str | None = Field(None, min_length=1, max_length=2000,
                              description="The right words, as the person would say them")
    since: datetime | None = Field(None, description="When it began")
    until: datetime | None = Field(None, description="When it ends")
    no_end: bool = Field(False, description="It has no end (drops the one it had)")
    at: datetime | None = None


class EntityPatch(BaseModel):
    name: str | None = Field(None, min_length=1, max_length=200, pattern=ID_PATTERN,
                             description="The right name (the old one is dropped)")
    add_aliases: list[str] = Field(default_factory=list, max_length=50)
    remove_aliases: list[str] = Field(default_factory=list, max_length=50)
    at: datetime | None = None


class MergeRequest(BaseModel):
    keep: str = Field(min_length=1, max_length=200, pattern=ID_PATTERN,
                      description="The entity that stays: name, alias or id")
    absorb: str = Field(min_length=1, max_length=200, pattern=ID_PATTERN,
                        description="The entity that is the same and goes into it")
    at: datetime | None = None


# --- routes ------------------------------------------------------------------------------


@router.get("/v1/memory/edges", response_model=MemoriesPage, responses=found,
            tags=["ownership"], summary="The user's memories, filtered, one page")
async def list_memories(
    user: User, request: Request,
    about: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    state: Annotated[str, Query(pattern=f"^({'|'.join(MEMORY_STATES)}|all)$")] = "current",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> dict[str, Any]:
    page = await in_thread(request, memory_of(request).memories, user, about, state, limit,
                           offset)
    return {"memories": page, "next_offset": offset + limit if len(page) == limit else None}


@router.get("/v1/memory/edges/{memory_id}", response_model=MemoryHistory, responses=found,
            tags=["ownership"], summary="One memory with its history")
async def one_memory(memory_id: MemoryPath, user: User, request: Request) -> MemoryHistory:
    return await in_thread(request, memory_of(request).memory, user, memory_id)


@router.post("/v1/memory/edges/{memory_id}/retract", response_model=Correction,
             responses=found, tags=["ownership"],
             summary="Retract a wrong memory (never recalled again), or undo that")
async def retract(memory_id: MemoryPath, body: RetractRequest, user: User,
                  request: Request) -> Correction:
    at = client_at(request, body.at)
    return await in_thread(request, memory_of(request).retract, user, memory_id, at,
                           body.undo)


@router.patch("/v1/memory/edges/{memory_id}", response_model=Correction, responses=found,
              tags=["ownership"],
              summary="Correct a memory in place (other end, words, dates); undoable")
async def correct_memory(memory_id: MemoryPath, body: MemoryPatch, user: User,
                         request: Request) -> Correction:
    at = client_at(request, body.at)
    return await in_thread(request, memory_of(request).correct_memory, user, memory_id,
                           body.other_end, body.words, body.since, body.until, body.no_end,
                           at, "api")


@router.post("/v1/memory/edges/{memory_id}/undo-correction", response_model=Correction,
             responses=found, tags=["ownership"],
             summary="Undo a correction (by the correction's id): the old version is back")
async def undo_correction(memory_id: MemoryPath, body: RetractRequest, user: User,
                          request: Request) -> Correction:
    at = client_at(request, body.at)
    return await in_thread(request, memory_of(request).correct_memory, user, memory_id, None,
                           None, None, None, False, at, "api", True)


@router.delete("/v1/memory/edges/{memory_id}", response_model=ForgetReport, responses=found,
               tags=["ownership"], summary="Forget one memory (erasure)")
async def forget_memory(memory_id: MemoryPath, user: User, request: Request
                        ) -> ForgetReport:
    return await in_thread(request, memory_of(request).forget_memory, user, memory_id)


@router.patch("/v1/memory/entities/{entity}", response_model=Correction, responses=found,
              tags=["ownership"], summary="Rename an entity, add or remove aliases")
async def patch_entity(entity: EntityPath, body: EntityPatch, user: User,
                       request: Request) -> Correction:
    at = client_at(request, body.at)
    return await in_thread(request, memory_of(request).correct_entity, user, entity, body.name,
                           body.add_aliases, body.remove_aliases, at)


@router.post("/v1/memory/entities/merge", response_model=Correction, responses=found,
             tags=["ownership"], summary="Merge two entities that are one (undoable)")
async def merge_entities(body: MergeRequest, user: User, request: Request) -> Correction:
    at = client_at(request, body.at)
    return await in_thread(request, memory_of(request).merge_entities, user, body.keep,
                           body.absorb, at)


@router.post("/v1/memory/merges/{record_id}/undo", response_model=UndoResult,
             responses=found, tags=["ownership"],
             summary="Undo a merge (by hand or by the rules): both entities as they were")
async def undo_merge(record_id: MemoryPath, user: User, request: Request) -> UndoResult:
    return await in_thread(request, memory_of(request).undo_merge, user, record_id)


@router.delete("/v1/memory/entities/{entity}", response_model=ForgetReport, responses=found,
               tags=["ownership"], summary="Forget one entity with all its memories")
async def forget_entity(entity: EntityPath, user: User, request: Request) -> ForgetReport:
    return await in_thread(request, memory_of(request).forget_entity, user, entity)


@router.delete("/v1/memory/conversations/{conversation_id}", response_model=ForgetReport,
               responses=found, tags=["ownership"],
               summary="Forget one conversation: what only it taught, and its words")
async def forget_conversation(conversation_id: MemoryPath, user: User, request: Request
                              ) -> ForgetReport:
    return await in_thread(request, memory_of(request).forget_conversation, user,
                           conversation_id)


@router.get("/v1/memory/export", tags=["ownership"], responses=error_responses(401, 422, 503),
            summary="Export this user's memory (JSON Lines, format v1)",
            response_class=StreamingResponse)
async def export(user: User, request: Request, with_turns: bool = False
                 ) -> StreamingResponse:
    return await streamed_export(request, user, with_turns)


@router.post("/v1/memory/import", response_model=ImportReport,
             responses=error_responses(400, 401, 409, 413, 422, 503), tags=["ownership"],
             summary="Import an export file as this user's memory (the request body)",
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/x-ndjson": {"schema": {"type": "string"}}}}})
async def import_memory(user: User, request: Request, replace: bool = False
                        ) -> ImportReport:
    refuse_while_down(request)  # before the body is spooled: it could not be imported
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as spool:
        async for chunk in request.stream():
            spool.write(chunk)
        spool.flush()
        return await in_thread(request, memory_of(request).import_memory, user, spool.name,
                               replace, bounded=False)


@router.post("/v1/memory/import-history", response_model=HistoryReport,
             responses=error_responses(400, 401, 413, 422, 503), tags=["ownership"],
             summary="Bring in past conversations: ChatGPT's or Claude's conversations.json "
                     "(or the export's zip) as the request body",
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/json": {"schema": {"type": "array"}},
                 "application/zip": {"schema": {"type": "string", "format": "binary"}}}}})
async def import_history(user: User, request: Request, dry_run: bool = False
                         ) -> HistoryReport:
    """Each conversation recorded with its own dates (a second import of the file adds
    nothing); the new ones are extracted in the background, oldest first. `dry_run`: the
    estimate of model calls and tokens only."""
    return await history_import(request, user, await request.body(), dry_run)


async def history_import(request: Request, user: str, raw: bytes, dry_run: bool
                         ) -> HistoryReport:
    """The import both the API and the page run: checked whole, recorded, then the backlog
    handed to the close worker (one extraction at a time, after the closes waiting)."""
    memory = memory_of(request)
    data = await in_thread(request, history.read, raw, bounded=False)
    report = await in_thread(request, history.import_history, memory, user, data, dry_run,
                             False, bounded=False)
    if report.recorded and memory.extraction.on:
        request.app.state.conversations.extract_backlog()
    return report


@router.delete("/v1/memory", response_model=ForgetReport, responses=found,
               tags=["ownership"], summary="Forget everything of this user (confirm=everything)")
async def forget_everything(
    user: User, request: Request,
    confirm: Annotated[str, Query(pattern="^everything$",
                                  description="Must be `everything`")],
) -> ForgetReport:
    return await in_thread(request, memory_of(request).forget_everything, user, bounded=False)
