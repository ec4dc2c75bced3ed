"""Serve's memory under an upstream that never stops (docs/reliability.md, "Hostile peers").

    python -m benchmarks.hostile_upstream [--seconds 60] [--results FILE] [--no-write]

A real `pegasus serve` process in front of a local upstream that sends without end, as fast as
it can: an SSE stream read by a client for the whole run; the same stream left by its client
after 2 s; a JSON body that never ends, asked again and again (each refused at
upstream_max_bytes). serve's resident memory (VmRSS) is sampled every half second; the figures
(start, peak, end, MiB) and what was relayed go to --results (JSON) and the "Hostile upstream"
section of docs/benchmarks.md. Neo4j is NEO4J_URI, else a throwaway local server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
import uuid
from pathlib import Path

import httpx

from benchmarks._server import machine, memory
from benchmarks.load import start_serve, worker_rss
from benchmarks.report import write_section
from pegasus.settings import secret_text
from tests.serve.servers import serving
from tests.serve.test_upstream_bounds import HostileUpstream

KEY = "key-bench-hostile-1"


def ask(stream: bool, conversation: str) -> dict:
    return {"json": {"model": "m", "stream": stream,
                     "messages": [{"role": "user", "content": "tell me everything"}]},
            "headers": {"Authorization": f"Bearer {KEY}", "X-Pegasus-Conversation": conversation}}


def sampled(pid: int, seconds: float, work) -> tuple[list[float], object]:
    """serve's RSS (MiB) every 0.5 s while `work` runs in a thread for `seconds`; (the
    samples, what `work` returned)."""
    stop = threading.Event()
    result: dict[str, object] = {}
    thread = threading.Thread(target=lambda: result.update(value=work(stop)), daemon=True)
    samples = [worker_rss(pid)[0]]
    thread.start()
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        time.sleep(0.5)
        samples.append(worker_rss(pid)[0])
    stop.set()
    thread.join(timeout=60)
    samples.append(worker_rss(pid)[0])
    return samples, result.get("value")


def stream_read(url: str, leave_after: float | None):
    def work(stop: threading.Event) -> int:
        received, started = 0, time.monotonic()
        with httpx.stream("POST", url + "/v1/chat/completions", **ask(True, "bench-sse"),
                          timeout=60) as answer:
            for chunk in answer.iter_raw(65536):
                received += len(chunk)
                if stop.is_set() or (leave_after and time.monotonic() - started > leave_after):
                    break
        if leave_after:
            stop.wait()
        return received
    return work


def endless_bodies(url: str):
    def work(stop: threading.Event) -> dict[int, int]:
        statuses: dict[int, int] = {}
        while not stop.is_set():
            status = httpx.post(url + "/v1/chat/completions", **ask(False, "bench-json"),
                                timeout=120).status_code
            statuses[status] = statuses.get(status, 0) + 1
        return statuses
    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--results", type=Path,
                        default=Path("benchmarks/results/hostile_upstream.json"))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    user = f"bench-hostile-{uuid.uuid4().hex[:8]}"
    upstream = HostileUpstream()
    upstream.pause_s = 0.0  # as fast as the loop sends
    upstream.piece = "x" * 65536  # one event of 64 KiB, again and again
    results: dict[str, dict] = {}
    with memory() as mem, serving(upstream.app) as upstream_url:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PEGASUS_API_KEYS": json.dumps({KEY: user}),
               "PEGASUS_UPSTREAM_BASE_URL": upstream_url + "/v1",
               "PEGASUS_NEO4J_URI": mem.settings.neo4j_uri or "",
               "PEGASUS_DECAY_IN_SERVE": "false"}
        if mem.settings.neo4j_password:
            env["NEO4J_PASSWORD"] = secret_text(mem.settings.neo4j_password)
        url, server = start_serve(env, 1)
        try:
            httpx.post(url + "/v1/chat/completions", **ask(False, "warm"), timeout=120)
            for name, work in (("endless SSE, client reading", stream_read(url, None)),
                               ("endless SSE, client gone after 2 s", stream_read(url, 2.0)),
                               ("endless JSON body, asked again and again",
                                endless_bodies(url))):
                samples, value = sampled(server.pid, args.seconds, work)
                results[name] = {"rss_mib": samples, "outcome": value,
                                 "upstream_sent_after_run": upstream.sent,
                                 "upstream_stopped": upstream.stopped is not None}
                print(name, f"{samples[0]:.0f} -> peak {max(samples):.0f} -> {samples[-1]:.0f}"
                      f" MiB", value)
        finally:
            server.terminate()
            with contextlib.suppress(Exception):
                server.wait(timeout=30)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=1))
    lines = [f"{args.seconds:g} s per case, serve's defaults (upstream_max_bytes 8 MiB, "
             "upstream_reply_s 1800 s: no case is cut by time); RSS of the serve process.", "",
             "| case | RSS at start MiB | peak MiB | at end MiB | outcome |", "|---|---|---|---|---|"]
    for name, result in results.items():
        rss = result["rss_mib"]
        outcome = result["outcome"]
        said = (f"{outcome / 2**20:.0f} MiB relayed" if isinstance(outcome, int)
                else ", ".join(f"{n}× {s}" for s, n in sorted(outcome.items())))
        lines.append(f"| {name} | {rss[0]:.0f} | {max(rss):.0f} | {rss[-1]:.0f} | {said} |")
    lines += ["", "Before the bounds (issue 47, main 95195ad) an endless SSE stream took serve "
              "from 0.47 to 4.7 GB in 55 s and went on after the client left."]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Hostile upstream",
                      f"python -m benchmarks.hostile_upstream --seconds {args.seconds:g}",
                      machine(), lines)


if __name__ == "__main__":
    main()
