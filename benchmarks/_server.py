"""A Neo4j for benchmarks: NEO4J_URI if set, else a throwaway local server."""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator

from pegasus import Memory, Settings
from pegasus.neo4j_local import LocalNeo4j


@contextlib.contextmanager
def memory(**overrides) -> Iterator[Memory]:
    if os.environ.get("NEO4J_URI"):
        with Memory(Settings(**overrides)) as mem:
            mem.migrate()
            yield mem
        return
    with LocalNeo4j.throwaway() as state, Memory(Settings(neo4j_uri=state.bolt_uri, **overrides)) as mem:
        mem.migrate()
        yield mem


def machine() -> str:
    return (f"{platform.node()}: {os.cpu_count()} cores, {platform.platform()}, "
            f"Python {platform.python_version()}")
