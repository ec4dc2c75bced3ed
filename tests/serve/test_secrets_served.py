"""Secrets never kept (design §15) through `pegasus serve`: the HTTP API's commit, turns and
correction routes store the marker, the commit report says what was removed, the memory page
shows the marker where the secret was, and the other key's user sees nothing of it.

Every key here is made up for the test (random characters in a provider's shape)."""

from __future__ import annotations

import json
import random
import re
import string

import pytest
from fastapi.testclient import TestClient

from pegasus import Memory
from pegasus.screen import CARD, PASSWORD, TOKEN, marker
from pegasus.serve.app import create_app
from tests.helpers import rel, snapshot

KEY_A, KEY_B = "key-secrets-alice-1", "key-secrets-bruno-2"
AT = "2026-03-01T09:00:00Z"
_RANDOM = random.Random(4747)
GITHUB = "ghp_" + "".join(_RANDOM.choice(string.ascii_letters + string.digits)
                          for _ in range(36))
PASSWORD_SAID = "Pl4typ^s-77"


@pytest.fixture
def served(settings, user_id):
    configured = settings.model_copy(update={"api_keys": {KEY_A: f"{user_id}-a",
                                                          KEY_B: f"{user_id}-b"}})
    with Memory(configured) as memory, TestClient(create_app(memory),
                                                  base_url="http://testserver") as client:
        yield client, memory, f"{user_id}-a", f"{user_id}-b"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def sign_in(client: TestClient, key: str) -> str:
    client.post("/sign-in", data={"key": key}, follow_redirects=False)
    return re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/memories").text).group(1)


def test_the_api_and_the_page_keep_and_show_only_the_marker(served, raw_driver):
    client, memory, alice, bruno = served
    committed = client.post("/v1/memory/commit", headers=auth(KEY_A), json={
        "conversation_id": "c1", "at": AT,
        "batch": {"entities": [{"name": "Laptop", "kind": "THING"}],
                  "relations": [rel("User", "OWNS", "Laptop",
                                    f"my laptop password is {PASSWORD_SAID}")]},
        "transcript": [{"role": "user", "content": f"my laptop password is {PASSWORD_SAID}"}]})
    assert committed.status_code == 200
    report = committed.json()
    assert report["secrets_removed"] == {PASSWORD: 1}
    assert report["edges_created"] == ["User -[OWNS]-> Laptop"]
    assert PASSWORD_SAID not in committed.text
    turns = client.post("/v1/memory/turns", headers=auth(KEY_A), json={
        "conversation_id": "c2", "at": AT,
        "turns": [{"role": "user", "content": f"use the token {GITHUB} for the deploy"}]})
    assert turns.status_code == 200
    recorded = [json.loads(t) for t in memory.conversation_state(alice, "c2")["turns"]]
    assert recorded == [{"role": "user", "content": f"use the token {marker(TOKEN)} for the "
                                                    "deploy"}]
    [laptop] = memory.memories(alice, about="Laptop")
    renamed = client.patch(f"/v1/memory/entities/{laptop.target_id}", headers=auth(KEY_A),
                           json={"name": f"Laptop {GITHUB}"})
    assert renamed.status_code == 200
    assert renamed.json()["name"] == f"Laptop {marker(TOKEN)}" and GITHUB not in renamed.text
    # the page shows the marker as the memory's own words, never the secret
    sign_in(client, KEY_A)
    for path in ["/memories", f"/memories/{laptop.id}", f"/entities/{laptop.target_id}"]:
        html = client.get(path).text
        assert PASSWORD_SAID not in html and GITHUB not in html, path
        assert marker(PASSWORD) in html, path
    exported = client.get("/v1/memory/export", headers=auth(KEY_A),
                          params={"with_turns": "true"}).text
    assert marker(TOKEN) in exported and GITHUB not in exported
    assert PASSWORD_SAID not in exported
    nodes, rels = snapshot(raw_driver)
    stored = "\n".join([*nodes, *rels])
    assert PASSWORD_SAID not in stored and GITHUB not in stored
    # the other key's user has none of it, and the marker is no word of theirs
    other = client.get("/v1/memory/edges", headers=auth(KEY_B))
    assert other.status_code == 200 and "Laptop" not in other.text
    assert "secret removed" not in other.text


def test_the_attackers_routes_keep_no_secret(served, raw_driver):
    # PATCH /v1/memory/edges/{id} {"other_end": "Pc ghp_…"} made an entity named by the token;
    # POST /v1/memory/turns kept a password said "password hunter2abc" and a token-holding id.
    client, memory, alice, _ = served
    client.post("/v1/memory/commit", headers=auth(KEY_A), json={
        "conversation_id": "c1", "at": AT,
        "batch": {"entities": [{"name": "Laptop", "kind": "THING"}],
                  "relations": [rel("User", "OWNS", "Laptop", "I own a laptop")]}})
    [owns] = memory.memories(alice, about="Laptop")
    patched = client.patch(f"/v1/memory/edges/{owns.id}", headers=auth(KEY_A),
                           json={"other_end": f"Pc {GITHUB}"})
    assert patched.status_code == 200 and GITHUB not in patched.text
    assert any("1 secret removed" in note for note in patched.json()["notes"])
    turns = client.post("/v1/memory/turns", headers=auth(KEY_A), json={
        "conversation_id": "c2", "at": AT,
        "turns": [{"role": "user", "content": "password hunter2abc, card 4111.1111.1111.1111"}]})
    assert turns.status_code == 200
    recorded = [json.loads(t) for t in memory.conversation_state(alice, "c2")["turns"]]
    assert recorded == [{"role": "user", "content": f"password {marker(PASSWORD)}, card "
                                                    f"{marker(CARD)}"}]
    refused = client.post("/v1/memory/turns", headers=auth(KEY_A), json={
        "conversation_id": f"id-{GITHUB}", "at": AT,
        "turns": [{"role": "user", "content": "hi"}]})
    assert refused.status_code == 422 and GITHUB not in refused.text
    assert "holds what looks like a secret" in refused.text
    stored = "\n".join(snapshot(raw_driver)[0] + snapshot(raw_driver)[1])
    assert GITHUB not in stored and "hunter2abc" not in stored and "4111.1111" not in stored
