"""The MCP server attacked as its model could (docs/reliability.md, "Hostile peers"): another
user's ids, bad ids, huge inputs. Each answer is an error the model can read (or a bounded
answer), and nothing of either user changes."""

from __future__ import annotations

import asyncio

from mcp.client import Client

from pegasus import Memory
from tests.helpers import rel
from tests.serve.test_mcp import BATCH, payload, server, unwrap


async def attacks(settings, user: str, theirs: dict[str, str]) -> dict[str, object]:
    async with Client(server(settings, user), read_timeout_seconds=120) as client:
        async def call(tool, **args):
            return await client.call_tool(tool, args)

        many = {"entities": [{"name": f"E{i}", "kind": "THING"} for i in range(6000)],
                "relations": []}
        return {
            # another user's ids, in every tool that takes one
            "history": await call("memory_history", memory_id=theirs["memory"]),
            "retract": await call("correct", memory_id=theirs["memory"], retract=True),
            "undo_merge": await call("correct", undo_merge=theirs["merge"]),
            "forget_memory": await call("forget", memory_id=theirs["memory"]),
            "forget_conversation": await call("forget", conversation_id="n1"),
            "forget_entity": await call("forget", entity="Oslo"),
            "their_entity": await call("inspect_entity", name=theirs["entity"]),
            # bad ids
            "empty_id": await call("memory_history", memory_id=""),
            "long_id": await call("memory_history", memory_id="m" * 100_000),
            "path_id": await call("memory_history", memory_id="../../etc/passwd"),
            "nul_conversation": await call("close_conversation", conversation_id="\x00"),
            "long_conversation": await call("close_conversation",
                                            conversation_id="c" * 100_000),
            # huge inputs
            "huge_recall": await call("recall", text="Sarah deadline " * 100_000),
            "huge_page": await call("list_memories", limit=10**9),
            "negative_offset": await call("list_memories", offset=-1),
            "huge_batch": await call("commit", conversation_id="big", batch=many),
            "huge_turn": await call("commit", conversation_id="big2", batch=BATCH,
                                    transcript=[{"role": "user", "content": "w " * 2_000_000}]),
            "mine": unwrap(payload(await call("list_memories", state="all"))),
        }


def test_mcp_holds_against_its_model(settings, user_id, capfd):
    neighbour = f"{user_id}-other"
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", BATCH)
        memory.commit(neighbour, "n1", {
            "entities": [{"name": "Oslo", "kind": "PLACE"}, {"name": "Oslo City", "kind": "PLACE"}],
            "relations": [rel("User", "LIVES_IN", "Oslo", "I live in Oslo by the fjord"),
                          rel("User", "VISITED", "Oslo City", "we visited Oslo City in May")]})
        merged = memory.merge_entities(neighbour, "Oslo", "Oslo City")
        before = sorted((m.id, m.state, m.target) for m in memory.memories(neighbour, state="all"))
        mine_before = sorted(m.id for m in memory.memories(user_id, state="all"))
        theirs = {"memory": before[0][0], "merge": merged.merge_record_id,
                  "entity": "Oslo City"}
    capfd.readouterr()
    results = asyncio.run(attacks(settings, user_id, theirs))
    logged = capfd.readouterr().err  # the server's stderr, which MCP clients keep in a log
    for words in ("etc/passwd", "Oslo", "batch too large", "Error executing tool"):
        assert words not in logged, logged[-2000:]
    answered = ("mine", "huge_recall", "forget_conversation", "nul_conversation")
    refused = {name: result for name, result in results.items() if name not in answered}
    for name, result in refused.items():
        assert result.is_error, (name, result.content)
        assert result.content[0].text, name  # a message the model can read
    assert "no memory" in refused["history"].content[0].text
    assert "at most 200 characters" in refused["long_id"].content[0].text
    assert "limit must be between 1 and" in refused["huge_page"].content[0].text
    assert "offset must not be negative" in refused["negative_offset"].content[0].text
    assert "transcript too long (4000000 characters" in refused["huge_turn"].content[0].text
    # forgetting a conversation this user does not have removes nothing (as a second forget)
    report = payload(results["forget_conversation"])
    assert report["user_id"] == user_id
    assert {k: v for k, v in report.items() if isinstance(v, int) and v} == {}
    # a NUL id is an id like any other: a conversation with no reads, nothing reinforced
    assert payload(results["nul_conversation"]) == {"conversation_id": "\x00", "reinforced": 0}
    recalled = payload(results["huge_recall"])  # a pasted document costs a paragraph's recall
    assert "my boss Sarah moved the deadline again" in recalled["context"]
    assert sorted(m["id"] for m in results["mine"]) == mine_before
    with Memory(settings) as memory:
        after = sorted((m.id, m.state, m.target) for m in memory.memories(neighbour, state="all"))
        assert after == before
        assert [e.name for e in memory.entities(neighbour, "Oslo")] == ["Oslo"]
        assert sorted(m.id for m in memory.memories(user_id, state="all")) == mine_before
        assert not memory.conversation_state(user_id, "big")["turns"]
