"""The FastAPI application: the memory API under /v1/memory, the proxy beside it.

Every route authenticates with an API key (Authorization: Bearer, or x-api-key) that maps to one
user; that user id is the only
one a request can read or write. Errors come back as `{"error": {"message", "type"}}` with a
status that says what to do: 401 (key), 404, 409 (conversation conflict), 413 (a turn or a
transcript over its limit), 422 (bad input), 502 (the upstream or the LLM failed), 503 (Neo4j
or configuration).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any

import httpx
from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from pegasus.clock import aware
from pegasus.errors import (
    AmbiguousEntityError,
    ConfigError,
    ConversationConflictError,
    ExtractionError,
    InvalidBatchError,
    Neo4jUnavailableError,
    NotFoundError,
    PartitionNotEmptyError,
    PegasusError,
    TooLargeError,
)
from pegasus.lifecycle import next_daily_run
from pegasus.memory import Memory
from pegasus.models.batch import ExtractionBatch, Turn, describe_validation_error
from pegasus.models.reports import (
    CommitReport,
    Correction,
    DecayReport,
    ForgetReport,
    ImportReport,
    UndoResult,
)
from pegasus.models.views import MEMORY_STATES, EntityView, MemoryEdge, MemoryHistory, MergeRecord
from pegasus.serve.anthropic import router as anthropic_router
from pegasus.serve.auth import KeyRing, load_keys
from pegasus.serve.conversations import Conversations
from pegasus.serve.http import (
    ID,
    ID_PATTERN,
    Unauthorized,
    User,
    error,
    error_responses,
    in_thread,
)
from pegasus.serve.metrics import Health, Metrics, add_routes
from pegasus.serve.observe import add_middleware, kind_of
from pegasus.serve.page import router as page_router
from pegasus.serve.proxy import router
from pegasus.serve.responses import router as responses_router
from pegasus.settings import secret_text

log = logging.getLogger("pegasus.serve")

MEMORY_ERRORS = error_responses(400, 401, 422, 503)
_STATUS: list[tuple[type[PegasusError], int, str]] = [
    (TooLargeError, 413, "too_large_error"),
    (InvalidBatchError, 422, "invalid_request_error"),
    (NotFoundError, 404, "not_found_error"),
    (ConversationConflictError, 409, "conflict_error"),
    (AmbiguousEntityError, 409, "ambiguous_error"),
    (PartitionNotEmptyError, 409, "conflict_error"),
    (ExtractionError, 502, "extraction_error"),
    (Neo4jUnavailableError, 503, "unavailable_error"),
    (ConfigError, 503, "configuration_error"),
    (PegasusError, 400, "invalid_request_error"),
]




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


class MemoriesPage(BaseModel):
    memories: list[MemoryEdge]
    next_offset: int | None = Field(description="The offset of the next page; null at the end")


class RetractRequest(BaseModel):
    undo: bool = Field(False, description="Take the retraction back")
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


# --- the application -----------------------------------------------------------------------


def create_app(memory: Memory, upstream: httpx.AsyncClient | None = None) -> FastAPI:
    """The API for one Memory. `upstream` overrides the client built from the settings."""
    settings = memory.settings

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = upstream
        if client is None and settings.upstream_base_url:
            headers = ({"Authorization": f"Bearer {secret_text(settings.upstream_api_key)}"}
                       if settings.upstream_api_key else {})
            client = httpx.AsyncClient(base_url=settings.upstream_base_url.rstrip("/") + "/",
                                       headers=headers, timeout=settings.upstream_timeout_s)
        app.state.upstream = client
        anthropic = None
        if settings.anthropic_upstream_base_url:
            headers = ({"x-api-key": secret_text(settings.anthropic_upstream_api_key)}
                       if settings.anthropic_upstream_api_key else {})
            anthropic = httpx.AsyncClient(
                base_url=settings.anthropic_upstream_base_url.rstrip("/") + "/",
                headers=headers, timeout=settings.upstream_timeout_s)
        app.state.anthropic_upstream = anthropic
        await app.state.health.check()  # the first answer of /readyz is already known
        if memory.has_llm:  # what closed while no LLM was configured, in order, once each
            app.state.conversations.extract_backlog()
        tasks = [asyncio.create_task(_watch_neo4j(app)), asyncio.create_task(_sweep_idle(app))]
        if settings.decay_in_serve:
            tasks.append(asyncio.create_task(_daily_decay(app)))
        try:
            yield
        finally:
            # Every step runs, whatever the one before it raised (a loop's last error, Neo4j
            # away while a close is released): nothing is left open.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            steps: list[Callable[[], Awaitable[object]]] = [lambda: run_in_threadpool(
                app.state.conversations.shutdown, settings.shutdown_grace_s / 2)]
            if client is not None and upstream is None:
                steps.append(client.aclose)
            if anthropic is not None:
                steps.append(anthropic.aclose)
            if getattr(app.state, "owns_memory", False):
                steps.append(lambda: run_in_threadpool(memory.close))
            for step in steps:
                try:
                    await step()
                except Exception as exc:
                    log.warning("shutdown step failed: %s", kind_of(exc))

    # No /docs or /redoc: FastAPI's pages load their script from a CDN, which must never run on
    # the memory page's origin (it could read the signed-in page); /openapi.json stays.
    app = FastAPI(title="Pegasus", version="0.1.0", lifespan=lifespan, docs_url=None,
                  redoc_url=None,
                  description="Temporal, cross-conversation memory on Neo4j: the memory API and "
                              "a passive-memory proxy for OpenAI (Chat Completions, Responses) and "
                              "Anthropic (Messages) clients.")
    app.state.memory = memory
    app.state.keys = KeyRing(load_keys(settings))
    app.state.conversations = Conversations(memory)
    app.state.upstream = upstream
    app.state.anthropic_upstream = None
    app.state.health = Health(memory)
    app.state.metrics = Metrics(app.state.health)
    app.state.conversations.metrics = app.state.metrics

    @app.exception_handler(Unauthorized)
    async def _unauthorized(request: Request, exc: Unauthorized) -> JSONResponse:
        return error(401, "missing or unknown API key (send Authorization: Bearer <key>, or x-api-key)",
                     "authentication_error", {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(PegasusError)
    async def _pegasus_error(request: Request, exc: PegasusError) -> JSONResponse:
        status, kind = next((s, k) for cls, s, k in _STATUS if isinstance(exc, cls))
        return error(status, str(exc), kind)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, describe_validation_error(exc), "invalid_request_error")

    add_middleware(app)
    add_routes(app)
    _memory_routes(app)
    _ownership_routes(app)
    app.include_router(router)
    app.include_router(anthropic_router)
    app.include_router(responses_router)
    app.include_router(page_router)
    return app


def worker_app() -> FastAPI:
    """The app of one `pegasus serve --workers N` process: its own Memory from the settings
    (checked by the parent before the workers start), the model loaded before it answers."""
    from pegasus.settings import Settings

    memory = Memory(Settings())
    app = create_app(memory)
    memory.embedder.embed(["warm up"])
    app.state.owns_memory = True
    return app


async def _supervised(app: FastAPI, loop: str, body: Callable[[], Awaitable[None]],
                      pause: Callable[[], float]) -> None:
    """Run `body`, then wait `pause()` seconds, until cancelled. Every exception is logged by
    its kind (never its message: it may quote the user's words), counted in
    pegasus_background_errors_total, and the loop goes on (docs/reliability.md)."""
    while True:
        try:
            await body()
        except Exception as exc:
            log.warning("%s failed, tried again later: %s", loop, kind_of(exc))
            app.state.metrics.failed(loop, exc)
        await asyncio.sleep(pause())


async def _watch_neo4j(app: FastAPI) -> None:
    """Probe Neo4j every health_interval_s: /readyz and /metrics answer from it, and requests
    fail fast (503) while it does not answer."""
    settings = app.state.memory.settings
    await _supervised(app, "health", app.state.health.check,
                      lambda: settings.health_interval_s)


async def _daily_decay(app: FastAPI) -> None:
    """Decay runs by itself: once at start-up if the last pass is over a day old, then daily at
    decay_hour_utc. The claim in the graph keeps servers sharing a database from both running."""
    memory = app.state.memory

    async def decay() -> None:
        report = await run_in_threadpool(memory.consolidate_if_due)
        if report is not None:
            log.info("decay pass: %d edges, %d newly dormant", report.edges, report.dormant_now)

    def until_next_run() -> float:
        now = aware(None)
        return (next_daily_run(now, memory.settings.decay_hour_utc) - now).total_seconds()

    await _supervised(app, "decay", decay, until_next_run)


async def _sweep_idle(app: FastAPI) -> None:
    """Close recorded conversations left unused for idle_close_s, and run the closes that are
    due (retries, and those a previous server left `closing`): at start-up, then every
    idle_sweep_s."""
    settings = app.state.memory.settings

    async def sweep() -> None:
        await run_in_threadpool(app.state.conversations.sweep, app.state.keys.users,
                                aware(None), settings.idle_close_s)

    await _supervised(app, "idle_sweep", sweep, lambda: settings.idle_sweep_s)


def _memory_routes(app: FastAPI) -> None:
    def mem(request: Request) -> Memory:
        return request.app.state.memory

    @app.post("/v1/memory/recall", response_model=RecallResponse, responses=MEMORY_ERRORS,
              tags=["memory"], summary="What a message recalls ([MEMORY]/[CONTEXT])")
    async def recall(body: RecallRequest, user: User, request: Request) -> dict[str, Any]:
        with request.app.state.metrics.recall_seconds.time():
            result = await in_thread(request, mem(request).recall, user, body.text,
                                     body.conversation_id, body.at)
        return result.as_json()

    @app.post("/v1/memory/commit", response_model=CommitReport,
              responses=error_responses(400, 401, 409, 422, 503), tags=["memory"],
              summary="Commit an extraction batch (no LLM)")
    async def commit(body: CommitRequest, user: User, request: Request) -> CommitReport:
        transcript = [t.model_dump() for t in body.transcript] if body.transcript else None
        return await in_thread(request, mem(request).commit, user, body.conversation_id,
                               body.batch, body.at, transcript, bounded=False)

    @app.post("/v1/memory/remember", response_model=CommitReport,
              responses=error_responses(400, 401, 409, 413, 422, 502, 503), tags=["memory"],
              summary="Extract a transcript with the LLM, then commit it")
    async def remember(body: RememberRequest, user: User, request: Request) -> CommitReport:
        memory = mem(request)
        if not memory.has_llm:
            raise ConfigError("no LLM configured (PEGASUS_LLM_MODEL): use /v1/memory/commit "
                              "with an extraction batch instead")
        return await in_thread(request, memory.remember, user, body.conversation_id,
                               body.turns, body.at, bounded=False)

    @app.post("/v1/memory/turns", response_model=TurnsResponse,
              responses=error_responses(400, 401, 413, 422, 503), tags=["memory"],
              summary="Record turns of a conversation as they happen (closed later: "
                      "POST /v1/conversations/{id}/close, or after idle_close_s)")
    async def turns(body: TurnsRequest, user: User, request: Request) -> dict[str, Any]:
        conversations = request.app.state.conversations

        def record() -> dict[str, Any]:
            conversation_id = conversations.resolve(user, body.conversation_id)
            count = conversations.record(
                user, conversation_id,
                [t.model_dump(exclude_none=True) for t in body.turns], aware(body.at),
                source="client")
            return {"conversation_id": conversation_id, "turns": count,
                    "extraction": request.app.state.memory.extraction_for(None).describe()}

        return await in_thread(request, record)

    @app.post("/v1/memory/close", response_model=CloseResponse, responses=MEMORY_ERRORS,
              tags=["memory"], summary="Close a conversation: reinforce what its reads used")
    async def close(body: CloseRequest, user: User, request: Request) -> dict[str, Any]:
        count = await in_thread(request, mem(request).close_conversation, user,
                                body.conversation_id, body.at)
        return {"conversation_id": body.conversation_id, "reinforced": count}

    @app.post("/v1/memory/consolidate", response_model=DecayReport, responses=MEMORY_ERRORS,
              tags=["memory"], summary="The decay pass over this user's memory")
    async def consolidate(body: ConsolidateRequest, user: User, request: Request
                          ) -> DecayReport:
        return await in_thread(request, mem(request).consolidate, body.at, user,
                               bounded=False)

    @app.get("/v1/memory/entities/{name}", response_model=list[EntityView],
             responses=error_responses(400, 401, 404, 422, 503), tags=["memory"],
             summary="An entity by name or alias, with its strongest current edges")
    async def entity(name: Annotated[str, Path(min_length=1, max_length=500)], user: User,
                     request: Request) -> list[EntityView]:
        return await in_thread(request, mem(request).entities, user, name)

    @app.get("/v1/memory/merges", response_model=list[MergeRecord], responses=MEMORY_ERRORS,
             tags=["memory"], summary="Flagged merges to inspect (and pending candidates)")
    async def merges(user: User, request: Request, pending: bool = False
                     ) -> list[MergeRecord]:
        return await in_thread(request, mem(request).merges, user, pending)


EntityPath = Annotated[str, Path(min_length=1, max_length=200, pattern=ID_PATTERN,
                                 description="Name, alias or id")]
MemoryPath = Annotated[str, Path(min_length=1, max_length=200, pattern=ID_PATTERN)]


def _ownership_routes(app: FastAPI) -> None:
    """See, correct, forget (design §10), each scoped to the key's user: an id of another
    user's memory is not found (404), never forbidden, so existence does not leak."""
    def mem(request: Request) -> Memory:
        return request.app.state.memory

    found = error_responses(400, 401, 404, 409, 422, 503)

    @app.get("/v1/memory/edges", response_model=MemoriesPage, responses=found,
             tags=["ownership"], summary="The user's memories, filtered, one page")
    async def list_memories(
        user: User, request: Request,
        about: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        state: Annotated[str, Query(pattern=f"^({'|'.join(MEMORY_STATES)}|all)$")] = "current",
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    ) -> dict[str, Any]:
        page = await in_thread(request, mem(request).memories, user, about, state, limit,
                               offset)
        return {"memories": page, "next_offset": offset + limit if len(page) == limit else None}

    @app.get("/v1/memory/edges/{memory_id}", response_model=MemoryHistory, responses=found,
             tags=["ownership"], summary="One memory with its history")
    async def one_memory(memory_id: MemoryPath, user: User, request: Request) -> MemoryHistory:
        return await in_thread(request, mem(request).memory, user, memory_id)

    @app.post("/v1/memory/edges/{memory_id}/retract", response_model=Correction,
              responses=found, tags=["ownership"],
              summary="Retract a wrong memory (never recalled again), or undo that")
    async def retract(memory_id: MemoryPath, body: RetractRequest, user: User,
                      request: Request) -> Correction:
        return await in_thread(request, mem(request).retract, user, memory_id, body.at,
                               body.undo)

    @app.delete("/v1/memory/edges/{memory_id}", response_model=ForgetReport, responses=found,
                tags=["ownership"], summary="Forget one memory (erasure)")
    async def forget_memory(memory_id: MemoryPath, user: User, request: Request
                            ) -> ForgetReport:
        return await in_thread(request, mem(request).forget_memory, user, memory_id)

    @app.patch("/v1/memory/entities/{entity}", response_model=Correction, responses=found,
               tags=["ownership"], summary="Rename an entity, add or remove aliases")
    async def patch_entity(entity: EntityPath, body: EntityPatch, user: User,
                           request: Request) -> Correction:
        return await in_thread(request, mem(request).correct_entity, user, entity, body.name,
                               body.add_aliases, body.remove_aliases, body.at)

    @app.post("/v1/memory/entities/merge", response_model=Correction, responses=found,
              tags=["ownership"], summary="Merge two entities that are one (undoable)")
    async def merge_entities(body: MergeRequest, user: User, request: Request) -> Correction:
        return await in_thread(request, mem(request).merge_entities, user, body.keep,
                               body.absorb, body.at)

    @app.post("/v1/memory/merges/{record_id}/undo", response_model=UndoResult,
              responses=found, tags=["ownership"],
              summary="Undo a merge (by hand or by the rules): both entities as they were")
    async def undo_merge(record_id: MemoryPath, user: User, request: Request) -> UndoResult:
        return await in_thread(request, mem(request).undo_merge, user, record_id)

    @app.delete("/v1/memory/entities/{entity}", response_model=ForgetReport, responses=found,
                tags=["ownership"], summary="Forget one entity with all its memories")
    async def forget_entity(entity: EntityPath, user: User, request: Request) -> ForgetReport:
        return await in_thread(request, mem(request).forget_entity, user, entity)

    @app.delete("/v1/memory/conversations/{conversation_id}", response_model=ForgetReport,
                responses=found, tags=["ownership"],
                summary="Forget one conversation: what only it taught, and its words")
    async def forget_conversation(conversation_id: MemoryPath, user: User, request: Request
                                  ) -> ForgetReport:
        return await in_thread(request, mem(request).forget_conversation, user,
                               conversation_id)

    @app.get("/v1/memory/export", tags=["ownership"], responses=error_responses(401, 422, 503),
             summary="Export this user's memory (JSON Lines, format v1)",
             response_class=StreamingResponse)
    async def export(user: User, request: Request, with_turns: bool = False
                     ) -> StreamingResponse:
        lines = mem(request).export(user, with_turns)
        return StreamingResponse(lines, media_type="application/x-ndjson", headers={
            "Content-Disposition": 'attachment; filename="pegasus-memory.jsonl"'})

    @app.post("/v1/memory/import", response_model=ImportReport,
              responses=error_responses(400, 401, 409, 422, 503), tags=["ownership"],
              summary="Import an export file as this user's memory (the request body)",
              openapi_extra={"requestBody": {"required": True, "content": {
                  "application/x-ndjson": {"schema": {"type": "string"}}}}})
    async def import_memory(user: User, request: Request, replace: bool = False
                            ) -> ImportReport:
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as spool:
            async for chunk in request.stream():
                spool.write(chunk)
            spool.flush()
            return await in_thread(request, mem(request).import_memory, user, spool.name,
                                   replace, bounded=False)

    @app.delete("/v1/memory", response_model=ForgetReport, responses=found,
                tags=["ownership"], summary="Forget everything of this user (confirm=everything)")
    async def forget_everything(
        user: User, request: Request,
        confirm: Annotated[str, Query(pattern="^everything$",
                                      description="Must be `everything`")],
    ) -> ForgetReport:
        return await in_thread(request, mem(request).forget_everything, user, bounded=False)
