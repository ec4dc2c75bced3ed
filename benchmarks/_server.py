"""A Neo4j for benchmarks: NEO4J_URI if set, else a throwaway local server."""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator

from pegasus import Memory, Settings
from pegasus.operations.neo4j_local import LocalNeo4j


@contextlib.contextmanager
def memory(heap: str = "1g", pagecache: str = "512m", llm=None, **overrides) -> Iterator[Memory]:
    """A migrated Memory on NEO4J_URI, else on a throwaway server of the given size."""
    if os.environ.get("NEO4J_URI"):
        with Memory(Settings(**overrides), llm=llm) as mem:
            mem.migrate()
            yield mem
        return
    with (LocalNeo4j.throwaway(heap=heap, pagecache=pagecache) as state,
          Memory(Settings(neo4j_uri=state.bolt_uri, **overrides), llm=llm) as mem):
        mem.migrate()
        yield mem


def machine() -> str:
    return (f"{platform.node()}: {os.cpu_count()} cores, {platform.platform()}, "
            f"Python {platform.python_version()}")
