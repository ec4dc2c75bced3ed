"""How long `pegasus-hook` takes per event: the time a Claude Code or Codex prompt waits.

    python -m benchmarks.hooks [--rounds 30]

Against a real `pegasus serve` app (in this process, on loopback) over the demo's memory:
UserPromptSubmit (record + recall), Stop (record), SessionEnd (close accepted), and
UserPromptSubmit with the server down (spooled, one warning), beside a bare `python -c pass`.
Medians and p95 in ms, measured in one run; written to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from benchmarks._server import machine, memory
from benchmarks.report import p95, timed, write_section
from pegasus.demo import samples
from pegasus.operations.neo4j_local import free_port
from pegasus.serve.app import create_app
from tests.serve.servers import serving
from tests.serve.test_hook import KEY, end, prompt, run_hook, stop

QUESTIONS = ["Should I tell Sarah about the Northwind offer before our trip?",
             "What did I say about Lisbon?", "Any plans for the weekend?",
             "How is my sister doing?", "What is the boiling point of water?"]


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} | {p95(values):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    user = f"bench-hooks-{uuid.uuid4().hex[:8]}"
    times: dict[str, list[float]] = {k: [] for k in (
        "python -c pass", "UserPromptSubmit", "Stop", "SessionEnd", "UserPromptSubmit, down")}
    fired = 0
    with memory(api_keys={KEY: user}) as mem, tempfile.TemporaryDirectory() as folder:
        for conv in samples():
            mem.commit(user, conv["conversation_id"], conv["batch"],
                       transcript=conv["transcript"])
        spool = Path(folder) / "spool.json"
        nobody = f"http://127.0.0.1:{free_port()}"
        with serving(create_app(mem)) as url:
            for n in range(args.rounds):
                session = f"bench-{n}"
                question = QUESTIONS[n % len(QUESTIONS)]
                runs = {
                    "python -c pass": timed(subprocess.run, [sys.executable, "-c", "pass"]),
                    "UserPromptSubmit": timed(run_hook, "UserPromptSubmit",
                                              prompt(session, question), url, spool),
                    "Stop": timed(run_hook, "Stop", stop(session, "Sure."), url, spool),
                    "SessionEnd": timed(run_hook, "SessionEnd", end(session), url, spool),
                    "UserPromptSubmit, down": timed(run_hook, "UserPromptSubmit",
                                                    prompt(session, question), nobody,
                                                    Path(folder) / f"down-{n}.json"),
                }
                for name, (ms, _) in runs.items():
                    times[name].append(ms)
                fired += bool(runs["UserPromptSubmit"][1].stdout)
    lines = [f"{args.rounds} rounds; a memory block was printed for {fired} of "
             f"{args.rounds} prompts.", "", "| event | median ms | p95 ms |", "|---|---|---|"]
    lines += [f"| {name} | {summary(values)} |" for name, values in times.items()]
    lines += ["", "A hook's time is a Python start, the module (standard library only) and its "
              "requests; the CLIs' hook timeouts are 60 s (Claude Code) and 3 s for Codex's "
              "SessionEnd."]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Hooks", f"python -m benchmarks.hooks --rounds {args.rounds}", machine(),
                      lines)


if __name__ == "__main__":
    main()
