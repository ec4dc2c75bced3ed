"""`pegasus mcp` over stdio, driven by the official MCP SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from pegasus import Memory
from pegasus.settings import secret_text
from tests.helpers import rel

BATCH = {
    "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"]},
                 {"name": "Acme", "kind": "ORG"}],
    "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline again"),
                  rel("User", "WORKS_AT", "Acme", "I have been at Acme for three years")],
}


def server(settings, user: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "HF_", "PATH"))}
    env.update({"NEO4J_URI": settings.neo4j_uri, "NEO4J_USER": settings.neo4j_user,
                "NEO4J_PASSWORD": secret_text(settings.neo4j_password) or "",
                "PEGASUS_HOME": str(settings.home),
                "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    return StdioServerParameters(command=sys.executable, args=["-m", "pegasus", "mcp", "--user",
                                                               user], env=env)


def payload(result):
    assert not result.is_error, result.content
    return result.structured_content if result.structured_content is not None else json.loads(
        result.content[0].text)


def unwrap(value):
    """Tools returning lists come back wrapped as {"result": [...]} in structured content."""
    return value["result"] if isinstance(value, dict) and set(value) == {"result"} else value


async def session(settings, user: str, neighbour: str):
    async with Client(server(settings, user), read_timeout_seconds=120) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        committed = payload(await client.call_tool("commit", {
            "conversation_id": "c1", "batch": BATCH, "at_time": "2026-03-01T09:00:00Z"}))
        recalled = payload(await client.call_tool("recall", {
            "text": "my manager Sarah again", "conversation_id": "c2",
            "at_time": "2026-03-02T09:00:00Z"}))
        closed = payload(await client.call_tool("close_conversation", {
            "conversation_id": "c2", "at_time": "2026-03-02T10:00:00Z"}))
        entity = unwrap(payload(await client.call_tool("inspect_entity", {"name": "sarah k"})))
        merges = unwrap(payload(await client.call_tool("flagged_merges",
                                                       {"include_pending": True})))
        missing = await client.call_tool("inspect_entity", {"name": "Oslo"})
        no_llm = await client.call_tool("remember", {
            "conversation_id": "c3", "turns": [{"role": "user", "content": "hello"}]})
        neighbours = payload(await client.call_tool("recall", {"text": neighbour}))
        return tools, committed, recalled, closed, entity, merges, missing, no_llm, neighbours


def test_the_mcp_tools_over_stdio(settings, user_id):
    with Memory(settings) as memory:  # a neighbour the MCP user must never see
        memory.commit(f"{user_id}-other", "n1", {
            "entities": [{"name": "Oslo", "kind": "PLACE"}],
            "relations": [rel("User", "LIVES_IN", "Oslo", "I live in Oslo by the fjord")]})
    (tools, committed, recalled, closed, entity, merges, missing, no_llm,
     neighbours) = asyncio.run(session(settings, user_id, "life in Oslo by the fjord"))
    assert tools == ["close_conversation", "commit", "correct", "flagged_merges", "forget",
                     "inspect_entity", "list_memories", "memory_history", "recall", "remember"]
    assert sorted(committed["edges_created"]) == ["User -[HAS_BOSS]-> Sarah",
                                                  "User -[WORKS_AT]-> Acme"]
    assert "my boss Sarah moved the deadline again" in recalled["context"]
    assert closed == {"conversation_id": "c2",
                      "reinforced": len(recalled["memory"]) + len(recalled["context"])}
    assert [(e["name"], e["aliases"]) for e in entity] == [("Sarah", ["Sarah K"])]
    assert entity[0]["edges"][0]["relation"] == "HAS_BOSS"
    assert merges == []
    assert missing.is_error and "no entity named 'Oslo'" in missing.content[0].text
    assert no_llm.is_error and "no LLM configured" in no_llm.content[0].text
    assert neighbours["memory"] == [] and neighbours["text"] == ""


async def ownership_session(settings, user: str, neighbours_memory: str):
    async with Client(server(settings, user), read_timeout_seconds=120) as client:
        async def call(tool, **args):
            return await client.call_tool(tool, args)

        listed = unwrap(payload(await call("list_memories", about="Sarah")))
        boss = listed[0]["id"]
        history = payload(await call("memory_history", memory_id=boss))
        retracted = payload(await call("correct", memory_id=boss, retract=True))
        works = unwrap(payload(await call("list_memories", about="Acme")))[0]["id"]
        fixed = payload(await call("correct", memory_id=works, words="I joined Acme in 2023",
                                   since="2023-01-09"))
        recalled = payload(await call("recall", text="when did I join Acme"))
        undone = payload(await call("correct", memory_id=fixed["memory_id"],
                                    undo_correction=True))
        corrections = (works, fixed, recalled, undone)
        renamed = payload(await call("correct", entity="Acme", new_name="Acme Corp"))
        after = unwrap(payload(await call("list_memories", state="all")))
        forgot = payload(await call("forget", entity="Acme Corp"))
        theirs = await call("forget", memory_id=neighbours_memory)
        unconfirmed = await call("forget", everything=True)
        everything = payload(await call("forget", everything=True, confirm_everything=True))
        return (listed, history, retracted, renamed, after, forgot, theirs, unconfirmed,
                everything, corrections)


def test_the_ownership_tools_over_stdio(settings, user_id):
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", BATCH)
        memory.commit(f"{user_id}-other", "n1", {"relations": [
            rel("User", "LIVES_IN", "Oslo", "I live in Oslo by the fjord")]})
        [theirs] = memory.memories(f"{user_id}-other")
    (listed, history, retracted, renamed, after, forgot, not_mine, unconfirmed,
     everything, corrections) = asyncio.run(ownership_session(settings, user_id, theirs.id))
    works, fixed, recalled, undone = corrections
    assert fixed["action"] == "corrected" and fixed["corrected_id"] == works
    assert "I joined Acme in 2023" in recalled["text"]
    assert (undone["action"], undone["memory_id"]) == ("correction undone", works)
    assert [(m["relation"], m["target"]) for m in listed] == [("HAS_BOSS", "Sarah")]
    assert history["sightings"][0]["snippet"] == "my boss Sarah moved the deadline again"
    assert retracted == {"action": "retracted", "memory_id": listed[0]["id"],
                         "corrected_id": None, "entity_id": None,
                         "name": None, "aliases": [], "merge_record_id": None,
                         "edges_moved": 0, "notes": []}
    assert renamed["name"] == "Acme Corp"
    assert sorted((m["target"], m["state"]) for m in after) == [("Acme Corp", "current"),
                                                                 ("Sarah", "retracted")]
    assert (forgot["memories"], forgot["entities"]) == (1, 1)
    assert not_mine.is_error and "no memory" in not_mine.content[0].text
    assert unconfirmed.is_error and "confirm_everything" in unconfirmed.content[0].text
    assert everything["memories"] == 1
    with Memory(settings) as memory:
        assert memory.memories(user_id, state="all") == []
        assert [m.id for m in memory.memories(f"{user_id}-other")] == [theirs.id]
