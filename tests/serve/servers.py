"""Real HTTP servers for the proxy tests: an app on a free loopback port, and a stub upstream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from pegasus.operations.neo4j_local import free_port


@contextlib.contextmanager
def serving(app) -> Iterator[str]:
    """Run an ASGI app with uvicorn in a thread on 127.0.0.1; its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # its start plans the queries of a proxied turn
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


class StubUpstream:
    """An upstream model that records what it receives and answers predictably, in the three
    APIs the proxy speaks: OpenAI Chat Completions (`received`), Anthropic Messages
    (`received_messages`) and OpenAI Responses (`received_responses`), streaming and not."""

    CHUNKS = ["Tell ", "her ", "after ", "the ", "trip."]
    CHUNK_DELAY_S = 0.25

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.received_messages: list[dict] = []
        self.received_responses: list[dict] = []
        self.fail_with: int | None = None
        self.last_chunk_sent_at: float | None = None  # time.monotonic(), chat completions
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.completions)
        self.app.get("/v1/models")(self.models)
        self.app.post("/v1/messages")(self.messages)
        self.app.post("/v1/responses")(self.responses)

    def reply_to(self, body: dict) -> str:
        return f"stub reply to: {body['messages'][-1].get('content')}"

    async def completions(self, request: Request):
        body = await request.json()
        self.received.append(body)
        if self.fail_with:
            return JSONResponse({"error": {"message": "overloaded"}}, status_code=self.fail_with)
        if body.get("stream"):
            return StreamingResponse(self._events(body), media_type="text/event-stream")
        return {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": self.reply_to(body)}}]}

    async def _events(self, body: dict):
        for i, piece in enumerate(self.CHUNKS):
            chunk = {"id": "cmpl-2", "object": "chat.completion.chunk", "created": 0,
                     "model": body["model"],
                     "choices": [{"index": 0, "delta": {"content": piece},
                                  "finish_reason": "stop" if i == len(self.CHUNKS) - 1 else None}]}
            if i == len(self.CHUNKS) - 1:
                self.last_chunk_sent_at = time.monotonic()
            yield f"data: {json.dumps(chunk)}\n\n"
            await asyncio.sleep(self.CHUNK_DELAY_S)
        yield "data: [DONE]\n\n"

    async def models(self):
        if self.fail_with:  # a refused key refuses every route (pegasus doctor reads this one)
            return JSONResponse({"error": {"message": "refused"}}, status_code=self.fail_with)
        return {"object": "list", "data": [{"id": "stub-model", "object": "model", "created": 0,
                                            "owned_by": "tests"}]}

    # --- Anthropic Messages ----------------------------------------------------------------

    async def messages(self, request: Request):
        body = await request.json()
        self.received_messages.append(body)
        if self.fail_with:
            return JSONResponse({"type": "error", "error": {"type": "overloaded_error",
                                                            "message": "overloaded"}},
                                status_code=self.fail_with)
        message = {"id": "msg_stub", "type": "message", "role": "assistant",
                   "model": body.get("model", "stub"), "content": [],
                   "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 0}}
        if not body.get("stream"):
            return {**message, "content": [{"type": "text", "text": "".join(self.CHUNKS)}],
                    "stop_reason": "end_turn", "usage": {"input_tokens": 10,
                                                         "output_tokens": len(self.CHUNKS)}}
        return StreamingResponse(self._message_events(message), media_type="text/event-stream")

    async def _message_events(self, message: dict):
        yield sse("message_start", {"type": "message_start", "message": message})
        yield sse("content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "text", "text": ""}})
        for piece in self.CHUNKS:
            yield sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta", "text": piece}})
            await asyncio.sleep(self.CHUNK_DELAY_S)
        yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield sse("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                    "usage": {"output_tokens": len(self.CHUNKS)}})
        yield sse("message_stop", {"type": "message_stop"})

    # --- OpenAI Responses -------------------------------------------------------------------

    async def responses(self, request: Request):
        body = await request.json()
        self.received_responses.append(body)
        if self.fail_with:
            return JSONResponse({"error": {"message": "overloaded", "type": "server_error"}},
                                status_code=self.fail_with)
        text = "".join(self.CHUNKS)
        item = {"type": "message", "id": "msg_stub", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": len(self.CHUNKS),
                 "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 10 + len(self.CHUNKS)}
        response = {"id": "resp_stub", "object": "response", "created_at": 0,
                    "model": body.get("model", "stub"), "status": "completed",
                    "output": [item], "usage": usage}
        if not body.get("stream"):
            return response
        return StreamingResponse(self._response_events(response, item),
                                 media_type="text/event-stream")

    async def _response_events(self, response: dict, item: dict):
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        yield sse("response.created", {"type": "response.created", "response": started})
        yield sse("response.in_progress", {"type": "response.in_progress", "response": started})
        opened = {**item, "status": "in_progress", "content": []}
        yield sse("response.output_item.added", {"type": "response.output_item.added",
                                                 "output_index": 0, "item": opened})
        part = {"type": "output_text", "text": "", "annotations": []}
        yield sse("response.content_part.added", {"type": "response.content_part.added",
                                                  "item_id": item["id"], "output_index": 0,
                                                  "content_index": 0, "part": part})
        for piece in self.CHUNKS:
            yield sse("response.output_text.delta", {"type": "response.output_text.delta",
                                                     "item_id": item["id"], "output_index": 0,
                                                     "content_index": 0, "delta": piece})
            await asyncio.sleep(self.CHUNK_DELAY_S)
        text = item["content"][0]["text"]
        yield sse("response.output_text.done", {"type": "response.output_text.done",
                                                "item_id": item["id"], "output_index": 0,
                                                "content_index": 0, "text": text})
        yield sse("response.content_part.done", {"type": "response.content_part.done",
                                                 "item_id": item["id"], "output_index": 0,
                                                 "content_index": 0, "part": item["content"][0]})
        yield sse("response.output_item.done", {"type": "response.output_item.done",
                                                "output_index": 0, "item": item})
        yield sse("response.completed", {"type": "response.completed", "response": response})
