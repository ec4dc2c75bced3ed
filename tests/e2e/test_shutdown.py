"""SIGTERM to a real `pegasus serve` while a close runs a slow model (#35, docs/reliability.md
"Shutdown"): the process exits within its grace period (shutdown_grace_s, default 8 s), the
close is released, not failed, and the next start finishes it: nothing is lost."""

from __future__ import annotations

import json
import signal
import time

import httpx

from pegasus import Memory
from pegasus.settings import Settings
from tests.e2e.opencode_llm import SAID
from tests.e2e.running import KEY, serve_process, wait_for

AUTH = {"Authorization": f"Bearer {KEY}"}


def test_sigterm_exits_within_the_grace_and_the_next_start_finishes_the_close(
        neo4j_env, settings, user_id, raw_driver, tmp_path):
    started = tmp_path / "llm-started"
    env = {**{k: v for k, v in neo4j_env.items() if not k.startswith("PEGASUS_LLM_")},
           "PEGASUS_API_KEYS": json.dumps({KEY: user_id}),
           "PEGASUS_LLM_FACTORY": "tests.e2e.slow_llm:slow",
           "PEGASUS_TEST_LLM_STARTED": str(started), "PEGASUS_IDLE_SWEEP_S": "0.5",
           "PEGASUS_HEALTH_TIMEOUT_S": "10",  # a probe slowed by a loaded machine is no outage
           "PEGASUS_HOME": str(tmp_path / "pegasus-home")}
    env.pop("PEGASUS_SHUTDOWN_GRACE_S", None)  # the default grace
    grace = Settings.model_fields["shutdown_grace_s"].default
    assert grace <= 10
    log = tmp_path / "serve.log"
    with serve_process(env, log) as (process, url):
        # A loaded machine may have the first health probe late (a 503 at once then): the
        # turn, with its id, is sent again until it is recorded, once.
        assert wait_for(lambda: httpx.post(url + "/v1/memory/turns", headers=AUTH, json={
            "conversation_id": "bye", "turns": [{"id": "t1", "role": "user", "content": SAID}]},
            timeout=60).status_code == 200, 60), log.read_text()[-2000:]
        closing = httpx.post(url + "/v1/conversations/bye/close", headers=AUTH)
        assert closing.status_code == 202 and closing.json()["status"] == "closing"
        assert wait_for(started.exists, 120), log.read_text()[-2000:]
        asked = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        took = time.monotonic() - asked
    output = log.read_text()
    assert took < grace, (took, output[-2000:])
    # uvicorn ends by raising the signal it caught again: stopped by SIGTERM, after its shutdown
    assert process.returncode == -signal.SIGTERM, output[-2000:]
    assert "a close was still running at shutdown: released for another server or the next " \
           "start" in output
    row = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'bye'}) RETURN c.status AS status, "
        "c.close_holder AS holder, c.close_attempts AS attempts", u=user_id).records
    assert [(r["status"], r["holder"], r["attempts"]) for r in row] == [("closing", None, 0)]

    # The next start (with a model that answers) finishes the close: the fact is remembered.
    env["PEGASUS_LLM_FACTORY"] = "tests.e2e.opencode_llm:extractor"
    with serve_process(env, tmp_path / "serve-2.log"), Memory(settings) as memory:
        assert wait_for(lambda: memory.conversation_state(user_id, "bye")["status"]
                        == "closed"), memory.conversation_state(user_id, "bye")
        assert [(e.source, e.relation, e.target) for e in memory.edges(user_id)] == [
            ("User", "HAS_SISTER", "Maya")]
