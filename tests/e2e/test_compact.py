"""`pegasus neo4j compact` (docs/privacy.md, "Making a deletion final"): after a forget, the raw
files of the local server still hold the forgotten words (the relation label's token, the
property name's token, strings, index files); after a compaction no file under its data folder
holds them, and the user who stays has exactly the same memory (export and recall)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from neo4j import GraphDatabase

from pegasus import Memory
from pegasus.operations.compact import SWAPPED_OUT, compact, files_holding, finish_interrupted_swap
from pegasus.operations.neo4j_local import LocalNeo4j
from pegasus.settings import Settings
from pegasus.transfer.export import export_lines
from tests.helpers import rel

T1 = datetime(2026, 4, 1, 9, tzinfo=UTC)
# Long enough that Neo4j keeps them as plain bytes (short strings get packed encodings).
GONE_LABEL = "ZORBLAXIAN_QUUXWORTH_MENTORED"
GONE_PROPERTY = "zorblaxianfavouritecolour"
GONE_WORDS = "Zorblaxian Quuxworth taught me the zither in Vexmoor"
MARKERS = [GONE_LABEL.encode(), GONE_PROPERTY.encode(), b"Zorblaxian Quuxworth"]



def plant(mem: Memory) -> None:
    mem.commit("stays", "c1", {
        "entities": [{"name": "Acme", "kind": "ORG", "properties": {"floor": "third"}}],
        "relations": [rel("User", "WORKS_AT", "Acme", "I work at Acme on the third floor"),
                      rel("User", "LIKES", "Tea", "I like green tea")],
        "conversation": {"summary": "work and tea", "tags": ["work"]}}, at=T1)
    mem.commit("leaves", "c1", {
        "entities": [{"name": "Zorblaxian Quuxworth", "kind": "PERSON",
                      "properties": {GONE_PROPERTY: "ultramarine"}}],
        "relations": [rel("Zorblaxian Quuxworth", GONE_LABEL, "User", GONE_WORDS)],
        "conversation": {"summary": "music lessons", "tags": ["music"]}}, at=T1)


@pytest.mark.neo4j
@pytest.mark.timeout(1200)  # five server starts
def test_compaction_leaves_no_forgotten_word_on_disk_and_keeps_every_other_memory(tmp_path):
    settings = Settings()
    server = LocalNeo4j.on_free_ports(settings, tmp_path / "server", auth=True)
    state = server.start()
    try:
        mem = Memory(settings.model_copy(update={"neo4j_uri": state.bolt_uri,
                                                 "neo4j_password": state.password,
                                                 "home": tmp_path / "home"}))
        with mem:
            mem.migrate()
            plant(mem)
            stays_before = list(export_lines(mem.store, "stays", T1))
            recall_before = mem.recall("stays", "where do I work and what do I drink", at=T1)
            mem.forget_everything("leaves")
        server.stop()  # a checkpoint: what is left on disk is what Neo4j keeps
        before = files_holding(server.root / "data", MARKERS)
        # The forgotten words are still on disk: tokens at least (Neo4j never deletes one).
        assert before[GONE_LABEL], before
        assert before[GONE_PROPERTY], before

        server.start()
        report = compact(server)
        # The fresh store never held the words: running or stopped, its files do not either.
        after = files_holding(server.root / "data", MARKERS)
        assert after == {n.decode(): [] for n in MARKERS}
        assert not (server.root / SWAPPED_OUT).exists()
        assert report.users == 1 and report.relationships > 0

        state = server.state()
        assert state is not None and state.bolt_port == server.bolt_port  # on its own ports
        mem = Memory(settings.model_copy(update={"neo4j_uri": state.bolt_uri,
                                                 "neo4j_password": state.password,
                                                 "home": tmp_path / "home"}))
        with mem:
            assert list(export_lines(mem.store, "stays", T1)) == stays_before
            recall_after = mem.recall("stays", "where do I work and what do I drink", at=T1)
            assert recall_after.render() == recall_before.render()
            assert "Acme" in recall_after.render()
            # The schema is the fresh store's own: migrations recorded once, indexes online.
            with GraphDatabase.driver(state.bolt_uri, auth=("neo4j", state.password)) as d:
                versions = [r["v"] for r in d.execute_query(
                    "MATCH (m:PegasusMigration) RETURN m.version AS v ORDER BY v").records]
            assert versions == sorted(set(versions)) and len(versions) >= 9
    finally:
        server.stop()


def test_an_interrupted_swap_puts_the_right_data_folder_back(tmp_path):
    # Killed after the old folder moved aside and before the fresh one moved in: the old one
    # comes back; killed after both moves: the old one is removed.
    (tmp_path / SWAPPED_OUT).mkdir()
    (tmp_path / SWAPPED_OUT / "marker").write_text("old")
    finish_interrupted_swap(tmp_path)
    assert (tmp_path / "data" / "marker").read_text() == "old"
    assert not (tmp_path / SWAPPED_OUT).exists()

    (tmp_path / SWAPPED_OUT).mkdir()
    finish_interrupted_swap(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["data"]


@pytest.mark.neo4j
@pytest.mark.timeout(1200)  # four server starts
def test_a_server_killed_during_compaction_leaves_the_old_store_in_place(tmp_path, monkeypatch):
    # Neo4j stopped during compact (#47, "not tried yet"): the old store read by the copy is
    # killed midway. compact says so in one line; the server runs again on its own ports with
    # exactly what it held, and no half-built fresh store is left.
    import signal

    import pegasus.operations.compact as compact_module
    from pegasus.operations.compact import CompactionError

    settings = Settings()
    server = LocalNeo4j.on_free_ports(settings, tmp_path / "server", auth=True)
    state = server.start()
    try:
        connect = {"neo4j_uri": state.bolt_uri, "neo4j_password": state.password,
                   "home": tmp_path / "home"}
        with Memory(settings.model_copy(update=connect)) as mem:
            mem.migrate()
            plant(mem)
            before = {u: list(export_lines(mem.store, u, T1)) for u in ("stays", "leaves")}
        real = compact_module.copy_graph

        def killed_midway(source, target, batch=compact_module.BATCH):
            private = LocalNeo4j(settings, server.root, 0, 0).state()
            os.kill(private.pid, signal.SIGKILL)  # the old store's server, while it is read
            return real(source, target, batch)

        monkeypatch.setattr(compact_module, "copy_graph", killed_midway)
        with pytest.raises(CompactionError, match=r"^the copy failed \(\w+\): .* the old store "
                                                  "is kept as it was"):
            compact(server)
        monkeypatch.undo()
        state = server.state()
        assert state is not None and state.bolt_port == server.bolt_port
        assert not (tmp_path / "server.compacting").exists()
        assert not (server.root / SWAPPED_OUT).exists()
        connect["neo4j_uri"] = state.bolt_uri
        with Memory(settings.model_copy(update=connect)) as mem:
            assert {u: list(export_lines(mem.store, u, T1)) for u in before} == before
    finally:
        server.stop()
