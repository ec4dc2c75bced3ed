"""Who sets the clock (design §6, "Who sets the clock"): a client's `at` on the HTTP API and MCP
lies at most max_clock_skew_s past the server's clock (422 beyond, nothing written), and no
reinforcement, whoever dates it, moves a memory's touched_at backwards."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from mcp.client import Client

from pegasus import Memory
from pegasus.clock import client_instant, parse_instant
from pegasus.errors import InvalidExportError, InvalidInstantError
from pegasus.serve.app import create_app
from tests.helpers import rel
from tests.serve.test_mcp import server

KEY = "key-clock-0001"
BATCH = {"entities": [{"name": "Sarah", "kind": "PERSON"}],
         "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline")]}
FAR = "9999-12-31T00:00:00Z"
YEAR_ONE = "0001-01-01T00:00:00Z"


def bodies(memory_id: str) -> dict[tuple[str, str], dict]:
    """A valid body for every route that takes an `at`, with the far future as its `at`."""
    return {
        ("post", "/v1/memory/recall"): {"text": "Sarah", "conversation_id": "r1"},
        ("post", "/v1/memory/commit"): {"conversation_id": "c2", "batch": BATCH},
        ("post", "/v1/memory/remember"): {"conversation_id": "c3",
                                          "turns": [{"role": "user", "content": "hi"}]},
        ("post", "/v1/memory/turns"): {"conversation_id": "t1",
                                       "turns": [{"role": "user", "content": "hi"}]},
        ("post", "/v1/memory/close"): {"conversation_id": "r1"},
        ("post", "/v1/memory/consolidate"): {},
        ("post", f"/v1/memory/edges/{memory_id}/retract"): {},
        ("patch", f"/v1/memory/edges/{memory_id}"): {"words": "my boss is Sarah Kim"},
        ("post", f"/v1/memory/edges/{memory_id}/undo-correction"): {},
        ("patch", "/v1/memory/entities/Sarah"): {"add_aliases": ["S"]},
        ("post", "/v1/memory/entities/merge"): {"keep": "Sarah", "absorb": "User"},
    }


@pytest.fixture
def api(settings, user_id):
    configured = settings.model_copy(update={"api_keys": {KEY: user_id}})
    with Memory(configured) as memory:
        memory.commit(user_id, "c1", BATCH, at=datetime.now(UTC) - timedelta(days=10))
        yield TestClient(create_app(memory)), memory


def test_every_route_that_takes_an_at_refuses_the_far_future(api, user_id):
    client, memory = api
    [edge] = memory.memories(user_id)
    routes = bodies(edge.id)
    # every body with an `at` in the API's schema is tried here: a new one fails this line
    schema = client.get("/openapi.json").json()
    with_at = {(method, path) for path, methods in schema["paths"].items()
               for method, op in methods.items()
               if "at" in schema["components"]["schemas"].get(
                   op.get("requestBody", {}).get("content", {}).get("application/json", {})
                   .get("schema", {}).get("$ref", "/").rsplit("/", 1)[-1], {})
               .get("properties", {})}
    assert {(m, p.replace(edge.id, "{memory_id}").replace("/Sarah", "/{entity}"))
            for m, p in routes} == with_at
    def stored():
        return [m.model_dump(exclude={"strength_now"})
                for m in memory.memories(user_id, state="all")]

    before = stored()
    for (method, path), body in routes.items():
        answer = client.request(method, path, json={**body, "at": FAR},
                                headers={"Authorization": f"Bearer {KEY}"})
        assert answer.status_code == 422, (path, answer.text)
        message = answer.json()["error"]["message"]
        assert "9999-12-31T00:00:00+00:00 lies in the future" in message, path
        assert "max_clock_skew_s" in message
    assert stored() == before  # nothing written
    assert not memory.conversation_state(user_id, "t1")["turns"]


def test_a_turn_dated_9999_is_refused_and_one_within_the_skew_recorded(api, user_id):
    client, memory = api
    auth = {"Authorization": f"Bearer {KEY}"}
    turn = {"conversation_id": "t9", "turns": [{"role": "user", "content": "hello there"}]}
    refused = client.post("/v1/memory/turns", json={**turn, "at": FAR}, headers=auth)
    assert refused.status_code == 422
    soon = (datetime.now(UTC) + timedelta(seconds=60)).isoformat()
    accepted = client.post("/v1/memory/turns", json={**turn, "at": soon}, headers=auth)
    assert accepted.status_code == 200
    assert accepted.json()["turns"] == 1
    late = (datetime.now(UTC) + timedelta(seconds=600)).isoformat()
    assert client.post("/v1/memory/turns", json={**turn, "at": late},
                       headers=auth).status_code == 422


def test_a_close_dated_year_one_cannot_fade_what_it_read(api, user_id):
    client, memory = api
    auth = {"Authorization": f"Bearer {KEY}"}
    [before] = memory.memories(user_id)
    recalled = client.post("/v1/memory/recall", headers=auth,
                           json={"text": "what did my boss Sarah do", "conversation_id": "r1"})
    assert "my boss Sarah moved the deadline" in recalled.json()["context"], recalled.text
    closed = client.post("/v1/memory/close", headers=auth,
                         json={"conversation_id": "r1", "at": YEAR_ONE})
    assert closed.json() == {"conversation_id": "r1", "reinforced": 1}
    [after] = memory.memories(user_id)
    assert after.touched_at == before.touched_at  # not year 1: the later instant is kept
    assert after.strength == 100.0
    report = memory.consolidate(user_id=user_id)
    assert report.edges == 1
    [decayed] = memory.memories(user_id)
    assert decayed.state == "current" and decayed.strength > 50


def test_a_replay_through_the_library_never_moves_touched_at_back(settings, user_id):
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", BATCH, at=parse_instant("2026-03-10T00:00:00Z"))
        memory.commit(user_id, "c2", BATCH, at=parse_instant("2026-03-01T00:00:00Z"))
        [edge] = memory.memories(user_id)
        assert edge.touched_at.startswith("2026-03-10")
        memory.commit(user_id, "c3", BATCH, at=parse_instant("2026-03-20T00:00:00Z"))
        [edge] = memory.memories(user_id)
        assert edge.touched_at.startswith("2026-03-20")


def test_the_bound_itself():
    now = datetime.now(UTC)
    assert client_instant(None, 300) is None
    assert client_instant(now + timedelta(seconds=290), 300) == now + timedelta(seconds=290)
    past = datetime(1, 1, 1, tzinfo=UTC)
    assert client_instant(past, 300) == past  # the past is the client's (a replay)
    naive = datetime(2020, 1, 1)
    assert client_instant(naive, 0) == naive.replace(tzinfo=UTC)
    with pytest.raises(InvalidInstantError, match="at most 0 s past its own clock"):
        client_instant(now + timedelta(seconds=5), 0)


async def mcp_future(settings, user: str):
    async with Client(server(settings, user), read_timeout_seconds=120) as client:
        commit = await client.call_tool("commit", {"conversation_id": "m1", "batch": BATCH,
                                                   "at_time": FAR})
        close = await client.call_tool("close_conversation", {"conversation_id": "m1",
                                                              "at_time": FAR})
        return commit, close


def test_mcp_bounds_at_time_as_the_api_does(settings, user_id):
    commit, close = asyncio.run(mcp_future(settings, user_id))
    for result in (commit, close):
        assert result.is_error
        assert "lies in the future" in result.content[0].text
    with Memory(settings) as memory:
        assert memory.memories(user_id, state="all") == []


def test_an_import_file_cannot_date_a_memory_in_the_future(settings, user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", BATCH)
        [before] = memory.memories(user_id)
        records = [json.loads(line) for line in memory.export(user_id)]
        [edge] = [r for r in records if r["type"] == "memory"]
        edge["touched_at"] = FAR
        path = tmp_path / "future.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        with pytest.raises(InvalidExportError, match=r"\(memory\): touched_at: .*9999-12-31.* "
                                                     r"lies in the future"):
            memory.import_memory(user_id, path, replace=True)
        [kept] = memory.memories(user_id)
        assert kept.touched_at == before.touched_at  # nothing written
        edge["touched_at"] = "2020-01-01T00:00:00Z"  # the past is a file's own
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        assert memory.import_memory(user_id, path, replace=True).memories == 1
        [imported] = memory.memories(user_id)
        assert imported.touched_at.startswith("2020-01-01")


@pytest.mark.parametrize("record, field", [
    ("memory", "said_at"), ("memory", "created_at"), ("memory", "reinforced_at"),
    ("memory", "sightings"), ("entity", "created_at"), ("entity", "updated_at"),
    ("conversation", "closed_at"), ("conversation", "started_at"), ("header", "exported_at")])
def test_every_date_a_file_says_happened_is_refused_in_the_future(settings, user_id, tmp_path,
                                                                   record, field):
    """Outside attack: only touched_at was bounded; a said_at of 9999 was imported and quoted
    as "9999-12-31". A memory's expires_at alone may lie ahead (it ends then)."""
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", BATCH)
        records = [json.loads(line) for line in memory.export(user_id)]
        [line] = [r for r in records if r["type"] == record][:1]
        line[field] = ([FAR] if field == "reinforced_at" else
                       [{"conversation_id": "c1", "at": FAR}] if field == "sightings" else FAR)
        path = tmp_path / "future.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        with pytest.raises(InvalidExportError, match=r"9999-12-31.* lies in the future"):
            memory.import_memory(user_id, path, replace=True)
