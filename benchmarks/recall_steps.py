"""Recall's round trips, each step alone: the same messages on one graph, variants alternating.

    python -m benchmarks.recall_steps [--edges 10000] [--recalls 200]

Loads synthetic users as `benchmarks.scale` does, then for each message runs, in alternating
order: the recall's reads as one query per transaction (as before round 4) and in one read
transaction; and a recall with a conversation id whose read log is written before it returns
and one whose log is queued for the background writer (settled, untimed, after each). Checks
that both read paths render the same block. Writes the section "Recall round trips".
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from benchmarks._server import machine, memory
from benchmarks.report import p95, write_section
from benchmarks.scale import NOW, WARMUP_RECALLS, Loader
from pegasus.synthetic import message


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=200)
    args = parser.parse_args()
    out: dict[str, list[float]] = {}
    same = 0
    with memory(heap="2g", pagecache="1g") as mem:
        mem.embedder.embed(["warm up"])
        loader = Loader(mem, random.Random(7))
        loader.grow_to(args.edges)
        engine, rng = mem.recall_engine, random.Random(11)

        def log_with(background: bool, user: str, text: str, i: int) -> Callable[[], object]:
            def run() -> object:
                mem.settings.read_log_background = background
                return mem.recall(user, text, conversation_id=f"c{i}", at=NOW)
            return run

        for i in range(WARMUP_RECALLS + args.recalls):
            user = rng.choice(loader.users)
            text = message(rng, loader.names[user])
            reads = {
                "one transaction per query": lambda u=user, t=text: engine._explain(
                    mem.store.query, u, t, NOW, None),
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
    rows = ["| variant | median (ms) | p95 (ms) |", "|---|---|---|"]
    rows += [f"| {name} | {statistics.median(v):.1f} | {p95(v):.1f} |" for name, v in out.items()]
    rows += ["", f"{loader.edges:,} edges, {args.recalls} messages after {WARMUP_RECALLS} "
             f"unmeasured, each variant once per message in alternating order; the two read "
             f"paths rendered the same block for {same} of {args.recalls}."]
    print("\n".join(rows))
    write_section("Recall round trips", f"python -m benchmarks.recall_steps --edges {args.edges} "
                  f"--recalls {args.recalls}", machine(), rows)


if __name__ == "__main__":
    main()
