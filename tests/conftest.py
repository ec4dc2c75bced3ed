"""One real Neo4j per test session: NEO4J_URI, else testcontainers, else a throwaway local server.

The suite writes only to a database it owns: one it started, or an external one that is empty
or carries the suite's marker node (`:PegasusTestSuite`). Anything else stops the run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from neo4j import GraphDatabase

from pegasus.settings import Settings

# CI must never go red by chance: every hypothesis test runs derandomized (a fixed seed per
# test), and failures found by the long randomized runs (benchmarks/fuzz.py) are pinned as
# @example or explicit regression cases. Nor by the machine's load: no per-example deadline
# and no "too slow" health check (a loaded CI machine runs an example in seconds, not ms).
hypothesis_settings.register_profile("suite", derandomize=True, database=None,
                                     print_blob=True, deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile(os.environ.get("PEGASUS_HYPOTHESIS_PROFILE", "suite"))

# Every Neo4j server the suite starts compiles with C1 only: the session's, the private ones,
# and those the CLI, compaction and upgrade tests start in-process or in a subprocess (which
# inherits this environment). A server lives for one session or one test, and most of the CPU
# a fresh one spends goes to compiling itself: on the shared 2-core machine, 67 integration
# tests on a fresh server cost 113 s of Neo4j CPU with C2 and 66 s with C1 only (25 and 22 s
# on a warm one), and a start takes 12 s instead of 27-37 s. Queries and results are the
# same; only the JVM's compiler differs. PEGASUS_NEO4J_JAVA_OPTIONS= (empty) measures C2.
os.environ.setdefault("PEGASUS_NEO4J_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")

SUITE_MARKER = "PegasusTestSuite"


def _docker_neo4j() -> Iterator[tuple[str, tuple[str, str] | None]] | None:
    """A testcontainers Neo4j when a Docker engine answers, else None."""
    import docker
    from docker.errors import DockerException
    from testcontainers.community.neo4j import Neo4jContainer

    try:
        docker.from_env().ping()
    except DockerException:  # no engine behind the client: use the local server
        return None

    def run() -> Iterator[tuple[str, tuple[str, str] | None]]:
        with Neo4jContainer(f"neo4j:{Settings().neo4j_version}-community") as container:
            host = container.get_container_host_ip()
            _BROWSER["url"] = f"http://{host}:{container.get_exposed_port(7474)}/browser/"
            uri, auth = container.get_connection_url(), (container.username, container.password)
            _claim(uri, auth, "the testcontainers server")
            yield uri, auth

    return run()


def _serve() -> Iterator[tuple[str, tuple[str, str] | None]]:
    """(bolt URI, auth) of the session's server, yielded once; resumed to stop it."""
    if os.environ.get("NEO4J_URI"):
        password = os.environ.get("NEO4J_PASSWORD")
        auth = (os.environ.get("NEO4J_USER", "neo4j"), password) if password else None
        _claim(os.environ["NEO4J_URI"], auth, f"NEO4J_URI={os.environ['NEO4J_URI']}")
        yield os.environ["NEO4J_URI"], auth
        return
    docker_run = _docker_neo4j()
    if docker_run is not None:
        yield from docker_run
        return
    from pegasus.operations.neo4j_local import LocalNeo4j

    # Auth on, as in any real deployment: every test and subprocess must pass the password.
    root = Path(tempfile.mkdtemp(prefix="pegasus-neo4j-", dir=server_scratch()))
    server = LocalNeo4j.on_free_ports(Settings(), root, auth=True, heap="1g",
                                      pagecache="512m")
    try:
        state = server.start()
        _BROWSER["url"] = state.browser_url
        auth = (state.user, state.password)
        _claim(state.bolt_uri, auth, "the throwaway server")
        yield state.bolt_uri, auth
    finally:
        # Killed, not shut down: a clean stop checkpoints a store that is deleted next (about
        # 10 s at the end of every session on a loaded machine).
        server.stop(timeout_s=0)
        shutil.rmtree(root, ignore_errors=True)


def server_scratch() -> str | None:
    """Where the suite's own Neo4j servers keep their stores: a tmpfs (/dev/shm) when it has
    room, else the usual temporary folder (None).

    A commit waits for Neo4j to fsync its transaction log; on a disk that is most of a small
    write's time, and the suite commits tens of thousands of times. On tmpfs an fsync returns
    at once; a server killed by a test still finds its files (as after a kill on a disk), only
    a machine's crash would lose them, and these stores are thrown away anyway."""
    shm = "/dev/shm"
    try:
        room = os.statvfs(shm)
    except OSError:
        return None
    # 2 GiB free: a server's store in the suite stays well under 1 GiB (two 8 MB transaction
    # logs, the 10,000-probe isolation graph); a container's default 64 MB /dev/shm is skipped.
    if room.f_bavail * room.f_frsize < 2 << 30 or not os.access(shm, os.W_OK):
        return None
    return shm


class _SessionServer:
    """The session's server, started in a thread as soon as collection shows that a test
    needs it: a local server boots (30-60 s) while the tests before the first such one run."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._run: Iterator[tuple[str, tuple[str, str] | None]] | None = None
        self._value: tuple[str, tuple[str, str] | None] | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._first, name="neo4j-session",
                                                daemon=True)
                self._thread.start()

    def _first(self) -> None:
        try:
            self._run = _serve()
            self._value = next(self._run)
        except BaseException as error:  # raised again in the fixture, in pytest's thread
            self._error = error

    def get(self) -> tuple[str, tuple[str, str] | None]:
        self.start()
        assert self._thread is not None
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value

    def stop(self) -> None:
        """Stop the server (or wait for its start and then stop it); idempotent."""
        with self._lock:
            thread = self._thread
        if thread is None:
            return
        thread.join()
        run, self._run = self._run, None
        if run is not None:
            run.close()  # the generator's finally: the server stopped, its folder removed


_SESSION_SERVER = _SessionServer()


def pytest_collection_finish(session) -> None:
    if any("neo4j_server" in getattr(item, "fixturenames", ()) for item in session.items):
        _SESSION_SERVER.start()


def pytest_sessionfinish(session) -> None:
    _SESSION_SERVER.stop()  # when no test asked for it after all (-x, Ctrl-C, deselected)


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[tuple[str, tuple[str, str] | None]]:
    """(bolt URI, auth) of the session's server."""
    yield _SESSION_SERVER.get()
    _SESSION_SERVER.stop()


def _claim(uri: str, auth: tuple[str, str] | None, where: str) -> None:
    """Mark the database as the suite's, or stop the run if it holds someone else's data."""
    database = os.environ.get("NEO4J_DATABASE", "neo4j")
    with GraphDatabase.driver(uri, auth=auth) as driver:
        marked = driver.execute_query(f"MATCH (m:{SUITE_MARKER}) RETURN count(m) AS n",
                                      database_=database).records[0]["n"]
        if not marked:
            other = driver.execute_query("MATCH (n) RETURN count(n) > 0 AS any",
                                         database_=database).records[0]["any"]
            if other:
                pytest.exit(
                    f"refusing to run the tests on database {database!r} of {where}: it holds "
                    f"data and no :{SUITE_MARKER} node, so it is not the suite's to wipe. Point "
                    f"NEO4J_URI at an empty database, or mark a scratch one with "
                    f"CREATE (:{SUITE_MARKER})", returncode=2)
            driver.execute_query(f"CREATE (:{SUITE_MARKER} {{claimed_at: datetime()}})",
                                 database_=database)


# Where the session server serves Neo4j Browser (set by neo4j_server).
_BROWSER: dict[str, str] = {}


@pytest.fixture(scope="session")
def neo4j_browser_url(neo4j_server) -> str:
    """Neo4j Browser of the session server: NEO4J_BROWSER_URL for an external one."""
    if os.environ.get("NEO4J_BROWSER_URL"):
        return os.environ["NEO4J_BROWSER_URL"]
    if "url" in _BROWSER:
        return _BROWSER["url"]
    from urllib.parse import urlparse

    return f"http://{urlparse(neo4j_server[0]).hostname}:7474/browser/"


@pytest.fixture(scope="session")
def migrated_server(neo4j_server):
    """The session server with the schema applied once and its indexes online (the data
    steps of `migrate` have nothing to do on the suite's own database)."""
    from pegasus.migrations import await_indexes
    from pegasus.store import Store

    uri, auth = neo4j_server
    settings = _settings(uri, auth)
    store = Store(settings)
    store.migrate_schema()
    await_indexes(store)
    store.close()
    return neo4j_server


def _settings(uri: str, auth: tuple[str, str] | None, **overrides) -> Settings:
    user, password = auth if auth else ("neo4j", None)
    # Tests commit at fixed past instants: a decay pass at the real clock, started by a served
    # app, would fade their edges underneath them. The test of the schedule turns it on.
    overrides.setdefault("decay_in_serve", False)
    # The proxy's memory budget (1.5 s) guards a user's chat against a stalled store; on a
    # loaded test machine a recall can pass it by chance, and the proxy tests check what
    # memory is injected. The budget's own tests set it.
    overrides.setdefault("proxy_memory_budget_s", 60.0)
    # A served app answers 503 at once while its health probe (1.5 s) finds Neo4j slow: on a
    # loaded test machine a probe can pass that by chance, and the API and the memory page both
    # take that path. The outage tests set their own bound.
    overrides.setdefault("health_timeout_s", 10.0)
    return Settings(neo4j_uri=uri, neo4j_user=user, neo4j_password=password, **overrides)


@pytest.fixture(scope="session")
def suite_driver(migrated_server):
    """One driver for the session: a driver per test paid its connection and authentication
    again each time (10-30 ms on a loaded machine, over a thousand times)."""
    uri, auth = migrated_server
    with GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF") as driver:
        yield driver


@pytest.fixture
def settings(migrated_server, suite_driver, tmp_path) -> Settings:
    """Settings pointing at a clean, migrated graph; a private home for staging files."""
    uri, auth = migrated_server
    suite_driver.execute_query(
        f"MATCH (n) WHERE NOT n:PegasusMigration AND NOT n:{SUITE_MARKER} DETACH DELETE n")
    return _settings(uri, auth, home=tmp_path / "pegasus-home")


@pytest.fixture
def raw_driver(suite_driver):
    """A bare driver for assertions that look at the graph directly (the session's)."""
    return suite_driver


@pytest.fixture
def user_id() -> str:
    """A fresh user per test, so no test reads another's partition by accident."""
    return f"user-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def neo4j_env(migrated_server) -> dict[str, str]:
    """The environment a subprocess needs to reach the session's server (auth included)."""
    uri, auth = migrated_server
    env = {**os.environ, "NEO4J_URI": uri, "HF_HUB_OFFLINE": "1",
           "PEGASUS_DECAY_IN_SERVE": "false", "PEGASUS_PROXY_MEMORY_BUDGET_S": "60"}
    if auth:
        env["NEO4J_USER"], env["NEO4J_PASSWORD"] = auth
    return env


def pytest_collection_modifyitems(config, items) -> None:
    """A test that starts a Neo4j server of its own (`private_server`, 30-60 s a start) is
    `slow`: `./run test --fast` leaves it to the whole suite."""
    for item in items:
        if "private_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def private_server():
    """A server of the test's own (not yet started), for tests that kill it or need it
    empty; the session's server must stay up and is already migrated."""
    from pegasus.operations.neo4j_local import LocalNeo4j

    root = Path(tempfile.mkdtemp(prefix="pegasus-private-", dir=server_scratch()))
    server = LocalNeo4j.on_free_ports(Settings(), root, auth=False, heap="512m",
                                      pagecache="128m")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
