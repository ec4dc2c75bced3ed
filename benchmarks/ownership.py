"""The person's control at scale (design §10, §11): one user grown through the real commit path
to 10,000 and then 100,000 edges; at each size the user's memory is exported and imported under
another id, each in a process of its own (time and the process's peak memory); at the last size
one entity, one conversation and then everything of the user are forgotten.

    python -m benchmarks.ownership [--sizes 10000 100000] [--heap 1g]

The server gets a small heap (1 GB by default: Neo4j's transactions may then use ~700 MB in
all), so an erasure or import that held a whole partition in one transaction would fail here.
Another user's partition is checked to be untouched. Writes the "Export and import" and
"Forgetting" sections of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

from tqdm import tqdm

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from benchmarks.seed_index import NOW, T0, growing_user

EMBEDDER_ONLY = "from pegasus.embedding.embed import Embedder; Embedder('all-MiniLM-L6-v2', 384).embed(['x'])"


def measured(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run a command; (seconds, its peak resident memory in MB)."""
    began = time.perf_counter()
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - began
    if status != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {process.stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def timed(work):
    began = time.perf_counter()
    result = work()
    return result, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--heap", default="1g")
    args = parser.parse_args()
    rng = random.Random(17)
    user, other = "forgetter", "bystander"
    folder = Path(tempfile.mkdtemp(prefix="pegasus-bench-transfer-"))
    transfer_rows, forget_rows = [], []
    with memory(heap=args.heap, pagecache="1g") as mem:
        env = {**os.environ, "NEO4J_URI": mem.settings.neo4j_uri, "HF_HUB_OFFLINE": "1",
               "PEGASUS_DECAY_IN_SERVE": "false"}
        pegasus = [sys.executable, "-m", "pegasus"]
        for n, (batch, _known) in enumerate(growing_user(random.Random(3), 1_000, 250)):
            mem.commit(other, f"o{n}", batch, at=T0)
        theirs = sorted(m.id for m in mem.memories(other, state="all"))
        _, base_driver = measured([*pegasus, "memories", "--user", other, "--limit", "1"], env)
        _, base_model = measured([sys.executable, "-c", EMBEDDER_ONLY], env)
        batches = growing_user(rng, max(args.sizes))
        bar = tqdm(total=max(args.sizes), desc="grow one user", unit="edge")
        edges, conversation = 0, 0
        degree: Counter[str] = Counter()
        for size in args.sizes:
            while edges < size:
                batch, _known = next(batches)
                mem.commit(user, f"c{conversation}", batch,
                           at=T0 + timedelta(minutes=conversation))
                for r in batch["relations"]:
                    degree.update([r["source"], r["target"]])
                conversation += 1
                edges += len(batch["relations"])
                bar.update(len(batch["relations"]))
            path = folder / f"{size}.jsonl"
            out_s, out_mb = measured([*pegasus, "export", "--user", user, "-o", str(path)], env)
            in_s, in_mb = measured([*pegasus, "import", str(path), "--user", f"copy-{size}"], env)
            copied = len(mem.memories(f"copy-{size}", state="all"))
            stored = len(mem.memories(user, state="all"))  # cleaning drops a few relations
            assert copied == stored, (copied, stored)
            transfer_rows.append((edges, path.stat().st_size / 2**20, out_s, out_mb, in_s, in_mb))
            print(f"ROW {edges} edges: export {out_s:.1f} s {out_mb:.0f} MB, import {in_s:.1f} s "
                  f"{in_mb:.0f} MB", flush=True)
            mem.forget_everything(f"copy-{size}")
        bar.close()
        del degree["User"]
        typical = sorted(degree, key=lambda name: (degree[name], name))[len(degree) // 2]
        busiest = degree.most_common(1)[0][0]
        for label, work in [
            (f"one entity, typical ({degree[typical]} edges)",
             lambda: mem.forget_entity(user, typical, at=NOW)),
            (f"one entity, the busiest after the user ({degree[busiest]} edges)",
             lambda: mem.forget_entity(user, busiest, at=NOW)),
            ("one conversation (500 edges)", lambda: mem.forget_conversation(user, "c7", at=NOW)),
            ("everything of the user", lambda: mem.forget_everything(user, at=NOW)),
        ]:
            report, seconds = timed(work)
            forget_rows.append((label, seconds, report.memories, report.entities, report.keys))
            print(f"ROW {label}: {seconds:.2f} s, {report.memories} memories", flush=True)
        assert mem.store.read("read/partition_size", user_id=user) == []  # no partition left
        assert mem.memories(user, state="all") == []
        assert sorted(m.id for m in mem.memories(other, state="all")) == theirs
    lines = ["| the user's edges | file | export | its peak memory | import | its peak memory |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {e:,} | {mb:.1f} MB | {es:.1f} s | {em:.0f} MB | {i:.1f} s | {im:.0f} MB |"
              for e, mb, es, em, i, im in transfer_rows]
    lines += ["", f"Each in a process of its own (`pegasus export -o`, `pegasus import` under "
              f"another user id), peak resident memory of that process. For scale: a process "
              f"that only opens the driver and lists one memory peaks at {base_driver:.0f} MB, "
              f"one that only loads the embedding model at {base_model:.0f} MB. Export reads "
              f"page by page and import writes batches of 500, so the peak does not grow with "
              f"the user. The copy holds as many memories as the original at each size."]
    write_section("Export and import", "python -m benchmarks.ownership", machine(), lines)
    print("\n".join(lines))
    lines = ["| erasure | time | memories | entities | keys |", "|---|---|---|---|---|"]
    lines += [f"| {label} | {s:.2f} s | {m:,} | {e:,} | {k:,} |"
              for label, s, m, e, k in forget_rows]
    lines += ["", f"The same user at {edges:,} edges on a server with a {args.heap} heap (Neo4j's "
              "transactions may use ~70% of it in all): no erasure ran out of transaction "
              "memory. Entity and conversation erasures are one transaction; everything runs in "
              "batches of 5,000. Afterwards the user has no partition, no entity and no key left, "
              f"and another user's {len(theirs):,} memories are the same ids as before. Median "
              f"edges per entity: {statistics.median(degree.values()):.0f}."]
    write_section("Forgetting", "python -m benchmarks.ownership", machine(), lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
