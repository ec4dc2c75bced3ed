"""Makes erasure final on the local server's disk: its store rebuilt from what it holds now.

A deleted node leaves bytes behind in Neo4j's files (docs/privacy.md): records marked unused,
index entries marked deleted, transaction logs, and tokens, which Community Edition never
deletes (a relation label or property name a user's words made stays in the token stores for
good), and Community has no store copy or compaction. `compact` copies every node and
relationship of the local server into a fresh store, checks that the copy holds exactly what the
old one held (counts by label and type, every user's export line for line), and only then puts
the fresh data folder in place of the old one and removes the old one. While it runs, the
server listens on private ports, so nothing writes to the old store after it was read.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from neo4j import GraphDatabase

from pegasus.errors import PegasusError
from pegasus.operations.neo4j_local import LocalNeo4j, ServerState, free_ports
from pegasus.store import Store
from pegasus.transfer.export import export_lines

BATCH = 5000
SWAPPED_OUT = "data.pre-compact"  # the old data folder between the swap and its removal


class CompactionError(PegasusError):
    """The fresh store did not hold what the old one did: nothing was swapped."""


@dataclass(frozen=True)
class CompactReport:
    """What a compaction copied and how much disk the data folder took before and after."""

    nodes: int
    relationships: int
    users: int
    seconds: float
    bytes_before: int
    bytes_after: int


def folder_bytes(root: Path) -> int:
    """The size of every file under `root`."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def files_holding(root: Path, needles: list[bytes]) -> dict[str, list[str]]:
    """Which files under `root` hold each needle as bytes (or lower-cased), by the needle: how
    the tests and the benchmark check that forgotten words left the disk."""
    found: dict[str, list[str]] = {n.decode(): [] for n in needles}
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        for needle in needles:
            if needle in data or needle.lower() in data:
                found[needle.decode()].append(str(path.relative_to(root)))
    return found


def _store(state: ServerState, server: LocalNeo4j) -> Store:
    auth = (state.user, state.password) if state.password else None
    return Store(server.settings, driver=GraphDatabase.driver(state.bolt_uri, auth=auth))


def _batches(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def copy_graph(source: Store, target: Store, batch: int = BATCH) -> tuple[int, int]:
    """Every node and relationship of `source` (but migration records) into `target`:
    (nodes, relationships) copied. Labels, types and properties are copied as they are."""
    new_id: dict[str, str] = {}
    for rows in _batches(source.stream("maintenance/compact_nodes"), batch):
        for row in target.write("maintenance/compact_create_nodes", rows=rows):
            new_id[row["old"]] = row["new"]
    relationships = 0
    for rows in _batches(source.stream("maintenance/compact_relationships"), batch):
        moved = [{**r, "source": new_id[r["source"]], "target": new_id[r["target"]]}
                 for r in rows]
        target.write("maintenance/compact_create_relationships", rows=moved)
        relationships += len(moved)
    return len(new_id), relationships


def contents(store: Store) -> Counter[tuple[str, tuple[str, ...]]]:
    """How many nodes of each label set and relationships of each type a store holds."""
    found: Counter[tuple[str, tuple[str, ...]]] = Counter()
    for row in store.read("maintenance/compact_counts"):
        found[(row["kind"], tuple(sorted(row["names"])))] += row["count"]
    return found


def users(store: Store) -> list[str]:
    """Every user with something in the store."""
    return [r["user_id"] for r in store.read("maintenance/compact_users")]


def check_copy(source: Store, target: Store) -> int:
    """Raise unless `target` holds what `source` does; the number of users compared."""
    if contents(source) != contents(target):
        raise CompactionError("the fresh store's counts differ from the old store's; the old "
                              "store is kept as it was")
    now = datetime.now(UTC)
    who = users(source)
    if who != users(target):
        raise CompactionError("the fresh store's users differ from the old store's; the old "
                              "store is kept as it was")
    for user in who:
        if list(export_lines(source, user, now)) != list(export_lines(target, user, now)):
            raise CompactionError(f"user {user!r}'s memory differs in the fresh store; the old "
                                  "store is kept as it was")
    return len(who)


def finish_interrupted_swap(root: Path) -> None:
    """A compaction killed between its two renames: put the right data folder in place."""
    old = root / SWAPPED_OUT
    if not old.exists():
        return
    if (root / "data").exists():
        shutil.rmtree(old)
    else:
        old.rename(root / "data")


def compact(server: LocalNeo4j, say: Callable[[str], None] = lambda _: None) -> CompactReport:
    """Rebuild `server`'s store from what it holds; the server is left running on its ports."""
    began = time.monotonic()
    finish_interrupted_swap(server.root)
    bytes_before = folder_bytes(server.root / "data")
    fresh_root = server.root.parent / f"{server.root.name}.compacting"
    if fresh_root.exists():  # an earlier compaction that did not finish: start again
        LocalNeo4j(server.settings, fresh_root, 0, 0).stop()
        shutil.rmtree(fresh_root)
    # The old store reopens on private ports: no client writes to it once it has been read.
    server.stop()
    bolt_port, http_port = free_ports(2)
    private = LocalNeo4j(server.settings, server.root, bolt_port, http_port, auth=server.auth,
                         heap=server.heap, pagecache=server.pagecache)
    private.repick_ports = True
    fresh = LocalNeo4j.on_free_ports(server.settings, fresh_root, auth=server.auth,
                                     heap=server.heap, pagecache=server.pagecache)
    password = server.root / "password"
    if password.exists():
        fresh_root.mkdir(parents=True)
        shutil.copy2(password, fresh_root / "password")
    try:
        source = _store(private.start(), private)
        target = _store(fresh.start(), fresh)
        try:
            target.migrate_schema()  # a fresh store: no data for the data steps
            say("copying every node and relationship into a fresh store…")
            nodes, relationships = copy_graph(source, target)
            say(f"copied {nodes:,} nodes and {relationships:,} relationships; comparing…")
            checked = check_copy(source, target)
        except CompactionError:
            raise
        except Exception as exc:  # a server lost midway (killed, out of memory): a driver error
            raise CompactionError(
                f"the copy failed ({type(exc).__name__}): a server stopped or failed while "
                "compact read or wrote; the old store is kept as it was and the server is "
                "started on it again. Run compact again") from exc
        finally:
            source.close()
            target.close()
        fresh.stop()
        private.stop()
        (server.root / "data").rename(server.root / SWAPPED_OUT)
        (fresh_root / "data").rename(server.root / "data")
        shutil.rmtree(server.root / SWAPPED_OUT)
    finally:
        fresh.stop()
        private.stop()
        shutil.rmtree(fresh_root, ignore_errors=True)
        finish_interrupted_swap(server.root)
        server.start()
    return CompactReport(nodes=nodes, relationships=relationships, users=checked,
                         seconds=time.monotonic() - began, bytes_before=bytes_before,
                         bytes_after=folder_bytes(server.root / "data"))
