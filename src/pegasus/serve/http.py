"""Shared HTTP pieces of `pegasus serve`: ids, the error body and how each error maps to a
status, the API key's user, the memory, and how a route runs its blocking work."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.types import Message, Send

from pegasus.clock import client_instant
from pegasus.errors import Neo4jUnavailableError, PegasusError, http_status
from pegasus.models.batch import describe_validation_error
from pegasus.store import deadline

if TYPE_CHECKING:
    from pegasus.memory import Memory
    from pegasus.serve.auth import KeyRing

T = TypeVar("T")

# An id needs one character that is not whitespace as Python's str.strip() sees it (which,
# unlike JSON Schema's \s, includes U+001C–U+001F and U+0085): the schema says what the
# server accepts, exactly.
ID_PATTERN = r"[^\s\x1c-\x1f\x85]"
ID = Field(min_length=1, max_length=200, pattern=ID_PATTERN)


class ErrorDetail(BaseModel):
    message: str
    type: str


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {400: "Not acceptable as it is", 401: "Missing or unknown API key",
            404: "Not found in this user's memory",
            409: "A conversation already committed, or a name meaning several entities",
            413: "A turn over max_turn_chars, a transcript over max_transcript_chars, or a "
                 "body over max_request_bytes (an import: max_upload_bytes)",
            422: "Invalid request", 502: "The upstream model or the LLM failed",
            503: "Neo4j is unreachable or the server is not configured for this"}
    return {code: {"model": ErrorBody, "description": text[code]} for code in codes}


def error(status: int, message: str, kind: str, headers: dict[str, str] | None = None
          ) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status,
                        headers=headers)


class Unauthorized(HTTPException):
    """No known key. An HTTPException, so that raised while a body is read (serve/limits.py)
    FastAPI passes it on instead of answering 400."""

    def __init__(self) -> None:
        super().__init__(401)


async def _unauthorized(request: Request, exc: Unauthorized) -> JSONResponse:
    return error(401, "missing or unknown API key (send Authorization: Bearer <key>, or x-api-key)",
                 "authentication_error", {"WWW-Authenticate": "Bearer"})


async def _pegasus_error(request: Request, exc: PegasusError) -> JSONResponse:
    status, kind = http_status(exc)
    return error(status, str(exc), kind)


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    return error(422, describe_validation_error(exc), "invalid_request_error")


# The app's handlers: every error answers `{"error": {"message", "type"}}` with its status.
EXCEPTION_HANDLERS: dict[Any, Callable[..., Any]] = {
    Unauthorized: _unauthorized, PegasusError: _pegasus_error, RequestValidationError: _invalid}


_bearer = HTTPBearer(auto_error=False, description="An API key from the server's key map")
# What Anthropic clients send (ANTHROPIC_API_KEY); ANTHROPIC_AUTH_TOKEN comes as the bearer.
_x_api_key = APIKeyHeader(name="x-api-key", auto_error=False,
                          description="The same API key, as Anthropic clients send it")


def key_user(keys: KeyRing, bearer: str | None, x_api_key: str | None) -> str | None:
    """The user a presented key stands for: the bearer token's, else x-api-key's."""
    return keys.user_for(bearer) or keys.user_for(x_api_key)


def current_user(request: Request,
                 credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                 x_api_key: Annotated[str | None, Depends(_x_api_key)] = None) -> str:
    """The user the presented API key stands for (Authorization: Bearer, or x-api-key);
    401 otherwise."""
    user = key_user(request.app.state.keys, credentials.credentials if credentials else None,
                    x_api_key)
    if user is None:
        raise Unauthorized
    return user


User = Annotated[str, Depends(current_user)]


def client_at(request: Request, at: datetime | None) -> datetime | None:
    """A request's `at`, bounded: every route that takes one passes it through here (no
    future past max_clock_skew_s: 422; tests/serve/test_clocks.py tries every such route)."""
    return client_instant(at, request.app.state.memory.settings.max_clock_skew_s)


def memory_of(request: Request) -> Memory:
    """The app's Memory (one per app: `create_app`)."""
    return request.app.state.memory


def refuse_while_down(request: Request) -> None:
    """503 at once while the last health probe found Neo4j unreachable (docs/reliability.md,
    "Outages"): a request does not wait for a server that is known to be away."""
    health = request.app.state.health
    if health.neo4j_down:
        raise Neo4jUnavailableError(f"{health.parts['neo4j']}: try again shortly")


async def in_thread(request: Request, fn: Callable[..., T], *args: Any, bounded: bool = True
                    ) -> T:
    """Run a route's blocking work in the thread pool within the request deadline
    (request_deadline_s; docs/reliability.md, "Retries"): its Neo4j retries stop there, and a
    `bounded` route answers 503 by then even when Neo4j hangs (routes that run the LLM or a
    whole import are not `bounded`: only their retries are). While the last probe found Neo4j
    unreachable, the answer is 503 at once."""
    refuse_while_down(request)
    settings = request.app.state.memory.settings
    seconds = settings.request_deadline_s

    def work() -> T:
        with deadline(seconds, writes=bounded):
            return fn(*args)

    if not bounded:
        return await run_in_threadpool(work)
    # Shielded: a thread cannot be stopped, so the answer stops waiting for it instead.
    running = asyncio.ensure_future(run_in_threadpool(work))
    try:
        return await asyncio.wait_for(asyncio.shield(running),
                                      seconds + settings.neo4j_connect_timeout_s)
    except TimeoutError:
        raise Neo4jUnavailableError(f"Neo4j did not answer within the request deadline "
                                    f"({seconds:g} s); try again shortly") from None


# What one trip to the thread pool hands the response of an export: lines up to this size.
EXPORT_CHUNK_BYTES = 1 << 16


def _chunk(lines: Iterator[str]) -> str:
    """The next lines of an export, about EXPORT_CHUNK_BYTES of them; "" at its end."""
    parts: list[str] = []
    size = 0
    for line in lines:
        parts.append(line)
        size += len(line)
        if size >= EXPORT_CHUNK_BYTES:
            break
    return "".join(parts)


class BrokenExport(Exception):
    """An export that failed after its first byte was sent. Raised out of the response, so the
    server drops the connection instead of ending the chunked body: the client sees an
    incomplete transfer, and the file lacks its end line (design §11)."""


class SendDeadline(StreamingResponse):
    """A streamed response whose every part must reach the client within `send_timeout_s`
    (uvicorn waits while the client's socket is full): a reader that stops reading is cut off,
    and what the stream holds (an export's transaction and lock) is let go."""

    def __init__(self, *args: Any, send_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.send_timeout_s = send_timeout_s

    async def stream_response(self, send: Send) -> None:
        async def bounded(message: Message) -> None:
            with anyio.fail_after(self.send_timeout_s):
                await send(message)

        try:
            await super().stream_response(bounded)
        finally:
            # An async generator left by an exception is closed only when collected: closed
            # now, its `finally` ends the export's transaction (and lock) at once.
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()


async def streamed_export(request: Request, user: str, with_turns: bool) -> StreamingResponse:
    """An export as a response (the API's and the page's). Its first line is read before the
    response starts, within the request deadline: an unreachable Neo4j, or one that fails the
    export's transaction, is a 503 before the first byte. A failure after it breaks the
    transfer (BrokenExport)."""
    lines = memory_of(request).export(user, with_turns)
    first = await in_thread(request, next, lines)

    async def body() -> AsyncIterator[str]:
        try:
            yield first
            while chunk := await run_in_threadpool(_chunk, lines):
                yield chunk
        except Exception as exc:
            raise BrokenExport(type(exc).__name__) from exc
        finally:
            # Closing ends the transaction and lets the partition lock go, also when the client
            # left midway (Starlette then cancels this generator: shielded, the close still runs).
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(lines.close)  # type: ignore[attr-defined]

    return SendDeadline(body(), media_type="application/x-ndjson", headers={
        "Content-Disposition": 'attachment; filename="pegasus-memory.jsonl"'},
        send_timeout_s=memory_of(request).settings.send_timeout_s)
