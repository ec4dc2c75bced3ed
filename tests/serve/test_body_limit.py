"""Request bodies over their route's limit (#35, serve/limits.py): a declared size over it is
answered 413 before a byte of the body is read, a body without a declared size is refused the
moment it passes the limit, and bodies within it go through as before, on the proxy's three
APIs, /turns, /remember and import."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import Iterator
from urllib.parse import urlparse

import httpx
import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from pegasus.serve.app import create_app
from tests.serve.test_health import samples
from tests.serve.test_proxy import KEY_A, NOTHING, SISTER_BATCH, proxy

TURN = [{"role": "user", "content": NOTHING}]
BODIES = {  # a route and a body it answers 200
    "/v1/chat/completions": {"model": "stub", "messages": TURN},
    "/v1/responses": {"model": "stub", "input": NOTHING},
    "/v1/messages": {"model": "claude-stub", "max_tokens": 64, "messages": TURN},
    "/v1/memory/turns": {"conversation_id": "limits-turns", "turns": TURN},
    "/v1/memory/remember": {"conversation_id": "limits-remember", "turns": TURN},
}
ROUTES = [*BODIES, "/v1/memory/import"]
DECLARED = {route: 200_000_000 for route in BODIES}  # the 200 MB turn
DECLARED["/v1/memory/import"] = 300_000_000  # over the 256 MiB an import may be


def message_of(route: str, answer: dict) -> tuple[str, str]:
    """(type, message) of an error answer, in the shape the route's clients read."""
    if route == "/v1/messages":
        assert answer["type"] == "error"
    return answer["error"]["type"], answer["error"]["message"]


def declared_only(url: str, route: str, size: int) -> tuple[int, dict]:
    """POST headers declaring `size` bytes, and no body at all: a server that waited for the
    body would never answer (the socket's timeout fails the test)."""
    address = urlparse(url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall((f"POST {route} HTTP/1.1\r\nHost: {address.netloc}\r\n"
                      f"Authorization: Bearer {KEY_A}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {size}\r\n\r\n").encode())
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < int(
                _header(answer, b"content-length") or 1):
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _header(answer: bytes, name: bytes) -> bytes | None:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def scope_of(route: str) -> dict:
    """The ASGI scope of a chunked POST to `route` with the test's key."""
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": route, "raw_path": route.encode(),
            "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80), "state": {},
            "headers": [(b"authorization", f"Bearer {KEY_A}".encode()),
                        (b"content-type", b"application/json"),
                        (b"transfer-encoding", b"chunked")]}


def endless(app, scope: dict) -> tuple[int, list[dict], dict]:
    """Run `app` on an endless body of 4 KiB chunks: (chunks it pulled, the messages it sent,
    the JSON answer)."""
    pulled, sent = 0, []

    async def receive() -> dict:
        nonlocal pulled
        pulled += 1
        return {"type": "http.request", "body": b"x" * 4096, "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return pulled, sent, json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


def chunked(data: bytes, size: int = 4096) -> Iterator[bytes]:
    """A body httpx sends without a Content-Length (Transfer-Encoding: chunked)."""
    for start in range(0, len(data), size):
        yield data[start:start + size]


def test_a_declared_200_mb_body_is_refused_before_it_is_read_on_every_route(settings,
                                                                           user_id):
    finish = AIMessage(content="", tool_calls=[{"name": "finish", "args": {}, "id": "1",
                                                "type": "tool_call"}])
    llm = GenericFakeChatModel(messages=itertools.repeat(finish))  # extracts nothing
    with proxy(settings, [user_id], llm=llm) as (_, stub, memory, app):
        http = httpx.Client(base_url=app.state.url, timeout=30,
                            headers={"Authorization": f"Bearer {KEY_A}"})
        for route in ROUTES:
            status, answer = declared_only(app.state.url, route, DECLARED[route])
            kind, message = message_of(route, answer)
            assert status == 413, (route, answer)
            limit = (memory.settings.max_upload_bytes if route == "/v1/memory/import"
                     else memory.settings.max_request_bytes)
            assert kind == ("request_too_large" if route == "/v1/messages"
                            else "too_large_error")
            assert message == (f"the request body is over this route's limit of {limit:,} "
                               "bytes; nothing was read or stored")
        # Nothing was recorded, and each refusal is counted under its route template.
        assert not memory.conversation_state(user_id, "limits-turns")["exists"]
        got = samples(http.get("/metrics").text)
        for route in ROUTES:
            assert got[("pegasus_http_requests_total",
                        (("method", "POST"), ("route", route), ("status", "413")))] == 1
        # Within the limit, declared or chunked, every route answers as before.
        assert http.post("/v1/memory/commit", json={"conversation_id": "c1",
                                                    "batch": SISTER_BATCH}).status_code == 200
        for route, body in BODIES.items():
            data = json.dumps(body).encode()
            plain = http.post(route, content=data, headers={"Content-Type": "application/json"})
            assert plain.status_code == 200, (route, plain.text)
            streamed = http.post(route, content=chunked(data),
                                 headers={"Content-Type": "application/json"})
            assert streamed.status_code == 200, (route, streamed.text)
        assert [m["content"] for m in stub.received[-1]["messages"]][-1] == NOTHING
        exported = http.get("/v1/memory/export").content
        assert http.delete("/v1/memory", params={"confirm": "everything"}).status_code == 200
        imported = http.post("/v1/memory/import", content=chunked(exported, 64))
        assert imported.status_code == 200, imported.text
        assert {m.relation for m in memory.memories(user_id)} == {"HAS_SISTER", "LIVES_IN"}


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_without_a_declared_size_is_refused_as_it_passes_the_limit(settings, user_id,
                                                                         route):
    """An endless chunked body: the route reads up to the limit, then the answer is 413; the
    rest is never asked for (so no body larger than the limit is ever held)."""
    from pegasus import Memory

    limits = {"max_request_bytes": 100_000, "max_upload_bytes": 200_000,
              "api_keys": {KEY_A: user_id}}
    with Memory(settings.model_copy(update=limits)) as memory:
        app = create_app(memory)
        pulled, sent, answer = endless(app, scope_of(route))
        limit = limits["max_upload_bytes" if route == "/v1/memory/import" else
                       "max_request_bytes"]
        assert sent[0]["status"] == 413
        kind, message = message_of(route, answer)
        assert kind == ("request_too_large" if route == "/v1/messages" else "too_large_error")
        assert message.startswith(f"the request body is over this route's limit of {limit:,}")
        assert pulled == limit // 4096 + 1  # the chunk that passed the limit, and no more
        assert memory.memories(user_id) == []


def test_a_client_hanging_up_mid_upload_is_no_server_error(settings, user_id, caplog):
    """Counted and logged as 499 (client closed request), not as a 500 with an error line."""
    import logging

    from prometheus_client.exposition import generate_latest

    from pegasus import Memory

    caplog.set_level(logging.INFO, logger="pegasus")
    with Memory(settings.model_copy(update={"api_keys": {KEY_A: user_id}})) as memory:
        app = create_app(memory)
        messages = iter([{"type": "http.request", "body": b'{"type": "hea', "more_body": True},
                         {"type": "http.disconnect"}])

        async def receive() -> dict:
            return next(messages)

        async def send(message: dict) -> None:
            pass

        asyncio.run(app(scope_of("/v1/memory/import"), receive, send))
        got = samples(generate_latest(app.state.metrics.registry).decode())
    logged = [r for r in caplog.records if r.name.startswith("pegasus")]
    assert [r.getMessage() for r in logged if r.levelno >= logging.ERROR] == []
    assert "POST /v1/memory/import 499" in "\n".join(r.getMessage() for r in logged)
    assert got[("pegasus_http_requests_total", (
        ("method", "POST"), ("route", "/v1/memory/import"), ("status", "499")))] == 1


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("credentials", [[], [(b"authorization", b"Bearer key-nobody-0000")],
                                         [(b"x-api-key", b"key-nobody-0000")]])
def test_a_body_without_a_known_key_is_never_read(settings, user_id, route, credentials):
    """Found by the outside attack: an API route parses its body before its key dependency
    runs, so a keyless 64 MiB JSON body made the server hold ~0.7 GB. Now not a byte of it is
    read: 401 at the route's first read."""
    from pegasus import Memory

    with Memory(settings.model_copy(update={"api_keys": {KEY_A: user_id}})) as memory:
        app = create_app(memory)
        scope = scope_of(route)
        scope["headers"] = [h for h in scope["headers"] if h[0] != b"authorization"
                            ] + credentials
        pulled, sent, answer = endless(app, scope)
        assert sent[0]["status"] == 401
        kind, message = message_of(route, answer)
        assert message.startswith("missing or unknown API key")
        assert pulled == 0
