"""Remembered within seconds, through serve (design §7.11, §9): a fact told in one chat is in the
next chat's block at once, through the proxy and the hooks' route; it becomes a graph memory
while its conversation stays open (quiet for a while, or when the user opens another chat),
once, with no duplicate after the close; hook conversations form memories with nothing but the
proxy's upstream configured, and every status surface says so."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.serve.extracting_upstream import TAUGHT
from tests.serve.test_proxy import KEY_A, memory_messages, proxy

ASKED = "How is my sister's training going?"


@pytest.fixture
def two_users(user_id):
    return f"{user_id}-a", f"{user_id}-b"


def wait_for(predicate, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    return predicate()


def chat(client, conversation: str, text: str) -> None:
    client(KEY_A).chat.completions.create(
        model="stub-model", messages=[{"role": "user", "content": text}],
        extra_headers={"X-Pegasus-Conversation": conversation})


def sisters(memory, user_id: str) -> list:
    return [e for e in memory.edges(user_id) if e.relation == "HAS_SISTER"]


def test_told_in_one_chat_is_in_the_next_chats_block_at_once(settings, two_users):
    alice, bruno = two_users
    with proxy(settings, two_users) as (client, stub, memory, _):
        chat(client, "chat-a", f"Guess what: {TAUGHT}!")
        chat(client, "chat-b", ASKED)
        [block] = memory_messages(stub.received[-1])
        assert TAUGHT in block and "[CONTEXT]\n- 20" in block
        assert stub.extractions == []  # nothing extracted yet: the turn itself was quoted
        # the other user's chat gets nothing of it
        before = len(stub.received)
        client("key-bruno-0002").chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": ASKED}],
            extra_headers={"X-Pegasus-Conversation": "chat-b"})
        assert len(stub.received) == before + 1
        assert memory_messages(stub.received[-1]) == []
        assert [s.text for s in memory.recall(bruno, TAUGHT).snippets] == [ASKED]  # their own


def test_consolidated_while_the_conversation_is_open_then_once_at_its_close(
        settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users, consolidate_after_s=0.5, idle_sweep_s=0.2,
               consolidate_min_chars=0) as (
            client, stub, memory, app):
        chat(client, "chat-a", f"Guess what: {TAUGHT}!")
        assert wait_for(lambda: sisters(memory, alice)), "formed during the session"
        state = memory.conversation_state(alice, "chat-a")
        # the user's turn at least (the reply may be recorded after the sweep took it)
        assert state["status"] == "open" and state["extracted_turns"] >= 1
        calls = len(stub.extractions)
        assert calls >= 1
        # the graph's memory took over: quoted once, not pending
        recall = memory.recall(alice, ASKED, "chat-b")
        assert [(s.text, s.pending) for s in recall.snippets if TAUGHT in s.text] == [
            (TAUGHT, False)]
        # the close finds nothing new to extract: no second extraction, no duplicate
        answer = httpx.post(app.state.url + "/v1/conversations/chat-a/close", json={},
                            headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30)
        assert answer.json() == {"conversation_id": "chat-a", "status": "closing"}
        app.state.conversations.wait()
        assert memory.conversation_state(alice, "chat-a")["status"] == "closed"
        assert len(stub.extractions) == calls
        assert len(sisters(memory, alice)) == 1


def test_a_new_chat_starts_the_extraction_of_the_paused_ones(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (client, stub, memory, app):  # quiet: 90 s
        chat(client, "chat-a", f"Guess what: {TAUGHT}!")
        assert not sisters(memory, alice)
        chat(client, "chat-b", "Something else entirely: I bought a kettle.")
        app.state.conversations.wait()
        assert sisters(memory, alice)
        assert memory.conversation_state(alice, "chat-a")["status"] == "open"


def test_hook_conversations_form_memories_with_only_the_upstream(settings, two_users):
    alice, _ = two_users
    headers = {"Authorization": f"Bearer {KEY_A}"}
    with proxy(settings, two_users) as (_, stub, memory, app):
        url = app.state.url
        ready = httpx.get(url + "/readyz", timeout=30).json()
        assert ready["hook_conversations"].startswith("on: the model each user last used "
                                                      "through the proxy, else stub-model")
        turns = httpx.post(url + "/v1/memory/turns", headers=headers, timeout=30, json={
            "conversation_id": "session-1",
            "turns": [{"id": "t1", "role": "user", "content": f"Hey, {TAUGHT}."}]}).json()
        assert turns["extraction"].startswith("on: stub-model via ")
        # the hooks' route recalls it from another session at once
        recalled = httpx.post(url + "/v1/memory/recall", headers=headers, timeout=30,
                              json={"text": ASKED, "conversation_id": "session-2"}).json()
        assert any(TAUGHT in line for line in recalled["context"])
        closed = httpx.post(url + "/v1/conversations/session-1/close", json={},
                            headers=headers, timeout=30)
        assert closed.status_code == 202
        app.state.conversations.wait()
        assert [e["model"] for e in stub.extractions][:1] == ["stub-model"]
        assert sisters(memory, alice)
        state = memory.conversation_state(alice, "session-1")
        assert (state["status"], state["awaiting_extraction"]) == ("closed", False)


def test_closing_a_conversation_never_recorded_is_404(settings, two_users):
    alice, _ = two_users
    with proxy(settings, two_users) as (_, _, memory, app):
        answer = httpx.post(app.state.url + "/v1/conversations/never-was/close", json={},
                            headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30)
        assert answer.status_code == 404
        assert answer.json()["error"]["type"] == "not_found_error"
        assert not memory.conversation_state(alice, "never-was")["exists"]
