"""A hostile upstream against the proxy (docs/reliability.md, "Hostile peers"): an endless
stream, an endless or oversized answer, a model that never stops. Serve reads a whole answer up
to upstream_max_bytes, cuts a reply at upstream_reply_s, records at most max_turn_chars of it,
and stops reading the upstream when the client goes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from pegasus import Memory
from pegasus.serve.app import create_app
from tests.serve.servers import serving
from tests.serve.test_proxy import recorded

KEY = "key-hostile-0001"
CHUNK = "x" * 1000


class HostileUpstream:
    """An OpenAI-compatible upstream that never stops (`mode`: "endless") or sends a reply of
    `reply_chars` characters and ends ("long"); it notes when its sending stopped."""

    def __init__(self) -> None:
        self.mode = "endless"
        self.reply_chars = 0
        self.pause_s = 0.001  # between pieces (benchmarks.hostile_upstream sends without one)
        self.piece = CHUNK  # what each endless piece says (the benchmark sends bigger ones)
        self.sent = 0
        self.stopped: float | None = None  # time.monotonic() its generator ended
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.completions)
        self.app.post("/v1/messages")(self.messages)
        self.app.get("/v1/models")(self.models)

    async def completions(self, request: Request):
        body = await request.json()
        self.sent, self.stopped = 0, None
        events = self._events() if body.get("stream") else self._answer()
        media = "text/event-stream" if body.get("stream") else "application/json"
        return StreamingResponse(events, media_type=media)

    async def _events(self):
        try:
            if self.mode == "long":
                for start in range(0, self.reply_chars, len(CHUNK)):
                    piece = CHUNK[:self.reply_chars - start]
                    yield f"data: {json.dumps({'choices': [{'delta': {'content': piece}}]})}\n\n"
                yield "data: [DONE]\n\n"
                return
            event = f"data: {json.dumps({'choices': [{'delta': {'content': self.piece}}]})}\n\n"
            while True:  # a model stuck in a loop, with no token limit
                if self.mode == "halves":  # each event in two writes, the pause between
                    yield event[:len(event) // 2]
                    await asyncio.sleep(self.pause_s)
                    yield event[len(event) // 2:]
                    self.sent += 1
                    continue
                yield event
                self.sent += 1
                await asyncio.sleep(self.pause_s)
        finally:
            self.stopped = time.monotonic()

    async def messages(self, request: Request):
        """Anthropic's Messages API: an endless stream of text deltas, or an endless body."""
        body = await request.json()
        self.sent, self.stopped = 0, None
        if not body.get("stream"):
            return StreamingResponse(self._answer(), media_type="application/json")
        return StreamingResponse(self._message_events(), media_type="text/event-stream")

    async def _message_events(self):
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": self.piece}}
        try:
            while True:
                yield f"event: content_block_delta\ndata: {json.dumps(delta)}\n\n"
                self.sent += 1
                await asyncio.sleep(self.pause_s)
        finally:
            self.stopped = time.monotonic()

    async def models(self):
        self.sent, self.stopped = 0, None
        return StreamingResponse(self._answer(), media_type="application/json")

    async def _answer(self):
        try:
            yield '{"choices": [{"message": {"role": "assistant", "content": "'
            while True:  # a JSON body that never ends
                yield self.piece * 64
                self.sent += 1
                await asyncio.sleep(self.pause_s)
        finally:
            self.stopped = time.monotonic()


@contextlib.contextmanager
def hostile(settings, user_id, **overrides):
    """The proxy in front of a HostileUpstream; (serve's URL, the upstream, the memory)."""
    upstream = HostileUpstream()
    with serving(upstream.app) as upstream_url:
        configured = settings.model_copy(update={
            "api_keys": {KEY: user_id}, "upstream_base_url": upstream_url + "/v1",
            "anthropic_upstream_base_url": upstream_url,
            "upstream_timeout_s": 30.0, **overrides})
        memory = Memory(configured)
        with serving(create_app(memory)) as url:
            yield url, upstream, memory
        memory.close()


def ask(stream: bool, conversation: str) -> dict:
    return {"json": {"model": "m", "stream": stream,
                     "messages": [{"role": "user", "content": "tell me everything"}]},
            "headers": {"Authorization": f"Bearer {KEY}", "X-Pegasus-Conversation": conversation}}


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_an_endless_answer_is_read_up_to_the_cap_then_refused(settings, user_id):
    with hostile(settings, user_id, upstream_max_bytes=2**20) as (url, upstream, _):
        started = time.monotonic()
        answer = httpx.post(url + "/v1/chat/completions", **ask(False, "endless-json"),
                            timeout=30)
        assert answer.status_code == 502
        assert "over upstream_max_bytes (1,048,576 bytes)" in answer.json()["error"]["message"]
        assert time.monotonic() - started < 10
        # serve stopped reading: the upstream's sending ended with the answer
        assert wait_for(lambda: upstream.stopped is not None, 5)
        assert upstream.sent < 64  # ~1 MiB of 64 KB pieces, never much more


def test_a_stream_that_never_stops_is_cut_at_the_reply_deadline(settings, user_id):
    with hostile(settings, user_id, upstream_reply_s=2.0, max_turn_chars=5000) as (
            url, upstream, memory):
        started, received = time.monotonic(), b""
        with httpx.stream("POST", url + "/v1/chat/completions", **ask(True, "endless-sse"),
                          timeout=30) as answer:
            assert answer.status_code == 200
            for chunk in answer.iter_raw():
                received += chunk
        took = time.monotonic() - started
        assert 2.0 <= took < 8  # cut at the deadline, with an error event as its last
        assert b"[DONE]" not in received
        last = received.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
        assert last.startswith(b"event: error\ndata: ")
        error = json.loads(last.split(b"data: ", 1)[1])
        assert error["error"]["message"] == "the upstream's reply was cut at upstream_reply_s (2 s)"
        assert wait_for(lambda: upstream.stopped is not None, 5)
        # the reply as far as it came is recorded, max_turn_chars of it
        assert wait_for(lambda: len(recorded(memory, user_id, "endless-sse")) == 2, 10)
        turns = recorded(memory, user_id, "endless-sse")
        assert [t["role"] for t in turns] == ["user", "assistant"]
        assert turns[1]["content"] == "x" * 5000


def test_a_stream_cut_mid_event_ends_with_whole_events_and_a_clean_error_event(settings,
                                                                               user_id):
    """The upstream writes each event in two halves with the pause between them: the cut at
    the deadline falls inside an event. Only whole events are relayed, so the error event is read as one
    (an outside attack saw it glued onto half an event, unreadable as JSON)."""
    with hostile(settings, user_id, upstream_reply_s=1.0) as (url, upstream, _):
        upstream.mode, upstream.pause_s = "halves", 0.05
        received = b""
        with httpx.stream("POST", url + "/v1/chat/completions", **ask(True, "halves"),
                          timeout=30) as answer:
            for chunk in answer.iter_raw():
                received += chunk
    *events, last = received.rstrip(b"\n").split(b"\n\n")
    assert events and all(json.loads(e.removeprefix(b"data: "))["choices"][0]["delta"][
        "content"] == CHUNK for e in events)
    assert last.startswith(b"event: error\ndata: ")
    assert "upstream_reply_s (1 s)" in json.loads(last.split(b"data: ", 1)[1])["error"]["message"]


def test_a_long_reply_is_relayed_whole_and_recorded_up_to_max_turn_chars(settings, user_id):
    with hostile(settings, user_id, max_turn_chars=2500) as (url, upstream, memory):
        upstream.mode, upstream.reply_chars = "long", 100_000
        with httpx.stream("POST", url + "/v1/chat/completions", **ask(True, "long-sse"),
                          timeout=30) as answer:
            text = answer.read().decode()
        assert text.endswith("data: [DONE]\n\n")
        assert text.count("data: ") == 101  # every piece reached the client
        assert wait_for(lambda: len(recorded(memory, user_id, "long-sse")) == 2, 10)
        assert recorded(memory, user_id, "long-sse")[1] == {"role": "assistant",
                                                            "content": "x" * 2500}


def test_the_upstream_is_abandoned_when_the_client_leaves_a_stream(settings, user_id):
    with hostile(settings, user_id) as (url, upstream, memory):
        with httpx.stream("POST", url + "/v1/chat/completions", **ask(True, "left-sse"),
                          timeout=30) as answer:
            for _ in answer.iter_raw():
                if upstream.sent > 50:
                    break
        time.monotonic()  # the client left here
        # within seconds (a loaded 2-core machine took over 5 once); never, before the fix
        assert wait_for(lambda: upstream.stopped is not None, 20)
        sent = upstream.sent
        time.sleep(0.5)
        assert upstream.sent == sent  # nothing more is read
        # what the client had seen is recorded, bounded
        assert wait_for(lambda: len(recorded(memory, user_id, "left-sse")) == 2, 10)
        reply = recorded(memory, user_id, "left-sse")[1]["content"]
        assert 0 < len(reply) <= memory.settings.max_turn_chars
        assert set(reply) == {"x"}


def test_the_upstream_is_abandoned_when_the_client_leaves_a_whole_answer(settings, user_id):
    with hostile(settings, user_id, upstream_max_bytes=2**30) as (url, upstream, _):
        raw = json.dumps(ask(False, "left-json")["json"]).encode()
        request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: Bearer {KEY}\r\nX-Pegasus-Conversation: left-json\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n"
                   ).encode() + raw
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(request)
            assert wait_for(lambda: upstream.sent > 20, 20)
        # the client hung up here, its answer still being read upstream
        # within seconds (a loaded 2-core machine took over 5 once); never, before the fix
        assert wait_for(lambda: upstream.stopped is not None, 20)


def test_the_anthropic_api_and_the_model_list_are_bounded_alike(settings, user_id):
    with hostile(settings, user_id, upstream_reply_s=2.0, upstream_max_bytes=2**20) as (
            url, upstream, memory):
        body = {"model": "claude", "max_tokens": 10, "stream": True,
                "messages": [{"role": "user", "content": "tell me everything"}]}
        headers = {"x-api-key": KEY, "X-Pegasus-Conversation": "endless-messages"}
        with httpx.stream("POST", url + "/v1/messages", json=body, headers=headers,
                          timeout=30) as answer:
            received = answer.read()
        last = received.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
        assert last.startswith(b"event: error\ndata: ")  # as Anthropic ends a failed stream
        error = json.loads(last.split(b"data: ", 1)[1])
        assert error["type"] == "error" and "upstream_reply_s (2 s)" in error["error"]["message"]
        assert wait_for(lambda: upstream.stopped is not None, 5)
        assert wait_for(lambda: len(recorded(memory, user_id, "endless-messages")) == 2, 10)
        reply = recorded(memory, user_id, "endless-messages")[1]["content"]
        assert 0 < len(reply) <= memory.settings.max_turn_chars

        whole = httpx.post(url + "/v1/messages", json={**body, "stream": False},
                           headers=headers, timeout=30)
        assert whole.status_code == 502
        assert whole.json()["type"] == "error"  # Anthropic's shape
        assert "over upstream_max_bytes" in whole.json()["error"]["message"]

        listed = httpx.get(url + "/v1/models", headers={"Authorization": f"Bearer {KEY}"},
                           timeout=30)
        assert listed.status_code == 502
        assert "over upstream_max_bytes" in listed.json()["error"]["message"]
        assert wait_for(lambda: upstream.stopped is not None, 5)
