"""The memory's HTTP API: each route's values, tenant scoping, errors, and a schemathesis fuzz."""

from __future__ import annotations

import itertools
import json

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from schemathesis.specs.openapi.checks import positive_data_acceptance

from pegasus import Memory
from pegasus.serve.app import create_app
from tests.helpers import BAD_BATCHES, call, rel, snapshot

KEY_A, KEY_B = "key-api-alice-1", "key-api-bruno-2"
AT = "2026-03-01T09:00:00Z"
BATCH = {
    "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"],
                  "properties": {"role": "manager"}},
                 {"name": "Acme", "kind": "ORG"}],
    "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline again"),
                  rel("User", "WORKS_AT", "Acme", "I have been at Acme for three years")],
}


@pytest.fixture
def api(settings, user_id):
    configured = settings.model_copy(update={"api_keys": {KEY_A: f"{user_id}-a",
                                                          KEY_B: f"{user_id}-b"}})
    with Memory(configured) as memory:
        yield TestClient(create_app(memory)), memory, f"{user_id}-a", f"{user_id}-b"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_commit_recall_close_consolidate_round_trip(api):
    client, memory, alice, _ = api
    committed = client.post("/v1/memory/commit", headers=auth(KEY_A),
                            json={"conversation_id": "c1", "batch": BATCH, "at": AT})
    assert committed.status_code == 200
    assert sorted(committed.json()["edges_created"]) == ["User -[HAS_BOSS]-> Sarah",
                                                         "User -[WORKS_AT]-> Acme"]
    recalled = client.post("/v1/memory/recall", headers=auth(KEY_A),
                           json={"text": "my manager Sarah again", "conversation_id": "c2",
                                 "at": "2026-03-02T09:00:00Z"}).json()
    assert "my boss Sarah moved the deadline again" in recalled["context"]
    assert '- 2026-03-01: "my boss Sarah moved the deadline again"' in recalled["text"]
    assert {n["name"] for n in recalled["nodes"]} >= {"Sarah"}
    shown = len(recalled["memory"]) + len(recalled["context"])
    closed = client.post("/v1/memory/close", headers=auth(KEY_A),
                         json={"conversation_id": "c2", "at": "2026-03-02T10:00:00Z"}).json()
    assert closed == {"conversation_id": "c2", "reinforced": shown}
    decay = client.post("/v1/memory/consolidate", headers=auth(KEY_A),
                        json={"at": "2026-04-01T00:00:00Z"}).json()
    assert decay["edges"] == 2  # this user's edges only
    strengths = {e.relation: e.strength for e in memory.edges(alice)}
    assert 0 < strengths["WORKS_AT"] < 100


@pytest.fixture
def committed(api):
    """The API with BATCH committed for the first key's user."""
    client = api[0]
    response = client.post("/v1/memory/commit", headers=auth(KEY_A),
                           json={"conversation_id": "c1", "batch": BATCH, "at": AT})
    assert response.status_code == 200
    return api


def test_entities_and_merges(committed):
    client = committed[0]
    found = client.get("/v1/memory/entities/sarah k", headers=auth(KEY_A))
    assert found.status_code == 200
    [sarah] = found.json()
    assert (sarah["name"], sarah["kind"], sarah["aliases"]) == ("Sarah", "PERSON", ["Sarah K"])
    assert sarah["properties"] == {"role": "manager"}
    assert sarah["edges"][0]["relation"] == "HAS_BOSS"
    assert client.get("/v1/memory/merges", headers=auth(KEY_A)).json() == []


def test_another_users_key_sees_nothing_of_this_user(committed):
    client = committed[0]
    missing = client.get("/v1/memory/entities/Sarah", headers=auth(KEY_B))
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found_error"
    recalled = client.post("/v1/memory/recall", headers=auth(KEY_B),
                           json={"text": "Sarah at Acme"}).json()
    assert recalled == {"memory": [], "context": [], "nodes": [], "text": ""}


def test_see_correct_and_forget_over_http(committed):
    client, memory, alice, _ = committed
    page = client.get("/v1/memory/edges", headers=auth(KEY_A), params={"limit": 1})
    assert page.status_code == 200
    first = page.json()
    assert len(first["memories"]) == 1 and first["next_offset"] == 1
    rest = client.get("/v1/memory/edges", headers=auth(KEY_A),
                      params={"limit": 1, "offset": 1}).json()
    assert rest["next_offset"] == 1 + 1
    assert client.get("/v1/memory/edges", headers=auth(KEY_A),
                      params={"offset": 2}).json() == {"memories": [], "next_offset": None}
    about = client.get("/v1/memory/edges", headers=auth(KEY_A), params={"about": "Sarah K"})
    [boss] = about.json()["memories"]
    assert (boss["relation"], boss["target"], boss["state"]) == ("HAS_BOSS", "Sarah", "current")
    story = client.get(f"/v1/memory/edges/{boss['id']}", headers=auth(KEY_A)).json()
    assert story["sightings"][0] == {"conversation_id": "c1", "at": "2026-03-01T09:00:00+00:00",
                                     "snippet": "my boss Sarah moved the deadline again",
                                     "evidence": "my boss Sarah moved the deadline again",
                                     "confidence": 0.5}
    retracted = client.post(f"/v1/memory/edges/{boss['id']}/retract", headers=auth(KEY_A),
                            json={})
    assert retracted.json()["action"] == "retracted"
    assert client.get("/v1/memory/edges", headers=auth(KEY_A),
                      params={"state": "retracted"}).json()["memories"][0]["id"] == boss["id"]
    renamed = client.patch("/v1/memory/entities/Acme", headers=auth(KEY_A),
                           json={"name": "Acme Corp", "add_aliases": ["ACME"]}).json()
    assert (renamed["name"], renamed["aliases"]) == ("Acme Corp", ["ACME"])
    merged = client.post("/v1/memory/entities/merge", headers=auth(KEY_A),
                         json={"keep": "Acme Corp", "absorb": "Sarah"}).json()
    assert merged["action"] == "merged" and "Sarah" in merged["aliases"]
    undone = client.post(f"/v1/memory/merges/{merged['merge_record_id']}/undo",
                         headers=auth(KEY_A))
    assert undone.json()["restored"] == "Sarah"
    assert client.post(f"/v1/memory/merges/{merged['merge_record_id']}/undo",
                       headers=auth(KEY_B)).status_code == 404
    forgot = client.delete("/v1/memory/entities/acme", headers=auth(KEY_A)).json()
    assert (forgot["scope"], forgot["memories"], forgot["entities"]) == ("entity", 1, 1)
    gone = client.delete(f"/v1/memory/edges/{boss['id']}", headers=auth(KEY_A)).json()
    assert gone["memories"] == 1
    again = client.delete(f"/v1/memory/edges/{boss['id']}", headers=auth(KEY_A))
    assert again.status_code == 404
    conversation = client.delete("/v1/memory/conversations/c1", headers=auth(KEY_A)).json()
    assert conversation["conversations"] == 1
    refused = client.delete("/v1/memory", headers=auth(KEY_A))
    assert refused.status_code == 422 and "confirm" in refused.json()["error"]["message"]
    everything = client.delete("/v1/memory", headers=auth(KEY_A),
                               params={"confirm": "everything"})
    assert everything.status_code == 200 and everything.json()["scope"] == "everything"
    assert memory.memories(alice, state="all") == []


def test_correct_a_memory_in_place_over_http_and_undo_it(committed):
    client, memory, alice, _ = committed
    [boss] = memory.memories(alice, about="Sarah")
    fixed = client.patch(f"/v1/memory/edges/{boss.id}", headers=auth(KEY_A),
                         json={"other_end": "Tom", "words": "my boss is Tom, not Sarah"})
    assert fixed.status_code == 200, fixed.text
    assert fixed.json()["action"] == "corrected" and fixed.json()["corrected_id"] == boss.id
    recalled = client.post("/v1/memory/recall", headers=auth(KEY_A),
                           json={"text": "who is my boss"})
    assert recalled.status_code == 200, recalled.text
    assert "my boss is Tom, not Sarah" in recalled.json()["text"]
    assert "moved the deadline" not in recalled.json()["text"]
    old = client.get(f"/v1/memory/edges/{boss.id}", headers=auth(KEY_A)).json()
    assert old["memory"]["corrected_via"] == "api" and old["memory"]["state"] == "superseded"
    assert old["superseded_by_line"] == "User -[HAS_BOSS]-> Tom"
    nothing = client.patch(f"/v1/memory/edges/{fixed.json()['memory_id']}",
                           headers=auth(KEY_A), json={})
    assert nothing.status_code == 400 and "changes nothing" in nothing.json()["error"]["message"]
    undone = client.post(f"/v1/memory/edges/{fixed.json()['memory_id']}/undo-correction",
                         headers=auth(KEY_A), json={})
    assert undone.json() == {**undone.json(), "action": "correction undone",
                             "memory_id": boss.id}
    assert memory.memories(alice, about="Sarah")[0].state == "current"


def test_export_and_import_over_http(committed):
    client, memory, alice, bruno = committed
    exported = client.get("/v1/memory/export", headers=auth(KEY_A))
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-ndjson"
    body = exported.text
    assert [json.loads(line)["type"] for line in body.splitlines()][:1] == ["header"]
    # Ids are kept: while Alice holds them, her file goes into no other partition (#35); a line
    # naming another partition is refused whatever it names. One line, JSON, nothing written.
    taken = client.post("/v1/memory/import", headers=auth(KEY_B), content=body)
    assert taken.status_code == 422
    assert taken.json()["error"]["message"].startswith(
        "line 2 (entity): id: another user's memory holds this id")
    lines = body.splitlines()
    planted = "\n".join([lines[0], json.dumps({**json.loads(lines[1]), "user_id": alice}),
                         *lines[2:]])
    refused = client.post("/v1/memory/import", headers=auth(KEY_B), content=planted)
    assert refused.status_code == 422
    assert refused.json()["error"]["message"].startswith("line 2 (entity): user_id: Extra")
    assert memory.memories(bruno) == []
    assert client.delete("/v1/memory", headers=auth(KEY_A),
                         params={"confirm": "everything"}).status_code == 200
    imported = client.post("/v1/memory/import", headers=auth(KEY_B), content=body)
    assert imported.status_code == 200, imported.text
    assert imported.json()["source_user_id"] == alice
    assert {m.relation for m in memory.memories(bruno)} == {"HAS_BOSS", "WORKS_AT"}
    conflict = client.post("/v1/memory/import", headers=auth(KEY_B), content=body)
    assert conflict.status_code == 409 and "already has memories" in conflict.text
    bad = client.post("/v1/memory/import", headers=auth(KEY_B), params={"replace": True},
                      content=body.replace('"version":1', '"version":7'))
    assert bad.status_code == 422
    assert bad.json()["error"]["message"].startswith("line 1: version: format version 7")
    assert len(memory.memories(bruno)) == 2  # a refused file forgets nothing, even with replace
    assert client.get("/v1/memory/export", headers=auth("nobody-key-000")).status_code == 401


def test_a_name_meaning_two_entities_is_a_409_listing_them(api):
    client, memory, alice, _ = api
    memory.commit(alice, "c1", {"entities": [{"name": "Jordan", "kind": "PERSON"},
                                             {"name": "Jordan", "kind": "PLACE"}]})
    answer = client.delete("/v1/memory/entities/Jordan", headers=auth(KEY_A))
    assert answer.status_code == 409 and answer.json()["error"]["type"] == "ambiguous_error"
    assert "PERSON" in answer.json()["error"]["message"]
    assert len(memory.memories(alice, state="all")) == 0  # no memories, both entities stay
    assert answer.json()["error"]["message"].count("Jordan, ") == 2


def test_another_users_key_cannot_list_read_correct_or_forget(committed, raw_driver):
    """Every ownership route answers 404 for another user's memory, never 403: a key cannot
    even learn that an id exists elsewhere."""
    client, memory, alice, _ = committed
    [boss] = memory.memories(alice, about="Sarah")
    before = snapshot(raw_driver)
    probes = [
        ("get", f"/v1/memory/edges/{boss.id}", None),
        ("post", f"/v1/memory/edges/{boss.id}/retract", {}),
        ("patch", f"/v1/memory/edges/{boss.id}", {"words": "my boss is Mallory"}),
        ("post", f"/v1/memory/edges/{boss.id}/undo-correction", {}),
        ("delete", f"/v1/memory/edges/{boss.id}", None),
        ("patch", "/v1/memory/entities/Sarah", {"name": "Sara"}),
        ("post", "/v1/memory/entities/merge", {"keep": "Sarah", "absorb": "Acme"}),
        ("delete", "/v1/memory/entities/Sarah", None),
        ("get", "/v1/memory/edges?about=Sarah", None),
    ]
    for method, path, body in probes:
        kwargs = {"json": body} if body is not None else {}
        answer = client.request(method.upper(), path, headers=auth(KEY_B), **kwargs)
        assert answer.status_code == 404, (method, path, answer.text)
    assert client.get("/v1/memory/edges", headers=auth(KEY_B)).json()["memories"] == []
    # A conversation or everything of "another user" is simply this key's own: nothing else.
    assert client.delete("/v1/memory/conversations/c1", headers=auth(KEY_B)).json()[
        "conversations"] == 0
    assert client.delete("/v1/memory", headers=auth(KEY_B),
                         params={"confirm": "everything"}).json()["memories"] == 0
    after = snapshot(raw_driver)
    assert [n for n in after[0] if alice in n] == [n for n in before[0] if alice in n]
    assert after[1] == before[1]


def test_errors_say_what_is_wrong(api):
    client, _, _, _ = api
    assert client.post("/v1/memory/recall", json={"text": "hi"}).status_code == 401
    assert client.post("/v1/memory/recall", headers=auth("key-unknown-000"),
                       json={"text": "hi"}).status_code == 401
    bad = client.post("/v1/memory/commit", headers=auth(KEY_A),
                      json={"conversation_id": "c1", "batch": {"entities": "nope"}})
    assert bad.status_code == 422 and "batch.entities" in bad.json()["error"]["message"]
    first = client.post("/v1/memory/commit", headers=auth(KEY_A),
                        json={"conversation_id": "c1", "batch": BATCH})
    assert first.status_code == 200
    other = {"entities": [], "relations": [rel("User", "LIKES", "Acme", "I like Acme")]}
    conflict = client.post("/v1/memory/commit", headers=auth(KEY_A),
                           json={"conversation_id": "c1", "batch": other})
    assert conflict.status_code == 409
    no_llm = client.post("/v1/memory/remember", headers=auth(KEY_A),
                         json={"conversation_id": "c9",
                               "turns": [{"role": "user", "content": "hello"}]})
    assert no_llm.status_code == 503 and "no LLM configured" in no_llm.json()["error"]["message"]
    proxy_only = client.post("/v1/chat/completions", headers=auth(KEY_A),
                             json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert proxy_only.status_code == 503
    assert "PEGASUS_UPSTREAM_BASE_URL" in proxy_only.json()["error"]["message"]


@pytest.mark.parametrize("batch, path", BAD_BATCHES)
def test_a_bad_batch_is_a_422_naming_the_field_and_writes_nothing(api, raw_driver, batch, path):
    client, _, user_a, _ = api
    before = snapshot(raw_driver)
    # Sent as Python's json writes it: NaN and Infinity as bare words, as some clients do.
    answer = client.post("/v1/memory/commit",
                         headers={**auth(KEY_A), "Content-Type": "application/json"},
                         content=json.dumps({"conversation_id": "bad", "batch": batch}))
    assert answer.status_code == 422, answer.text
    message = answer.json()["error"]["message"]
    assert message.startswith(f"body.batch.{path}: ") and "\n" not in message
    assert snapshot(raw_driver) == before


# Requests the fuzz below once answered with a 500; each stays pinned here.
FOUND_BY_FUZZING = [
    # The decay pass at an instant in year 1: the turn retention's start fell before year 1.
    pytest.param({"at": "0001-01-01T00:00:00Z"}, 200, id="decay-in-year-1"),
    pytest.param({"conversation_id": "c1", "batch": {"entities": [{"name": "N", "properties": {
        "p": -228402480720848961404928}}]}}, 422, id="int-outside-64-bits"),
    pytest.param({"conversation_id": "c1", "batch": {}, "at": "0001-01-01T00:00:00+01:00"},
                 400, id="year-1-with-offset"),
    # A schema-valid id with a character Python's strip() removes was refused: now it is kept.
    pytest.param({"conversation_id": "c\x1c", "batch": {}}, 200, id="id-python-strips"),
]


@pytest.mark.parametrize("body, status", FOUND_BY_FUZZING)
def test_requests_the_fuzz_found_get_a_clear_answer(api, body, status):
    client, _, _, _ = api
    path = "/v1/memory/commit" if "conversation_id" in body else "/v1/memory/consolidate"
    answer = client.post(path, headers=auth(KEY_A), json=body)
    assert answer.status_code == status, answer.text
    if status == 200 and path == "/v1/memory/commit":
        assert answer.json()["conversation_id"] == body["conversation_id"]
    elif status == 200:
        assert answer.json()["turns_purged"] == 0
    else:
        assert answer.json()["error"]["type"] == "invalid_request_error"


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx, value) -> bytes:
    """An import body as the fuzz makes it: whatever text it generated, sent as it is."""
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else \
        json.dumps(value).encode()


def test_fuzzing_finds_no_server_error(settings):
    """Every generated request to the memory routes gets a documented answer that matches its
    schema, never a 500 (schemathesis, driven per operation from one test).

    Not checked: that every schema-valid request succeeds. Some rules cannot be said in JSON
    Schema (an instant before year 1 in UTC or past the server's clock, a batch whose relations
    name nothing known, a conversation id committed before with other content) and answer 4xx
    by design."""
    configured = settings.model_copy(update={"api_keys": {KEY_A: "fuzz-user"}})
    # An extractor that records nothing and finishes, every time: /remember runs for real.
    finish = AIMessage(content="", tool_calls=[call("finish", 1)])
    llm = GenericFakeChatModel(messages=itertools.repeat(finish))
    with Memory(configured, llm=llm) as memory:
        schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(memory))
        operations = [r.ok() for r in schema.include(path_regex="^/v1/memory")
                      .get_all_operations()]
        assert len(operations) == 23  # the import-history route too
        for operation in operations:

            @given(case=operation.as_strategy())
            @hypothesis_settings(max_examples=40, deadline=None, database=None,
                                 derandomize=True, suppress_health_check=list(HealthCheck))
            def fuzz(case):
                case.call_and_validate(headers=auth(KEY_A), excluded_checks=[
                    positive_data_acceptance])

            fuzz()


def test_a_chat_message_with_no_known_role_is_the_clients_error(api):
    """Found by benchmarks.fuzz: role "" was forwarded and reported as the upstream's 502."""
    client, _, _, _ = api
    answer = client.post("/v1/chat/completions", headers=auth(KEY_A),
                         json={"model": "m", "messages": [{"role": ""}]})
    assert answer.status_code == 422
    assert answer.json()["error"]["message"].startswith("body.messages[0].role: ")


def test_closing_a_conversation_with_a_blank_id_is_refused(api):
    """Found by benchmarks.fuzz: a blank id was accepted (202) and its background close failed."""
    client, _, _, _ = api
    answer = client.post("/v1/conversations/%20/close", headers=auth(KEY_A))
    assert answer.status_code == 422
    assert answer.json()["error"]["message"].startswith("path.conversation_id: ")



def test_the_api_reuses_the_facade_models(committed):
    """The HTTP shapes are the facade's own (pegasus.models.views), not copies of them."""
    from pegasus.models import views as models

    client = committed[0]
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model in (models.EntityView, models.EdgeLine, models.MergeRecord):
        assert set(schemas[model.__name__]["properties"]) == set(model.model_fields)
    assert not {"EdgeOut", "EntityOut", "MergeOut"} & set(schemas)
