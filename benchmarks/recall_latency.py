"""In-process recall latency on a LoCoMo dev conversation, the way #38 measured it: the
conversation committed (its batches, no LLM), then every question recalled for each speaker,
pass after pass; the first pass plans the queries and fills the caches, the later ones are
the figures.

    python -m benchmarks.recall_latency --data DIR [--passes 3]

Prints each pass's median and p95 per speaker; writes nothing. To compare two checkouts, run
it from each in turn (its src/ first on PYTHONPATH), alternating.
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
    args = parser.parse_args()
    conv = load_conversation(args.data)
    with memory() as mem:
        commit_all(mem, conv)
        at = session_time(conv.sessions[-1]["date_time"]) + timedelta(days=1)
        for done in range(args.passes):
            for speaker in conv.speakers:
                spent = []
                for question in conv.questions:
                    began = time.perf_counter()
                    mem.recall(user_of(conv, speaker), question["question"], None, at)
                    spent.append((time.perf_counter() - began) * 1000)
                print(f"pass {done} {speaker}: n={len(spent)} median "
                      f"{statistics.median(spent):.1f} ms, p95 {p95(spent):.1f} ms")


if __name__ == "__main__":
    main()
