"""The passive-memory proxy for the Anthropic Messages API (Claude Code, the Anthropic SDKs).

`POST /v1/messages` as Anthropic serves it, streaming or not, in front of
PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL: the user's latest message is recorded and recalled, the
memory block is appended to the request's `system` (a string, or a list of blocks), the
request goes on, and the reply is recorded. The conversation is the X-Pegasus-Conversation
header, else the session a client states in `metadata.user_id` (Claude Code does), else the
opening of the history. `HEAD /` answers, as Claude Code checks the connection with it.
Errors come back in Anthropic's shape, `{"type": "error", "error": {"type", "message"}}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from pegasus.llm import MESSAGES_API
from pegasus.preamble import memory_note
from pegasus.serve.conversations import derived_id
from pegasus.serve.http import User, error_responses
from pegasus.serve.proxy import CONVERSATION_HEADER, _upstream, forward, prepare

# Anthropic's error types by status (its API reference, "Errors"): its SDKs and Claude Code
# read `error.type` and `error.message` of `{"type": "error", "error": {...}}`.
ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 409: "invalid_request_error",
                    413: "request_too_large", 422: "invalid_request_error",
                    429: "rate_limit_error"}


class AnthropicErrorDetail(BaseModel):
    type: str
    message: str


class AnthropicErrorBody(BaseModel):
    type: Literal["error"]
    error: AnthropicErrorDetail


def anthropic_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of a route, in Anthropic's shape."""
    return {code: {**doc, "model": AnthropicErrorBody}
            for code, doc in error_responses(*codes).items()}


def anthropic_error(response: Response) -> Response:
    """An error answer of this server (`{"error": {"message", "type"}}`) in Anthropic's shape;
    any other answer as it is."""
    if response.status_code < 400 or not isinstance(response, JSONResponse):
        return response
    try:
        message = json.loads(bytes(response.body))["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return response
    kind = ANTHROPIC_ERRORS.get(response.status_code, "api_error")
    headers = {k: v for k, v in response.headers.items()
               if k.lower() not in ("content-length", "content-type")}
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}},
                        status_code=response.status_code, headers=headers)


class AnthropicRoute(APIRoute):
    """A route whose errors (the key, validation, the upstream, Neo4j) come back as Anthropic
    clients expect them; the application's handlers still decide status and message."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def shaped(request: Request) -> Response:
            try:
                response = await handle(request)
            except Exception as exc:
                handler = next((request.app.exception_handlers[cls]
                                for cls in type(exc).__mro__
                                if cls in request.app.exception_handlers), None)
                if handler is None:
                    raise
                response = await handler(request, exc)
            return anthropic_error(response)

        return shaped


router = APIRouter(tags=["proxy"], route_class=AnthropicRoute)
# Claude Code wraps what it adds to a user message (hook context, reminders) in these tags:
# none of it is the person's words, so none of it is recorded or recalled on.
REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")


class AnthropicMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]


class MessagesRequest(BaseModel):
    """The fields the proxy reads; every other field is forwarded as it came."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(max_length=500)
    messages: list[AnthropicMessage] = Field(min_length=1)  # bounded by the body's size
    max_tokens: int = Field(ge=1)
    system: str | list[dict[str, Any]] | None = None
    stream: bool = False
    metadata: dict[str, Any] | None = None


def user_text(message: AnthropicMessage) -> str | None:
    """The person's words in a user message; None when it carries none (tool results only)."""
    if message.role != "user":
        return None
    if isinstance(message.content, str):
        parts = [message.content]
    else:
        parts = [str(b.get("text", "")) for b in message.content if b.get("type") == "text"]
    words = [REMINDER.sub("", p).strip() for p in parts]
    words = [w for w in words if w]
    return "\n".join(words) if words else None


def stated_session(metadata: dict[str, Any] | None) -> str | None:
    """The session id a client puts in `metadata.user_id`: Claude Code sends a JSON object
    with `session_id` there (older versions: `…_session_<id>`)."""
    value = (metadata or {}).get("user_id")
    if not isinstance(value, str):
        return None
    try:
        session = json.loads(value).get("session_id")
    except (ValueError, AttributeError):
        found = re.search(r"_session_([\w-]{8,200})$", value)
        session = found.group(1) if found else None
    return session if isinstance(session, str) and session.strip() else None


def with_memory(system: str | list[dict[str, Any]] | None, block: str
                ) -> str | list[dict[str, Any]]:
    """The block after the client's own system prompt, in the form the client used."""
    note = memory_note(block)
    if system is None or system == "":
        return note
    if isinstance(system, str):
        return f"{system}\n\n{note}"
    return [*system, {"type": "text", "text": note}]


@router.post("/v1/messages",
             responses={200: {"description": "The message, or its stream (`stream: true`)",
                              "content": {"application/json": {},
                                          "text/event-stream": {}}},
                        **anthropic_errors(400, 401, 422, 502, 503)},
             summary="Anthropic Messages API with passive memory (Claude Code, Anthropic SDKs)")
async def messages(
    body: MessagesRequest, user: User, request: Request,
    conversation: Annotated[str | None, Header(alias=CONVERSATION_HEADER, min_length=1,
                                               max_length=200)] = None,
) -> Response:
    client = _upstream(request, "anthropic_upstream")
    payload = body.model_dump(exclude_unset=True)
    base = (conversation or stated_session(body.metadata)
            or derived_id(user, [{"role": "system", "content": body.system},
                                 *payload["messages"]]))
    # recorded as Anthropic's, so the close extracts it through the Anthropic upstream
    prepared = await prepare(request, user, base[:180], user_text(body.messages[-1]),
                             MESSAGES_API + body.model)
    if prepared.block:
        payload["system"] = with_memory(body.system, prepared.block)
    headers = {name: request.headers[name] for name in FORWARDED_HEADERS
               if name in request.headers}
    headers.setdefault("anthropic-version", "2023-06-01")
    return await forward(request, user, client, "v1/messages", payload, prepared,
                         headers=headers, reply_of=_reply, piece_of=_piece)


def _reply(answer: Any) -> str:
    return "".join(b["text"] for b in answer["content"] if b.get("type") == "text")


def _piece(event: Any) -> str | None:
    if event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta":
        return event["delta"]["text"]
    return None


@router.head("/", response_class=Response, responses={200: {"description": "An empty answer"}},
             summary="The server answers (Claude Code checks its base URL with this)")
async def root() -> Response:
    return Response(status_code=200)
