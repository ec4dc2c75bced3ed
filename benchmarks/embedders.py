"""The default embedder (ONNX Runtime) against the reference (sentence-transformers) on the
LoCoMo dev sets: the same recall blocks? the same hits? how fast?

    python -m benchmarks.embedders --data DIR [DIR ...] [--no-write]

For each conversation and each runtime, in a throwaway Neo4j of its own: every speaker's
batches committed as benchmarks.recall_quality commits them, every question of categories 1-4
recalled against both users (hits counted as recall_quality counts them), then recalled again
with the time of each recall taken (the second pass, as the held-out measure of #38). The
blocks of the two runtimes are compared question by question; the embedder alone is timed on
the questions' words with nothing cached.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta
from pathlib import Path

from benchmarks._server import machine, memory
from benchmarks.recall_quality import (
    commit_all,
    evaluate,
    load_conversation,
    session_time,
    tokens,
    user_of,
)
from benchmarks.report import p95, write_section
from pegasus.embedding.embed import RUNTIMES, load_encoder


def run(root: Path, runtime: str) -> dict:
    """Hits, blocks and recall times of one conversation with one runtime."""
    conv = load_conversation(root)
    with memory(embedding_runtime=runtime) as mem:
        began = time.perf_counter()
        load_encoder(mem.settings.embedding_model, runtime)
        load_s = time.perf_counter() - began
        commit_all(mem, conv)
        at = session_time(conv.sessions[-1]["date_time"]) + timedelta(days=1)
        outcomes = evaluate(mem, conv, at)
        blocks, ms = [], []
        for q in conv.questions:
            for speaker in conv.speakers:
                began = time.perf_counter()
                recall = mem.recall(user_of(conv, speaker), q["question"], None, at)
                ms.append((time.perf_counter() - began) * 1000)
                blocks.append(recall.render())
        encoder = load_encoder(mem.settings.embedding_model, runtime)
        embed_ms = []
        for q in conv.questions:
            began = time.perf_counter()
            encoder.encode(list(dict.fromkeys(tokens(q["question"]))))
            embed_ms.append((time.perf_counter() - began) * 1000)
    return {"hits": sum(o.hits["Pegasus"] for o in outcomes), "questions": len(outcomes),
            "blocks": blocks, "ms": ms, "embed_ms": embed_ms, "load_s": load_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True,
                        help="LoCoMo conversation folders (see benchmarks.recall_quality)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    lines = ["| conversation | runtime | hits | recall median | recall p95 | words embedded, "
             "median | model load | blocks identical to the reference |",
             "|---|---|---|---|---|---|---|---|"]
    for root in args.data:
        results = {runtime: run(root, runtime) for runtime in RUNTIMES}
        reference = results["sentence-transformers"]["blocks"]
        for runtime, r in results.items():
            same = sum(a == b for a, b in zip(r["blocks"], reference, strict=True))
            lines.append(
                f"| {root.name} | {runtime} | {r['hits']}/{r['questions']} "
                f"| {statistics.median(r['ms']):.1f} ms | {p95(r['ms']):.1f} ms "
                f"| {statistics.median(r['embed_ms']):.1f} ms | {r['load_s']:.1f} s "
                f"| {same}/{len(reference)} |")
            print(lines[-1], flush=True)
    lines += ["", "Each conversation's batches committed with each runtime in a throwaway Neo4j "
              "of its own; every question of categories 1-4 recalled against both users (hits "
              "as benchmarks.recall_quality counts them), then again, timed (the second pass). "
              "*words embedded*: one question's content words through the model alone, nothing "
              "cached. *model load*: the first load in the process (ONNX: the graph built from "
              "the safetensors weights)."]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Embedders: ONNX Runtime against sentence-transformers",
                      "python -m benchmarks.embedders --data DIR DIR", machine(), lines)


if __name__ == "__main__":
    main()
