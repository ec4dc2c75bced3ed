"""/healthz, /readyz and /metrics of pegasus serve (no API key needed; no user named)."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from pegasus import Memory
from pegasus.serve.app import create_app
from tests.helpers import rel

KEY = "key-health-0001"


@pytest.fixture
def client(settings, user_id):
    # A generous probe: a loaded test machine can take seconds for a driver's first query.
    configured = settings.model_copy(update={"api_keys": {KEY: user_id},
                                             "health_timeout_s": 10.0})
    with Memory(configured) as memory:
        yield TestClient(create_app(memory)), memory, user_id


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_alive_and_ready_without_a_key(client):
    http, memory, _ = client
    assert http.get("/healthz").json() == {"status": "ok"}
    memory.embedder.embed(["load the model"])
    ready = http.get("/readyz")
    assert ready.status_code == 200
    # no LLM and no upstream: ready all the same, and it says what to set (#36)
    assert ready.json() == {"status": "ready", "neo4j": "ok", "migrations": "ok", "model": "ok",
                            "extraction": f"off: {memory.extraction.why}",
                            "hook_conversations": f"off: {memory.extraction.why}"}
    assert "set PEGASUS_UPSTREAM_BASE_URL" in memory.extraction.why


def test_not_ready_when_neo4j_does_not_answer(settings, user_id):
    from pegasus.operations.neo4j_local import free_port

    away = settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{free_port()}",
                                       "neo4j_retry_time_s": 0.5})
    with Memory(away) as memory:
        answer = TestClient(create_app(memory)).get("/readyz")
    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "not ready" and body["neo4j"] != "ok"
    assert body["migrations"] == "unknown"


def test_metrics_count_requests_recalls_commits_and_closes(client, raw_driver):
    http, memory, user = client
    auth = {"Authorization": f"Bearer {KEY}"}
    committed = http.post("/v1/memory/commit", headers=auth, json={
        "conversation_id": "c1", "batch": {"relations": [
            rel("User", "HAS_BOSS", "Sarah", "my boss Sarah")]}})
    assert committed.status_code == 200
    for _ in range(3):
        recalled = http.post("/v1/memory/recall", headers=auth, json={"text": "Sarah"})
        assert recalled.status_code == 200, recalled.text
    assert http.post("/v1/memory/recall", json={"text": "no key"}).status_code == 401
    raw_driver.execute_query("CREATE (:Conversation {user_id: $u, id: 'x', status: 'failed'})",
                             u=user)
    raw_driver.execute_query("CREATE (:Conversation {user_id: $u, id: 'y', status: 'closed', "
                             "awaiting_extraction: true})", u=user)
    text = http.get("/metrics").text
    got = samples(text)
    route = "/v1/memory/recall"
    assert got[("pegasus_http_requests_total", (("method", "POST"), ("route", route),
                                                ("status", "200")))] == 3
    assert got[("pegasus_http_requests_total", (("method", "POST"), ("route", route),
                                                ("status", "401")))] == 1
    assert got[("pegasus_recall_seconds_count", ())] == 3
    assert got[("pegasus_commits_total", ())] == 1
    assert got[("pegasus_closes_failed", ())] >= 1
    assert got[("pegasus_closes_awaiting_extraction", ())] >= 1
    assert user not in text and "Sarah" not in text  # no user, no words
    assert got[("pegasus_upstream_errors_total", ())] == 0


def test_an_upstream_failure_is_counted(settings, user_id):
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": "down"})

    upstream = httpx.AsyncClient(transport=httpx.MockTransport(refuse),
                                 base_url="http://upstream/v1/")
    configured = settings.model_copy(update={"api_keys": {KEY: user_id}})
    with Memory(configured) as memory, TestClient(create_app(memory, upstream)) as http:
        failed = http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                           json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert failed.status_code == 502
        assert samples(http.get("/metrics").text)[("pegasus_upstream_errors_total", ())] == 1


def test_a_close_awaiting_extraction_is_counted_as_awaiting_not_empty(client):
    """#36: a close no LLM could extract is its own outcome; `empty` stays for closes with
    nothing to extract (here: no user turn)."""
    http, memory, _ = client
    auth = {"Authorization": f"Bearer {KEY}"}
    assert not memory.has_llm
    for conversation, role in (("told", "user"), ("silent", "assistant")):
        recorded = http.post("/v1/memory/turns", headers=auth, json={
            "conversation_id": conversation, "turns": [{"role": role, "content": "hello"}]})
        assert recorded.status_code == 200, recorded.text
        assert http.post(f"/v1/conversations/{conversation}/close",
                         headers=auth).status_code == 202
    http.app.state.conversations.wait()
    got = samples(http.get("/metrics").text)
    closes = {outcome: got[("pegasus_closes_total", (("outcome", outcome),))]
              for outcome in ("extracted", "awaiting", "empty", "failed", "skipped")}
    assert closes == {"extracted": 0, "awaiting": 1, "empty": 1, "failed": 0, "skipped": 0}
    assert got[("pegasus_closes_awaiting_extraction", ())] >= 1
