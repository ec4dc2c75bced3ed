"""serve plans the queries of a proxied turn at start (#36): the first proxied recall after a
start does not pay for Neo4j's planning, so it is served with memory within the budget."""

from __future__ import annotations

import math
from typing import Any

import pytest

import pegasus.conversations
import pegasus.memory
import pegasus.recall.engine
import pegasus.store
from pegasus import Memory
from tests.serve.test_proxy import KEY_A, RECALLS, proxy, remember_samples

# What a proxied turn runs before its answer: its conversation found, its turn recorded, recall.
TURN_QUERIES = {"read/conversation_turns", "write/record_turns", "read/seed_keys",
                "read/recall_walk"}


def shape(params: dict[str, Any]) -> tuple:
    """What Neo4j keys a cached plan on besides the query: each parameter's type, and a list's
    or a string's size rounded up to a power of ten (exact for 0 and 1)."""
    def size(value: Any) -> Any:
        if isinstance(value, str | list):
            return 10 ** math.ceil(math.log10(len(value))) if len(value) > 1 else len(value)
        return type(value).__name__
    return tuple(sorted((k, size(v)) for k, v in params.items()))


@pytest.fixture
def ran(monkeypatch) -> list[tuple[str, tuple, Any]]:
    """Every named query run, as (name, shape, user_id), wherever it is run from."""
    seen: list[tuple[str, tuple, Any]] = []
    def spying(original):
        def spy(tx, name, **params):
            seen.append((name, shape(params), params.get("user_id")))
            return original(tx, name, **params)
        return spy

    for module in (pegasus.store, pegasus.memory, pegasus.conversations):
        monkeypatch.setattr(module, "run", spying(pegasus.store.run))
    monkeypatch.setattr(pegasus.recall.engine, "run_values", spying(pegasus.store.run_values))
    return seen


def chat(client) -> Any:
    return client(KEY_A).chat.completions.with_raw_response.create(
        model="stub-model", messages=[{"role": "user", "content": RECALLS}])


@pytest.fixture
def alice(user_id, settings) -> str:
    alice = f"{user_id}-a"
    with Memory(settings) as memory:
        remember_samples(memory, alice)
    return alice


def test_the_start_runs_every_query_of_the_first_proxied_turn_in_its_shape(settings, alice,
                                                                            ran, raw_driver):
    # A budget no loaded machine passes: this test is about which plans the start made.
    with proxy(settings, [alice], proxy_memory_budget_s=120.0) as (client, _, _, _):
        warmed = {(name, params) for name, params, _ in ran}
        rehearsed = {user for name, _, user in ran if name in TURN_QUERIES}
        ran.clear()
        assert chat(client).status_code == 200
        first = {(name, params) for name, params, user in ran
                 if user == alice and name in TURN_QUERIES}
    assert {name for name, _ in first} == TURN_QUERIES
    assert first <= warmed, sorted(first - warmed)
    # rehearsed on a blank id (no user can have one) of alice's id's size, and nothing kept
    assert rehearsed == {" " * 100} and len(alice) > 10
    kept = raw_driver.execute_query("MATCH (n) WHERE trim(n.user_id) = '' RETURN count(n) AS n")
    assert kept.records[0]["n"] == 0

