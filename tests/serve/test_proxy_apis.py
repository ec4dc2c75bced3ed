"""The proxy's Anthropic Messages (/v1/messages) and OpenAI Responses (/v1/responses) routes,
driven with the official `anthropic` and `openai` clients against a stub upstream."""

from __future__ import annotations

import json
import time

import anthropic
import httpx
import openai
import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from pegasus.hook import MEMORY_PREAMBLE
from pegasus.serve.anthropic import AnthropicMessage, stated_session, user_text, with_memory
from pegasus.serve.responses import latest_user
from tests.serve.servers import StubUpstream
from tests.serve.test_proxy import (
    KEY_A,
    KEY_B,
    NOTHING,
    RECALLS,
    SISTER_BATCH,
    proxy,
    recorded,
    remember_samples,
)

REPLY = "".join(StubUpstream.CHUNKS)
BOSS = "My boss Sarah moved the deadline again"


@pytest.fixture
def two_users(user_id):
    return f"{user_id}-a", f"{user_id}-b"


def claude(app, key: str, **options) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=app.state.url, max_retries=0, timeout=30,
                               **({"api_key": key} | options))


def wait_recorded(memory, user: str, conversation_id: str, count: int) -> list[dict]:
    deadline = time.monotonic() + 10
    while len(turns := recorded(memory, user, conversation_id)) < count \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    return turns


# --- Anthropic Messages ----------------------------------------------------------------------


def test_messages_get_memory_in_system_and_the_turns_are_recorded(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (_, stub, memory, app):
        remember_samples(memory, alice)
        raw = claude(app, KEY_A).messages.with_raw_response.create(
            model="claude-stub", max_tokens=64, system="You are terse.",
            messages=[{"role": "user", "content": RECALLS}])
        answer = raw.parse()
        assert answer.content[0].text == REPLY
        sent = stub.received_messages[-1]
        assert sent["system"].startswith("You are terse.\n\n" + MEMORY_PREAMBLE)
        assert BOSS in sent["system"]
        assert sent["messages"] == [{"role": "user", "content": RECALLS}]
        conversation_id = raw.headers["X-Pegasus-Conversation"]
        assert recorded(memory, alice, conversation_id) == [
            {"role": "user", "content": RECALLS}, {"role": "assistant", "content": REPLY}]


def test_messages_stream_event_by_event_into_a_stated_session(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (_, stub, memory, app):
        remember_samples(memory, alice)
        system = [{"type": "text", "text": "You are Claude Code.",
                   "cache_control": {"type": "ephemeral"}}]
        session = {"device_id": "d1", "session_id": "5b3c-claude-session"}
        pieces, kinds = [], []
        with claude(app, KEY_A).messages.stream(
                model="claude-stub", max_tokens=64, system=system,
                metadata={"user_id": json.dumps(session)},
                messages=[{"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>\nToday is Friday.\n"
                                             "</system-reminder>"},
                    {"type": "text", "text": RECALLS}]}]) as stream:
            for event in stream:
                kinds.append(event.type)
                if event.type == "content_block_delta":
                    pieces.append(event.delta.text)
        assert pieces == StubUpstream.CHUNKS
        assert kinds[0] == "message_start" and "message_stop" in kinds
        sent = stub.received_messages[-1]
        # the client's blocks stay first and untouched (its cache mark too), the memory follows
        assert sent["system"][0] == system[0] and len(sent["system"]) == 2
        assert sent["system"][1]["text"].startswith(MEMORY_PREAMBLE) and BOSS in sent[
            "system"][1]["text"]
        # the conversation is the session Claude Code states; the reminder is not the person's
        assert wait_recorded(memory, alice, "5b3c-claude-session", 2) == [
            {"role": "user", "content": RECALLS}, {"role": "assistant", "content": REPLY}]


def test_messages_accept_both_key_headers_and_refuse_unknown_keys(settings, two_users):
    alice, bruno = two_users
    with proxy(settings, two_users) as (_, stub, memory, app):
        memory.commit(bruno, "b1", SISTER_BATCH)
        ask = {"model": "claude-stub", "max_tokens": 16,
               "messages": [{"role": "user", "content": "How is Sarah doing?"}]}
        claude(app, None, auth_token=KEY_B).messages.create(**ask)  # ANTHROPIC_AUTH_TOKEN
        assert "fjord" in stub.received_messages[-1]["system"]
        claude(app, KEY_A).messages.create(**ask)  # ANTHROPIC_API_KEY: Alice has no sister
        assert "system" not in stub.received_messages[-1]
        with pytest.raises(anthropic.AuthenticationError) as caught:
            claude(app, "key-not-in-the-map").messages.create(**ask)
        assert caught.value.status_code == 401
        assert len(stub.received_messages) == 2
        assert httpx.head(app.state.url + "/").status_code == 200


def test_messages_upstream_failure_is_a_502_and_loses_no_turn(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (_, stub, memory, app):
        stub.fail_with = 529
        ask = {"model": "claude-stub", "max_tokens": 16,
               "messages": [{"role": "user", "content": "Remind me about Lisbon"}],
               "extra_headers": {"X-Pegasus-Conversation": "flaky-claude"}}
        with pytest.raises(anthropic.APIStatusError) as caught:
            claude(app, KEY_A).messages.create(**ask)
        assert caught.value.status_code == 502
        assert "upstream model answered 529" in str(caught.value)
        stub.fail_with = None
        claude(app, KEY_A).messages.create(**ask)
        assert recorded(memory, alice, "flaky-claude") == [
            {"role": "user", "content": "Remind me about Lisbon"},
            {"role": "assistant", "content": REPLY}]


def test_messages_without_an_anthropic_upstream_are_a_clear_503(settings, two_users):
    with proxy(settings, two_users, anthropic_upstream_base_url=None) as (_, stub, _m, app):
        answer = httpx.post(app.state.url + "/v1/messages", headers={"x-api-key": KEY_A},
                            json={"model": "m", "max_tokens": 8,
                                  "messages": [{"role": "user", "content": "hi"}]})
        assert answer.status_code == 503
        assert "PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL" in answer.json()["error"]["message"]
        # Anthropic's error shape, every error of /v1/messages (#36)
        assert answer.json() == {"type": "error", "error": {
            "type": "api_error", "message": answer.json()["error"]["message"]}}
        invalid = httpx.post(app.state.url + "/v1/messages", headers={"x-api-key": KEY_A},
                             json={"model": "m", "max_tokens": 0, "messages": []})
        assert invalid.status_code == 422
        assert invalid.json()["type"] == "error"
        assert invalid.json()["error"]["type"] == "invalid_request_error"


def test_anthropic_request_pieces():
    tool_result = AnthropicMessage(role="user", content=[
        {"type": "tool_result", "tool_use_id": "t1", "content": "42"}])
    assert user_text(tool_result) is None
    assert user_text(AnthropicMessage(role="user", content="<system-reminder>x"
                                      "</system-reminder>  ")) is None
    assert user_text(AnthropicMessage(role="assistant", content="hello")) is None
    assert with_memory(None, "B") == f"{MEMORY_PREAMBLE}\n\nB"
    assert with_memory("S", "B") == f"S\n\n{MEMORY_PREAMBLE}\n\nB"
    assert stated_session({"user_id": "user_abc_account__session_1234abcd-ef"}) == "1234abcd-ef"
    assert stated_session({"user_id": "someone"}) is None
    assert stated_session({"user_id": json.dumps({"session_id": 7})}) is None
    assert stated_session(None) is None


# --- OpenAI Responses ------------------------------------------------------------------------


def test_responses_get_memory_as_a_developer_message_before_the_user(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        remember_samples(memory, alice)
        history = [{"type": "message", "role": "developer",
                    "content": [{"type": "input_text", "text": "You are Codex."}]},
                   {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": RECALLS}]}]
        raw = client(KEY_A).responses.with_raw_response.create(
            model="stub-model", instructions="Be brief.", input=history)
        assert raw.parse().output_text == REPLY
        sent = stub.received_responses[-1]
        assert sent["instructions"] == "Be brief."
        assert sent["input"][0] == history[0] and sent["input"][2] == history[1]
        note = sent["input"][1]
        assert note["role"] == "developer" and BOSS in note["content"][0]["text"]
        conversation_id = raw.headers["X-Pegasus-Conversation"]
        assert recorded(memory, alice, conversation_id) == [
            {"role": "user", "content": RECALLS}, {"role": "assistant", "content": REPLY}]


def test_responses_stream_and_keep_the_stated_session(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        remember_samples(memory, alice)
        stream = client(KEY_A).responses.create(
            model="stub-model", input=RECALLS, stream=True,
            extra_body={"client_metadata": {"session_id": "codex-thread-1"}})
        kinds, pieces = [], []
        for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                pieces.append(event.delta)
        assert pieces == StubUpstream.CHUNKS
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        sent = stub.received_responses[-1]["input"]
        assert [i["role"] for i in sent] == ["developer", "user"]
        assert sent[1]["content"] == RECALLS
        assert wait_recorded(memory, alice, "codex-thread-1", 2) == [
            {"role": "user", "content": RECALLS}, {"role": "assistant", "content": REPLY}]


def test_responses_after_a_tool_output_record_and_recall_nothing(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        remember_samples(memory, alice)
        items = [{"type": "message", "role": "user", "content": RECALLS},
                 {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
                 {"type": "function_call_output", "call_id": "c1", "output": "README.md"}]
        client(KEY_A).responses.create(model="stub-model", input=items,
                                       extra_headers={"X-Pegasus-Conversation": "tools"})
        assert stub.received_responses[-1]["input"] == items
        assert recorded(memory, alice, "tools") == [{"role": "assistant", "content": REPLY}]
        client(KEY_A).responses.create(model="stub-model", input=NOTHING,
                                       extra_headers={"X-Pegasus-Conversation": "tools"})
        assert stub.received_responses[-1]["input"] == NOTHING  # nothing fired: untouched


def test_responses_errors(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        with pytest.raises(openai.AuthenticationError):
            client("key-not-in-the-map").responses.create(model="stub-model", input="hi")
        stub.fail_with = 500
        with pytest.raises(openai.APIStatusError) as caught:
            client(KEY_A).responses.create(model="stub-model", input="About Lisbon",
                                           extra_headers={"X-Pegasus-Conversation": "r-flaky"})
        assert caught.value.status_code == 502
        assert recorded(memory, alice, "r-flaky") == [{"role": "user", "content": "About Lisbon"}]
        with pytest.raises(openai.UnprocessableEntityError):
            client(KEY_A).responses.create(model="stub-model", input=[])


def test_latest_user_message():
    assert latest_user([{"role": "user", "content": "a"}]) == 0
    assert latest_user([{"role": "user", "content": "a"},
                        {"role": "developer", "content": "hook"}]) == 0
    assert latest_user([{"role": "assistant", "content": "a"}]) is None
    assert latest_user([{"type": "function_call_output", "output": "x"}]) is None
    assert latest_user([{"role": "developer", "content": "only"}]) is None


def test_fuzzing_the_proxy_routes_finds_no_server_error(settings, two_users):
    """Every generated request to /v1/messages, /v1/responses and HEAD / gets a documented
    answer matching its schema, never a 500 (schemathesis, over real HTTP, derandomized)."""
    with proxy(settings, two_users) as (_, stub, _memory, app):
        stub.CHUNK_DELAY_S = 0.0
        schema = schemathesis.openapi.from_url(app.state.url + "/openapi.json")
        operations = [r.ok() for r in schema.include(path_regex="^/(v1/(messages|responses))?$")
                      .get_all_operations()]
        assert sorted(o.label for o in operations) == [
            "HEAD /", "POST /v1/messages", "POST /v1/responses"]
        for operation in operations:

            @given(case=operation.as_strategy())
            @hypothesis_settings(max_examples=40, deadline=None, database=None,
                                 derandomize=True, suppress_health_check=list(HealthCheck))
            def fuzz(case):
                case.call_and_validate(base_url=app.state.url,
                                       headers={"Authorization": f"Bearer {KEY_A}"},
                                       excluded_checks=[positive_data_acceptance])

            fuzz()
        assert stub.received_messages and stub.received_responses  # forwarded, not all refused
