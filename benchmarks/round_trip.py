"""Export and import, a round trip on a LoCoMo conversation (design §11):

    python -m benchmarks.round_trip --data DIR

Every extraction batch of both speakers is committed as in `benchmarks.recall_quality` on one
throwaway server; each user is exported (with turns) and every question recalled. A second,
fresh throwaway server imports the files; each user is exported again and every question
recalled again. The two exports must be identical once sorted, apart from the fields the
format documents as regenerated, and every recall block identical. Writes the "Export and
import: a round trip on the dev set" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from benchmarks._server import machine, memory
from benchmarks.recall_quality import commit_all, load_conversation, session_time, user_of
from benchmarks.report import write_section
from pegasus.transfer.format import REGENERATED


def comparable(lines: list[str]) -> list[str]:
    """The export's lines, sorted, without the fields the format regenerates."""
    out = []
    for line in lines:
        record = json.loads(line)
        drop = REGENERATED.get(record["type"], [])
        out.append(json.dumps({k: v for k, v in record.items() if k not in drop},
                              sort_keys=True))
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ["PEGASUS_LOCOMO_DIR"])
                        if os.environ.get("PEGASUS_LOCOMO_DIR") else None)
    parser.add_argument("--no-write", action="store_true", help="print, don't update docs/")
    args = parser.parse_args()
    if args.data is None:
        parser.error("no LoCoMo conversation: pass --data DIR or set PEGASUS_LOCOMO_DIR")
    conv = load_conversation(args.data)
    at = session_time(conv.sessions[-1]["date_time"]) + timedelta(days=1)
    users = [user_of(conv, s) for s in conv.speakers]
    questions = [q["question"] for q in conv.questions]
    folder = Path(tempfile.mkdtemp(prefix="pegasus-round-trip-"))
    exports, blocks, seconds = {}, {}, {}
    with memory() as first:
        commit_all(first, conv)
        for user in users:
            began = time.perf_counter()
            exports[user] = list(first.export(user, True, at))
            seconds[user] = [time.perf_counter() - began]
            (folder / f"{user}.jsonl").write_text("".join(exports[user]))
            blocks[user] = [first.recall(user, q, at=at).render() for q in questions]
    rows = []
    with memory() as second:
        # Both users first: the keyword signal is Lucene's BM25, whose statistics are those of
        # the whole full-text index, so recalls compare on a server holding the same memories.
        for user in users:
            began = time.perf_counter()
            second.import_memory(user, folder / f"{user}.jsonl", at=at)
            seconds[user].append(time.perf_counter() - began)
        for user in users:
            again = list(second.export(user, True, at))
            same_blocks = sum(a == b for a, b in zip(
                blocks[user], (second.recall(user, q, at=at).render() for q in questions),
                strict=True))
            kinds = {k: sum(1 for x in exports[user] if f'"type":"{k}"' in x)
                     for k in ("entity", "memory", "conversation", "merge_record")}
            rows.append((user, kinds, comparable(again) == comparable(exports[user]),
                         same_blocks, *seconds[user]))
    lines = ["| user | entities | memories | conversations | merge records | second export "
             "identical | recall blocks identical | export | import |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {u.rsplit('-', 1)[-1]} | {k['entity']} | {k['memory']} | {k['conversation']} "
              f"| {k['merge_record']} | {'yes' if same else 'NO'} | {b}/{len(questions)} "
              f"| {e:.2f} s | {i:.2f} s |" for u, k, same, b, e, i in rows]
    lines += ["", f"`{conv.name}`: both speakers' batches committed on one throwaway server, "
              "exported with turns, imported on a fresh one, exported again; the two exports "
              "compared sorted, without the regenerated header fields, and every question's "
              "recall block compared once both users were imported (the keyword signal is "
              "Lucene's BM25, whose statistics are the whole full-text index's: compared with "
              "only the first user imported, 67 of that user's 81 blocks ranked differently)."]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Export and import: a round trip on the dev set",
                      "python -m benchmarks.round_trip --data DIR", machine(), lines)


if __name__ == "__main__":
    main()
