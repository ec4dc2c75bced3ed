"""Load on a real `pegasus serve` (#28): clients at concurrency 1, 4, 16 and 64 over many users,
a mix of recalls, proxied chat turns (against a stub upstream on this machine), recorded turns
and closes; throughput, p50 and p95 per level, errors; the latency the proxy adds over calling
the stub directly; and where one recall's time goes, stage by stage.

    python -m benchmarks.load [--users 20] [--requests 400] [--levels 1 4 16 64]

Neo4j is a throwaway server on this machine (or NEO4J_URI); every request goes to 127.0.0.1.
Writes the "Load" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from pegasus import store as store_module
from pegasus.neo4j_local import free_port
from pegasus.settings import secret_text
from pegasus.synthetic import conversations, message
from tests.serve.servers import StubUpstream, serving

T0 = datetime(2026, 1, 1, tzinfo=UTC)
MIX = [("recall", 0.6), ("chat", 0.25), ("turns", 0.1), ("close", 0.05)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def level(base: str, keys: dict[str, str], names: dict[str, list[str]], concurrency: int,
                requests: int, seed: int) -> dict:
    """`requests` requests from `concurrency` clients; latencies by kind, errors, wall time."""
    rng = random.Random(seed)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    budget = iter(range(requests))
    users = list(keys)

    async def client(n: int, http: httpx.AsyncClient) -> None:
        for i in budget:
            key = users[(n + i) % len(users)]
            user = keys[key]
            kind = rng.choices([k for k, _ in MIX], [w for _, w in MIX])[0]
            text = message(rng, names[user])
            conversation = f"load-{n}-{i // 5}"
            headers = {"Authorization": f"Bearer {key}"}
            began = time.perf_counter()
            if kind == "recall":
                answer = await http.post("/v1/memory/recall", headers=headers,
                                         json={"text": text, "conversation_id": conversation})
            elif kind == "chat":
                answer = await http.post(
                    "/v1/chat/completions",
                    headers={**headers, "X-Pegasus-Conversation": conversation},
                    json={"model": "stub", "messages": [{"role": "user", "content": text}]})
            elif kind == "turns":
                answer = await http.post("/v1/memory/turns", headers=headers, json={
                    "conversation_id": conversation,
                    "turns": [{"role": "user", "content": text, "id": f"t{n}-{i}"}]})
            else:
                answer = await http.post(f"/v1/conversations/{conversation}/close",
                                         headers=headers)
            latencies[kind].append(time.perf_counter() - began)
            if answer.status_code >= 400:
                errors.append(f"{kind} {answer.status_code}")

    began = time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(n, http) for n in range(concurrency)))
    wall = time.perf_counter() - began
    every = [v for values in latencies.values() for v in values]
    return {"concurrency": concurrency, "throughput": len(every) / wall,
            "p50": percentile(every, 0.5), "p95": percentile(every, 0.95),
            "recall_p50": percentile(latencies["recall"], 0.5),
            "recall_p95": percentile(latencies["recall"], 0.95), "errors": len(errors),
            "error_kinds": sorted(set(errors))}


async def proxy_overhead(base: str, stub: str, key: str, rounds: int = 50) -> tuple[float, float]:
    """Median time of one chat turn through the proxy and straight to the stub."""
    body = {"model": "stub", "messages": [{"role": "user", "content": "hello there"}]}
    through, direct = [], []
    async with httpx.AsyncClient(timeout=60) as http:
        for i in range(rounds):
            began = time.perf_counter()
            await http.post(f"{base}/v1/chat/completions", json=body, headers={
                "Authorization": f"Bearer {key}", "X-Pegasus-Conversation": f"overhead-{i}"})
            through.append(time.perf_counter() - began)
            began = time.perf_counter()
            await http.post(f"{stub}/chat/completions", json=body)
            direct.append(time.perf_counter() - began)
    return statistics.median(through), statistics.median(direct)


def stage_profile(mem, user: str, names: list[str], rounds: int = 30) -> list[tuple[str, float]]:
    """Where a recall's time goes: every named query, the embedding, the rest (ranking,
    rendering), medians over `rounds` recalls with a read log."""
    spent: dict[str, list[float]] = defaultdict(list)
    original_run, original_embed = store_module.run, mem.embedder.embed
    current: dict[str, float] = defaultdict(float)

    def timed_run(tx, name, **params):
        began = time.perf_counter()
        try:
            return original_run(tx, name, **params)
        finally:
            current[name] += time.perf_counter() - began

    def timed_embed(texts):
        began = time.perf_counter()
        try:
            return original_embed(texts)
        finally:
            current["embedding"] += time.perf_counter() - began

    rng = random.Random(3)
    modules = [m for m in list(sys.modules.values())
               if m and getattr(m, "__name__", "").startswith("pegasus")
               and getattr(m, "run", None) is original_run]
    for module in modules:
        module.run = timed_run
    mem.embedder.embed = timed_embed
    try:
        for i in range(rounds):
            mem.embedder.forget()
            current.clear()
            began = time.perf_counter()
            mem.recall(user, message(rng, names), conversation_id=f"profile-{i}",
                       at=T0 + timedelta(days=30))
            total = time.perf_counter() - began
            for name, seconds in current.items():
                spent[name].append(seconds)
            spent["everything else (seeds and ranking in Python, sessions, commits)"].append(
                total - sum(current.values()))
            spent["the whole recall"].append(total)
    finally:
        for module in modules:
            module.run = original_run
        mem.embedder.embed = original_embed
    return sorted(((name, statistics.median(v)) for name, v in spent.items()),
                  key=lambda item: -item[1])


def compare(rows: list[dict]) -> list[str]:
    """The #28 targets against the first worker count, measured in the same run."""
    def at(workers: int, concurrency: int) -> dict | None:
        return next((r for r in rows if r["workers"] == workers
                     and r["concurrency"] == concurrency), None)
    counts = sorted({r["workers"] for r in rows})
    lines = []
    for workers in counts[1:]:
        base, more = at(counts[0], 16), at(workers, 16)
        four = at(workers, 4)
        if base and more and four:
            lines.append(f"With {workers} workers against {counts[0]}: throughput at "
                         f"concurrency 16 × {more['throughput'] / base['throughput']:.2f}; p95 "
                         f"at concurrency 4 {four['p95'] * 1000:.0f} ms.")
    return ["", *lines] if lines else []


def start_serve(env: dict[str, str], workers: int) -> tuple[str, subprocess.Popen]:
    """`pegasus serve --workers N` on a free port, once every worker has started; (its URL,
    the process)."""
    port = free_port()
    command = [sys.executable, "-m", "pegasus", "serve", "--port", str(port),
               "--workers", str(workers)]
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 240
    while Path(log.name).read_text().count("Application startup complete") < workers:
        if server.poll() is not None or time.monotonic() > deadline:
            server.terminate()
            raise RuntimeError(f"serve did not start: {Path(log.name).read_text()[-2000:]}")
        time.sleep(0.3)
    return f"http://127.0.0.1:{port}", server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="serve's worker processes, one table each, in one run")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rng = random.Random(7)
    keys = {f"key-load-{i:04d}": f"load-user-{i}" for i in range(args.users)}
    names: dict[str, list[str]] = {}
    upstream = StubUpstream()
    with memory(heap="2g", pagecache="1g") as mem, serving(upstream.app) as stub_root:
        stub = f"{stub_root}/v1"
        for user in keys.values():
            for n, batch in enumerate(conversations(rng, edges=200)):
                mem.commit(user, f"seed-{n}", batch, at=T0 + timedelta(days=n))
            names[user] = sorted({n for m in mem.memories(user) for n in (m.source, m.target)}
                                 - {"User"})
        env = {**os.environ, "NEO4J_URI": mem.settings.neo4j_uri, "HF_HUB_OFFLINE": "1",
               "PEGASUS_API_KEYS": json.dumps(keys), "PEGASUS_UPSTREAM_BASE_URL": stub,
               "PEGASUS_DECAY_IN_SERVE": "false", "PEGASUS_IDLE_CLOSE_S": "3600"}
        if mem.settings.neo4j_password:
            env["NEO4J_PASSWORD"] = secret_text(mem.settings.neo4j_password)
        rows = []
        for workers in args.workers:
            base, server = start_serve(env, workers)
            try:
                for n, concurrency in enumerate(args.levels):
                    row = asyncio.run(level(base, keys, names, concurrency, args.requests, n))
                    row["workers"] = workers
                    rows.append(row)
                    print(f"ROW workers={workers} c={concurrency} {row['throughput']:.1f}/s "
                          f"p50 {row['p50'] * 1000:.0f} p95 {row['p95'] * 1000:.0f} ms "
                          f"errors {row['errors']}", flush=True)
                if workers == args.workers[0]:
                    through, direct = asyncio.run(proxy_overhead(base, stub, next(iter(keys))))
            finally:
                server.terminate()
                server.wait(timeout=60)
        profile = stage_profile(mem, next(iter(keys.values())), names[next(iter(keys.values()))])
    lines = ["| workers | concurrency | requests/s | p50 | p95 | recall p50 | recall p95 "
             "| errors |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['workers']} | {r['concurrency']} | {r['throughput']:.1f} | {r['p50'] * 1000:.0f} ms "
              f"| {r['p95'] * 1000:.0f} ms | {r['recall_p50'] * 1000:.0f} ms "
              f"| {r['recall_p95'] * 1000:.0f} ms | {r['errors']} "
              f"{', '.join(r['error_kinds'])} |" for r in rows]
    lines += ["", "`pegasus serve --workers N` with Neo4j on the "
              f"same 2-core machine; {args.users} users of 200 synthetic edges each; "
              f"{args.requests} requests per level, mixed "
              + ", ".join(f"{int(w * 100)}% {k}" for k, w in MIX) + " (chat through the proxy "
              "to a stub upstream on this machine). A chat turn through the proxy: median "
              f"{through * 1000:.0f} ms, against {direct * 1000:.1f} ms straight to the stub "
              f"(the proxy adds {1000 * (through - direct):.0f} ms: the turn recorded, a recall, "
              "the reply recorded).", *compare(rows), "", "Where one recall's time goes (median of 30, in "
              "process, word embeddings not cached, the read log written):", "",
              "| stage | median |", "|---|---|"]
    lines += [f"| {name} | {seconds * 1000:.1f} ms |" for name, seconds in profile]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Load", "python -m benchmarks.load", machine(), lines)


if __name__ == "__main__":
    main()
