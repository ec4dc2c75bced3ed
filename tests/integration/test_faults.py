"""The Neo4j server dies in the middle of a commit (SPEC §6: all of it or none of it)."""

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from neo4j import GraphDatabase

import pegasus.commit as commit_module
from pegasus import Memory, Settings
from pegasus.errors import Neo4jUnavailableError
from pegasus.neo4j_local import LocalNeo4j, free_port
from tests.helpers import rel, snapshot


@pytest.fixture
def own_server():
    """A private server this test may kill (the session's server must stay up)."""
    root = Path(tempfile.mkdtemp(prefix="pegasus-fault-"))
    server = LocalNeo4j(Settings(), root, free_port(), free_port(), auth=False, heap="512m",
                        pagecache="128m")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_server_killed_mid_commit_commits_nothing_and_says_so(own_server, monkeypatch):
    state = own_server.start()
    settings = Settings(neo4j_uri=state.bolt_uri, neo4j_retry_time_s=1.0,
                        neo4j_retry_attempts=2)
    batch = {"entities": [{"name": "Acme", "kind": "ORG"}],
             "relations": [rel("User", "WORKS_AT", "Acme")]}
    with Memory(settings) as mem:
        mem.migrate()
        mem.commit("u", "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                               "relations": [rel("User", "HAS_BOSS", "Sarah")]})
    with GraphDatabase.driver(state.bolt_uri) as driver:
        before = snapshot(driver)

    original = commit_module.write_keys

    def kill_then_continue(*args, **kwargs):
        os.kill(state.pid, signal.SIGKILL)  # entities and edges are written, not committed
        return original(*args, **kwargs)

    monkeypatch.setattr(commit_module, "write_keys", kill_then_continue)
    with Memory(settings) as mem, pytest.raises(Neo4jUnavailableError, match="not committed"):
        mem.commit("u", "c2", batch)
    monkeypatch.setattr(commit_module, "write_keys", original)

    state = own_server.start()  # same data folder: recovery from the transaction log
    settings = settings.model_copy(update={"neo4j_uri": state.bolt_uri})
    with GraphDatabase.driver(state.bolt_uri) as driver:
        assert snapshot(driver) == before
    with Memory(settings) as mem:
        report = mem.commit("u", "c2", batch)
    assert report.edges_created == ["User -[WORKS_AT]-> Acme"]
