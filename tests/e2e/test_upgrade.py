"""A store written on Neo4j 5.26 by the previous Pegasus schema moves to Neo4j 2026 (README,
"Upgrading from Neo4j 5.26"): same data folder, new server, `migrate`, and recall works.

The 5.26-era store is made the way that version left it: migrations V0001-V0005 only (the key
index without a user filter), keys holding their raw embedding as a float list and packed,
no centred vector, and the partition's per-user key mean."""

import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from neo4j import GraphDatabase

from pegasus import Memory, cypher
from pegasus.embedding.centring import load as load_centre
from pegasus.embedding.embed import unpack_vector
from pegasus.errors import MigrationError
from pegasus.operations.neo4j_local import LocalNeo4j, free_ports
from pegasus.settings import Settings, secret_text
from pegasus.store import Store
from tests.helpers import rel

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
OLD = "5.26.30"
BATCH = {
    "entities": [{"name": "Bill", "kind": "PERSON", "is_user": True},
                 {"name": "Sarah", "kind": "PERSON"}, {"name": "Acme", "kind": "ORG"}],
    "relations": [rel("User", "HAS_BOSS", "Sarah", snippet="my boss Sarah moved the deadline"),
                  rel("Sarah", "WORKS_AT", "Acme", snippet="Sarah runs the team at Acme")],
}
# Said again, surer, in other words: the edge's own words become these, and before V0009 the
# earlier words had no snippet.
AGAIN = {"relations": [rel("User", "HAS_BOSS", "Sarah", snippet="Sarah is still my boss",
                           confidence=0.95)]}


def _settings(state, **extra) -> Settings:
    return Settings(neo4j_uri=state.bolt_uri, neo4j_user=state.user,
                    neo4j_password=state.password, decay_in_serve=False, **extra)


def _write_as_5_26(settings: Settings, user: str) -> None:
    """V0001-V0005 and two commits, then the keys and snippets put back in the 5.26-era format
    (raw embeddings, no centred vector; one snippet per edge, naming its source only)."""
    store = Store(settings)
    try:
        store._run_schema("bootstrap", cypher.split_statements(
            cypher.load("maintenance/migration_bootstrap")))
        for migration in cypher.migrations():
            if migration.version <= 5:
                store._run_schema(migration.path.name, migration.statements)
                store.write("write/record_migration", version=migration.version,
                              description=migration.description, checksum=migration.checksum,
                              applied_at=T0.isoformat())
    finally:
        store.close()
    with Memory(settings) as mem:  # no migrate(): it would refuse this server
        mem.commit(user, "c1", BATCH, at=T0)
        mem.commit(user, "c2", AGAIN, at=T0)
        keys = mem.store.read("read/partition_keys", user_id=user)
    with GraphDatabase.driver(settings.neo4j_uri,
                              auth=(settings.neo4j_user, secret_text(settings.neo4j_password))) as driver:
        raw = [{"id": k["id"], "embedding": unpack_vector(k["packed"]).tolist()} for k in keys]
        driver.execute_query(
            "UNWIND $rows AS row MATCH (k:Key {user_id: $u, id: row.id}) "
            "SET k.embedding = row.embedding REMOVE k.centred, k.centre_id", rows=raw, u=user)
        mean = np.mean([r["embedding"] for r in raw], axis=0).tolist()
        driver.execute_query("MATCH (p:Partition {user_id: $u}) SET p.key_mean = $m",
                             u=user, m=mean)
        driver.execute_query("MATCH (s:Snippet {user_id: $u}) WHERE s.id <> s.edge_id "
                             "DETACH DELETE s", u=user)
        driver.execute_query("MATCH (s:Snippet {user_id: $u}) REMOVE s.target_id, s.edge_id",
                             u=user)


@pytest.mark.timeout(900)
def test_a_5_26_store_upgrades_to_2026_and_recalls():
    root = Path(tempfile.mkdtemp(prefix="pegasus-upgrade-"))
    ports = free_ports(2)
    user = "upgrade-user"
    old = LocalNeo4j(Settings(neo4j_version=OLD), root, *ports, heap="512m", pagecache="128m")
    new = LocalNeo4j(Settings(), root, *ports, heap="512m", pagecache="128m")
    try:
        state = old.start()
        assert state.version == OLD
        settings = _settings(state)
        _write_as_5_26(settings, user)
        with Memory(settings) as mem, pytest.raises(MigrationError, match="2025.x or later"):
            mem.migrate()  # Pegasus refuses 5.26: seeds need the filtered vector index
        cli = subprocess.run(  # and the CLI says so in one line
            [sys.executable, "-m", "pegasus", "memories", "--user", user], capture_output=True,
            text=True, timeout=120, env={**os.environ, "NEO4J_URI": state.bolt_uri,
                                         "NEO4J_PASSWORD": state.password or ""})
        assert cli.returncode == 2, cli.stderr
        assert cli.stderr.strip().splitlines() == [
            f"error: Neo4j at {state.bolt_uri} is {OLD}; Pegasus needs 2025.01 or later (its "
            "vector index filtered per user). Upgrade the server (README, \"Upgrading from "
            "Neo4j 5.26\")"]
        old.stop()

        state = new.start()  # the same data folder, opened by Neo4j 2026
        settings = _settings(state)
        with Memory(settings) as mem:
            assert mem.store.server_info()["version"] == Settings().neo4j_version
            assert mem.migrate() == ["V0006__key_index_per_user.cypher",
                                     "V0007__snippet_targets.cypher",
                                     "V0008__erasure_indexes.cypher",
                                     "V0009__snippet_per_sighting.cypher",
                                     "V0010__id_lookup.cypher",
                                     "V0011__merge_record_shape.cypher",
                                     "V0012__snippet_meaning_index.cypher",
                                     "V0013__snippet_said_index.cypher",
                                     "V0014__passages.cypher"]
            with GraphDatabase.driver(state.bolt_uri, auth=(state.user, state.password)) as d:
                centred = d.execute_query(
                    "MATCH (k:Key {user_id: $u}) RETURN count(k) AS n, "
                    "count(k.centred) AS c, collect(DISTINCT k.centre_id) AS ids",
                    u=user).records[0]
                names = [r["name"] for r in d.execute_query("SHOW INDEXES").records]
                targets = d.execute_query(
                    "MATCH (s:Snippet {user_id: $u}) MATCH (a:Entity {id: s.source_id})-[r]->(b) "
                    "WHERE r.id = s.id RETURN count(s) AS n, count(CASE WHEN s.target_id = b.id "
                    "THEN 1 END) AS named", u=user).records[0]
                meaning = d.execute_query(
                    "MATCH (s:Snippet {user_id: $u}) RETURN count(s) AS n, "
                    "count(s.embedding) AS indexed", u=user).records[0]
            assert centred["n"] == centred["c"] == 5  # Bill, Sarah, Acme, two relations
            assert centred["ids"] == [load_centre(mem.settings.embedding_model, 384)[1]]
            assert "key_centred" in names and "key_embedding" not in names
            assert targets["n"] == targets["named"] > 0  # V0007 named each snippet's target
            # Snippets written before V0012 got the vector its meaning index holds.
            assert "snippet_meaning" in names and meaning["n"] == meaning["indexed"] > 0
            # The earlier words, not the edge's own any more, are found: migrate embedded them.
            recall = mem.recall(user, "when was the deadline moved?", at=T0)
            assert "my boss Sarah moved the deadline" in recall.context
            [boss] = [m for m in mem.memories(user, about="Sarah") if m.relation == "HAS_BOSS"]
            assert boss.snippet == "Sarah is still my boss"
            exact = mem.recall_engine.seeds(user, ["sarah"], 0.30, exact=True)
            assert mem.recall_engine.seeds(user, ["sarah"], 0.30).entity_scores.keys() \
                == exact.entity_scores.keys() != set()
    finally:
        new.stop()
        old.stop()
        shutil.rmtree(root, ignore_errors=True)
