"""The Neo4j server dies in the middle of a commit (design §6: all of it or none of it)."""

import os
import signal

import pytest
from neo4j import GraphDatabase

import pegasus.commit as commit_module
from pegasus import Memory, Settings
from pegasus.errors import Neo4jUnavailableError
from tests.helpers import rel, scripted_model, snapshot


def test_server_killed_mid_commit_commits_nothing_and_says_so(private_server, monkeypatch):
    own_server = private_server
    state = own_server.start()
    settings = Settings(neo4j_uri=state.bolt_uri, neo4j_retry_time_s=1.0)
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


def test_a_transient_lost_connection_during_recall_is_retried(settings, user_id, monkeypatch):
    from neo4j.exceptions import ServiceUnavailable

    import pegasus.recall.engine as engine_module
    import pegasus.store as store_module

    # The one retry policy: the driver retries the unit of work within neo4j_retry_time_s.
    settings = settings.model_copy(update={"neo4j_retry_time_s": 5.0})
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                                   "relations": [rel("User", "HAS_BOSS", "Sarah",
                                                     snippet="my boss Sarah")]})
        expected = mem.recall(user_id, "boss Sarah")
        calls: list[str] = []

        def flaky(original):
            def run(tx, name, **params):
                calls.append(name)
                if name == "read/recall_walk" and calls.count(name) == 1:
                    raise ServiceUnavailable("connection reset by peer")
                return original(tx, name, **params)
            return run

        monkeypatch.setattr(store_module, "run", flaky(store_module.run))
        # recall's one read transaction
        monkeypatch.setattr(engine_module, "run_values", flaky(engine_module.run_values))
        again = mem.recall(user_id, "boss Sarah")
    assert calls.count("read/recall_walk") == 2  # failed once, retried once
    assert again.context == expected.context == ["my boss Sarah"]
    assert again.edge_ids == expected.edge_ids and len(again.edge_ids) == 1


def test_without_a_retry_window_a_lost_connection_is_a_clear_error(settings, user_id,
                                                                    monkeypatch):
    from neo4j.exceptions import ServiceUnavailable

    import pegasus.recall.engine as engine_module
    import pegasus.store as store_module
    from pegasus.errors import Neo4jUnavailableError

    settings = settings.model_copy(update={"neo4j_retry_time_s": 0.0})
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", {"entities": [{"name": "Sarah", "kind": "PERSON"}],
                                   "relations": [rel("User", "HAS_BOSS", "Sarah",
                                                     snippet="my boss Sarah")]})
        calls: list[str] = []

        def flaky(original):
            def run(tx, name, **params):
                calls.append(name)
                if name == "read/recall_walk":
                    raise ServiceUnavailable("connection reset by peer")
                return original(tx, name, **params)
            return run

        monkeypatch.setattr(store_module, "run", flaky(store_module.run))
        # recall's one read transaction
        monkeypatch.setattr(engine_module, "run_values", flaky(engine_module.run_values))
        with pytest.raises(Neo4jUnavailableError, match="lost the connection"):
            mem.recall(user_id, "boss Sarah")
    assert calls.count("read/recall_walk") == 1


def test_an_llm_that_keeps_timing_out_leaves_the_extraction_resumable(settings, user_id):
    from langchain_core.messages import AIMessage

    from pegasus.extract.extractor import Staging

    turns = [{"role": "user", "content": "my boss Sarah is great"}]
    first = {"name": "record_entity", "args": {"name": "Sarah", "kind": "PERSON"},
             "id": "1", "type": "tool_call"}

    timeouts = [TimeoutError("upstream timed out")] * 4
    slow = scripted_model(AIMessage(content="", tool_calls=[first]), *timeouts)
    with Memory(settings, llm=slow) as mem, pytest.raises(TimeoutError):
        mem.remember(user_id, "c1", turns)
    staging = Staging(settings.home, user_id, "c1")
    assert [i["args"]["name"] for i in staging.load()] == ["Sarah"]
    relation = {"name": "record_relation", "id": "2", "type": "tool_call",
                "args": {"source": "User", "relation": "HAS_BOSS", "target": "Sarah",
                         "snippet": "my boss Sarah is great"}}
    done = {"name": "finish", "args": {}, "id": "3", "type": "tool_call"}
    back = scripted_model(AIMessage(content="", tool_calls=[relation]),
                          AIMessage(content="", tool_calls=[done]))
    with Memory(settings, llm=back) as mem:
        report = mem.remember(user_id, "c1", turns)
    assert report.edges_created == ["User -[HAS_BOSS]-> Sarah"]
    assert not staging.path.exists()
