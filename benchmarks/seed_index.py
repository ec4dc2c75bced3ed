"""Seeds from the filtered vector index (design §7.3): agreement with the exact scan, and
recall latency as one user grows and as the number of tenants grows.

    python -m benchmarks.seed_index tenants [--sizes 10000 1000000] [--agreement 1000]
    python -m benchmarks.seed_index growth  [--sizes 1000 10000 100000]
    python -m benchmarks.seed_index first   [--processes 5 --users 20]

- tenants: synthetic users (200 edges each, names drawn from one shared pool, so thousands of
  tenants share every name) loaded through the real commit path up to each size; recall p95 at
  each size, and at the last size `--agreement` random recalls whose seeds (entities and
  relation labels) are compared with the exact centred scan over all of that user's keys.
- growth: one user whose own graph grows (about one new entity per three edges), recall p95
  at each size.
- first: the first recall of a user in a fresh process (model loaded, nothing else cached).

Each writes its own section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from tqdm import tqdm

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from benchmarks.scale import Loader
from benchmarks.synthetic import FIRST, LABELS, STABILITIES, message
from pegasus import Memory, Settings
from pegasus.embedding.centring import reference_vocabulary
from pegasus.settings import secret_text
from pegasus.text import content_words

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=30)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def wait_for_quiet() -> None:
    """Loading may share the machine; measuring must not. With PEGASUS_BENCH_QUIET_PID set,
    wait until that process (another job on this machine) has ended before measuring; with
    PEGASUS_BENCH_QUIET_FILE set, wait while that file exists."""
    pid = int(os.environ.get("PEGASUS_BENCH_QUIET_PID") or 0)
    gate = os.environ.get("PEGASUS_BENCH_QUIET_FILE")
    while (pid and os.path.exists(f"/proc/{pid}")) or (gate and os.path.exists(gate)):
        time.sleep(2)


def timed_recalls(mem: Memory, users: list[str], names: dict[str, list[str]],
                  rng: random.Random, count: int, warmup: int = 100) -> list[float]:
    """Milliseconds of `count` recalls of random users, after `warmup` unmeasured ones."""
    wait_for_quiet()
    for _ in range(warmup):
        user = rng.choice(users)
        mem.recall(user, message(rng, names[user]), at=NOW)
    out = []
    for _ in range(count):
        user = rng.choice(users)
        text = message(rng, names[user])
        mem.embedder.forget()
        began = time.perf_counter()
        mem.recall(user, text, at=NOW)
        out.append((time.perf_counter() - began) * 1000)
    return out


def agreement(mem: Memory, loader: Loader, rng: random.Random, count: int) -> dict:
    """Index seeds against the exact scan over `count` random recalls."""
    engine, threshold = mem.recall_engine, mem.settings.seed_threshold
    same = missed_strong = missed_any = 0
    for _ in tqdm(range(count), desc="agreement", unit="recall"):
        user = rng.choice(loader.users)
        words = content_words(message(rng, loader.names[user]))
        fast = engine.seeds(user, words, threshold)
        exact = engine.seeds(user, words, threshold, exact=True)
        fast_set = set(fast.entity_scores) | {f"r:{x}" for x in fast.labels}
        exact_scores = {**exact.entity_scores, **{f"r:{x}": s for x, s in exact.labels.items()}}
        same += fast_set == set(exact_scores)
        missing = set(exact_scores) - fast_set
        missed_any += bool(missing)
        # A seed's graded act is a noisy-or of its word scores: ≥ 0.40 means some word scored
        # it at least that much, or several did together.
        missed_strong += any(exact_scores[m] >= 0.40 for m in missing)
    return {"recalls": count, "identical": same, "with_a_missing_seed": missed_any,
            "missing_a_seed_of_0.40": missed_strong}


def tenants(args: argparse.Namespace) -> None:
    rng = random.Random(7)
    rows, figures = [], {}
    with memory(heap="3g", pagecache="3g") as mem:
        loader = Loader(mem, rng)
        for size in args.sizes:
            loader.grow_to(size)
            ms = timed_recalls(mem, loader.users, loader.names, rng, args.recalls)
            figures[size] = ms
            rows.append((loader.edges, len(loader.users), statistics.median(ms), p95(ms)))
            # Printed as they come: a long run stopped early still leaves its figures.
            print(f"ROW edges={rows[-1][0]} users={rows[-1][1]} median={rows[-1][2]:.1f} "
                  f"p95={rows[-1][3]:.1f}", flush=True)
            if size != args.sizes[-1] and size >= 100_000:
                print("AGREEMENT", size, json.dumps(agreement(mem, loader, rng, args.agreement)),
                      flush=True)
        agreed = agreement(mem, loader, rng, args.agreement)
    base = rows[0][3]
    lines = ["| edges | users | recall median | recall p95 | p95 / first |", "|---|---|---|---|---|"]
    lines += [f"| {e:,} | {u:,} | {m:.1f} ms | {p:.1f} ms | {p / base:.2f} |"
              for e, u, m, p in rows]
    lines += ["", f"Seed agreement at {rows[-1][0]:,} edges ({rows[-1][1]:,} users, names from "
              f"one shared pool of {len(FIRST)} first names, places, organisations, topics), "
              f"{agreed['recalls']:,} random recalls against the exact centred scan: "
              f"identical seed sets in {agreed['identical']:,} "
              f"({100 * agreed['identical'] / agreed['recalls']:.1f} %); recalls missing any "
              f"seed: {agreed['with_a_missing_seed']}; missing a seed scoring ≥ 0.40: "
              f"{agreed['missing_a_seed_of_0.40']}.",
              f"{args.recalls} recalls per size (word embeddings not cached), one process, "
              "one throwaway Neo4j (3 GB heap, 3 GB page cache)."]
    print("\n".join(lines))
    print(json.dumps(agreed))
    write_section("Seed index: tenants and agreement",
                  "python -m benchmarks.seed_index tenants", machine(), lines)


@functools.cache
def _words() -> list[str]:
    return [w for w in reference_vocabulary(Settings().embedding_model) if len(w) >= 4]


def _name(rng: random.Random) -> str:
    """Two real words as a name ("Copper Lantern"): distinct, and as varied as real names."""
    return f"{rng.choice(_words()).capitalize()} {rng.choice(_words()).capitalize()}"


def growing_user(rng: random.Random, edges: int, per_conversation: int = 500):
    """Batches of one user's ever-growing graph: each batch brings ~1 new entity per 3 edges,
    and its edges join new entities to the user, to each other and to older entities."""
    known: list[str] = []
    made = 0
    while made < edges:
        size = min(per_conversation, edges - made)
        fresh = []
        seen = set(known)
        while len(fresh) < max(1, size // 3):
            name = _name(rng)
            if name not in seen:
                seen.add(name)
                fresh.append(name)
        relations, pairs = [], set()
        while len(relations) < size:
            a = "User" if rng.random() < 0.3 else rng.choice(fresh + known[-2000:])
            b = rng.choice(fresh) if rng.random() < 0.7 or not known else rng.choice(known)
            label = rng.choice(LABELS)
            if a == b or (a, label, b) in pairs:
                continue
            pairs.add((a, label, b))
            relations.append({"source": a, "relation": label, "target": b,
                              "stability": rng.choice(STABILITIES),
                              "snippet": f"{a} {label.lower().replace('_', ' ')} {b}, I said"})
        used = {r["source"] for r in relations} | {r["target"] for r in relations}
        entities = [{"name": "User", "kind": "PERSON", "is_user": True}] + [
            {"name": n, "kind": "PERSON"} for n in sorted(used - {"User"})]
        known.extend(fresh)
        made += size
        yield {"entities": entities, "relations": relations}, known


def growth(args: argparse.Namespace) -> None:
    rng = random.Random(11)
    user = "grower"
    rows = []
    with memory(heap="3g", pagecache="3g") as mem:
        batches = growing_user(rng, max(args.sizes))
        edges, conv = 0, 0
        bar = tqdm(total=max(args.sizes), desc="grow one user", unit="edge")
        commit_ms: list[float] = []
        for size in args.sizes:
            while edges < size:
                batch, known = next(batches)
                began = time.perf_counter()
                mem.commit(user, f"c{conv}", batch, at=T0 + timedelta(minutes=conv))
                commit_ms.append((time.perf_counter() - began) * 1000)
                conv += 1
                edges += len(batch["relations"])
                bar.update(len(batch["relations"]))
            entities = mem.store.read("read/partition_size", user_id=user)[0]
            names = {user: known[-5000:]}
            ms = timed_recalls(mem, [user], names, rng, args.recalls)
            shipped = mem.recall_engine.recall
            mem.recall_engine.recall = shipped.model_copy(update={"seeds_per_word": 8})
            try:
                narrow = timed_recalls(mem, [user], names, rng, args.recalls, warmup=20)
            finally:
                mem.recall_engine.recall = shipped
            # The write path at this size: the last (up to) ten 500-edge commits before it.
            commits = statistics.median(commit_ms[-10:])
            rows.append((edges, entities["entities"], entities["keys"], statistics.median(ms),
                         p95(ms), p95(narrow), commits))
            print(f"ROW edges={edges} entities={entities['entities']} keys={entities['keys']} "
                  f"median={rows[-1][3]:.1f} p95={rows[-1][4]:.1f} p95@8={rows[-1][5]:.1f} "
                  f"commit={commits:.0f}", flush=True)
        bar.close()
    base, base8, base_c = rows[0][4], rows[0][5], rows[0][6]
    lines = ["| the user's edges | entities | keys | recall median | recall p95 | p95 / first "
             "| p95, 8 seeds per word | its p95 / first | commit of 500 edges | its / first |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {e:,} | {n:,} | {k:,} | {m:.1f} ms | {p:.1f} ms | {p / base:.2f} "
              f"| {p8:.1f} ms | {p8 / base8:.2f} | {c:,.0f} ms | {c / base_c:.2f} |"
              for e, n, k, m, p, p8, c in rows]
    lines += ["", f"One user, committed through the real write path in conversations of 500 "
              f"edges, each bringing ~1 new entity per 3 edges; {args.recalls} recalls per size, "
              "each naming two of the user's entities (word embeddings not cached), with the shipped "
              "settings (fan-out 32, 32 seeds per word) and again with 8 seeds per word. A commit's "
              "time is the median of the last ten commits (500 edges each, one entity per three "
              "edges new) before the size was reached."]
    print("\n".join(lines))
    write_section("Seed index: one user's graph grows",
                  "python -m benchmarks.seed_index growth", machine(), lines)


FIRST_RECALL = r"""
import json, sys, time
from datetime import UTC, datetime
from pegasus import Memory, Settings
users, texts = json.loads(sys.argv[1]), json.loads(sys.argv[2])
with Memory(Settings()) as mem:
    mem.embedder.embed(["warm the model up"])  # the model load is not the recall's
    out = []
    for user, text in zip(users, texts):
        began = time.perf_counter()
        mem.recall(user, text, at=datetime(2026, 1, 31, tzinfo=UTC))
        out.append((time.perf_counter() - began) * 1000)
print(json.dumps(out))
"""


def first(args: argparse.Namespace) -> None:
    rng = random.Random(5)
    with memory(heap="2g", pagecache="1g") as mem:
        loader = Loader(mem, rng)
        loader.grow_to(args.edges)
        env = {**os.environ, "NEO4J_URI": mem.settings.neo4j_uri or "",
               "NEO4J_USER": mem.settings.neo4j_user,
               "NEO4J_PASSWORD": secret_text(mem.settings.neo4j_password) or ""}
        if not mem.settings.neo4j_password:
            env.pop("NEO4J_PASSWORD")
        firsts, others = [], []
        wait_for_quiet()
        for _ in range(args.processes):
            users = rng.sample(loader.users, args.users)
            texts = [message(rng, loader.names[u]) for u in users]
            done = subprocess.run([sys.executable, "-c", FIRST_RECALL, json.dumps(users),
                                   json.dumps(texts)], env=env, capture_output=True, text=True,
                                  check=True)
            ms = json.loads(done.stdout.strip().splitlines()[-1])
            firsts.append(ms[0])
            others.extend(ms[1:])
    lines = [
        f"{args.processes} fresh processes on a graph of {loader.edges:,} edges "
        f"({len(loader.users)} users); in each, after the model is loaded, {args.users} users "
        "recalled once each (nothing of theirs cached):",
        "",
        "| | n | median | p95 |", "|---|---|---|---|",
        f"| a process's first recall | {len(firsts)} | {statistics.median(firsts):.1f} ms | "
        f"{max(firsts):.1f} ms (max) |",
        f"| each user's first recall | {len(firsts) + len(others)} | "
        f"{statistics.median(firsts + others):.1f} ms | {p95(firsts + others):.1f} ms |",
    ]
    print("\n".join(lines))
    write_section("Seed index: first recall in a fresh process",
                  "python -m benchmarks.seed_index first", machine(), lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tenants")
    t.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    t.add_argument("--recalls", type=int, default=200)
    t.add_argument("--agreement", type=int, default=1000)
    g = sub.add_parser("growth")
    g.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    g.add_argument("--recalls", type=int, default=200)
    f = sub.add_parser("first")
    f.add_argument("--edges", type=int, default=20_000)
    f.add_argument("--processes", type=int, default=5)
    f.add_argument("--users", type=int, default=20)
    args = parser.parse_args()
    {"tenants": tenants, "growth": growth, "first": first}[args.what](args)


if __name__ == "__main__":
    main()
