"""Erasure that can fail (design §10): unique marker words planted in every place a user's words
live, then every string of every node and relationship in the database is scanned after each
kind of forget. Another user holding the very same words is compared property by property."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from pegasus import Memory
from pegasus.extract.extractor import Staging
from tests.helpers import rel

T1 = datetime(2026, 4, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 4, 2, 9, tzinfo=UTC)
T3 = datetime(2026, 4, 3, 9, tzinfo=UTC)

# What one entity holds (name, alias, property, its memories' words, a summary and tag naming
# it, a recorded turn saying it), what one conversation holds, and what neither touches.
ENTITY = ["quixblat", "mkq-alias", "mkq-prop", "mkq-snip", "mkq-sum", "mkq-turn"]
CONVERSATION = ["mkc-snip", "mkc-shared", "mkc-alias", "mkc-prop", "mkc-sum", "mkc-tag",
                "mkc-turn", "flarnbot"]
KEPT = ["mkb-base"]
STAGED = {"ent": "quixblat mks-ent", "conv": "mks-conv"}


def plant(mem: Memory, user: str) -> None:
    mem.commit(user, "c-base", {
        "entities": [{"name": "Acme", "kind": "ORG"}],
        "relations": [rel("User", "WORKS_AT", "Acme", "I work at Acme mkb-base", confidence=0.5)],
        "conversation": {"summary": "work", "tags": ["work"]}}, at=T1)
    mem.record_turns(user, "c-ent", [{"role": "user", "content": "I met Quixblat mkq-turn"},
                                     {"role": "user", "content": "nothing else"}], at=T1)
    mem.commit(user, "c-ent", {
        "entities": [{"name": "Quixblat", "kind": "PERSON", "aliases": ["mkq-alias"],
                      "properties": {"hobby": "mkq-prop"}}],
        "relations": [rel("User", "KNOWS", "Quixblat", "my friend Quixblat mkq-snip"),
                      rel("Quixblat", "LIVES_IN", "Zorbtown", "Quixblat lives in Zorbtown")],
        "conversation": {"summary": "Quixblat mkq-sum", "tags": ["quixblat friends"]}}, at=T1)
    mem.record_turns(user, "c-conv", [{"role": "user", "content": "a Flarnbot mkc-turn"}], at=T2)
    mem.commit(user, "c-conv", {
        "entities": [{"name": "Acme", "kind": "ORG", "aliases": ["mkc-alias"],
                      "properties": {"floor": "mkc-prop"}}],
        "relations": [rel("User", "OWNS", "Flarnbot", "I own a Flarnbot mkc-snip"),
                      rel("User", "WORKS_AT", "Acme", "still at Acme mkc-shared", confidence=0.9)],
        "conversation": {"summary": "mkc-sum", "tags": ["mkc-tag"]}}, at=T2)
    mem.recall(user, "Flarnbot and Quixblat at Acme", conversation_id="c-conv", at=T2)
    mem.recall(user, "Flarnbot and Quixblat at Acme", conversation_id="c-ent", at=T2)
    mem.settle_reads()  # the read logs land now, not while the other user is compared
    Staging(mem.settings.home, user, "c-ent").append({"tool": "x", "args": STAGED["ent"]})
    Staging(mem.settings.home, user, "c-conv").append({"tool": "x", "args": STAGED["conv"]})


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value.lower()]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def hits(driver, owner: str) -> dict[str, int]:
    """How often each marker occurs in any string property of anything not the other user's."""
    rows = driver.execute_query(
        "MATCH (n) RETURN n.user_id AS owner, [k IN keys(n) | n[k]] AS values "
        "UNION ALL MATCH ()-[r]->() RETURN r.user_id AS owner, [k IN keys(r) | r[k]] AS values"
    ).records
    found = dict.fromkeys(ENTITY + CONVERSATION + KEPT, 0)
    for row in rows:
        if row["owner"] != owner:
            continue
        for text in strings(list(row["values"])):
            for marker in found:
                found[marker] += text.count(marker)
    return found


def partition(driver, user: str) -> list[str]:
    """Every node and relationship of one user, every property, in a stable order."""
    rows = driver.execute_query(
        "MATCH (n) WHERE n.user_id = $u RETURN labels(n) AS what, properties(n) AS props "
        "UNION ALL MATCH ()-[r]->() WHERE r.user_id = $u OR startNode(r).user_id = $u "
        "RETURN [type(r), startNode(r).id, endNode(r).id] AS what, properties(r) AS props",
        u=user).records
    return sorted(json.dumps([r["what"], r["props"]], sort_keys=True, default=repr)
                  for r in rows)


def staged(mem: Memory, user: str) -> str:
    folder = Staging.user_dir(mem.settings.home, user)
    return " ".join(p.read_text() for p in folder.glob("*.jsonl")) if folder.is_dir() else ""


@pytest.mark.parametrize("scope", ["entity", "conversation", "everything"])
def test_forget_leaves_no_trace_and_nothing_of_another_user_moves(settings, user_id, raw_driver,
                                                                  scope):
    other = user_id + "-other"
    with Memory(settings) as mem:
        plant(mem, user_id)
        plant(mem, other)
        planted = hits(raw_driver, user_id)
        assert all(planted.values()), planted  # every marker is somewhere before
        theirs = partition(raw_driver, other)
        if scope == "entity":
            report = mem.forget_entity(user_id, "Quixblat", at=T3)
            gone, kept = ENTITY, CONVERSATION + KEPT
            assert report.staging_files == 1
        elif scope == "conversation":
            report = mem.forget_conversation(user_id, "c-conv", at=T3)
            gone, kept = CONVERSATION, ENTITY + KEPT
            assert report.staging_files == 1
        else:
            report = mem.forget_everything(user_id, at=T3)
            gone, kept = ENTITY + CONVERSATION + KEPT, []
            assert report.staging_files == 2
        after = hits(raw_driver, user_id)
        assert {m: after[m] for m in gone} == dict.fromkeys(gone, 0)
        assert all(after[m] > 0 for m in kept), after
        assert partition(raw_driver, other) == theirs
        left_on_disk = staged(mem, user_id).lower()
        assert not any(m in left_on_disk for m in gone)
        assert planted  # the same words still recall for the other user, and not for this one
        for marker in gone:
            assert marker not in mem.recall(user_id, marker, at=T3).render().lower()
        assert "mkq-snip" in mem.recall(other, "my friend Quixblat mkq-snip", at=T3).render()
        if scope == "conversation":  # the shared memory shows the other conversation's words
            assert "mkb-base" in mem.recall(user_id, "work at Acme", at=T3).render()
        # The same fact can be taught again from scratch.
        mem.commit(user_id, "c-again", {"relations": [
            rel("User", "OWNS", "Flarnbot", "I own a Flarnbot mkc-snip")]}, at=T3)
        assert "mkc-snip" in mem.recall(user_id, "Flarnbot", at=T3).render()
