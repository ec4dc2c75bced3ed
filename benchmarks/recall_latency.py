"""In-process recall latency on a LoCoMo dev conversation, the way #38 measured it: the
conversation committed (its batches, no LLM), then every question recalled for each speaker,
pass after pass; the first pass plans the queries and fills the caches, the later ones are
the figures.

    python -m benchmarks.recall_latency --data DIR [--passes 3] [--alternate NAME=V1,V2]

Prints each pass's median and p95 per speaker; writes nothing. To compare two checkouts, run
it from each in turn (its src/ first on PYTHONPATH), alternating. To compare two values of a
setting, `--alternate NAME=V1,V2` runs every pass once with each value in turn, on the same
server and caches, so a loaded machine weighs on both alike.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta
from pathlib import Path

from benchmarks._server import memory
from benchmarks.recall_quality import commit_all, load_conversation, session_time, user_of
from benchmarks.report import p95


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo dev conversation")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--alternate", metavar="NAME=V1,V2",
                        help="a setting whose values take turns, pass by pass")
    args = parser.parse_args()
    conv = load_conversation(args.data)
    with memory() as mem:
        commit_all(mem, conv)
        at = session_time(conv.sessions[-1]["date_time"]) + timedelta(days=1)
        name, values = (args.alternate.split("=", 1) if args.alternate else (None, ""))
        kind = type(getattr(mem.settings, name)) if name else str
        settings = [kind(v) for v in values.split(",")] if name else [None]
        spent_by: dict = {value: [] for value in settings}
        for done in range(args.passes):
            for value in settings:
                if name:
                    setattr(mem.settings, name, value)
                for speaker in conv.speakers:
                    spent = []
                    for question in conv.questions:
                        began = time.perf_counter()
                        mem.recall(user_of(conv, speaker), question["question"], None, at)
                        spent.append((time.perf_counter() - began) * 1000)
                    if done:  # the first pass plans the queries and fills the caches
                        spent_by[value] += spent
                    print(f"pass {done}{f' {name}={value}' if name else ''} {speaker}: "
                          f"n={len(spent)} median {statistics.median(spent):.1f} ms, "
                          f"p95 {p95(spent):.1f} ms")
        for value, spent in spent_by.items():
            if spent:
                print(f"passes 1-{args.passes - 1}{f' {name}={value}' if name else ''}: "
                      f"median {statistics.median(spent):.1f} ms, p95 {p95(spent):.1f} ms")


if __name__ == "__main__":
    main()
