"""Commit of a 50-entity / 100-relation batch: UNWIND batches versus one statement per row.

    ./run pegasus …  is not needed: run with the project's venv,
    python benchmarks/commit_batch.py [--runs 7]
Writes the table to docs/benchmarks.md (section "Commit").
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager

import pegasus.commit
import pegasus.write.keys
import pegasus.write.merge_records
from benchmarks._server import machine, memory
from benchmarks.report import write_section


def make_batch(n_entities: int = 50, n_relations: int = 100) -> dict:
    kinds = ["PERSON", "ORG", "PLACE", "THING", "TOPIC"]
    entities = [{"name": f"Entity {i}", "kind": kinds[i % 5], "confidence": 0.9}
                for i in range(n_entities)]
    relations = []
    for j in range(n_relations):
        a, b = j % n_entities, (j * 7 + 3) % n_entities
        if a == b:
            b = (b + 1) % n_entities
        source = "User" if j % 4 == 0 else f"Entity {a}"
        relations.append({"source": source, "relation": f"REL_{j % 12}", "target": f"Entity {b}",
                          "snippet": f"sentence {j} about Entity {a} and Entity {b}"})
    return {"entities": entities, "relations": relations}


# The modules whose writes a commit runs: the driver's plan, and the write library's keys and
# merge records.
WRITERS = (pegasus.commit, pegasus.write.keys, pegasus.write.merge_records)


@contextmanager
def one_statement_per_row():
    """Every UNWIND write runs once per row: the same data, one round trip each."""
    original = pegasus.commit.run

    def per_row(tx, name, **params):
        rows = params.get("rows")
        if name.startswith("write/") and isinstance(rows, list) and len(rows) > 1:
            out = []
            for row in rows:
                out += original(tx, name, **{**params, "rows": [row]})
            return out
        return original(tx, name, **params)

    for module in WRITERS:
        module.run = per_row
    try:
        yield
    finally:
        for module in WRITERS:
            module.run = original


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    batch = make_batch()
    timings = {"batched": [], "per_row": []}
    with memory() as mem:
        mem.commit("warmup", "c0", batch)  # loads the model and fills the embedding cache
        for i in range(args.runs):
            for mode in ("batched", "per_row"):
                user = f"bench-{mode}-{i}"
                began = time.perf_counter()
                if mode == "per_row":
                    with one_statement_per_row():
                        report = mem.commit(user, "c1", batch)
                else:
                    report = mem.commit(user, "c1", batch)
                timings[mode].append(time.perf_counter() - began)
                assert len(report.edges_created) == 100, report.edges_created
    med = {m: statistics.median(t) for m, t in timings.items()}
    rows = [
        "| write style | median (ms) | min (ms) | runs |",
        "|---|---|---|---|",
        *(f"| {m} | {med[m] * 1000:.1f} | {min(timings[m]) * 1000:.1f} | {args.runs} |"
          for m in ("batched", "per_row")),
        "",
        f"per-row / batched = **{med['per_row'] / med['batched']:.2f}×** "
        "(same data, same transaction, one statement per row instead of one UNWIND per kind)",
    ]
    write_section("Commit", "python -m benchmarks.commit_batch", machine(), rows)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
