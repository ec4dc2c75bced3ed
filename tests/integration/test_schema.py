import shutil
from pathlib import Path

import pytest

from pegasus import Memory, cypher
from pegasus.errors import MigrationError


def _schema(driver):
    constraints = {r["name"]: r for r in driver.execute_query("SHOW CONSTRAINTS").records}
    indexes = {r["name"]: r for r in driver.execute_query("SHOW INDEXES").records}
    return constraints, indexes


def test_migrate_creates_constraints_and_vector_index(settings, raw_driver):
    with Memory(settings) as mem:
        assert mem.migrate() == []  # the session fixture applied them already
    constraints, indexes = _schema(raw_driver)
    entity = constraints["entity_identity"]
    assert entity["type"] == "UNIQUENESS"
    assert entity["labelsOrTypes"] == ["Entity"] and entity["properties"] == ["user_id", "id"]
    assert constraints["conversation_identity"]["properties"] == ["user_id", "id"]
    assert "key_embedding" not in indexes  # V0006 replaced it by the per-user index
    vector = indexes["key_centred"]
    assert vector["type"] == "VECTOR" and vector["state"] == "ONLINE"
    # The centred vector, with user_id stored in the index as its filter property.
    assert vector["labelsOrTypes"] == ["Key"] and vector["properties"] == ["centred", "user_id"]
    options = raw_driver.execute_query(
        "SHOW VECTOR INDEXES YIELD name, options WHERE name = 'key_centred' RETURN options"
    ).records[0]["options"]["indexConfig"]
    assert options["vector.dimensions"] == 384
    assert options["vector.similarity_function"].lower() == "cosine"
    assert options["vector.quantization.type"] == "NONE"
    assert options["vector.default_search_expansion_factor"] == 4.0
    # Snippets by meaning (V0012): the same kind of index, filtered by user inside it.
    meaning = indexes["snippet_meaning"]
    assert meaning["type"] == "VECTOR" and meaning["state"] == "ONLINE"
    assert meaning["labelsOrTypes"] == ["Snippet"]
    assert meaning["properties"] == ["embedding", "user_id"]
    recorded = raw_driver.execute_query(
        "MATCH (m:PegasusMigration) RETURN m.version AS v, m.checksum AS c ORDER BY v"
    ).records
    assert [(r["v"], r["c"]) for r in recorded] == [
        (m.version, m.checksum) for m in cypher.migrations()
    ]


def test_migrate_twice_changes_nothing(settings, raw_driver):
    before = _schema(raw_driver)
    with Memory(settings) as mem:
        assert mem.migrate() == []
        assert mem.migrate() == []
    after = _schema(raw_driver)
    assert sorted(before[0]) == sorted(after[0]) and sorted(before[1]) == sorted(after[1])


def test_changed_applied_migration_is_refused(settings, raw_driver, tmp_path: Path, monkeypatch):
    applied_before = len(cypher.migrations())
    copy = tmp_path / "cypher"
    shutil.copytree(cypher.cypher_dir(), copy)
    first = sorted((copy / "schema").glob("V0001__*.cypher"))[0]
    first.write_text(first.read_text() + "\n// edited after it was applied\n")
    monkeypatch.setenv("PEGASUS_CYPHER_DIR", str(copy))
    cypher.load.cache_clear()
    try:
        with Memory(settings) as mem, pytest.raises(MigrationError, match=first.name):
            mem.migrate()
    finally:
        cypher.load.cache_clear()
    count = raw_driver.execute_query("MATCH (m:PegasusMigration) RETURN count(m) AS n")
    assert count.records[0]["n"] == applied_before


def test_new_migration_file_is_applied_once(settings, raw_driver, tmp_path: Path, monkeypatch):
    copy = tmp_path / "cypher"
    shutil.copytree(cypher.cypher_dir(), copy)
    (copy / "schema" / "V0999__test_extra_index.cypher").write_text(
        "CREATE INDEX test_extra IF NOT EXISTS FOR (n:TestOnly) ON (n.x);\n"
    )
    monkeypatch.setenv("PEGASUS_CYPHER_DIR", str(copy))
    cypher.load.cache_clear()
    try:
        with Memory(settings) as mem:
            assert mem.migrate() == ["V0999__test_extra_index.cypher"]
            assert mem.migrate() == []
        names = [r["name"] for r in raw_driver.execute_query("SHOW INDEXES").records]
        assert "test_extra" in names
    finally:
        raw_driver.execute_query("DROP INDEX test_extra IF EXISTS")
        raw_driver.execute_query("MATCH (m:PegasusMigration {version: 999}) DELETE m")
        cypher.load.cache_clear()


def test_partition_reads_use_an_index_not_a_label_scan(settings, raw_driver):
    """A regression test: merge's read of one user's entities scanned every user's."""
    from pegasus import cypher as cy

    # Plans follow statistics: with an almost empty graph a label scan is cheapest anyway.
    raw_driver.execute_query(
        "UNWIND range(1, 3000) AS i CREATE (:Entity {user_id: 'crowd-' + (i % 300), id: 'e' + i})"
        " CREATE (:Key {user_id: 'crowd-' + (i % 300), id: 'k' + i})")
    raw_driver.execute_query("CALL db.resampleOutdatedIndexes()")
    for name in ("read/partition_entities", "read/partition_keys"):
        plan = raw_driver.execute_query("EXPLAIN " + cy.load(name), user_id="u").summary.plan

        def operators(p):
            return [p["operatorType"]] + [o for c in p.get("children", []) for o in operators(c)]

        found = operators(plan)
        assert not any(op.startswith("NodeByLabelScan") for op in found), (name, found)
        assert any("IndexSeek" in op for op in found), (name, found)
