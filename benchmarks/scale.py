"""Pegasus at growing sizes: commit throughput, recall latency, decay pass, process memory.

    python -m benchmarks.scale [--sizes 10000 100000 1000000] [--recalls 200]

One run loads synthetic users through the real commit path, cumulatively (each size adds users
to the graph of the previous one, with a progress bar), and at each size measures:

- commit: load throughput, and the median commit of one user's conversation batched (UNWIND)
  against one statement per row, on fresh users committed at that size;
- recall: `Memory.recall` median and p95 with the user's keys not in the process cache (cold)
  and at once again (warm); the activation query against a bare two-hop count over the same seeds;
- decay: the daily pass over every edge of the graph;
- memory: the Python process's resident and peak memory.

Scaling ratios are against the first size. Writes the sections "Recall" and "Scale" of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from tqdm import tqdm

from benchmarks._server import machine, memory
from benchmarks.commit_batch import one_statement_per_row
from benchmarks.report import write_section
from benchmarks.synthetic import conversations, message
from pegasus import Memory
from pegasus.text import content_words

EDGES_PER_USER = 200
COMMIT_SAMPLES = 5
WARMUP_RECALLS = 50
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=30)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def rss_mb() -> float:
    """Resident memory of this process now, in MiB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Figures:
    edges: int = 0
    users: int = 0
    load_edges_per_s: float = 0.0
    commit_batched_ms: float = 0.0
    commit_per_row_ms: float = 0.0
    decay_s: float = 0.0
    rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    recall: dict[str, list[float]] = field(default_factory=dict)


class Loader:
    """Adds synthetic users to the graph and remembers their entity names for messages."""

    def __init__(self, mem: Memory, rng: random.Random) -> None:
        self.mem = mem
        self.rng = rng
        self.users: list[str] = []
        self.names: dict[str, list[str]] = {}
        self.edges = 0

    def add_user(self) -> float:
        """One new user, all conversations committed; seconds spent in commit."""
        user = f"u{len(self.users):06d}"
        spent = 0.0
        names: set[str] = set()
        for i, batch in enumerate(conversations(self.rng, EDGES_PER_USER)):
            began = time.perf_counter()
            report = self.mem.commit(user, f"c{i}", batch, at=T0 + timedelta(days=i))
            spent += time.perf_counter() - began
            self.edges += len(report.edges_created)
            names.update(e["name"] for e in batch["entities"] if e["name"] != "User")
        self.users.append(user)
        self.names[user] = sorted(names)
        return spent

    def grow_to(self, edges: int) -> float:
        """Load users until the graph holds `edges` memory edges; edges per second."""
        loaded, spent = self.edges, 0.0
        with tqdm(total=edges, initial=self.edges, desc=f"load {edges:,} edges",
                  unit="edge") as bar:
            while self.edges < edges:
                before = self.edges
                spent += self.add_user()
                bar.update(self.edges - before)
        return (self.edges - loaded) / spent if spent else 0.0


def commit_styles(loader: Loader) -> tuple[float, float]:
    """Median ms of one user's commit, batched and one statement per row, at this size."""
    batched, per_row = [], []
    for _ in range(COMMIT_SAMPLES):
        batched.append(loader.add_user() * 1000)
        with one_statement_per_row():
            per_row.append(loader.add_user() * 1000)
    return statistics.median(batched), statistics.median(per_row)


def recalls(loader: Loader, count: int, warmup: int = WARMUP_RECALLS) -> dict[str, list[float]]:
    """`count` measured recalls after `warmup` unmeasured ones (JVM and query caches warm)."""
    mem, rng = loader.mem, loader.rng
    for _ in range(warmup):
        user = rng.choice(loader.users)
        mem.embedder.forget()
        mem.recall(user, message(rng, loader.names[user]), at=NOW)
    out: dict[str, list[float]] = {"cold": [], "warm": [], "activation": [], "bare": []}
    for _ in range(count):
        user = rng.choice(loader.users)
        text = message(rng, loader.names[user])
        mem.embedder.forget()
        began = time.perf_counter()
        mem.recall(user, text, at=NOW)
        out["cold"].append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        mem.recall(user, text, at=NOW)
        out["warm"].append((time.perf_counter() - began) * 1000)
        seeds = mem.recall_engine.seeds(user, content_words(text), mem.settings.seed_threshold)
        params = dict(user_id=user, seed_ids=list(seeds.entity_scores))
        began = time.perf_counter()
        mem.recall_engine.activate(user, seeds, NOW, None)
        out["activation"].append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        mem.store.read("read/neighbourhood_count", **params)
        out["bare"].append((time.perf_counter() - began) * 1000)
    return out


def measure(loader: Loader, size: int, recall_count: int) -> Figures:
    # The commit samples add 2 × COMMIT_SAMPLES users of their own: load up to the rest.
    sampled = 2 * COMMIT_SAMPLES * EDGES_PER_USER
    figures = Figures(load_edges_per_s=loader.grow_to(size - sampled))
    figures.commit_batched_ms, figures.commit_per_row_ms = commit_styles(loader)
    loader.mem.consolidate(at=NOW)  # unmeasured: plans compiled, pages cached
    began = time.perf_counter()
    loader.mem.consolidate(at=NOW)
    figures.decay_s = time.perf_counter() - began
    figures.recall = recalls(loader, recall_count)
    figures.edges, figures.users = loader.edges, len(loader.users)
    figures.rss_mb, figures.peak_rss_mb = rss_mb(), peak_rss_mb()
    return figures


def recall_rows(results: list[Figures], recall_count: int) -> list[str]:
    med = statistics.median
    rows = ["| edges | users | cold median (ms) | cold p95 (ms) | warm median (ms) | warm p95 (ms) "
            "| activation median (ms) | bare 2-hop count median (ms) | activation / bare |",
            "|---|---|---|---|---|---|---|---|---|"]
    for f in results:
        r = f.recall
        rows.append(f"| {f.edges:,} | {f.users:,} | {med(r['cold']):.1f} | {p95(r['cold']):.1f} "
                    f"| {med(r['warm']):.1f} | {p95(r['warm']):.1f} | {med(r['activation']):.1f} "
                    f"| {med(r['bare']):.1f} | {med(r['activation']) / med(r['bare']):.2f}× |")
    base = results[0]
    rows.append("")
    for f in results[1:]:
        ratio = {k: (med(f.recall[k]) / med(base.recall[k]), p95(f.recall[k]) / p95(base.recall[k]))
                 for k in ("cold", "warm")}
        rows.append(f"- {f.edges:,} / {base.edges:,}: cold median {ratio['cold'][0]:.2f}×, "
                    f"cold p95 **{ratio['cold'][1]:.2f}×**; warm median {ratio['warm'][0]:.2f}×, "
                    f"warm p95 **{ratio['warm'][1]:.2f}×**")
    rows.append(
        f"\n{EDGES_PER_USER} edges per user (the user as a hub, the rest by preferential "
        f"attachment), {recall_count} recalls per size on random users, each message naming two "
        f"of that user's entities, after {WARMUP_RECALLS} unmeasured recalls at that size. "
        "*cold*: the process's word-vector cache is emptied first (there is no key cache: "
        "seeds come from the vector index); *warm*: the same recall again at once (word "
        "vectors cached). *activation* is the two-hop Cypher alone; *bare* counts the "
        "same seeds' two-hop neighbourhood without scoring.")
    return rows


def scale_rows(results: list[Figures]) -> list[str]:
    base = results[0]
    rows = ["| edges | load (edges/s) | commit batched (ms) | commit per-row (ms) "
            "| per-row / batched | decay pass (s) | decay vs first size | Python RSS (MiB) "
            "| peak RSS (MiB) | RSS vs first size |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for f in results:
        rows.append(
            f"| {f.edges:,} | {f.load_edges_per_s:.0f} | {f.commit_batched_ms:.0f} "
            f"| {f.commit_per_row_ms:.0f} | {f.commit_per_row_ms / f.commit_batched_ms:.2f}× "
            f"| {f.decay_s:.2f} | {f.decay_s / base.decay_s:.1f}× | {f.rss_mb:.0f} "
            f"| {f.peak_rss_mb:.0f} | {f.rss_mb / base.rss_mb:.2f}× |")
    rows.append(
        f"\n*load* is the rate of the cumulative load into that size (edges per second spent in "
        f"`Memory.commit`). *commit* is the median of {COMMIT_SAMPLES} fresh users' "
        f"{EDGES_PER_USER}-edge conversations committed at that size, batched (UNWIND, as "
        "shipped) and with every write statement run once per row (the baseline). *decay pass* "
        "is `Memory.consolidate` over every edge in the graph (batches of 10,000; the second "
        "of two runs, the first unmeasured), a full scan "
        "by design, so it grows linearly. *RSS* is the Python process (embedding model, key and "
        "word caches) after the size's measurements.")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--heap", default="4g", help="Neo4j heap of the throwaway server")
    parser.add_argument("--pagecache", default="4g", help="Neo4j page cache of the server")
    args = parser.parse_args()
    command = "python -m benchmarks.scale --sizes " + " ".join(map(str, args.sizes))
    results: list[Figures] = []
    with memory(heap=args.heap, pagecache=args.pagecache) as mem:
        mem.embedder.embed(["warm up"])
        loader = Loader(mem, random.Random(7))
        for size in args.sizes:
            results.append(measure(loader, size, args.recalls))
            f = results[-1]
            print(f"{f.edges:,} edges: load {f.load_edges_per_s:.0f}/s, decay {f.decay_s:.1f}s, "
                  f"cold p95 {p95(f.recall['cold']):.1f} ms, warm p95 "
                  f"{p95(f.recall['warm']):.1f} ms", flush=True)
    write_section("Recall", command, machine(), recall_rows(results, args.recalls))
    write_section("Scale", command, machine(), scale_rows(results))
    print("\n".join(recall_rows(results, args.recalls) + [""] + scale_rows(results)))


if __name__ == "__main__":
    main()
