"""One real Neo4j per test session: NEO4J_URI, else testcontainers, else a throwaway local server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from neo4j import GraphDatabase

from pegasus.settings import Settings


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
        with Neo4jContainer("neo4j:5.26-community") as container:
            host = container.get_container_host_ip()
            _BROWSER["url"] = f"http://{host}:{container.get_exposed_port(7474)}/browser/"
            yield container.get_connection_url(), (container.username, container.password)

    return run()


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[tuple[str, tuple[str, str] | None]]:
    """(bolt URI, auth) of the session's server."""
    if os.environ.get("NEO4J_URI"):
        password = os.environ.get("NEO4J_PASSWORD")
        auth = (os.environ.get("NEO4J_USER", "neo4j"), password) if password else None
        yield os.environ["NEO4J_URI"], auth
        return
    docker_run = _docker_neo4j()
    if docker_run is not None:
        yield from docker_run
        return
    from pegasus.neo4j_local import LocalNeo4j

    with LocalNeo4j.throwaway() as state:
        _BROWSER["url"] = state.browser_url
        yield state.bolt_uri, None


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
    """The session server with the schema applied once."""
    from pegasus.store import Store

    uri, auth = neo4j_server
    settings = _settings(uri, auth)
    store = Store(settings)
    store.migrate()
    store.close()
    return neo4j_server


def _settings(uri: str, auth: tuple[str, str] | None, **overrides) -> Settings:
    user, password = auth if auth else ("neo4j", None)
    return Settings(neo4j_uri=uri, neo4j_user=user, neo4j_password=password, **overrides)


def _clear(uri: str, auth) -> None:
    with GraphDatabase.driver(uri, auth=auth) as driver:
        driver.execute_query("MATCH (n) WHERE NOT n:PegasusMigration DETACH DELETE n")


@pytest.fixture
def settings(migrated_server, tmp_path) -> Settings:
    """Settings pointing at a clean, migrated graph; a private home for staging files."""
    uri, auth = migrated_server
    _clear(uri, auth)
    return _settings(uri, auth, home=tmp_path / "pegasus-home")


@pytest.fixture
def raw_driver(migrated_server):
    """A bare driver for assertions that look at the graph directly."""
    uri, auth = migrated_server
    with GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF") as driver:
        yield driver


@pytest.fixture
def user_id() -> str:
    """A fresh user per test, so no test reads another's partition by accident."""
    return f"user-{uuid.uuid4().hex[:10]}"
