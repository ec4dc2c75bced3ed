"""A stub upstream that is also the extraction model: requests that carry Pegasus's recording
tools are answered with tool calls (OpenAI Chat Completions and Anthropic Messages shapes), so
`pegasus serve` with no PEGASUS_LLM_* extracts through it as it would through the real one."""

from __future__ import annotations

import json

from fastapi import Request

from tests.serve.servers import StubUpstream

TAUGHT = "my sister Maya is training for the Oslo marathon in June"
FACT = [("record_entity", {"name": "Maya", "kind": "PERSON", "confidence": 0.9}),
        ("record_relation", {"source": "User", "relation": "HAS_SISTER", "target": "Maya",
                             "confidence": 0.9, "stability": "stable",
                             "cardinality": "one_to_many", "snippet": TAUGHT})]


class ExtractingUpstream(StubUpstream):
    """Chat and Messages requests with tools are extraction calls: the first records what the
    transcript says of Maya (nothing for any other transcript), the next calls `finish`. Each
    extraction call is kept in `extractions` (api, model, key, body) for the test to count."""

    def __init__(self) -> None:
        super().__init__()
        self.extractions: list[dict] = []
        self.app.router.routes = [r for r in self.app.router.routes
                                  if getattr(r, "path", "") not in ("/v1/chat/completions",
                                                                    "/v1/messages")]
        self.app.post("/v1/chat/completions")(self.chat_or_extract)
        self.app.post("/v1/messages")(self.messages_or_extract)

    def _calls(self, body: dict, answered: bool) -> list[tuple[str, dict]]:
        """What the extraction model does: record the fact once, then finish."""
        if answered:
            return [("finish", {})]
        transcript = json.dumps(body.get("messages"))
        return [*FACT, ("finish", {})] if "Maya" in transcript else [("finish", {})]

    async def chat_or_extract(self, request: Request):
        body = await request.json()
        if not body.get("tools"):
            return await self._replay(request, body, self.completions)
        self.extractions.append({"api": "chat", "model": body["model"], "body": body,
                                 "key": request.headers.get("authorization")})
        answered = any(m.get("role") == "tool" for m in body["messages"])
        calls = [{"id": f"call_{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate(self._calls(body, answered))]
        return {"id": "cmpl-x", "object": "chat.completion", "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {"role": "assistant", "content": None,
                                         "tool_calls": calls}}],
                "usage": {"prompt_tokens": len(json.dumps(body)) // 4,
                          "completion_tokens": len(json.dumps(calls)) // 4,
                          "total_tokens": (len(json.dumps(body)) + len(json.dumps(calls))) // 4}}

    async def messages_or_extract(self, request: Request):
        body = await request.json()
        if not body.get("tools"):
            return await self._replay(request, body, self.messages)
        self.extractions.append({"api": "messages", "model": body["model"], "body": body,
                                 # the Anthropic SDK sends its key as a bearer token
                                 "key": request.headers.get("x-api-key") or request.headers.get(
                                     "authorization", "").removeprefix("Bearer ")})
        answered = any(isinstance(m.get("content"), list)
                       and any(b.get("type") == "tool_result" for b in m["content"])
                       for m in body["messages"])
        blocks = [{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
                  for i, (name, args) in enumerate(self._calls(body, answered))]
        return {"id": "msg_x", "type": "message", "role": "assistant", "model": body["model"],
                "content": blocks, "stop_reason": "tool_use", "stop_sequence": None,
                "usage": {"input_tokens": len(json.dumps(body)) // 4,
                          "output_tokens": len(json.dumps(blocks)) // 4}}

    @staticmethod
    async def _replay(request: Request, body: dict, handler):
        """Hand a chat request (no tools) to the plain stub, which reads the body again."""
        async def receive() -> dict:
            return {"type": "http.request", "body": json.dumps(body).encode(),
                    "more_body": False}
        return await handler(Request(request.scope, receive))


def backlog_extractor(settings):
    """A scripted extraction model for two conversations in turn (PEGASUS_LLM_FACTORY): the
    first is taught the fact of Maya, the second nothing, so the edge names which came first."""
    from langchain_core.messages import AIMessage

    from tests.helpers import call, scripted_model

    def calls(*named):
        return AIMessage(content="", tool_calls=[call(name, i, **args)
                                                 for i, (name, args) in enumerate(named)])

    return scripted_model(calls(*FACT), calls(("finish", {})), calls(("finish", {})))
