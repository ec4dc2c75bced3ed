"""Recall's round trips, each step alone: the same messages on one graph, variants alternating.

    python -m benchmarks.recall_steps [--edges 10000] [--recalls 200] [--threads 16]

Loads synthetic users as `benchmarks.scale` does, then for each message runs, in alternating
order: the recall's reads as one query per transaction (as before round 4) and in one read
transaction; and a recall with a conversation id whose read log is written before it returns
and one whose log is queued for the background writer (settled, untimed, after each). Checks
that both read paths render the same block, and counts the Cypher calls of a recall. Then the
embedder batched across concurrent recalls: `--threads` threads recalling at once, with each
word embedded afresh (nothing cached), with no batch window and with a 2 ms one, in
alternating rounds. Writes the section "Recall round trips".
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from benchmarks._server import machine, memory
from benchmarks.report import p95, write_section
from benchmarks.scale import NOW, WARMUP_RECALLS, Loader
from benchmarks.synthetic import message
from pegasus import Memory
from pegasus.embedding.embed import Embedder
from pegasus.recall import engine as engine_module


def alternate(variants: dict[str, Callable[[], object]], i: int, out: dict[str, list[float]]
              ) -> list[object]:
    """Run every variant once, in turn order flipped on odd rounds; their results."""
    results = []
    order = list(variants.items())
    for name, run in order if i % 2 == 0 else order[::-1]:
        began = time.perf_counter()
        results.append(run())
        out[name].append((time.perf_counter() - began) * 1000)
    return results


def cypher_calls(mem: Memory, user: str, text: str) -> Counter[str]:
    """The named queries one recall (read log queued) runs, and how often."""
    calls: Counter[str] = Counter()
    original = engine_module.run_values

    def counted(tx, name, **params):
        calls[name] += 1
        return original(tx, name, **params)

    engine_module.run_values = counted
    try:
        mem.recall(user, text, at=NOW)
    finally:
        engine_module.run_values = original
    return calls


def batched(mem: Memory, loader: Loader, threads: int, rounds: int, per_round: int
            ) -> dict[str, list[float]]:
    """Recalls per second from `threads` threads, every word embedded afresh, the embedder with
    no batch window and with a 2 ms one, in alternating rounds."""
    engine, rng = mem.recall_engine, random.Random(5)
    s = mem.settings
    embedders = {f"{window:g} ms window": Embedder(
        s.embedding_model, s.embedding_dimensions, s.embed_cache_texts, s.embedding_runtime,
        window) for window in (0.0, 2.0)}
    out: dict[str, list[float]] = {name: [] for name in embedders}
    shipped = engine.embedder
    try:
        for i in range(rounds):
            order = list(embedders.items())
            for name, embedder in order if i % 2 == 0 else order[::-1]:
                work = [(user, message(rng, loader.names[user])) for user in
                        (rng.choice(loader.users) for _ in range(per_round))]
                embedder.forget()
                engine.embedder = embedder
                began = time.perf_counter()
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(lambda job: engine.explain(job[0], job[1], NOW), work))
                out[name].append(per_round / (time.perf_counter() - began))
    finally:
        engine.embedder = shipped
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=6, help="batcher rounds, alternating")
    args = parser.parse_args()
    out: dict[str, list[float]] = {}
    same = 0
    load_before = os.getloadavg()[0]
    with memory(heap="2g", pagecache="1g") as mem:
        mem.embedder.embed(["warm up"])
        loader = Loader(mem, random.Random(7))
        loader.grow_to(args.edges)
        engine, rng = mem.recall_engine, random.Random(11)

        def log_with(background: bool, user: str, text: str, i: int) -> Callable[[], object]:
            def run() -> object:
                engine.recall = engine.recall.model_copy(
                    update={"read_log_background": background})
                return mem.recall(user, text, conversation_id=f"c{i}", at=NOW)
            return run

        def per_query(user: str, text: str):
            cut, params, embedded = engine.prepare(text)
            return engine._explain(mem.store.read, user, cut, NOW, params, None, embedded)

        for i in range(WARMUP_RECALLS + args.recalls):
            user = rng.choice(loader.users)
            text = message(rng, loader.names[user])
            reads = {
                "one transaction per query": lambda u=user, t=text: per_query(u, t),
                "one read transaction": lambda u=user, t=text: engine.explain(u, t, NOW),
            }
            logs = {"read log written before returning": log_with(False, user, text, i),
                    "read log queued": log_with(True, user, text, i)}
            timed = out if i >= WARMUP_RECALLS else {k: [] for k in [*reads, *logs]}
            for name in [*reads, *logs]:
                out.setdefault(name, [])
            explained = alternate(reads, i, timed)
            same += i >= WARMUP_RECALLS and len({e.recall.render() for e in explained}) == 1
            alternate(logs, i, timed)
            mem.settle_reads()
        user = loader.users[0]
        calls = cypher_calls(mem, user, message(rng, loader.names[user]))
        rates = batched(mem, loader, args.threads, args.rounds, 4 * args.threads)
    rows = [f"Load average (1 min) {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at "
            "the end (2 shared cores).", "",
            "| variant | median (ms) | p95 (ms) |", "|---|---|---|"]
    rows += [f"| {name} | {statistics.median(v):.1f} | {p95(v):.1f} |" for name, v in out.items()]
    rows += ["", f"{loader.edges:,} edges, {args.recalls} messages after {WARMUP_RECALLS} "
             f"unmeasured, each variant once per message in alternating order; the two read "
             f"paths rendered the same block for {same} of {args.recalls}.", "",
             "Cypher calls of one recall: " + ", ".join(
                 f"{name} ×{n}" for name, n in sorted(calls.items())) + ".", "",
             f"The embedder batched across {args.threads} concurrent recalls (every word "
             f"embedded afresh; {4 * args.threads} recalls a round, {args.rounds} rounds "
             "alternating): "
             + "; ".join(f"{name}: {statistics.median(v):.1f} recalls/s "
                         f"({min(v):.1f}–{max(v):.1f})" for name, v in rates.items()) + "."]
    print("\n".join(rows))
    write_section("Recall round trips", f"python -m benchmarks.recall_steps --edges {args.edges} "
                  f"--recalls {args.recalls} --threads {args.threads} --rounds {args.rounds}",
                  machine(), rows)


if __name__ == "__main__":
    main()
