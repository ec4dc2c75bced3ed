"""The FastAPI application of `pegasus serve`, assembled from its rooms: the memory API and
ownership under /v1/memory, the proxy's three APIs, the memory page, health and metrics, the
middleware (serve/observe.py) and the background loops (serve/background.py).

Every API route authenticates with an API key (Authorization: Bearer, or x-api-key) that maps to
one user; that user id is the only one a request can read or write. Errors come back as
`{"error": {"message", "type"}}` with a status that says what to do: 401 (key), 404, 409
(conversation conflict), 413 (a body, a turn or a transcript over its limit), 422 (bad input),
502 (the upstream or the LLM failed), 503 (Neo4j or configuration).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import httpx
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from pegasus.llm import first_listed_model
from pegasus.memory import Memory
from pegasus.serve import anthropic, background, health, memory_api, ownership_api, page, proxy
from pegasus.serve import responses as responses_api
from pegasus.serve.auth import KeyRing, load_keys
from pegasus.serve.conversations import Conversations
from pegasus.serve.http import EXCEPTION_HANDLERS
from pegasus.serve.limits import add_body_limit
from pegasus.serve.metrics import Health, Metrics
from pegasus.serve.observe import add_middleware, kind_of
from pegasus.settings import Settings, secret_text

log = logging.getLogger("pegasus.serve")


def _client(base_url: str | None, headers: dict[str, str], settings: Settings
            ) -> httpx.AsyncClient | None:
    """An upstream client, or None when no base URL is configured."""
    if not base_url:
        return None
    return httpx.AsyncClient(base_url=base_url.rstrip("/") + "/", headers=headers,
                             timeout=settings.upstream_timeout_s)


def _upstreams(settings: Settings, given: httpx.AsyncClient | None
               ) -> tuple[httpx.AsyncClient | None, httpx.AsyncClient | None]:
    """The OpenAI-compatible upstream client (`given`, else the configured one) and the
    Anthropic one."""
    openai_key, anthropic_key = settings.upstream_api_key, settings.anthropic_upstream_api_key
    return (
        given if given is not None else _client(settings.upstream_base_url,
                {"Authorization": f"Bearer {secret_text(openai_key)}"} if openai_key else {},
                settings),
        _client(settings.anthropic_upstream_base_url,
                {"x-api-key": secret_text(anthropic_key) or ""} if anthropic_key else {}, settings),
    )


MODEL_LIST_BYTES = 1 << 20
MODEL_LIST_S = 10.0


async def _default_model(memory: Memory, client: httpx.AsyncClient | None,
                         anthropic_client: httpx.AsyncClient | None) -> None:
    """What extracts a conversation recorded without the proxy for a user who never used the
    proxy, when no model is fixed: the upstream's first listed model (design §8)."""
    source = memory.extraction
    if not source.on or source.model or source.via not in ("upstream", "anthropic"):
        return
    upstream, path = ((client, "models") if source.via == "upstream" and client is not None
                      else (anthropic_client, "v1/models"))
    if upstream is None:
        return
    try:
        # Bounded like every upstream answer (serve/proxy.py): a list that never ends, or
        # never finishes, is given up after MODEL_LIST_BYTES or MODEL_LIST_S.
        body = b""
        with anyio.fail_after(MODEL_LIST_S):
            async with upstream.stream("GET", path, timeout=MODEL_LIST_S,
                                       headers={"anthropic-version": "2023-06-01"}) as answer:
                if answer.status_code != 200:
                    return
                async for chunk in answer.aiter_bytes():
                    body += chunk
                    if len(body) > MODEL_LIST_BYTES:
                        raise ValueError("the model list is too long")
        memory.default_model = first_listed_model(json.loads(body))
    except (httpx.HTTPError, ValueError, TimeoutError) as exc:
        log.warning("the upstream's model list could not be read: %s", kind_of(exc))


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open the upstream clients, probe Neo4j, start the background loops; at shutdown run
    every cleanup step, whatever the one before it raised."""
    memory: Memory = app.state.memory
    settings = memory.settings
    given = app.state.upstream
    client, anthropic_client = _upstreams(settings, given)
    app.state.upstream = client
    app.state.anthropic_upstream = anthropic_client
    await app.state.health.check()  # the first answer of /readyz is already known
    await _default_model(memory, client, anthropic_client)
    log.info("hook conversations: %s", memory.hooks_extraction())
    if not app.state.health.neo4j_down:
        try:  # planned now, recall's queries do not cost the first request its memory
            await run_in_threadpool(memory.warm, app.state.keys.users)
        except Exception as exc:  # noqa: BLE001 - a cold first recall only goes slower
            log.warning("warming the queries of a proxied turn failed: %s", kind_of(exc))
    if memory.has_llm:  # what closed while no LLM was configured, in order, once each
        app.state.conversations.extract_backlog()
    tasks = background.start(app)
    try:
        yield
    finally:
        # Every step runs, whatever the one before it raised (a loop's last error, Neo4j
        # away while a close is released): nothing is left open.
        # Each wait is bounded by the grace: a step that never ends (a connection that never
        # closes) costs the shutdown shutdown_grace_s, never the process's exit.
        grace = settings.shutdown_grace_s
        for task in tasks:
            task.cancel()
        if tasks:
            _, running = await asyncio.wait(tasks, timeout=grace)
            if running:  # left cancelled; waiting for them could be forever
                log.warning("shutdown: a background loop did not stop within %g s", grace)
        steps: list[Callable[[], Awaitable[object]]] = [lambda: run_in_threadpool(
            app.state.conversations.shutdown, grace / 2)]
        if client is not None and given is None:
            steps.append(client.aclose)
        if anthropic_client is not None:
            steps.append(anthropic_client.aclose)
        if getattr(app.state, "owns_memory", False):
            steps.append(lambda: run_in_threadpool(memory.close))
        for step in steps:
            running = asyncio.ensure_future(step())
            done, _ = await asyncio.wait({running}, timeout=grace)
            if not done:
                running.cancel()  # not awaited: a step that ignores it would hold the exit
                log.warning("shutdown step did not end within %g s", grace)
            elif not running.cancelled() and (failed := running.exception()) is not None:
                log.warning("shutdown step failed: %s", kind_of(failed))


def create_app(memory: Memory, upstream: httpx.AsyncClient | None = None) -> FastAPI:
    """The API for one Memory. `upstream` overrides the client built from the settings."""
    # No /docs or /redoc: FastAPI's pages load their script from a CDN, which must never run on
    # the memory page's origin (it could read the signed-in page); /openapi.json stays.
    app = FastAPI(title="Pegasus", version="0.1.0", lifespan=lifespan, docs_url=None,
                  redoc_url=None, exception_handlers={
                      # An address no route answers: a page in words on the page's paths,
                      # FastAPI's JSON on the API's.
                      **EXCEPTION_HANDLERS, StarletteHTTPException: page.no_such_page},
                  description="Temporal, cross-conversation memory on Neo4j: the memory API and "
                              "a passive-memory proxy for OpenAI (Chat Completions, Responses) and "
                              "Anthropic (Messages) clients.")
    app.state.memory = memory
    app.state.keys = KeyRing(load_keys(memory.settings))
    app.state.conversations = Conversations(memory)
    app.state.upstream = upstream
    app.state.anthropic_upstream = None
    app.state.health = Health(memory)
    app.state.metrics = Metrics(app.state.health)
    app.state.conversations.metrics = app.state.metrics
    add_body_limit(app)
    add_middleware(app)
    for room in (health, memory_api, ownership_api, proxy, anthropic, responses_api, page):
        app.include_router(room.router)
    return app


def worker_app() -> FastAPI:
    """The app of one `pegasus serve --workers N` process: its own Memory from the settings
    (checked by the parent before the workers start), the model loaded before it answers."""
    memory = Memory(Settings())
    app = create_app(memory)
    memory.embedder.embed(["warm up"])
    app.state.owns_memory = True
    return app
