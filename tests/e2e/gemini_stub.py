"""A stub of the Gemini API (the part Gemini CLI calls: generateContent, streamed or not, and
countTokens) that records every request and answers with StubUpstream's reply, so the real
Gemini CLI runs offline (GOOGLE_GEMINI_BASE_URL)."""

from __future__ import annotations

import json

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from tests.serve.servers import StubUpstream


class GeminiStub:
    """`received`: the bodies of every generateContent request, in order."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.app = FastAPI()
        self.app.post("/{version}/models/{call}")(self.call)

    def answer(self) -> dict:
        text = "".join(StubUpstream.CHUNKS)
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                  "totalTokenCount": 15},
                "modelVersion": "gemini-2.5-flash"}

    async def call(self, version: str, call: str, request: Request):
        body = await request.json()
        if call.endswith(":countTokens"):
            return {"totalTokens": 10}
        self.received.append(body)
        if call.endswith(":streamGenerateContent"):
            async def events():
                yield f"data: {json.dumps(self.answer())}\r\n\r\n"
            return StreamingResponse(events(), media_type="text/event-stream")
        return self.answer()
