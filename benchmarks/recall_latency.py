"""Recall latency on synthetic graphs of growing size, many users each (SPEC §7).

    python -m benchmarks.recall_latency [--sizes 10000 100000 1000000] [--recalls 200]
Loads users through the real commit path (cumulatively: each size adds users to the last),
then times `Memory.recall` on random users, and the activation query against a bare two-hop
neighbourhood count over the same seeds. Writes docs/benchmarks.md (section "Recall").
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from tqdm import tqdm

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from benchmarks.workload import conversations, message

EDGES_PER_USER = 200
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--recalls", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    rows = ["| edges | users | recall median (ms) | recall p95 (ms) | warm median (ms) "
            "| warm p95 (ms) | activation median (ms) | bare 2-hop count median (ms) "
            "| activation / bare |", "|---|---|---|---|---|---|---|---|---|"]
    results = {}
    with memory() as mem:
        users: list[str] = []
        names: dict[str, list[str]] = {}
        for size in args.sizes:
            target_users = size // EDGES_PER_USER
            with tqdm(total=target_users, initial=len(users), desc=f"load {size:,} edges") as bar:
                while len(users) < target_users:
                    user = f"u{len(users):06d}"
                    for i, batch in enumerate(conversations(rng, EDGES_PER_USER)):
                        mem.commit(user, f"c{i}", batch, at=T0 + timedelta(days=i))
                        names.setdefault(user, []).extend(e["name"] for e in batch["entities"]
                                                          if e["name"] != "User")
                    users.append(user)
                    bar.update()
            mem.consolidate(at=T0 + timedelta(days=30))
            now = T0 + timedelta(days=30)
            recall_ms, warm_ms, act_ms, bare_ms = [], [], [], []
            for _ in range(args.recalls):
                user = rng.choice(users)
                text = message(rng, sorted(set(names[user])))
                began = time.perf_counter()
                mem.recall(user, text, at=now)
                recall_ms.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()  # the same user again: keys and words cached
                mem.recall(user, text, at=now)
                warm_ms.append((time.perf_counter() - began) * 1000)
                seeds = mem.recall_engine.seeds(user, text.lower().split(), 0.30)
                params = dict(user_id=user, seed_ids=list(seeds.entity_scores),
                              seed_labels=list(seeds.labels))
                began = time.perf_counter()
                mem.store.query("read/activation", now=now, spread=0.6, **params)
                act_ms.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()
                mem.store.query("read/neighbourhood_count", user_id=user,
                                seed_ids=params["seed_ids"])
                bare_ms.append((time.perf_counter() - began) * 1000)
            results[size] = (statistics.median(recall_ms), p95(recall_ms),
                             statistics.median(warm_ms), p95(warm_ms))
            rows.append(
                f"| {size:,} | {len(users):,} | {statistics.median(recall_ms):.1f} | "
                f"{p95(recall_ms):.1f} | {statistics.median(warm_ms):.1f} | {p95(warm_ms):.1f} | "
                f"{statistics.median(act_ms):.1f} | "
                f"{statistics.median(bare_ms):.1f} | "
                f"{statistics.median(act_ms) / statistics.median(bare_ms):.2f}× |")
            print(rows[-1], flush=True)
    first = args.sizes[0]
    for size in args.sizes[1:]:
        ratio = [results[size][i] / results[first][i] for i in range(4)]
        rows.append(f"\n{size:,} / {first:,}: recall median {ratio[0]:.2f}×, p95 {ratio[1]:.2f}×; "
                    f"warm median {ratio[2]:.2f}×, warm p95 {ratio[3]:.2f}×")
    rows.append(f"\n{EDGES_PER_USER} edges per user (a hub plus preferential attachment), "
                f"{args.recalls} recalls per size on random users, messages naming two of the "
                "user's entities. *recall* is the first recall of that message: it may load the "
                "user's keys (cached per partition version, 64 users per process) and embed new "
                "words; *warm* repeats it at once, so keys and word vectors are cached. With 500 "
                "users most first recalls miss the key cache, which is what moves the recall "
                "median between sizes; the activation query itself stays flat.")
    write_section("Recall", "python -m benchmarks.recall_latency --sizes "
                  + " ".join(map(str, args.sizes)), machine(), rows)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
