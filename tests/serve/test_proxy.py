"""The passive-memory proxy, driven with the official `openai` client against a stub upstream."""

from __future__ import annotations

import contextlib
import json
import time

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage

from pegasus import Memory
from pegasus.clock import parse_instant
from pegasus.demo import samples
from pegasus.hook import MEMORY_PREAMBLE
from pegasus.serve.app import create_app
from tests.helpers import call, scripted_model
from tests.serve.extracting_upstream import ExtractingUpstream
from tests.serve.servers import StubUpstream, serving

KEY_A, KEY_B, KEY_C = "key-alice-0001", "key-bruno-0002", "key-carla-0003"
SISTER_BATCH = {
    "entities": [{"name": "Sarah", "kind": "PERSON"}, {"name": "Oslo", "kind": "PLACE"}],
    "relations": [
        {"source": "User", "relation": "HAS_SISTER", "target": "Sarah",
         "snippet": "my sister Sarah is moving again"},
        {"source": "Sarah", "relation": "LIVES_IN", "target": "Oslo",
         "snippet": "Sarah lives in Oslo now, in a flat by the fjord"},
    ],
}
RECALLS = "Should I tell Sarah about the Northwind offer before our trip?"
NOTHING = "What is the boiling point of water at sea level?"


@contextlib.contextmanager
def proxy(settings, user_ids, llm=None, **overrides):
    """The proxy on a real port in front of a stub upstream (its OpenAI and Anthropic APIs);
    (OpenAI client factory, stub, memory, app). The app's URL is `app.state.url`."""
    # with no LLM given, closes extract through this upstream (#36): it answers the tools too
    stub = ExtractingUpstream()
    with serving(stub.app) as upstream_url:
        keys = dict(zip((KEY_A, KEY_B, KEY_C), user_ids, strict=False))
        configured = settings.model_copy(update={"api_keys": keys,
                                                 "upstream_base_url": upstream_url + "/v1",
                                                 "anthropic_upstream_base_url": upstream_url,
                                                 **overrides})
        memory = Memory(configured, llm=llm)
        app = create_app(memory)
        with serving(app) as url:
            app.state.url = url

            def client(key: str) -> openai.OpenAI:
                return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0,
                                     timeout=30)

            yield client, stub, memory, app
        memory.close()


def remember_samples(memory: Memory, user_id: str) -> None:
    for conv in samples():
        memory.commit(user_id, conv["conversation_id"], conv["batch"],
                      at=parse_instant(conv["at"]), transcript=conv["transcript"])


def memory_messages(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"]
            if m["role"] == "system" and m["content"].startswith(MEMORY_PREAMBLE)]


def recorded(memory: Memory, user_id: str, conversation_id: str) -> list[dict]:
    rows = memory.store.read("read/conversation_turns", user_id=user_id,
                              conversation_id=conversation_id)
    return [json.loads(t) for t in rows[0]["turns"]]


@pytest.fixture
def two_users(user_id):
    return f"{user_id}-a", f"{user_id}-b"


def test_a_message_that_recalls_gets_memory_injected(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        remember_samples(memory, alice)
        raw = client(KEY_A).chat.completions.with_raw_response.create(
            model="stub-model",
            messages=[{"role": "system", "content": "You are a helpful assistant."},
                      {"role": "user", "content": RECALLS}])
        answer = raw.parse()
        conversation_id = raw.headers["X-Pegasus-Conversation"]
        sent = stub.received[-1]["messages"]
        # The client's system prompt stays first, the memory follows, then the user.
        assert [m["role"] for m in sent] == ["system", "system", "user"]
        assert sent[0]["content"] == "You are a helpful assistant."
        assert '"My boss Sarah moved the deadline again, honestly I\'m exhausted."' in sent[1][
            "content"]
        assert "[CONTEXT]\n- 20" in sent[1]["content"]  # each quoted line is dated
        assert sent[2] == {"role": "user", "content": RECALLS}
        assert answer.choices[0].message.content == f"stub reply to: {RECALLS}"
        assert recorded(memory, alice, conversation_id) == [
            {"role": "user", "content": RECALLS},
            {"role": "assistant", "content": f"stub reply to: {RECALLS}"}]


def test_a_message_that_recalls_nothing_is_forwarded_untouched(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        remember_samples(memory, alice)
        messages = [{"role": "user", "content": NOTHING}]
        client(KEY_A).chat.completions.create(model="stub-model", messages=messages)
        assert stub.received[-1]["messages"] == messages


def test_a_stream_arrives_chunk_by_chunk_and_the_reply_is_recorded(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        remember_samples(memory, alice)
        stream = client(KEY_A).chat.completions.create(
            model="stub-model", stream=True, messages=[{"role": "user", "content": RECALLS}],
            extra_headers={"X-Pegasus-Conversation": "streamed"})
        arrivals, pieces = [], []
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                arrivals.append(time.monotonic())
                pieces.append(chunk.choices[0].delta.content)
        assert pieces == StubUpstream.CHUNKS
        # Relayed as they come: the first piece reached the client before the stub (0.25 s
        # between chunks) had sent its last one. Causal, so no timing a busy machine can break.
        assert arrivals[0] < stub.last_chunk_sent_at
        assert memory_messages(stub.received[-1])
        deadline = time.monotonic() + 10
        while len(recorded(memory, alice, "streamed")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert recorded(memory, alice, "streamed")[-1] == {"role": "assistant",
                                                           "content": "Tell her after the trip."}


def test_one_users_key_never_reaches_another_users_memory(settings, two_users):
    alice, bruno = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        remember_samples(memory, alice)
        memory.commit(bruno, "b1", SISTER_BATCH)
        client(KEY_B).chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": "How is Sarah doing?"}])
        bruno_sees = memory_messages(stub.received[-1])[0]
        assert "my sister Sarah is moving again" in bruno_sees and "fjord" in bruno_sees
        assert "Northwind" not in bruno_sees and "boss" not in bruno_sees.lower()
        client(KEY_A).chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": "How is Sarah doing?"}])
        alice_sees = memory_messages(stub.received[-1])[0]
        assert "My boss Sarah" in alice_sees
        assert "sister" not in alice_sees and "fjord" not in alice_sees


def test_an_unknown_or_missing_key_gets_401(settings, two_users):
    with proxy(settings, two_users) as (client, stub, _, _app):
        with pytest.raises(openai.AuthenticationError) as caught:
            client("key-not-in-the-map").chat.completions.create(
                model="stub-model", messages=[{"role": "user", "content": RECALLS}])
        assert caught.value.status_code == 401
        with pytest.raises(openai.AuthenticationError):
            client("nope-nope-nope").models.list()
        # No Authorization header at all (the openai client always sends one).
        bare = httpx.post(str(client(KEY_A).base_url) + "chat/completions",
                          json={"model": "stub-model", "messages": [{"role": "user",
                                                                      "content": RECALLS}]})
        assert bare.status_code == 401
        assert bare.json()["error"]["type"] == "authentication_error"
        assert stub.received == []


def test_an_upstream_failure_is_a_clear_error_and_loses_no_turn(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        stub.fail_with = 503
        messages = [{"role": "user", "content": "Remind me what I said about Lisbon"}]
        headers = {"X-Pegasus-Conversation": "flaky"}
        with pytest.raises(openai.APIStatusError) as caught:
            client(KEY_A).chat.completions.create(model="stub-model", messages=messages,
                                                  extra_headers=headers)
        assert caught.value.status_code == 502
        assert "upstream model answered 503" in caught.value.message
        assert recorded(memory, alice, "flaky") == messages
        stub.fail_with = None  # the client retries the same message: recorded once
        client(KEY_A).chat.completions.create(model="stub-model", messages=messages,
                                              extra_headers=headers)
        assert [t["role"] for t in recorded(memory, alice, "flaky")] == ["user", "assistant"]


def test_an_unreachable_upstream_is_a_502(settings, two_users):
    with proxy(settings, two_users, upstream_base_url="http://127.0.0.1:9/v1") as (
            client, _, _memory, _app):
        with pytest.raises(openai.APIStatusError) as caught:
            client(KEY_A).chat.completions.create(
                model="stub-model", messages=[{"role": "user", "content": "hello there"}])
        assert caught.value.status_code == 502
        assert "could not be reached" in caught.value.message


def test_models_are_the_upstreams(settings, two_users):
    with proxy(settings, two_users) as (client, _, _memory, _app):
        assert [m.id for m in client(KEY_A).models.list()] == ["stub-model"]


def test_the_conversation_comes_from_the_history_when_no_header_says(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, _, memory, _):
        opening = [{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "I'm planning the Lisbon trip"}]
        first = client(KEY_A).chat.completions.with_raw_response.create(
            model="stub-model", messages=opening)
        reply = first.parse().choices[0].message.content
        second = client(KEY_A).chat.completions.with_raw_response.create(
            model="stub-model", messages=[*opening, {"role": "assistant", "content": reply},
                                          {"role": "user", "content": "Which week is best?"}])
        conversation_id = first.headers["X-Pegasus-Conversation"]
        assert conversation_id.startswith("auto-")
        assert second.headers["X-Pegasus-Conversation"] == conversation_id
        assert [t["content"] for t in recorded(memory, alice, conversation_id)] == [
            "I'm planning the Lisbon trip", reply, "Which week is best?",
            "stub reply to: Which week is best?"]


def test_close_extracts_the_transcript_and_reinforces_what_was_shown(settings, two_users):
    alice, _ = two_users
    said = "My boss Sarah moved the deadline again, honestly I'm exhausted."
    llm = scripted_model(
        AIMessage(content="", tool_calls=[
            call("record_entity", 1, name="Sarah", kind="PERSON", confidence=0.9),
            call("record_relation", 2, source="User", relation="HAS_BOSS", target="Sarah",
                 confidence=0.9, stability="mutable", cardinality="one_to_one", snippet=said)]),
        AIMessage(content="", tool_calls=[call("finish", 3)]))
    with proxy(settings, two_users, llm=llm) as (client, _, memory, app):
        remember_samples(memory, alice)
        headers = {"X-Pegasus-Conversation": "to-close"}
        client(KEY_A).chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": said}],
            extra_headers=headers)
        response = client(KEY_A).post("/conversations/to-close/close", cast_to=object,
                                      body={})
        assert response == {"conversation_id": "to-close", "status": "closing"}
        app.state.conversations.wait()
        state = memory.store.read("read/conversation_turns", user_id=alice,
                                   conversation_id="to-close")[0]
        assert state["status"] == "closed"
        log = memory.store.read("read/read_log", user_id=alice, conversation_id="to-close")[0]
        assert log["pending"] == [] and log["reinforced"] > 0, "the shown edges were reinforced"
        boss = [e for e in memory.edges(alice) if e.relation == "HAS_BOSS"]
        assert len(boss) == 1 and "to-close" in boss[0].conversations
        # A new turn after the close starts a continuation instead of reopening it.
        raw = client(KEY_A).chat.completions.with_raw_response.create(
            model="stub-model", messages=[{"role": "user", "content": "one more thing"}],
            extra_headers=headers)
        assert raw.headers["X-Pegasus-Conversation"] == "to-close.2"


def test_an_idle_conversation_closes_by_itself(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users, idle_close_s=0.5, idle_sweep_s=0.2) as (
            client, _, memory, app):
        remember_samples(memory, alice)
        client(KEY_A).chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": RECALLS}],
            extra_headers={"X-Pegasus-Conversation": "idle"})
        deadline = time.monotonic() + 15
        status = None
        while time.monotonic() < deadline:
            status = memory.store.read("read/conversation_turns", user_id=alice,
                                        conversation_id="idle")[0]["status"]
            if status == "closed":
                break
            time.sleep(0.2)
        assert status == "closed"
        log = memory.store.read("read/read_log", user_id=alice, conversation_id="idle")[0]
        assert log["reinforced"] > 0, "closing applied the read reinforcement"


@pytest.mark.parametrize("length", [198, 199, 200])
def test_a_long_conversation_id_goes_on_after_its_close(settings, two_users, length):
    """The continuation of a closed conversation never passes the 200-character id limit."""
    alice, _ = two_users
    base = "c" * length
    headers = {"X-Pegasus-Conversation": base}
    with proxy(settings, two_users) as (client, _, memory, app):
        before = client(KEY_A).chat.completions.with_raw_response.create(
            model="stub-model", messages=[{"role": "user", "content": RECALLS}],
            extra_headers=headers)
        assert before.status_code == 200 and before.headers["X-Pegasus-Conversation"] == base
        client(KEY_A).post(f"/conversations/{base}/close", cast_to=object, body={})
        app.state.conversations.wait()
        ids = []
        for _ in range(2):  # the continuation, then the continuation of that one
            after = client(KEY_A).chat.completions.with_raw_response.create(
                model="stub-model", messages=[{"role": "user", "content": "one more thing"}],
                extra_headers=headers)
            assert after.status_code == 200
            ids.append(after.headers["X-Pegasus-Conversation"])
            client(KEY_A).post(f"/conversations/{ids[-1]}/close", cast_to=object, body={})
            app.state.conversations.wait()
        assert all(len(i) <= 200 for i in ids) and len(set(ids)) == 2 and base not in ids
        if length == 198:
            assert ids == [f"{base}.2", f"{base}.3"]  # short enough: the plain form
        assert [t["content"] for t in recorded(memory, alice, ids[0])] == [
            "one more thing", "stub reply to: one more thing"]
