"""The passive-memory proxy for the OpenAI Responses API (Codex CLI, OpenAI SDKs).

`POST /v1/responses`, streaming or not, in front of PEGASUS_UPSTREAM_BASE_URL: the user's
latest message is recorded and recalled, the memory block goes in as a `developer` message
just before that message (the client's instructions and the history before it stay as they
were, so the upstream's prompt cache still matches them), the request goes on, and the reply
is recorded. The conversation is the X-Pegasus-Conversation header, else the session a client
states in `client_metadata.session_id` (Codex does), else the opening of the input. A client
that chains turns with `previous_response_id` and sends only the new input should send the
header: the opening it sends changes every turn.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from pegasus.preamble import memory_note
from pegasus.serve.conversations import derived_id
from pegasus.serve.http import User, error_responses
from pegasus.serve.proxy import CONVERSATION_HEADER, _upstream, forward, prepare

router = APIRouter(tags=["proxy"])
INSTRUCTION_ROLES = ("developer", "system")
TEXT_PARTS = ("input_text", "text", "output_text")


class ResponsesRequest(BaseModel):
    """The fields the proxy reads; every other field is forwarded as it came."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(max_length=500)
    input: str | Annotated[list[dict[str, Any]], Field(min_length=1)]  # bounded by body size
    instructions: str | None = None
    stream: bool = False
    client_metadata: dict[str, Any] | None = None


def items_of(body: ResponsesRequest) -> list[dict[str, Any]]:
    if isinstance(body.input, str):
        return [{"role": "user", "content": body.input}]
    return list(body.input)


def text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and p.get("type") in TEXT_PARTS)
    return ""


def latest_user(items: list[dict[str, Any]]) -> int | None:
    """Where the new user message is: the last item that is not an instruction, when that is a
    user message (after a tool call's output there is none: nothing to record or recall)."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.get("role") in INSTRUCTION_ROLES:
            continue
        is_message = item.get("type", "message") == "message"
        return index if is_message and item.get("role") == "user" else None
    return None


def stated_session(metadata: dict[str, Any] | None) -> str | None:
    session = (metadata or {}).get("session_id")
    return session if isinstance(session, str) and session.strip() else None


@router.post("/v1/responses",
             responses={200: {"description": "The response, or its stream (`stream: true`)",
                              "content": {"application/json": {},
                                          "text/event-stream": {}}},
                        **error_responses(400, 401, 422, 502, 503)},
             summary="OpenAI Responses API with passive memory (Codex CLI, OpenAI SDKs)")
async def responses(
    body: ResponsesRequest, user: User, request: Request,
    conversation: Annotated[str | None, Header(alias=CONVERSATION_HEADER, min_length=1,
                                               max_length=200)] = None,
) -> Response:
    client = _upstream(request)
    payload = body.model_dump(exclude_unset=True)
    items = items_of(body)
    base = (conversation or stated_session(body.client_metadata)
            or derived_id(user, [{"role": "system", "content": body.instructions}, *items]))
    at = latest_user(items)
    prepared = await prepare(request, user, base[:180],
                             None if at is None else text_of(items[at]), body.model)
    if prepared.block and at is not None:
        note = {"type": "message", "role": "developer",
                "content": [{"type": "input_text", "text": memory_note(prepared.block)}]}
        payload["input"] = [*items[:at], note, *items[at:]]
    return await forward(request, user, client, "responses", payload, prepared,
                         reply_of=_reply, piece_of=_piece)


def _reply(answer: Any) -> str:
    return "".join(part["text"] for item in answer["output"] if item.get("type") == "message"
                   for part in item["content"] if part.get("type") == "output_text")


def _piece(event: Any) -> str | None:
    if event.get("type") == "response.output_text.delta":
        return event["delta"]
    return None
