"""No user word in anything `pegasus serve` writes (#35, docs/privacy.md "Logs"): a real
server process, at log level DEBUG, gets a session whose every word the user chose carries a
marker (entity names, aliases, properties, relation labels, snippets, summaries, conversation
ids, message text, the user id) through every route: the proxy's three APIs (streaming and
not), /turns, /remember, commit, recall, close, the entity and memory routes (read, alias,
rename, retract, merge and undo, forget), export and import, the memory page. Then the user
forgets everything, and the process's whole output (stdout and stderr, from start to exit)
and /metrics hold no marker and not the user id."""

from __future__ import annotations

import json
import re

import httpx

from pegasus import Memory
from tests.e2e.running import pegasus_serve, wait_for
from tests.serve.extracting_upstream import ExtractingUpstream
from tests.serve.servers import serving

MARK = "qzx"  # every word below the user chose holds it; no log line could by chance
KEY = "key-words-0001"
SAID = "my mentor Qzxander teaches qzxology at Qzxford"
SUMMARY = "Qzxander and qzxology"
FACTS = [("record_entity", {"name": "Qzxander", "kind": "PERSON", "aliases": ["Qzxandy"],
                            "properties": {"qzxkey": "qzxvalue"}, "confidence": 0.9}),
         ("record_relation", {"source": "User", "relation": "HAS_QZXMENTOR",
                              "target": "Qzxander", "confidence": 0.9, "stability": "stable",
                              "cardinality": "one_to_many", "snippet": SAID}),
         ("record_conversation", {"summary": SUMMARY, "tags": ["qzxtag"]})]
BATCH = {"entities": [{"name": "Qzxbella", "kind": "PERSON", "aliases": ["Qzxbee"],
                       "properties": {"qzxrole": "qzxboss", "qzxdeep": {"qzxin": ["qzx1"]}}},
                      {"name": "Qzxcarla", "kind": "PERSON"}],
         "relations": [{"source": "User", "relation": "HAS_QZXBOSS", "target": "Qzxbella",
                        "snippet": "my boss Qzxbella runs Qzxcorp"},
                       {"source": "Qzxbella", "relation": "QZXWORKS_WITH", "target": "Qzxcarla",
                        "snippet": "Qzxbella works with Qzxcarla at Qzxcorp"}],
         "conversation": {"summary": "about Qzxbella", "tags": ["qzxwork"]}}


class MarkerUpstream(ExtractingUpstream):
    """The extraction model records the marked facts of any transcript that holds them."""

    def _calls(self, body: dict, answered: bool) -> list[tuple[str, dict]]:
        if answered or MARK not in json.dumps(body.get("messages")).lower():
            return [("finish", {})]
        return [*FACTS, ("finish", {})]


def found(text: str, user_id: str) -> list[str]:
    """The lines of `text` that hold a marker or the user id."""
    return [line for line in text.splitlines()
            if MARK in line.lower() or user_id.lower() in line.lower()]


def test_no_user_word_reaches_the_output_or_metrics_of_a_real_server(neo4j_env, settings,
                                                                     tmp_path):
    user_id = "user-qzxowner"
    upstream = MarkerUpstream()
    upstream.CHUNK_DELAY_S = 0.0
    log = tmp_path / "serve.log"
    with serving(upstream.app) as upstream_url:
        env = {**neo4j_env, "PEGASUS_API_KEYS": json.dumps({KEY: user_id}),
               "PEGASUS_UPSTREAM_BASE_URL": upstream_url + "/v1",
               "PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL": upstream_url,
               "PEGASUS_LLM_MODEL": "stub-model", "PEGASUS_LOG_LEVEL": "DEBUG",
               "PEGASUS_PROXY_MEMORY_BUDGET_S": "60", "PEGASUS_IDLE_SWEEP_S": "0.5",
               "PEGASUS_HOME": str(tmp_path / "pegasus-home")}
        with pegasus_serve(env, log) as url:
            metrics = session(url, settings, user_id)
    output = log.read_text()
    # The output was captured: the access lines of the session are in it, by route template.
    assert "POST /v1/chat/completions 200" in output
    assert "PATCH /v1/memory/entities/{entity} 200" in output
    assert "POST /v1/messages 200" in output and "POST /v1/responses 200" in output
    assert found(output, user_id) == []
    assert KEY not in output and "pegasus_session" not in output
    assert found(metrics, user_id) == []


def session(url: str, settings, user_id: str) -> str:
    """The marked session through every route, then forget everything; /metrics at the end."""
    http = httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {KEY}"})
    said = [{"role": "user", "content": SAID}]

    def ok(answer: httpx.Response, status: int = 200) -> httpx.Response:
        assert answer.status_code == status, (answer.request.url, answer.text)
        return answer

    # The proxy's three APIs, each streaming and not, each its own conversation.
    for n, stream in enumerate((False, True)):
        conversation = {"X-Pegasus-Conversation": f"qzxconv-chat-{n}"}
        ok(http.post("/v1/chat/completions", headers=conversation,
                     json={"model": "stub-model", "messages": said, "stream": stream}))
        conversation = {"X-Pegasus-Conversation": f"qzxconv-resp-{n}"}
        ok(http.post("/v1/responses", headers=conversation,
                     json={"model": "stub-model", "input": SAID, "stream": stream}))
        ok(http.post("/v1/messages", headers={"x-api-key": KEY, "Authorization": "",
                                              "X-Pegasus-Conversation": f"qzxconv-msg-{n}"},
                     json={"model": "stub-model", "max_tokens": 64, "messages": said,
                           "stream": stream, "system": "you know qzxsystem"}))
    proxied = [f"qzxconv-{api}-{n}" for api in ("chat", "resp", "msg") for n in (0, 1)]
    for conversation in proxied:
        ok(http.post(f"/v1/conversations/{conversation}/close"), 202)
    # The memory API.
    ok(http.post("/v1/memory/turns", json={"conversation_id": "qzxconv-turns",
                                           "turns": [{**said[0], "id": "qzxturn-1"}]}))
    ok(http.post("/v1/conversations/qzxconv-turns/close"), 202)
    ok(http.post("/v1/memory/remember", json={"conversation_id": "qzxconv-remember",
                                              "turns": said}))
    ok(http.post("/v1/memory/commit", json={
        "conversation_id": "qzxconv-commit", "batch": BATCH,
        "transcript": [{"role": "user", "content": "my boss Qzxbella runs Qzxcorp. "
                                                   "Qzxbella works with Qzxcarla at Qzxcorp"}]}))
    ok(http.post("/v1/memory/recall", json={"text": "what does Qzxbella teach at Qzxford?",
                                            "conversation_id": "qzxconv-commit"}))
    ok(http.post("/v1/memory/close", json={"conversation_id": "qzxconv-commit"}))
    ok(http.post("/v1/memory/consolidate", json={}))
    with Memory(settings) as memory:  # every close ran (they extract the marked facts)
        for conversation in [*proxied, "qzxconv-turns"]:
            assert wait_for(lambda c=conversation: memory.conversation_state(
                user_id, c)["status"] == "closed"), conversation
    ok(http.get("/v1/memory/entities/Qzxander"))
    ok(http.get("/v1/memory/entities/Qzxnobody"), 404)
    ok(http.get("/v1/memory/merges"))
    edges = ok(http.get("/v1/memory/edges", params={"about": "Qzxbella", "state": "all"}))
    edge = edges.json()["memories"][0]["id"]
    ok(http.get(f"/v1/memory/edges/{edge}"))
    ok(http.post(f"/v1/memory/edges/{edge}/retract", json={}))
    ok(http.post(f"/v1/memory/edges/{edge}/retract", json={"undo": True}))
    ok(http.patch("/v1/memory/entities/Qzxbella", params={"why": "qzxquery"},
                  json={"name": "Qzxbelle", "add_aliases": ["Qzxbea"],
                        "remove_aliases": ["Qzxbee"]}))
    merged = ok(http.post("/v1/memory/entities/merge", json={"keep": "Qzxbelle",
                                                              "absorb": "Qzxcarla"}))
    ok(http.post(f"/v1/memory/merges/{merged.json()['merge_record_id']}/undo"))
    exported = ok(http.get("/v1/memory/export", params={"with_turns": "true"})).content
    assert b"Qzxbelle" in exported and b"HAS_QZXMENTOR" in exported
    page(url, user_id)
    ok(http.delete(f"/v1/memory/edges/{edge}"))
    ok(http.delete("/v1/memory/entities/Qzxander"))
    ok(http.delete("/v1/memory/conversations/qzxconv-commit"))
    ok(http.delete("/v1/memory", params={"confirm": "everything"}))
    ok(http.post("/v1/memory/import", content=exported))
    ok(http.post("/v1/memory/recall", json={"text": "Qzxbelle"}))
    ok(http.delete("/v1/memory", params={"confirm": "everything"}))
    with Memory(settings) as memory:
        assert memory.memories(user_id) == []
    return ok(http.get("/metrics")).text


def page(url: str, user_id: str) -> None:
    """The memory page, as a browser drives it: sign in, filter, search, an entity, rename."""
    browser = httpx.Client(base_url=url, timeout=120, headers={"Origin": url})
    signed = browser.post("/sign-in", data={"key": KEY}, follow_redirects=False)
    assert signed.status_code == 303, signed.text
    listed = browser.get("/memories", params={"about": "Qzxbelle"})
    assert listed.status_code == 200 and "Qzxbelle" in listed.text
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', listed.text).group(1)
    searched = browser.post("/search", data={"q": "Qzxbelle at Qzxcorp", "csrf": csrf})
    assert searched.status_code == 200 and "Qzxbelle" in searched.text
    # the list links each memory; the memory's page links its ends
    story = browser.get(re.search(r'href="(/memories/[^"/]+)"', listed.text).group(1))
    entity = re.search(r'href="/entities/([^"]+)"', story.text).group(1)
    assert browser.get(f"/entities/{entity}").status_code == 200
    renamed = browser.post(f"/entities/{entity}/rename",
                           data={"name": "Qzxbellissima", "csrf": csrf})
    assert renamed.status_code == 200, renamed.text
    assert browser.get("/export").status_code == 200
    # A WebSocket upgrade (found by the outside attack): uvicorn logged its path at INFO, and
    # at DEBUG its headers, key and session cookie included. serve speaks no WebSocket, so
    # it is a plain request, logged by its route template like every other.
    upgraded = browser.get("/entities/Qzxupgrade", params={"q": "qzxsecret"}, headers={
        "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Authorization": f"Bearer {KEY}"})
    assert upgraded.status_code == 404
