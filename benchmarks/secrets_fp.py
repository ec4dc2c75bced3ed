"""The secret screen's false positives on ordinary conversations: how many turns it changes.

    python -m benchmarks.secrets_fp [--data DIR] [--results FILE] [--no-write]

Runs `pegasus.screen.screen` over every turn of every LoCoMo conversation in DIR (`--data`, or
$PEGASUS_LOCOMO_DEV; the set is not part of this repository, its licence is non-commercial)
and over every string of their extraction batches (screened as a commit screens them: names,
aliases, properties, snippets, summaries, tags). These are people chatting: no turn holds a
secret, so every changed turn is a false positive (the target: none).
Writes the counts, the ids of changed turns and the kinds found (never their words) to FILE
(default benchmarks/results/secrets_fp.json) and the "Secret screen" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks._server import machine
from benchmarks.report import write_section
from pegasus.models.batch import MAX_TURN_CHARS, ExtractionBatch
from pegasus.screen import screen, screen_batch

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS = ROOT / "benchmarks" / "results" / "secrets_fp.json"


def _conversations(data: Path) -> list[Path]:
    if not data.is_dir():
        raise SystemExit(f"no folder {data}: pass --data DIR or set PEGASUS_LOCOMO_DEV")
    found = sorted(p for p in data.iterdir() if (p / "sessions").is_dir())
    if not found:
        raise SystemExit(f"no LoCoMo conversation (a folder with sessions/) in {data}")
    return found


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | dict):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def measure(data: Path) -> dict[str, Any]:
    """Every turn and every batch string of the set, screened: the counts and what changed."""
    result: dict[str, Any] = {"conversations": {}, "turns": 0, "turns_changed": 0,
                              "batches": 0, "batch_strings": 0, "batches_changed": 0,
                              "kinds": {}}
    kinds: Counter[str] = Counter()
    seconds = 0.0
    texts: list[str] = []
    for folder in _conversations(data):
        mine: dict[str, Any] = {"turns": 0, "changed": [], "batches": 0, "batch_strings": 0,
                                "batch_changed": []}
        for session in sorted((folder / "sessions").glob("*.json")):
            for turn in json.loads(session.read_text())["turns"]:
                texts.append(turn["text"])
                began = time.perf_counter()
                screened = screen(turn["text"])
                seconds += time.perf_counter() - began
                mine["turns"] += 1
                if screened.changed:
                    mine["changed"].append(turn["dia_id"])
                    kinds.update(screened.kinds)
        for path in sorted((folder / "batches").glob("*.json")):
            batch = ExtractionBatch.model_validate_json(path.read_text())
            mine["batches"] += 1
            mine["batch_strings"] += sum(1 for _ in _strings(batch.model_dump(mode="json")))
            screened = screen_batch(batch)
            if screened.found or screened.dropped or screened.batch != batch:
                mine["batch_changed"].append(path.name)
        result["conversations"][folder.name] = mine
        result["turns"] += mine["turns"]
        result["turns_changed"] += len(mine["changed"])
        result["batches"] += mine["batches"]
        result["batch_strings"] += mine["batch_strings"]
        result["batches_changed"] += len(mine["batch_changed"])
    result["kinds"] = dict(kinds)
    result["ms_per_turn"] = round(seconds * 1000 / max(result["turns"], 1), 3)
    result["ms_longest_turn"] = _longest_turn_ms(texts)
    return result


def _longest_turn_ms(texts: list[str]) -> float:
    """Median milliseconds to screen one turn of the longest a turn may be (the dev turns
    joined up to max_turn_chars), of five runs."""
    joined = " ".join(texts)
    text = (joined * (MAX_TURN_CHARS // max(len(joined), 1) + 1))[:MAX_TURN_CHARS]
    runs = []
    for _ in range(5):
        began = time.perf_counter()
        screen(text)
        runs.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(runs), 1)


def lines(result: dict[str, Any]) -> list[str]:
    rows = ["| conversation | turns | turns changed | batches (strings) | batches changed |",
            "|---|---|---|---|---|"]
    for name, mine in result["conversations"].items():
        rows.append(f"| {name} | {mine['turns']} | {len(mine['changed'])} | "
                    f"{mine['batches']} ({mine['batch_strings']}) | {len(mine['batch_changed'])} |")
    rows.append(f"| all | {result['turns']} | **{result['turns_changed']}** | "
                f"{result['batches']} ({result['batch_strings']}) | "
                f"**{result['batches_changed']}** |")
    rate = result["turns_changed"] / max(result["turns"], 1)
    rows += ["", f"False-positive rate: {result['turns_changed']} of {result['turns']} turns "
                 f"({rate:.2%}) changed by the screen, none of which holds a secret; "
                 f"{result['ms_per_turn']} ms per turn on average, "
                 f"{result['ms_longest_turn']} ms for one turn of {MAX_TURN_CHARS:,} characters "
                 "(the dev turns joined; median of 5)."
                 + (f" Kinds found: {result['kinds']}." if result["kinds"] else ""),
             "", "A batch counts as changed when screening it as a commit does changes any "
                 "field or drops anything. These are people chatting (LoCoMo): they hold no "
                 "code, so the coding-agent cases (commits, UUIDs, URLs, paths, digests, phone "
                 "numbers) are pinned in tests/unit/test_screen.py instead."]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=os.environ.get("PEGASUS_LOCOMO_DEV"),
                        help="the folder of LoCoMo conversations (default: $PEGASUS_LOCOMO_DEV)")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS,
                        help="where the counts go (JSON)")
    parser.add_argument("--no-write", action="store_true", help="print, don't update docs/")
    args = parser.parse_args()
    if args.data is None:
        parser.error("no LoCoMo conversations: pass --data DIR or set PEGASUS_LOCOMO_DEV (the set "
                     "is not part of this repository, CC BY-NC 4.0)")
    result = measure(args.data)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1) + "\n")
    shown = lines(result)
    print("\n".join(shown))
    if not args.no_write:
        write_section("Secret screen: false positives on the dev conversations",
                      "python -m benchmarks.secrets_fp", machine(), shown)


if __name__ == "__main__":
    main()
