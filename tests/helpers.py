"""Shared test helpers: snapshots of the whole graph and small batch builders."""

from __future__ import annotations

import json

import pytest


def snapshot(driver) -> tuple[list, list]:
    """Every node and relationship with labels, type and properties, in a stable order."""
    nodes = driver.execute_query(
        "MATCH (n) WHERE NOT n:PegasusMigration "
        "RETURN labels(n) AS labels, properties(n) AS props"
    ).records
    rels = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN type(r) AS type, properties(r) AS props, "
        "a.id AS a, b.id AS b"
    ).records

    def norm(value):
        return json.dumps(value, sort_keys=True, default=str)

    return (
        sorted(norm({"labels": sorted(r["labels"]), **r["props"]}) for r in nodes),
        sorted(norm({"type": r["type"], "a": r["a"], "b": r["b"], **r["props"]}) for r in rels),
    )


def rel(source, relation, target, snippet=None, **extra):
    return {"source": source, "relation": relation, "target": target,
            "snippet": snippet or f"{source} {relation.lower().replace('_', ' ')} {target}",
            **extra}


def flood(prefix: str, relation: str, words: str, n: int) -> dict:
    """A batch of `n` memories from the user to `prefix`0… `prefix`n-1, each saying `words`
    and its number: an attacker's partition full of what a victim may ask."""
    return {"entities": [{"name": f"{prefix}{i}", "kind": "THING"} for i in range(n)],
            "relations": [rel("User", relation, f"{prefix}{i}", snippet=f"{words} number {i}")
                          for i in range(n)]}


def edges(driver, user_id, include_superseded=True):
    """(source name, type, target name, props) of a user's memory edges."""
    rows = driver.execute_query(
        "MATCH (a:Entity {user_id: $u})-[r]->(b:Entity) WHERE r.user_id = $u "
        "RETURN a.name AS a, type(r) AS t, b.name AS b, properties(r) AS p ORDER BY a, t, b",
        u=user_id,
    ).records
    return [(r["a"], r["t"], r["b"], r["p"]) for r in rows
            if include_superseded or r["p"].get("superseded_at") is None]


def entities(driver, user_id):
    rows = driver.execute_query(
        "MATCH (n:Entity {user_id: $u}) RETURN n ORDER BY n.name", u=user_id).records
    return [dict(r["n"]) | {"labels": sorted(r["n"].labels)} for r in rows]


def scripted_model(*replies):
    """A langchain-core fake chat model answering with `replies` in turn; an exception among
    them is raised at that turn, and later replies still follow (a generator could not)."""
    from langchain_core.language_models import GenericFakeChatModel

    class Replies:
        def __init__(self):
            self.queue = list(replies)

        def __iter__(self):
            return self

        def __next__(self):
            if not self.queue:
                raise StopIteration
            reply = self.queue.pop(0)
            if isinstance(reply, BaseException):
                raise reply
            return reply

    return GenericFakeChatModel(messages=Replies())


def call(tool, i, **args):
    """One tool call as a chat model emits it (for scripted extraction)."""
    return {"name": tool, "args": args, "id": f"call_{i}", "type": "tool_call"}


def _with_entity(**fields) -> dict:
    return {"entities": [{"name": "Sarah", "kind": "PERSON", **fields}]}


def _with_relation(**fields) -> dict:
    return {"relations": [{"source": "User", "relation": "HAS_BOSS", "target": "Sarah",
                           "snippet": "my boss Sarah", **fields}]}


# Batches the contract refuses, with the field path the error must name (docs/reliability.md).
# The first one was found by the HTTP fuzz (an OverflowError inside the driver, a 500).
BAD_BATCHES = [
    pytest.param(_with_entity(properties={"n": -228402480720848961404928}),
                 "entities[0].properties", id="int-outside-64-bits"),
    pytest.param(_with_entity(properties={"x": float("nan")}), "entities[0].properties",
                 id="nan-property"),
    pytest.param(_with_entity(confidence=float("inf")), "entities[0].confidence",
                 id="infinite-confidence"),
    pytest.param(_with_entity(name="x" * 100_000), "entities[0].name", id="long-name"),
    pytest.param(_with_entity(aliases=["y" * 201]), "entities[0].aliases[0]", id="long-alias"),
    pytest.param(_with_relation(relation="R" * 101), "relations[0].relation", id="long-label"),
    pytest.param(_with_relation(snippet="s" * 2001), "relations[0].snippet", id="long-snippet"),
    pytest.param(_with_entity(properties={f"p{i}": i for i in range(51)}),
                 "entities[0].properties", id="too-many-properties"),
    pytest.param(_with_entity(properties={"k" * 65: 1}), "entities[0].properties",
                 id="long-property-key"),
    pytest.param(_with_entity(properties={"bio": "b" * 2001}), "entities[0].properties",
                 id="long-property-value"),
]


class ScriptedReviewer:
    """A reviewer with fixed answers by candidate name (the Reviewer protocol, scripted)."""

    def __init__(self, answers: dict[str, float]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, list[str]]] = []

    def review(self, proposed, candidates, conversation: str) -> dict[str, float]:
        self.calls.append((proposed.name, [c.entity.name for c in candidates]))
        return {c.entity.id: self.answers.get(c.entity.name, 0.0) for c in candidates}
