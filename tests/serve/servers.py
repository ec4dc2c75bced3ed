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

from pegasus.neo4j_local import free_port


@contextlib.contextmanager
def serving(app) -> Iterator[str]:
    """Run an ASGI app with uvicorn in a thread on 127.0.0.1; its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


class StubUpstream:
    """An OpenAI-compatible upstream that records what it receives and answers predictably."""

    CHUNKS = ["Tell ", "her ", "after ", "the ", "trip."]
    CHUNK_DELAY_S = 0.25

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.fail_with: int | None = None
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.completions)
        self.app.get("/v1/models")(self.models)

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
            yield f"data: {json.dumps(chunk)}\n\n"
            await asyncio.sleep(self.CHUNK_DELAY_S)
        yield "data: [DONE]\n\n"

    async def models(self):
        return {"object": "list", "data": [{"id": "stub-model", "object": "model", "created": 0,
                                            "owned_by": "tests"}]}
