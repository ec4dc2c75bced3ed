"""Memory forms for a user who set nothing but the README's serve block (#36): closes extract
through the proxy's upstream (OpenAI-compatible, or Anthropic), with the model the conversation
used. With no model anywhere, everyone is told (serve's start line, /readyz, /metrics, the
log, the hook), nothing is lost, and the backlog is extracted once an LLM is configured.

`pegasus serve` runs as a subprocess exactly as the README starts it; the upstream is a stub
on 127.0.0.1 that also answers the extraction tool calls (tests/serve/extracting_upstream.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from pegasus import Memory
from pegasus.llm import WHAT_TO_SET
from tests.e2e.running import KEY, ROOT, memory_block, pegasus_serve, wait_for
from tests.serve.extracting_upstream import TAUGHT

ASKED = "What could I give Maya before her marathon?"
HOOK = Path(sys.executable).parent / "pegasus-hook"


@pytest.fixture
def upstream(extracting_stub):
    return extracting_stub


def readme_env(neo4j_env: dict, user_id: str, tmp_path: Path, **upstreams: str) -> dict:
    """The README's serve block: keys and upstreams, no PEGASUS_LLM_* at all."""
    env = {k: v for k, v in neo4j_env.items() if not k.startswith("PEGASUS_LLM_")}
    return {**env, "PEGASUS_API_KEYS": json.dumps({KEY: user_id}),
            "PEGASUS_IDLE_SWEEP_S": "0.5", "PEGASUS_HOME": str(tmp_path / "pegasus-home"),
            # What is tested here is extraction: a recall that plans its queries for the first
            # time on a busy machine may pass the 1.5 s budget and go without memory (its own
            # tests: tests/serve/test_memory_never_blocks.py).
            "PEGASUS_PROXY_MEMORY_BUDGET_S": "60", **upstreams}


def ready(url: str) -> dict:
    """/readyz once it is 200: serve answers before its first probe of Neo4j has (a few
    seconds on a busy machine)."""
    answer = wait_for(lambda: (r := httpx.get(url + "/readyz")).status_code == 200 and r)
    assert answer, httpx.get(url + "/readyz").text
    return answer.json()


def close(url: str, conversation: str) -> None:
    answer = httpx.post(f"{url}/v1/conversations/{conversation}/close",
                        headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 202, answer.text


def closed(settings, user_id: str, conversation: str) -> dict:
    with Memory(settings) as memory:
        assert wait_for(lambda: memory.conversation_state(user_id, conversation)["status"]
                        == "closed"), memory.conversation_state(user_id, conversation)
        return memory.conversation_state(user_id, conversation)


def maya(settings, user_id: str) -> list[tuple[str, str, list[str]]]:
    with Memory(settings) as memory:
        return [(e.source, e.relation, e.conversations) for e in memory.edges(user_id)
                if e.target == "Maya"]


def test_the_readme_serve_block_extracts_each_conversation_through_its_upstream(
        neo4j_env, settings, user_id, upstream, tmp_path):
    """Both upstreams, as the README's block sets them: a chat conversation is extracted
    through the OpenAI-compatible one, a /v1/messages conversation (a Claude model) through
    the Anthropic one."""
    env = readme_env(neo4j_env, user_id, tmp_path,
                     PEGASUS_UPSTREAM_BASE_URL=upstream.url + "/v1",
                     PEGASUS_UPSTREAM_API_KEY="sk-upstream-1",
                     PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL=upstream.url,
                     PEGASUS_ANTHROPIC_UPSTREAM_API_KEY="sk-ant-upstream-1")
    log = tmp_path / "serve.log"
    with pegasus_serve(env, log) as url:
        said = [line for line in log.read_text().splitlines() if "extraction" in line]
        assert said == [f"pegasus serve: extraction on: the model each conversation used via "
                        f"{upstream.url}/v1 (the proxy's upstream); conversations held over "
                        f"/v1/messages via {upstream.url} (the proxy's Anthropic upstream)"]
        assert ready(url)["extraction"] == said[0].split("extraction ")[1]
        client = openai.OpenAI(base_url=url + "/v1", api_key=KEY)
        client.chat.completions.create(model="gpt-4o-mini", messages=[
            {"role": "user", "content": f"Hello! By the way, {TAUGHT}."}],
            extra_headers={"X-Pegasus-Conversation": "first"})
        close(url, "first")
        assert closed(settings, user_id, "first")["committed"]
        # extracted by the conversation's own model, through the upstream with its key
        assert {(e["api"], e["model"], e["key"]) for e in upstream.extractions} == {
            ("chat", "gpt-4o-mini", "Bearer sk-upstream-1")}
        assert len(upstream.extractions) == 1  # the facts and `finish` in one answer
        assert maya(settings, user_id) == [("User", "HAS_SISTER", ["first"])]

        answer = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": ASKED}],
            extra_headers={"X-Pegasus-Conversation": "next"})
        assert "x-pegasus-memory" not in answer.headers, answer.headers["x-pegasus-memory"]
        assert memory_block(json.dumps(upstream.received[-1]["messages"]), TAUGHT)

        claude = anthropic.Anthropic(base_url=url, api_key=KEY)
        claude.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=[
            {"role": "user", "content": "Hi again, nothing new today."}],
            extra_headers={"X-Pegasus-Conversation": "held-over-messages"})
        close(url, "held-over-messages")
        assert closed(settings, user_id, "held-over-messages")["status"] == "closed"
        # opening that chat consolidated the paused "next" through its own model (design §9)
        assert [(e["api"], e["model"], e["key"]) for e in upstream.extractions[1:]] == [
            ("chat", "gpt-4o-mini", "Bearer sk-upstream-1"),
            ("messages", "claude-sonnet-4-5", "sk-ant-upstream-1")]


def test_with_only_the_anthropic_upstream_claude_extracts(neo4j_env, settings, user_id,
                                                           upstream, tmp_path):
    env = readme_env(neo4j_env, user_id, tmp_path,
                     PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL=upstream.url,
                     PEGASUS_ANTHROPIC_UPSTREAM_API_KEY="sk-ant-upstream-1")
    with pegasus_serve(env, tmp_path / "serve.log") as url:
        assert ready(url)["extraction"] == (
            f"on: the model each conversation used via {upstream.url} (the proxy's Anthropic "
            "upstream)")
        client = anthropic.Anthropic(base_url=url, api_key=KEY)
        client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=[
            {"role": "user", "content": f"Hi. {TAUGHT}."}],
            extra_headers={"X-Pegasus-Conversation": "first"})
        close(url, "first")
        assert closed(settings, user_id, "first")["committed"]
        assert {(e["api"], e["model"], e["key"]) for e in upstream.extractions} == {
            ("messages", "claude-sonnet-4-5", "sk-ant-upstream-1")}
        assert maya(settings, user_id) == [("User", "HAS_SISTER", ["first"])]
        client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=[
            {"role": "user", "content": ASKED}], extra_headers={"X-Pegasus-Conversation": "next"})
        assert memory_block(json.dumps(upstream.received_messages[-1]["system"]), TAUGHT)
        # the proxy's errors on /v1/messages are Anthropic's shape, which its SDK reads
        with pytest.raises(anthropic.AuthenticationError) as refused:
            anthropic.Anthropic(base_url=url, api_key="key-not-in-the-map", max_retries=0
                                ).messages.create(model="m", max_tokens=5, messages=[
                                    {"role": "user", "content": "hi"}])
        assert refused.value.body == {"type": "error", "error": {
            "type": "authentication_error",
            "message": "missing or unknown API key (send Authorization: Bearer <key>, or "
                       "x-api-key)"}}


def hook(event: str, payload: dict, url: str, spool: Path) -> dict:
    env = {"PATH": os.environ["PATH"], "PEGASUS_URL": url, "PEGASUS_API_KEY": KEY,
           "PEGASUS_HOOK_SPOOL": str(spool), "PEGASUS_HOOK_TIMEOUT_S": "30",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([str(HOOK), event], input=json.dumps(payload), env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def awaiting_gauge(url: str) -> float | None:
    """The gauge, or None before serve's first probe of Neo4j (or when a probe timed out on
    a busy machine): /metrics leaves the graph's gauges out until one answers."""
    lines = httpx.get(url + "/metrics").text.splitlines()
    return next((float(line.split()[-1]) for line in lines
                 if line.startswith("pegasus_closes_awaiting_extraction ")), None)


def test_with_no_llm_everyone_is_told_nothing_is_lost_and_the_backlog_follows(
        neo4j_env, settings, user_id, tmp_path):
    env = readme_env(neo4j_env, user_id, tmp_path)
    log = tmp_path / "serve.log"
    off = f"off: no LLM to extract memories with: {WHAT_TO_SET}"
    spool = tmp_path / "spool.json"
    with pegasus_serve(env, log) as url:
        assert f"pegasus serve: extraction {off}" in log.read_text().splitlines()
        assert ready(url)["extraction"] == off

        # Claude Code's hooks: the session's first prompt tells the person, the next does not
        first = hook("UserPromptSubmit", {"session_id": "s1", "prompt": f"Hi, {TAUGHT}."},
                     url, spool)
        notice = f"memories are not being formed: pegasus serve has {off[5:]}"
        assert first["systemMessage"] == f"[pegasus] {notice}"
        assert notice in first["hookSpecificOutput"]["additionalContext"]  # for headless CLIs
        assert hook("UserPromptSubmit", {"session_id": "s1", "prompt": "And Oslo?"}, url,
                    spool) == {}
        hook("Stop", {"session_id": "s1", "last_assistant_message": "Good luck to her."}, url,
             spool)
        hook("SessionEnd", {"session_id": "s1"}, url, spool)
        state = closed(settings, user_id, "s1")
        assert state["awaiting_extraction"] and not state["committed"]
        assert len(state["turns"]) == 3
        assert wait_for(lambda: awaiting_gauge(url) == 1.0)
        # through the proxy's turn API too (a second conversation), in the order they close
        httpx.post(url + "/v1/memory/turns", headers={"Authorization": f"Bearer {KEY}"},
                   json={"conversation_id": "s2", "turns": [
                       {"role": "user", "content": "Maya runs in the rain"}]}
                   ).raise_for_status()
        close(url, "s2")
        closed(settings, user_id, "s2")
        assert wait_for(lambda: awaiting_gauge(url) == 2.0)
    logged = [line for line in log.read_text().splitlines() if "awaiting extraction:" in line]
    assert len(logged) == 2 and all(f"without extracting it, kept awaiting extraction: "
                                    f"{off[5:]}" in line for line in logged)

    # An LLM is configured: serve extracts the backlog at start, in order, each once.
    env["PEGASUS_LLM_FACTORY"] = "tests.serve.extracting_upstream:backlog_extractor"
    with pegasus_serve(env, tmp_path / "serve-2.log") as url:
        assert wait_for(lambda: awaiting_gauge(url) == 0.0)
    assert maya(settings, user_id) == [("User", "HAS_SISTER", ["s1"])]
    with Memory(settings) as memory:
        for conversation in ("s1", "s2"):
            state = memory.conversation_state(user_id, conversation)
            assert not state["awaiting_extraction"] and state["status"] == "closed"
        assert memory.conversation_state(user_id, "s1")["committed"]

    # `pegasus extract --pending` finds nothing left: each conversation was extracted once
    again = subprocess.run([sys.executable, "-m", "pegasus", "extract", "--pending"],
                           env={**env, "PYTHONPATH": str(ROOT / "src")}, cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "extracted 0 of 0 conversations awaiting extraction"
