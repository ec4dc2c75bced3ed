"""How long a slow client's socket lives on `pegasus serve` (docs/reliability.md, "Slow
clients").

    python -m benchmarks.slow_clients [--sockets 400] [--results FILE]

A real `pegasus serve` process with its default deadlines (header_timeout_s, body_timeout_s),
on loopback: --sockets connections that send half their request head, one that sends nothing,
one whose body stops after 5 bytes, one whose body comes at 1 byte/s. For each, how long after
its last byte the server closed it (or answered 408); written to --results (JSON) and printed
for docs/reliability.md. Neo4j is NEO4J_URI, else a throwaway local server.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import time
import uuid
from pathlib import Path

from benchmarks._server import machine, memory
from benchmarks.load import start_serve
from pegasus.settings import Settings, secret_text

KEY = "key-bench-slow-0001"
BODY = json.dumps({"text": "what about Sarah and the deadline"}).encode()


def head(port: int) -> bytes:
    return (f"POST /v1/memory/recall HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(BODY)}\r\n\r\n").encode()


def lifetimes(sockets: list[socket.socket], limit_s: float) -> list[float]:
    """Seconds until the server closed each socket or answered it (inf: still open)."""
    started, ended = time.monotonic(), [float("inf")] * len(sockets)
    for s in sockets:
        s.setblocking(False)
    while time.monotonic() - started < limit_s and float("inf") in ended:
        for i, s in enumerate(sockets):
            if ended[i] == float("inf"):
                try:
                    if s.recv(65536) is not None:
                        ended[i] = time.monotonic() - started
                except BlockingIOError:
                    pass
                except OSError:
                    ended[i] = time.monotonic() - started
        time.sleep(0.05)
    for s in sockets:
        s.close()
    return ended


def trickle(port: int, limit_s: float) -> float:
    """A body at 1 byte/s: seconds from the head until the server answered."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head(port))
    s.settimeout(0.01)
    started = time.monotonic()
    for byte in BODY * 1000:
        if time.monotonic() - started > limit_s:
            break
        try:
            s.sendall(bytes([byte]))
            if s.recv(65536):
                break
        except TimeoutError:
            pass
        except OSError:
            break
        time.sleep(1)
    s.close()
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=400)
    parser.add_argument("--results", type=Path,
                        default=Path("benchmarks/results/slow_clients.json"))
    args = parser.parse_args()
    defaults = Settings()
    limit = 3 * (defaults.header_timeout_s + defaults.body_timeout_s)
    with memory() as mem:
        env = {**os.environ, "HF_HUB_OFFLINE": "1",
               "PEGASUS_API_KEYS": json.dumps({KEY: f"bench-slow-{uuid.uuid4().hex[:8]}"}),
               "PEGASUS_NEO4J_URI": mem.settings.neo4j_uri or "",
               "PEGASUS_DECAY_IN_SERVE": "false"}
        if mem.settings.neo4j_password:
            env["NEO4J_PASSWORD"] = secret_text(mem.settings.neo4j_password)
        url, server = start_serve(env, 1)
        port = int(url.rsplit(":", 1)[1])
        try:
            halves = []
            for _ in range(args.sockets):
                s = socket.create_connection(("127.0.0.1", port))
                s.sendall(head(port)[:40])
                halves.append(s)
            half = lifetimes(halves, limit)
            silent = lifetimes([socket.create_connection(("127.0.0.1", port))], limit)[0]
            unfinished = socket.create_connection(("127.0.0.1", port))
            unfinished.sendall(head(port) + BODY[:5])
            stopped = lifetimes([unfinished], limit)[0]
            slow = trickle(port, limit)
        finally:
            server.terminate()
            server.wait(timeout=60)
    results = {"machine": machine(), "header_timeout_s": defaults.header_timeout_s,
               "body_timeout_s": defaults.body_timeout_s, "sockets": args.sockets,
               "half_head_s": {"median": statistics.median(half), "max": max(half)},
               "silent_s": silent, "unfinished_body_s": stopped, "one_byte_per_s_s": slow}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
