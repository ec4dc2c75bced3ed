"""`pegasus neo4j compact` at size: how long the local server is offline, and that it is final.

    python -m benchmarks.compact [--edges 100000]

Loads synthetic users through the real commit path into a local server of its own (auth on, as
`pegasus neo4j start` runs it), forgets one user entirely, stops the server and counts the files
under its data folder that still hold that user's words (long ones: entity names). Then compacts,
counts again, and checks that every other user's export is unchanged. Writes the section
"Compaction" of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks._server import machine
from benchmarks.report import write_section
from benchmarks.scale import Loader
from pegasus import Memory, Settings
from pegasus.operations.compact import compact, files_holding
from pegasus.operations.neo4j_local import LocalNeo4j
from pegasus.transfer.export import export_lines

NOW = datetime(2026, 3, 1, tzinfo=UTC)



def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--pagecache", default="2g")
    args = parser.parse_args()
    settings = Settings()
    root = Path(tempfile.mkdtemp(prefix="pegasus-compact-"))
    server = LocalNeo4j.on_free_ports(settings, root / "server", auth=True, heap=args.heap,
                                      pagecache=args.pagecache)
    try:
        state = server.start()
        mem = Memory(settings.model_copy(update={"neo4j_uri": state.bolt_uri,
                                                 "neo4j_password": state.password,
                                                 "home": root / "home"}))
        with mem:
            mem.migrate()
            loader = Loader(mem, random.Random(11))
            loader.grow_to(args.edges)
            gone = loader.users[0]
            # The forgotten user's own words: names no other user has, long enough to be
            # stored as plain bytes.
            others = {n for u in loader.users[1:] for n in loader.names[u]}
            needles = [n.encode() for n in loader.names[gone] if n not in others and len(n) > 12]
            mem.forget_everything(gone)
            kept = {u: list(export_lines(mem.store, u, NOW)) for u in loader.users[1:4]}
        server.stop()
        held_before = len({f for fs in files_holding(server.root / "data", needles).values()
                           for f in fs})
        server.start()
        began = time.perf_counter()
        report = compact(server)
        seconds = time.perf_counter() - began
        server.stop()
        held_after = len({f for fs in files_holding(server.root / "data", needles).values()
                          for f in fs})
        state = server.start()
        mem = Memory(settings.model_copy(update={"neo4j_uri": state.bolt_uri,
                                                 "neo4j_password": state.password,
                                                 "home": root / "home"}))
        with mem:
            equal = all(list(export_lines(mem.store, u, NOW)) == lines
                        for u, lines in kept.items())
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    rows = [
        "| edges | users | nodes copied | relationships copied | offline (s) | data before (MB) "
        "| data after (MB) | files holding the forgotten user's names, before → after "
        "| other users' exports equal |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {loader.edges:,} | {len(loader.users)} | {report.nodes:,} | {report.relationships:,} "
        f"| {seconds:.0f} | {report.bytes_before / 1e6:.0f} | {report.bytes_after / 1e6:.0f} "
        f"| {held_before} → {held_after} ({len(needles)} names) | {'yes' if equal else 'NO'} |",
    ]
    write_section("Compaction", f"python -m benchmarks.compact --edges {args.edges}", machine(),
                  rows)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
