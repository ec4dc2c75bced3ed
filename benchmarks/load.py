"""Load on a real `pegasus serve` (#28, #38): clients at concurrency 1, 4 and 16 over many
users, in two mixes: recall only, and recalls with proxied chat turns (a stub upstream on this
machine), recorded turns and closes that extract (a scripted model, so extraction load is in);
throughput, p50 and p95 per level, errors, each worker's RSS; the latency the proxy adds over
calling the stub directly; where one recall's time goes, stage by stage.

    python -m benchmarks.load [--users 20] [--requests 200] [--levels 1 4 16] [--repeats 3]
                              [--baseline DIR] [--results FILE]

Every configuration (worker count, and with --baseline the code: DIR is another checkout, e.g.
`git worktree add --detach DIR main`, whose serve runs beside this one's in the same run, its
src/ first on PYTHONPATH, on a Neo4j of its own that its own code loaded with the same graphs:
a serve refuses a database migrated by newer code) is started fresh, warmed up, then measured;
configurations run in alternating order (1, 2 then 2, 1 …) `--repeats` times, and the tables
give the median run and the min–max. The machine's facts (cores, memory, CPU, where Neo4j runs)
are read, not written, and the load average is read before every level and shown beside its
figures.
Neo4j is a throwaway server on this machine (or NEO4J_URI); every request goes to 127.0.0.1.
Writes every level's figures to --results (JSON) and the "Load" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from benchmarks.seed_users import T0
from benchmarks.seed_users import seed as seed_users
from benchmarks.synthetic import message
from pegasus import store as store_module
from pegasus.operations.neo4j_local import LocalNeo4j, free_port
from pegasus.settings import secret_text
from tests.serve.servers import StubUpstream, serving

MIXES = {"mixed": [("recall", 0.6), ("chat", 0.25), ("turns", 0.1), ("close", 0.05)],
         "recall only": [("recall", 1.0)]}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def level(base: str, keys: dict[str, str], names: dict[str, list[str]], concurrency: int,
                requests: int, seed: int, mix: list[tuple[str, float]]) -> dict:
    """`requests` requests from `concurrency` clients; latencies by kind, errors, wall time."""
    rng = random.Random(seed)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    budget = iter(range(requests))
    users = list(keys)

    async def client(n: int, http: httpx.AsyncClient) -> None:
        # Each client holds a conversation for 5 of its requests, with one user: its chats
        # and turns are recorded on it and its close extracts them. (The shared request
        # counter gave nearly every request a conversation of its own, so closes found
        # nothing to extract: 0 extractions in the mixed levels of session 3's run.)
        for mine, i in enumerate(budget):
            key = users[(n + mine // 5) % len(users)]
            user = keys[key]
            kind = rng.choices([k for k, _ in mix], [w for _, w in mix])[0]
            text = message(rng, names[user])
            conversation = f"load-{seed}-{n}-{mine // 5}"
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

    load = os.getloadavg()[0]
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
            "load": load, "requests": len(every),
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
    original_embed = mem.embedder.embed
    current: dict[str, float] = defaultdict(float)

    def timing(original):
        def timed_run(tx, name, **params):
            began = time.perf_counter()
            try:
                return original(tx, name, **params)
            finally:
                current[name] += time.perf_counter() - began
        return timed_run

    def timed_embed(texts):
        began = time.perf_counter()
        try:
            return original_embed(texts)
        finally:
            current["embedding"] += time.perf_counter() - began

    rng = random.Random(3)
    # Every module's binding of the store's runners (recall reads through run_values).
    patched = [(m, attr, getattr(m, attr)) for m in list(sys.modules.values())
               if m and getattr(m, "__name__", "").startswith("pegasus")
               for attr in ("run", "run_values")
               if getattr(m, attr, None) in (store_module.run, store_module.run_values)]
    for module, attr, original in patched:
        setattr(module, attr, timing(original))
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
        for module, attr, original in patched:
            setattr(module, attr, original)
        mem.embedder.embed = original_embed
    return sorted(((name, statistics.median(v)) for name, v in spent.items()),
                  key=lambda item: -item[1])


def machine_facts(neo4j_uri: str) -> str:
    """Cores, memory, CPU model and where Neo4j runs, read from this machine."""
    cpus = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")]
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal"))
    host = urlsplit(neo4j_uri).hostname or "?"
    try:
        local = ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except OSError:
        local = False
    where = (f"on this machine ({neo4j_uri}), sharing its cores" if local
             else f"at {host}, another machine")
    return (f"{len(os.sched_getaffinity(0))} cores usable ({os.cpu_count()} online), "
            f"{memory_kb / 1024 / 1024:.1f} GiB memory, {cpus[0] if cpus else 'CPU unknown'}; "
            f"Neo4j {where}")


def worker_rss(pid: int) -> list[float]:
    """MiB resident per serve worker: the spawned workers of a multi-worker serve, else the
    process itself."""
    def rss(p: int) -> float:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
        return 0.0

    children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    workers = [c for c in children
               if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return [rss(p) for p in workers or [pid]]


def start_serve(env: dict[str, str], workers: int) -> tuple[str, subprocess.Popen]:
    """`pegasus serve --workers N` on a free port, once every worker has started; (its URL,
    the process)."""
    port = free_port()
    command = [sys.executable, "-m", "pegasus", "serve", "--port", str(port),
               "--workers", str(workers)]
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    # A shared, loaded machine (load average 30 on 2 cores during round 4) took over four
    # minutes to start a torch-based serve.
    deadline = time.monotonic() + 900
    while Path(log.name).read_text().count("Application startup complete") < workers:
        if server.poll() is not None or time.monotonic() > deadline:
            server.terminate()
            raise RuntimeError(f"serve did not start: {Path(log.name).read_text()[-2000:]}")
        time.sleep(0.3)
    return f"http://127.0.0.1:{port}", server


def finished_extractions(log_path: str) -> int:
    path = Path(log_path)
    return path.read_text().count("finish ") if path.exists() else 0


def spread(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    """The median, and the min–max when there is more than one run."""
    med = statistics.median(values) * scale
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({min(values) * scale:.{digits}f}–{max(values) * scale:.{digits}f})"


def tables(runs: list[dict], levels: list[int]) -> list[str]:
    """One table per mix: every configuration and level, the median run and the min–max."""
    configs = list(dict.fromkeys(r["config"] for r in runs))
    lines: list[str] = []
    for mix in MIXES:
        lines += ["", f"**{mix}**", "",
                  "| serve | concurrency | requests/s | p50 ms | p95 ms | recall p50 ms "
                  "| recall p95 ms | errors | load average |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for config in configs:
            for concurrency in levels:
                rows = [r for r in runs if r["config"] == config and r["mix"] == mix
                        and r["concurrency"] == concurrency]
                if not rows:
                    continue
                lines.append(
                    f"| {config} | {concurrency} | {spread([r['throughput'] for r in rows])} "
                    f"| {spread([r['p50'] for r in rows], 1000, 0)} "
                    f"| {spread([r['p95'] for r in rows], 1000, 0)} "
                    f"| {spread([r['recall_p50'] for r in rows], 1000, 0)} "
                    f"| {spread([r['recall_p95'] for r in rows], 1000, 0)} "
                    f"| {sum(r['errors'] for r in rows)} "
                    f"{', '.join(sorted({k for r in rows for k in r['error_kinds']}))} "
                    f"| {spread([r['load'] for r in rows])} |")
    return lines


def ratios(runs: list[dict], concurrency: int) -> list[str]:
    """Throughput at `concurrency`, per mix: each configuration against the one that differs
    from it only in its worker count (the fewest workers), and only in its code (the baseline);
    the ratio of medians, and the min–max of the repeat-by-repeat ratios."""
    def rates(code: str, workers: int, mix: str) -> list[float]:
        return [r["throughput"] for r in sorted(runs, key=lambda r: r["repeat"])
                if (r["code"], r["workers"], r["mix"], r["concurrency"])
                == (code, workers, mix, concurrency)]

    codes = list(dict.fromkeys(r["code"] for r in runs))
    counts = sorted({r["workers"] for r in runs})
    pairs = [((code, n), (code, counts[0])) for code in codes for n in counts[1:]]
    pairs += [((codes[-1], n), (codes[0], n)) for n in counts if len(codes) > 1]
    lines = []
    for mix in MIXES:
        for (code, n), (base_code, base_n) in pairs:
            other, first = rates(code, n, mix), rates(base_code, base_n, mix)
            if first and other:
                paired = [b / a for a, b in zip(first, other, strict=False)]
                lines.append(
                    f"- {mix}, concurrency {concurrency}: {label(code, n, len(codes))} against "
                    f"{label(base_code, base_n, len(codes))} "
                    f"×{statistics.median(other) / statistics.median(first):.2f} "
                    f"(repeat by repeat {min(paired):.2f}–{max(paired):.2f})")
    return lines


def label(code: str, workers: int, codes: int) -> str:
    """A configuration's name in the tables: its worker count, and its code when two run."""
    count = f"{workers} worker{'s' if workers > 1 else ''}"
    return f"{code}, {count}" if codes > 1 else count


def configurations(workers: list[int], baseline: Path | None
                   ) -> list[tuple[str, str, str | None, int]]:
    """(label, code, extra source folder or None, worker count) for every configuration."""
    codes: list[tuple[str, str | None]] = [("this", None)]
    if baseline is not None:
        codes.insert(0, (f"baseline ({baseline.name})", str(baseline.resolve())))
    return [(label(code, n, len(codes)), code, folder, n)
            for code, folder in codes for n in workers]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--requests", type=int, default=200, help="per level and mix")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="serve's worker processes, each a configuration")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=60, help="requests before measuring")
    parser.add_argument("--baseline", type=Path,
                        help="another checkout whose serve runs beside this one's")
    parser.add_argument("--results", type=Path, default=Path("load-results.json"),
                        help="every level's figures, as JSON")
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md")
    args = parser.parse_args()
    keys = {f"key-load-{i:04d}": f"load-user-{i}" for i in range(args.users)}
    upstream = StubUpstream()
    load_before = os.getloadavg()
    extractions = tempfile.NamedTemporaryFile(suffix=".log", delete=False).name  # noqa: SIM115
    configs = configurations(args.workers, args.baseline)
    with (memory(heap="2g", pagecache="1g") as mem, serving(upstream.app) as stub_root,
          contextlib.ExitStack() as stack):
        stub = f"{stub_root}/v1"
        names = seed_users(mem, list(keys.values()))
        # A baseline gets a Neo4j of its own, loaded by its own code (the same graphs).
        uris = {None: mem.settings.neo4j_uri}
        if args.baseline is not None:
            state = stack.enter_context(LocalNeo4j.throwaway(heap="2g", pagecache="1g"))
            folder = str(args.baseline.resolve())
            subprocess.run(
                [sys.executable, str(Path(__file__).with_name("seed_users.py")),
                 state.bolt_uri, json.dumps(list(keys.values()))], check=True,
                stdout=subprocess.DEVNULL, cwd=folder,
                env={**os.environ, "PYTHONPATH": f"{folder}/src:{folder}"})
            uris[folder] = state.bolt_uri
        env = {**os.environ, "HF_HUB_OFFLINE": "1",
               "PEGASUS_API_KEYS": json.dumps(keys), "PEGASUS_UPSTREAM_BASE_URL": stub,
               "PEGASUS_DECAY_IN_SERVE": "false", "PEGASUS_IDLE_CLOSE_S": "3600",
               "PEGASUS_LLM_FACTORY": "benchmarks.replicas:extractor",
               "PEGASUS_BENCH_EXTRACTIONS": extractions}
        if mem.settings.neo4j_password:
            env["NEO4J_PASSWORD"] = secret_text(mem.settings.neo4j_password)
        runs: list[dict] = []
        rss: dict[str, list[float]] = defaultdict(list)
        through = direct = 0.0
        seed = 0
        for repeat in range(args.repeats):
            order = configs if repeat % 2 == 0 else configs[::-1]
            for name, code, folder, workers in order:
                here = {**env, "NEO4J_URI": uris[folder]} if folder is None else {
                    **env, "NEO4J_URI": uris[folder],
                    "PYTHONPATH": f"{folder}/src:{folder}:{env.get('PYTHONPATH', '')}"}
                base, server = start_serve(here, workers)
                try:
                    asyncio.run(level(base, keys, names, 4, args.warmup, -1, MIXES["mixed"]))
                    for mix, weights in MIXES.items():
                        for concurrency in args.levels:
                            seed += 1
                            done = finished_extractions(extractions)
                            row = asyncio.run(level(base, keys, names, concurrency,
                                                    args.requests, seed, weights))
                            row.update(config=name, code=code, workers=workers, mix=mix, repeat=repeat,
                                       extracted=finished_extractions(extractions) - done)
                            runs.append(row)
                            print(f"ROW {name} {mix} c={concurrency} "
                                  f"{row['throughput']:.1f}/s p50 {row['p50'] * 1000:.0f} "
                                  f"p95 {row['p95'] * 1000:.0f} ms errors {row['errors']}",
                                  flush=True)
                    rss[name] += worker_rss(server.pid)
                    # Written after every configuration: a run cut short keeps what it measured.
                    args.results.write_text(json.dumps({"runs": runs, "rss_mib": rss}, indent=1))
                    if repeat == 0 and folder is None and workers == args.workers[0]:
                        through, direct = asyncio.run(proxy_overhead(base, stub,
                                                                     next(iter(keys))))
                finally:
                    server.terminate()
                    server.wait(timeout=60)
        profile = stage_profile(mem, next(iter(keys.values())), names[next(iter(keys.values()))])
        facts = machine_facts(mem.settings.neo4j_uri)
    load_after = os.getloadavg()
    args.results.write_text(json.dumps({
        "machine": facts, "load_before": load_before, "load_after": load_after,
        "rss_mib": rss, "proxy_s": [through, direct], "profile_s": profile, "runs": runs},
        indent=1))
    extracted = sum(r["extracted"] for r in runs if r["mix"] == "mixed")
    lines = [f"Machine: {facts}. Load average (1 min) {load_before[0]:.1f} before the run, "
             f"{load_after[0]:.1f} after (and beside every figure below): the machine is shared "
             "with other engineers' tests and benchmarks, so absolute figures move between "
             "runs; compare configurations within this run.", "",
             f"{args.users} users of 200 synthetic edges each; per configuration: serve started, "
             f"{args.warmup} mixed requests to warm it up (not measured), then {args.requests} "
             "requests per level and mix; configurations in alternating order, "
             f"{args.repeats} times: median run (min–max). *mixed*: "
             + ", ".join(f"{int(w * 100)}% {k}" for k, w in MIXES["mixed"])
             + f" (chat through the proxy to a stub upstream on this machine; each close "
             f"extracts with a scripted model in the serve process: {extracted} extractions "
             "finished during the measured mixed levels).",
             *tables(runs, args.levels), "",
             "Throughput ratios (same run, configurations alternating):", "",
             *ratios(runs, max(args.levels)), "",
             "RSS per worker after the levels (MiB, every worker of every repeat): "
             + "; ".join(f"{config}: median {statistics.median(v):.0f}, max {max(v):.0f}"
                         for config, v in rss.items()) + ".", "",
             f"A chat turn through the proxy: median {through * 1000:.0f} ms, against "
             f"{direct * 1000:.1f} ms straight to the stub (the proxy adds "
             f"{1000 * (through - direct):.0f} ms: the turn recorded, a recall, the reply "
             "recorded).", "",
             "Where one recall's time goes (median of 30, in process, word embeddings not "
             "cached, the read log written):", "", "| stage | median |", "|---|---|"]
    lines += [f"| {name} | {seconds * 1000:.1f} ms |" for name, seconds in profile]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Load", "python -m benchmarks.load", machine(), lines)


if __name__ == "__main__":
    main()
