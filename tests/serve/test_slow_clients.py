"""Slow clients against a real `pegasus serve` process on loopback (docs/reliability.md, "Slow
clients"): sockets that send half their headers are closed at header_timeout_s, a body that
never finishes or arrives at 1 byte/s is cut at its deadline (408), and a request at a normal
pace is not disturbed."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx

from pegasus.operations.neo4j_local import free_port
from pegasus.settings import secret_text

KEY = "key-slow-0001"
HEAD_S, BODY_S = 1.5, 2.0


@contextlib.contextmanager
def pegasus_serve(settings, user_id: str) -> Iterator[int]:
    """`pegasus serve` in a subprocess with short deadlines; its port."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "HF_", "PATH"))}
    env.update({"NEO4J_URI": settings.neo4j_uri, "NEO4J_USER": settings.neo4j_user,
                "NEO4J_PASSWORD": secret_text(settings.neo4j_password) or "",
                "PEGASUS_HOME": str(settings.home), "TRANSFORMERS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false", "PEGASUS_SERVE_PORT": str(port),
                "PEGASUS_API_KEYS": json.dumps({KEY: user_id}),
                "PEGASUS_DECAY_IN_SERVE": "false",
                "PEGASUS_HEADER_TIMEOUT_S": str(HEAD_S), "PEGASUS_BODY_TIMEOUT_S": str(BODY_S)})
    process = subprocess.Popen([sys.executable, "-m", "pegasus", "serve"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "pegasus serve did not start"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def closed_within(sockets: list[socket.socket], seconds: float) -> list[float]:
    """When each socket was closed by the server (seconds from now), waiting `seconds` at most;
    inf for one still open."""
    started, closed = time.monotonic(), [float("inf")] * len(sockets)
    for s in sockets:
        s.setblocking(False)
    while time.monotonic() - started < seconds and float("inf") in closed:
        for i, s in enumerate(sockets):
            if closed[i] != float("inf"):
                continue
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            if data == b"" or data.startswith(b"HTTP/1.1 408"):
                closed[i] = time.monotonic() - started
        time.sleep(0.05)
    return closed


def head(port: int, body: bytes = b"", length: int | None = None) -> bytes:
    length = len(body) if length is None else length
    return (f"POST /v1/memory/recall HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def test_slow_clients_are_cut_at_their_deadlines(settings, user_id):
    with pegasus_serve(settings, user_id) as port:
        # 400 sockets with half their headers: all closed at the head's deadline
        halves = []
        for _ in range(400):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(head(port)[:40])
            halves.append(s)
        closed = closed_within(halves, HEAD_S + 10)
        assert max(closed) < HEAD_S + 8, sorted(closed)[-5:]
        assert min(closed) >= HEAD_S - 0.5
        for s in halves:
            s.close()

        # a socket that connects and sends nothing at all
        [silent] = [socket.create_connection(("127.0.0.1", port))]
        assert closed_within([silent], HEAD_S + 8)[0] < HEAD_S + 6
        silent.close()

        # an unfinished body: 408 at the body's deadline, then closed
        body = json.dumps({"text": "what about Sarah"}).encode()
        unfinished = socket.create_connection(("127.0.0.1", port))
        unfinished.sendall(head(port, body) + body[:5])
        unfinished.settimeout(BODY_S + 10)
        started = time.monotonic()
        answer = unfinished.recv(65536)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert BODY_S - 0.5 <= time.monotonic() - started < BODY_S + 5
        # the head and the body may come in two segments (a loaded machine): read to the close
        while chunk := unfinished.recv(65536):
            answer += chunk
        assert b"did not arrive within 2 s" in answer
        unfinished.close()

        # a body at 1 byte/s: cut at the deadline, long before its last byte
        trickle = socket.create_connection(("127.0.0.1", port))
        trickle.sendall(head(port, body))
        trickle.settimeout(0.01)
        started, answer = time.monotonic(), b""
        for byte in body:
            try:
                trickle.sendall(bytes([byte]))
            except OSError:
                break
            with contextlib.suppress(TimeoutError):
                answer += trickle.recv(65536)
            if answer:
                break
            time.sleep(1)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert time.monotonic() - started < BODY_S + 3  # the body needs len(body) s
        trickle.close()

        # a normal request on a kept-alive connection still works, twice
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(2):
                ok = client.post("/v1/memory/recall", json={"text": "what about Sarah"},
                                 headers={"Authorization": f"Bearer {KEY}"})
                assert ok.status_code == 200
                assert ok.json()["memory"] == []
            # idle past the head's deadline between requests: still answered
            time.sleep(HEAD_S + 0.5)
            assert client.get("/healthz").status_code == 200
