"""The passive-memory proxy: an OpenAI-compatible /v1/chat/completions in front of any upstream.

Per request: the API key gives the user; the X-Pegasus-Conversation header (or the opening of
the message history) gives the conversation; the latest user message is recalled and the
rendered [MEMORY]/[CONTEXT] block goes in as a system message; the request is forwarded; the
user's turn is recorded before forwarding and the reply after it, so an upstream failure loses
no recorded turn. The model never has to call a tool to remember.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
import httpx
from fastapi import APIRouter, Header, Path, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from pegasus.clock import aware
from pegasus.errors import ConfigError, TooLargeError
from pegasus.preamble import memory_note  # one wording for the hooks and the proxies
from pegasus.serve.conversations import derived_id
from pegasus.serve.http import ID_PATTERN, User, error, error_responses
from pegasus.serve.observe import CLIENT_CLOSED
from pegasus.text import head_and_tail

log = logging.getLogger("pegasus.serve")
router = APIRouter(tags=["proxy"])
CONVERSATION_HEADER = "X-Pegasus-Conversation"
# Set when memory fell short: "skipped; reason=budget|error" (forwarded without memory) or
# "partial; reason=turn_too_long|transcript_full" (recalled; the turn not wholly recorded).
MEMORY_HEADER = "X-Pegasus-Memory"
PARTLY_RECORDED = ("turn_too_long", "transcript_full")
MEMORY_THREADS = 8


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    # The roles OpenAI-compatible servers accept: anything else is the client's error (422),
    # not something to forward and report as the upstream's failure.
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The fields the proxy reads; every other field is forwarded as it came."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(max_length=500)
    # No count limit: a long history is the client's to send, bounded by the body's size
    # (max_request_bytes); refusing it would block the chat (#35: memory never blocks it).
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False


class CloseAccepted(BaseModel):
    conversation_id: str
    status: str


def text_of(message: ChatMessage) -> str:
    """A message's text: the string, or the text parts of a multi-part content."""
    if isinstance(message.content, str):
        return message.content
    if isinstance(message.content, list):
        return "\n".join(str(p.get("text", "")) for p in message.content
                         if isinstance(p, dict) and p.get("type") == "text")
    return ""


def with_memory(messages: list[dict[str, Any]], block: str) -> list[dict[str, Any]]:
    """The block as a system message after the client's own leading system messages."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    note = {"role": "system", "content": memory_note(block)}
    return [*messages[:lead], note, *messages[lead:]]


def _upstream(request: Request, which: str = "upstream") -> httpx.AsyncClient:
    client = getattr(request.app.state, which)
    if client is None:
        setting = {"upstream": "PEGASUS_UPSTREAM_BASE_URL",
                   "anthropic_upstream": "PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL"}[which]
        raise ConfigError(f"no upstream configured for this API ({setting})")
    return client


@dataclass
class Prepared:
    """What the memory step gave a proxied request: its conversation (`recording`: resolved,
    so the reply is recorded there too), the block to inject, and why memory fell short."""

    conversation_id: str
    recording: bool = False
    block: str = ""
    fallback: str | None = None  # one of metrics.FALLBACKS: X-Pegasus-Memory and the metric

    @property
    def headers(self) -> dict[str, str]:
        out = {CONVERSATION_HEADER: self.conversation_id}
        if self.fallback:
            state = "partial" if self.fallback in PARTLY_RECORDED else "skipped"
            out[MEMORY_HEADER] = f"{state}; reason={self.fallback}"
        return out


def _record_turn(request: Request, user: str, base_id: str, text: str | None,
                 model: str | None) -> tuple[str, str | None]:
    """In a worker thread: the conversation (a continuation once `base_id` closed) and the
    user's turn recorded, its first max_turn_chars characters; (id, why it was not wholly).
    `model` is the one the client asked for (it extracts the conversation by default)."""
    memory = request.app.state.memory
    conversations = request.app.state.conversations
    conversation_id = conversations.resolve(user, base_id)
    if text is None:
        return conversation_id, None
    limit = memory.settings.max_turn_chars
    try:
        conversations.record(user, conversation_id,
                             [{"role": "user", "content": text[:limit]}], aware(None),
                             model=model)
    except TooLargeError:
        return conversation_id, "transcript_full"
    return conversation_id, "turn_too_long" if len(text) > limit else None


def _recall(request: Request, user: str, conversation_id: str, text: str,
            abandoned: threading.Event) -> str:
    """In a worker thread: the block the message recalls, its read logged on the conversation
    unless the request went on without it meanwhile (a read never shown is never reinforced)."""
    memory = request.app.state.memory
    now = aware(None)
    with request.app.state.metrics.recall_seconds.time():
        # Recall reads a message's ends only (design §7.1): the rest need not cross threads.
        explained = memory.explain(user, head_and_tail(text, memory.settings.recall_chars), now,
                                   conversation_id)
    if abandoned.is_set():
        return ""
    memory.log_read(user, conversation_id, explained, now)
    return explained.recall.render()


async def prepare(request: Request, user: str, base_id: str, text: str | None,
                  model: str | None = None) -> Prepared:
    """The memory step of a proxied request, never in the chat's way: record the user's turn
    and recall on it within proxy_memory_budget_s; when that fails or runs over, the request
    goes on without memory (design §9, "Memory never blocks the conversation").
    `text` is None when the request does not end with a new user message (a tool result)."""
    state = request.app.state
    prepared = Prepared(base_id)
    abandoned = threading.Event()
    if getattr(state, "memory_limiter", None) is None:
        # Memory's own threads: a step left running past its budget never holds a thread
        # the chat needs (the reply's recording, other routes).
        state.memory_limiter = anyio.CapacityLimiter(MEMORY_THREADS)
    try:
        with anyio.fail_after(state.memory.settings.proxy_memory_budget_s):
            prepared.conversation_id, prepared.fallback = await anyio.to_thread.run_sync(
                _record_turn, request, user, base_id, text, model, abandon_on_cancel=True,
                limiter=state.memory_limiter)
            prepared.recording = True
            if text is not None and text.strip():
                prepared.block = await anyio.to_thread.run_sync(
                    _recall, request, user, prepared.conversation_id, text, abandoned,
                    abandon_on_cancel=True, limiter=state.memory_limiter)
    except TimeoutError:
        abandoned.set()
        prepared.fallback, prepared.block = "budget", ""
    except Exception as exc:  # noqa: BLE001 - whatever memory does, the chat goes on
        log.warning("memory skipped for a proxied request: %s", type(exc).__name__)
        prepared.fallback, prepared.block = "error", ""
    if prepared.fallback:
        state.metrics.memory_fallbacks.labels(prepared.fallback).inc()
    return prepared


def _record_reply(request: Request, user: str, conversation_id: str, reply: str) -> None:
    """Record the model's reply (its first max_turn_chars characters); a failure is logged,
    never the client's: the answer is already there."""
    if not reply:
        return
    limit = request.app.state.memory.settings.max_turn_chars
    try:
        request.app.state.conversations.record(
            user, conversation_id, [{"role": "assistant", "content": reply[:limit]}],
            aware(None))
    except Exception as exc:  # noqa: BLE001 - the reply reaches the client regardless
        log.warning("recording a proxied reply failed: %s", type(exc).__name__)


def _upstream_failed(status: int | None, detail: str, prepared: Prepared) -> JSONResponse:
    where = f"answered {status}" if status else "could not be reached"
    recorded = (" (your message is recorded in the conversation; retrying it will not record "
                "it twice)") if prepared.recording else ""
    return error(502, f"the upstream model {where}: {detail[:500]}{recorded}",
                 "upstream_error", prepared.headers)


class UpstreamCut(Exception):
    """A reply cut short by its bounds (upstream_max_bytes, upstream_reply_s)."""


async def read_capped(upstream: httpx.Response, limit: int, deadline: float) -> bytes:
    """An upstream answer's body, at most `limit` bytes (decoded) by `deadline` (anyio's
    clock): an endless or oversized body costs serve `limit` bytes, never more."""
    body = bytearray()
    chunks = upstream.aiter_bytes()
    while True:
        with anyio.fail_after(max(deadline - anyio.current_time(), 0)):
            chunk = await anext(chunks, None)
        if chunk is None:
            return bytes(body)
        body += chunk
        if len(body) > limit:
            raise UpstreamCut(f"its answer is over upstream_max_bytes ({limit:,} bytes)")


async def until_disconnected(request: Request) -> None:
    """Return when the client has gone (its body is read by then: the next message is the
    disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def forward(request: Request, user: str, client: httpx.AsyncClient, path: str,
                  payload: dict[str, Any], prepared: Prepared, *,
                  reply_of: Callable[[Any], str], piece_of: Callable[[Any], str | None],
                  headers: dict[str, str] | None = None) -> Response:
    """Send the request on; relay the answer (or its server-sent events as they arrive) and
    record the reply. `reply_of` reads the reply from a whole answer (raising KeyError,
    TypeError… when it is not one), `piece_of` a piece of it from one event's data.
    Bounded (docs/reliability.md, "Hostile peers"): a whole answer is read up to
    upstream_max_bytes, a reply ends by upstream_reply_s, and the wait is abandoned when the
    client goes."""
    settings = request.app.state.memory.settings
    deadline = anyio.current_time() + settings.upstream_reply_s
    stream = bool(payload.get("stream"))
    outcome: Response | None = None
    async with anyio.create_task_group() as watch:
        async def abandon() -> None:
            nonlocal outcome
            await until_disconnected(request)
            if outcome is None:  # an answer made already (a stream) ends by its own means
                outcome = Response(status_code=CLIENT_CLOSED)
            watch.cancel_scope.cancel()

        watch.start_soon(abandon)
        try:
            outcome = await _answer(request, user, client, path, payload, prepared, deadline,
                                    stream, reply_of, piece_of, headers)
        finally:
            watch.cancel_scope.cancel()
    assert outcome is not None  # the answer, or the client's departure, set it
    return outcome


async def _answer(request: Request, user: str, client: httpx.AsyncClient, path: str,
                  payload: dict[str, Any], prepared: Prepared, deadline: float, stream: bool,
                  reply_of: Callable[[Any], str], piece_of: Callable[[Any], str | None],
                  headers: dict[str, str] | None) -> Response:
    settings = request.app.state.memory.settings
    upstream_request = client.build_request("POST", path, json=payload, headers=headers)
    late = f"no whole answer within upstream_reply_s ({settings.upstream_reply_s:g} s)"
    try:
        with anyio.fail_after(max(deadline - anyio.current_time(), 0)):
            upstream = await client.send(upstream_request, stream=True)
    except httpx.HTTPError as exc:
        return _upstream_failed(None, str(exc) or type(exc).__name__, prepared)
    except TimeoutError:
        return _upstream_failed(None, late, prepared)
    if upstream.status_code == 200 and stream:
        return _stream(request, user, prepared, upstream, piece_of, deadline)
    try:
        body = await read_capped(upstream, settings.upstream_max_bytes, deadline)
    except UpstreamCut as exc:
        return _upstream_failed(upstream.status_code, str(exc), prepared)
    except TimeoutError:
        return _upstream_failed(upstream.status_code, late, prepared)
    except httpx.HTTPError as exc:
        return _upstream_failed(upstream.status_code, str(exc) or type(exc).__name__, prepared)
    finally:
        await upstream.aclose()
    if upstream.status_code != 200:
        return _upstream_failed(upstream.status_code, body.decode("utf-8", "replace"), prepared)
    try:
        answer = json.loads(body)
        reply = reply_of(answer)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return _upstream_failed(200, f"not an answer of {path}", prepared)
    if prepared.recording:
        await run_in_threadpool(_record_reply, request, user, prepared.conversation_id, reply)
    return JSONResponse(answer, headers=prepared.headers)


def event_end(data: bytes) -> int:
    """Where the last whole server-sent event in `data` ends (after its blank line); 0 when
    none has ended yet."""
    ends = [at + len(blank) for blank in (b"\n\n", b"\r\n\r\n", b"\r\r")
            if (at := data.rfind(blank)) >= 0]
    return max(ends, default=0)


def _stream(request: Request, user: str, prepared: Prepared, upstream: httpx.Response,
            piece_of: Callable[[Any], str | None], deadline: float) -> StreamingResponse:
    """Relay the upstream's server-sent events as they arrive; record the reply at the end.
    What serve holds stays bounded whatever the upstream sends: the recorded text keeps
    max_turn_chars characters, an unfinished line upstream_max_bytes; the relay is cut at the
    reply's deadline (with an error event) and stops when the client goes."""
    settings = request.app.state.memory.settings
    limit, line_limit = settings.max_turn_chars, settings.upstream_max_bytes
    pieces: list[str] = []
    kept = 0

    def collect(line: bytes) -> None:
        nonlocal kept
        if kept >= limit or not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            return
        try:
            piece = piece_of(json.loads(data))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return
        if isinstance(piece, str):
            pieces.append(piece[:limit - kept])
            kept += len(pieces[-1])

    def error_event(message: str) -> bytes:
        # An error event, as the providers end a stream that fails mid-way (the OpenAI and
        # Anthropic SDKs raise it); the reply so far is recorded.
        return ("event: error\ndata: " + json.dumps(
            {"type": "error", "error": {"type": "upstream_error", "message": message}})
            + "\n\n").encode()

    async def relay():
        pending = b""
        # Relayed event by event: what is held back is the upstream's unfinished event, so a
        # cut never leaves half an event for the error event to be read into.
        unsent = b""
        chunks = upstream.aiter_raw()
        try:
            while True:
                with anyio.move_on_after(max(deadline - anyio.current_time(), 0)) as late:
                    chunk = await anext(chunks, None)
                if late.cancelled_caught:
                    yield error_event(f"the upstream's reply was cut at upstream_reply_s "
                                      f"({settings.upstream_reply_s:g} s)")
                    return
                if chunk is None:
                    if unsent:
                        yield unsent
                    break
                unsent += chunk
                whole = event_end(unsent)
                if whole:
                    yield unsent[:whole]
                    unsent = unsent[whole:]
                if len(unsent) > line_limit:  # no event is this long
                    yield error_event(f"an event of the upstream's reply is over "
                                      f"upstream_max_bytes ({line_limit:,} bytes)")
                    return
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    collect(line.strip())
                if len(pending) > line_limit:  # no event is this long: not one to record
                    pending = b""
            collect(pending.strip())
        finally:
            await upstream.aclose()

    async def record() -> None:
        if prepared.recording:  # _record_reply logs a failure by kind, never raises
            await run_in_threadpool(_record_reply, request, user, prepared.conversation_id,
                                    "".join(pieces))

    return StreamingResponse(relay(), media_type="text/event-stream", headers=prepared.headers,
                             background=BackgroundTask(record))


# --- OpenAI Chat Completions -----------------------------------------------------------------


@router.post("/v1/chat/completions",
             responses={200: {"description": "The completion, or its stream (`stream: true`)",
                              "content": {"application/json": {},
                                          "text/event-stream": {}}},
                        **error_responses(400, 401, 422, 502, 503)},
             summary="OpenAI-compatible chat completions with passive memory")
async def chat_completions(
    body: ChatRequest, user: User, request: Request,
    conversation: Annotated[str | None, Header(alias=CONVERSATION_HEADER, min_length=1,
                                               max_length=200)] = None,
) -> Response:
    client = _upstream(request)
    payload = body.model_dump(exclude_unset=True)
    last = body.messages[-1]
    prepared = await prepare(request, user,
                             conversation or derived_id(user, payload["messages"]),
                             text_of(last) if last.role == "user" else None, body.model)
    if prepared.block:
        payload["messages"] = with_memory(payload["messages"], prepared.block)
    return await forward(request, user, client, "chat/completions", payload, prepared,
                         reply_of=lambda a: a["choices"][0]["message"].get("content") or "",
                         piece_of=lambda d: (d["choices"][0].get("delta") or {}).get("content"))


@router.get("/v1/models", responses=error_responses(401, 502, 503),
            summary="The upstream's models, as it lists them")
async def models(user: User, request: Request) -> Response:
    client = _upstream(request)
    settings = request.app.state.memory.settings
    try:
        with anyio.fail_after(settings.upstream_reply_s):
            async with client.stream("GET", "models") as upstream:
                body = await read_capped(upstream, settings.upstream_max_bytes,
                                         anyio.current_time() + settings.upstream_reply_s)
    except (httpx.HTTPError, UpstreamCut, TimeoutError) as exc:
        return error(502, f"the upstream could not be read: {str(exc) or type(exc).__name__}",
                     "upstream_error")
    if upstream.status_code != 200:
        return error(502, f"the upstream answered {upstream.status_code}", "upstream_error")
    return Response(body, media_type="application/json")


@router.post("/v1/conversations/{conversation_id}/close", status_code=202,
             response_model=CloseAccepted, responses=error_responses(401, 404, 422, 503),
             summary="Close a recorded conversation: accepted at once, extracted and "
                     "reinforced in the background (retried with backoff when that fails); "
                     "404 for a conversation never recorded")
async def close_conversation(conversation_id: Annotated[str, Path(min_length=1, max_length=200,
                                                                 pattern=ID_PATTERN)],
                             user: User,
                             request: Request) -> dict[str, str]:
    conversations = request.app.state.conversations
    scheduled = await run_in_threadpool(conversations.close, user, conversation_id)
    if scheduled is not None:
        status = "closing"
    else:
        state = await run_in_threadpool(request.app.state.memory.conversation_state, user,
                                        conversation_id)
        status = "closed" if state["status"] == "closed" else "already closing"
    return {"conversation_id": conversation_id, "status": status}
