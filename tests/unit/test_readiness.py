"""/readyz's word on Neo4j (serve/metrics.readiness) names the server whatever way it failed:
a driver error, or the store's own "lost the connection" after its retry window. The outage
test (tests/serve/test_operations.py) saw either, by timing, and only the first named it."""

from pegasus.errors import ConfigError, Neo4jUnavailableError
from pegasus.serve.metrics import readiness


class Down:
    neo4j_address = "bolt://127.0.0.1:7687"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def applied_migrations(self):
        raise self.error


def test_every_way_neo4j_fails_names_the_server():
    lost = Neo4jUnavailableError("lost the connection to Neo4j and could not get it back "
                                 "within 15 s (IncompleteCommit); the transaction was not "
                                 "committed")
    for error in (lost, OSError("connection refused")):
        parts = readiness(Down(error))
        assert parts["neo4j"].startswith("Neo4j at bolt://127.0.0.1:7687 does not answer")
        assert parts["migrations"] == "unknown"
    assert readiness(Down(lost))["neo4j"].endswith("(IncompleteCommit); the transaction was "
                                                   "not committed")


def test_another_pegasus_error_is_said_as_it_is():
    parts = readiness(Down(ConfigError("Neo4j at bolt://x is 5.26; Pegasus needs 2025.01")))
    assert parts == {"neo4j": "Neo4j at bolt://x is 5.26; Pegasus needs 2025.01",
                     "migrations": "unknown"}
