"""Forgetting at scale (design §11): one user grown to 100,000 edges through the real commit
path, then one entity, one conversation and finally everything of the user erased.

    python -m benchmarks.forget [--edges 100000] [--heap 1g]

The server gets a small heap (1 GB by default: Neo4j's transactions may then use ~700 MB in
all), so an erasure that held a whole partition in one transaction would fail here. Another
user's partition is checked to be untouched. Writes the "Forgetting" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from datetime import timedelta

from tqdm import tqdm

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from benchmarks.seed_index import NOW, T0, growing_user


def timed(work):
    began = time.perf_counter()
    result = work()
    return result, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--heap", default="1g")
    args = parser.parse_args()
    rng = random.Random(17)
    user, other = "forgetter", "bystander"
    with memory(heap=args.heap, pagecache="1g") as mem:
        bar = tqdm(total=args.edges, desc="grow one user", unit="edge")
        edges, conversation = 0, 0
        degree: Counter[str] = Counter()
        for batch, _known in growing_user(rng, args.edges):
            mem.commit(user, f"c{conversation}", batch,
                       at=T0 + timedelta(minutes=conversation))
            for r in batch["relations"]:
                degree.update([r["source"], r["target"]])
            conversation += 1
            edges += len(batch["relations"])
            bar.update(len(batch["relations"]))
        bar.close()
        for batch, _known in growing_user(random.Random(3), 1_000):
            mem.commit(other, f"o{conversation}", batch, at=T0)
        theirs = sorted(m.id for m in mem.memories(other, state="all"))
        del degree["User"]
        typical = sorted(degree, key=lambda n: (degree[n], n))[len(degree) // 2]
        busiest = degree.most_common(1)[0][0]
        rows = []
        for label, work in [
            (f"one entity, typical ({degree[typical]} edges)",
             lambda: mem.forget_entity(user, typical, at=NOW)),
            (f"one entity, the busiest after the user ({degree[busiest]} edges)",
             lambda: mem.forget_entity(user, busiest, at=NOW)),
            ("one conversation (500 edges)", lambda: mem.forget_conversation(user, "c7", at=NOW)),
            ("everything of the user", lambda: mem.forget_everything(user, at=NOW)),
        ]:
            report, seconds = timed(work)
            rows.append((label, seconds, report.memories, report.entities, report.keys))
            print(f"ROW {label}: {seconds:.2f} s, {report.memories} memories", flush=True)
        assert mem.store.query("read/partition_size", user_id=user) == []  # no partition left
        assert mem.memories(user, state="all") == []
        assert sorted(m.id for m in mem.memories(other, state="all")) == theirs
    lines = ["| erasure | time | memories | entities | keys |", "|---|---|---|---|---|"]
    lines += [f"| {label} | {s:.2f} s | {m:,} | {e:,} | {k:,} |" for label, s, m, e, k in rows]
    lines += ["", f"One user grown to {edges:,} edges through the real commit path (conversations "
              f"of 500 edges, ~1 new entity per 3 edges) on a server with a {args.heap} heap "
              "(Neo4j's transactions may use ~70% of it in all): no erasure ran out of "
              "transaction memory. Entity and conversation erasures are one transaction; "
              "everything runs in batches of 5,000. Afterwards the user has no entity and no key "
              f"left, and another user's {len(theirs):,} memories are the same ids as before. "
              f"Median of the edge counts per entity: "
              f"{statistics.median(degree.values()):.0f}."]
    print("\n".join(lines))
    write_section("Forgetting", "python -m benchmarks.forget", machine(), lines)


if __name__ == "__main__":
    main()
