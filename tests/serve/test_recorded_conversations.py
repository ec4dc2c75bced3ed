"""Conversations recorded turn by turn (POST /v1/memory/turns) and closed asynchronously:
accepted at once, extracted in the background, retried with backoff, resumed after a restart."""

from __future__ import annotations

import time

import httpx
import pytest
from langchain_core.messages import AIMessage

from pegasus import Memory
from pegasus.clock import aware
from pegasus.errors import ExtractionError
from pegasus.serve.app import create_app
from pegasus.serve.conversations import Conversations
from tests.helpers import call, scripted_model
from tests.serve.servers import serving

KEY = "key-alice-0001"
SAID = "My sister Maya is training for the Oslo marathon in June."
EXTRACTION = [
    AIMessage(content="", tool_calls=[
        call("record_entity", 1, name="Maya", kind="PERSON", confidence=0.9),
        call("record_relation", 2, source="User", relation="HAS_SISTER", target="Maya",
             confidence=0.9, stability="stable", cardinality="one_to_many", snippet=SAID)]),
    AIMessage(content="", tool_calls=[call("finish", 3)]),
]


@pytest.fixture
def alice(user_id):
    return f"{user_id}-a"


def server(settings, alice, llm=None, **overrides):
    configured = settings.model_copy(update={"api_keys": {KEY: alice}, **overrides})
    memory = Memory(configured, llm=llm)
    return memory, create_app(memory)


# what the turns API says of extraction with the scripted model (#36)
ON = {"extraction": "on: GenericFakeChatModel via the chat model given to Memory"}


def post(url, path, body=None):
    return httpx.post(url + path, json=body or {}, headers={"Authorization": f"Bearer {KEY}"},
                      timeout=30)


def state(memory, user, conversation_id):
    return memory.conversation_state(user, conversation_id)


def wait_for(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def test_turns_are_recorded_once_each_and_a_closed_conversation_continues(settings, alice):
    memory, app = server(settings, alice, llm=scripted_model(*EXTRACTION))
    with serving(app) as url:
        first = post(url, "/v1/memory/turns", {"conversation_id": "s1", "turns": [
            {"id": "m1", "role": "user", "content": SAID}]})
        assert first.status_code == 200
        assert first.json() == {"conversation_id": "s1", "turns": 1,
                                **ON}
        # the client did not see the answer and sends it again, with the next turn
        again = post(url, "/v1/memory/turns", {"conversation_id": "s1", "turns": [
            {"id": "m1", "role": "user", "content": SAID},
            {"id": "p1", "role": "assistant", "content": "Good luck to her!"}]})
        assert again.json() == {"conversation_id": "s1", "turns": 2, **ON}
        assert [t for t in state(memory, alice, "s1")["turns"]] == [
            '{"role": "user", "content": "' + SAID + '"}',
            '{"role": "assistant", "content": "Good luck to her!"}']

        accepted = post(url, "/v1/conversations/s1/close")
        assert (accepted.status_code, accepted.json()) == (
            202, {"conversation_id": "s1", "status": "closing"})
        assert wait_for(lambda: state(memory, alice, "s1")["status"] == "closed")
        assert [(e.source, e.relation, e.target) for e in memory.edges(alice)] == [
            ("User", "HAS_SISTER", "Maya")]
        assert post(url, "/v1/conversations/s1/close").json()["status"] == "closed"

        later = post(url, "/v1/memory/turns", {"conversation_id": "s1", "turns": [
            {"id": "m2", "role": "user", "content": "One more thing."}]})
        assert later.json() == {"conversation_id": "s1.2", "turns": 1, **ON}
        refused = post(url, "/v1/memory/turns", {"conversation_id": "s1", "turns": [
            {"role": "robot", "content": "x"}]})
        assert refused.status_code == 422 and "role" in refused.json()["error"]["message"]
    memory.close()


def test_a_failed_close_is_retried_with_backoff_then_succeeds(settings, alice):
    # the extractor fails twice (an unusable answer each time), then extracts
    failing = [ExtractionError("the model answered nonsense")] * 2
    llm = scripted_model(*failing, *EXTRACTION)
    memory, app = server(settings, alice, llm=llm, llm_max_retries=1, close_retry_s=0.3,
                         idle_sweep_s=0.1, close_max_attempts=5)
    with serving(app) as url:
        post(url, "/v1/memory/turns", {"conversation_id": "s2", "turns": [
            {"id": "m1", "role": "user", "content": SAID}]})
        assert post(url, "/v1/conversations/s2/close").status_code == 202
        first = wait_for(lambda: (s := state(memory, alice, "s2"))["close_attempts"] and s)
        assert first["status"] == "closing" and first["close_attempts"] >= 1
        assert "nonsense" in first["close_error"]
        assert wait_for(lambda: state(memory, alice, "s2")["status"] == "closed")
        closed = state(memory, alice, "s2")
        assert closed["close_attempts"] == 2 and closed["committed"]
        assert [e.relation for e in memory.edges(alice)] == ["HAS_SISTER"]
    memory.close()


def test_a_close_that_keeps_failing_ends_failed_with_its_turns_kept(settings, alice):
    llm = scripted_model(*[ExtractionError("the model is away")] * 10)
    memory, app = server(settings, alice, llm=llm, llm_max_retries=1, close_retry_s=0.05,
                         idle_sweep_s=0.1, close_max_attempts=3)
    with serving(app) as url:
        post(url, "/v1/memory/turns", {"conversation_id": "s3", "turns": [
            {"id": "m1", "role": "user", "content": SAID}]})
        post(url, "/v1/conversations/s3/close")
        assert wait_for(lambda: state(memory, alice, "s3")["status"] == "failed")
        failed = state(memory, alice, "s3")
        assert failed["close_attempts"] == 3 and len(failed["turns"]) == 1
        assert memory.edges(alice) == []
    memory.close()


def test_a_close_accepted_before_a_restart_is_finished_by_the_next_server(settings, alice):
    memory, app = server(settings, alice)  # no LLM: this server only accepts the close
    memory.record_turns(alice, "s4", [{"id": "m1", "role": "user", "content": SAID}])
    assert memory.request_close(alice, "s4") == "open"
    assert state(memory, alice, "s4")["status"] == "closing"  # in the graph, not in a queue
    memory.close()

    memory, app = server(settings, alice, llm=scripted_model(*EXTRACTION))
    with serving(app):  # the start-up sweep finds it
        assert wait_for(lambda: state(memory, alice, "s4")["status"] == "closed")
        assert [e.relation for e in memory.edges(alice)] == ["HAS_SISTER"]
    memory.close()


def counting_model(counter: list[int]):
    """The scripted extraction, again for every close; each one's start is counted."""
    from langchain_core.language_models import GenericFakeChatModel

    def extractions():
        while True:
            counter.append(1)
            yield from EXTRACTION
    return GenericFakeChatModel(messages=extractions())


def test_servers_sharing_a_database_run_each_close_once(settings, alice):
    """Two servers' workers both find the same due closes: the lease lets one run each."""
    started: list[int] = []
    configured = settings.model_copy(update={"api_keys": {KEY: alice}})
    with (Memory(configured, llm=counting_model(started)) as first,
          Memory(configured, llm=counting_model(started)) as second):
        now = aware(None)
        for n in range(6):
            first.record_turns(alice, f"c{n}", [{"role": "user", "content": SAID}], now, "proxy")
            first.request_close(alice, f"c{n}", now)
        servers = [Conversations(first), Conversations(second)]
        try:
            futures = [f for s in servers for f in s.sweep({alice}, now, 3600)]
            assert len(futures) > 6  # both servers took up some of the same closes
            results = [f.result(timeout=120) for f in futures]
        finally:
            for s in servers:
                s.shutdown()
        ran = sorted(r["conversation_id"] for r in results if "skipped" not in r)
        assert ran == [f"c{n}" for n in range(6)]
        assert len(started) == 6  # one extraction per close, none twice
        assert all(state(first, alice, f"c{n}")["status"] == "closed" for n in range(6))


def test_a_close_held_by_a_crashed_server_is_taken_over_after_its_lease(settings, alice):
    configured = settings.model_copy(update={"api_keys": {KEY: alice}, "close_lease_s": 1})
    with Memory(configured, llm=scripted_model(*EXTRACTION)) as memory:
        now = aware(None)
        memory.record_turns(alice, "held", [{"role": "user", "content": SAID}], now, "proxy")
        memory.request_close(alice, "held", now)
        assert memory.claim_close(alice, "held", "a-server-that-dies")  # then it is killed
        assert not memory.claim_close(alice, "held", "another")  # its lease still runs
        assert memory.due_closes(alice) == []
        time.sleep(1.5)
        assert memory.due_closes(alice) == ["held"]
        survivor = Conversations(memory)
        try:
            [future] = survivor.sweep({alice}, aware(None), 3600)
            assert len(future.result(timeout=60)["remembered"]["edges_created"]) == 1
        finally:
            survivor.shutdown()
        assert state(memory, alice, "held")["status"] == "closed"


def test_a_close_longer_than_its_lease_is_not_taken_over(settings, alice):
    """The holder renews its lease while a slow extraction runs: another server's sweep,
    past the first lease's end, finds nothing due and extracts nothing a second time."""
    import threading

    from langchain_core.language_models import GenericFakeChatModel

    entered, release = threading.Event(), threading.Event()
    started: list[int] = []

    def slow():
        started.append(1)
        entered.set()
        release.wait(60)  # the model answers only once the other server has looked
        yield from EXTRACTION

    configured = settings.model_copy(update={"api_keys": {KEY: alice}, "close_lease_s": 1})
    with (Memory(configured, llm=GenericFakeChatModel(messages=slow())) as first,
          Memory(configured, llm=counting_model(started)) as second):
        now = aware(None)
        first.record_turns(alice, "slow", [{"role": "user", "content": SAID}], now, "proxy")
        first.request_close(alice, "slow", now)
        servers = [Conversations(first), Conversations(second)]
        try:
            [running] = servers[0].sweep({alice}, now, 3600)
            assert entered.wait(60)
            time.sleep(2.5)  # two and a half leases: an unrenewed one would have run out
            assert second.due_closes(alice) == []
            assert servers[1].sweep({alice}, aware(None), 3600) == []
            assert not second.claim_close(alice, "slow", servers[1].holder)
            release.set()
            assert len(running.result(timeout=60)["remembered"]["edges_created"]) == 1
        finally:
            release.set()
            for s in servers:
                s.shutdown()
        assert len(started) == 1  # extracted once
        assert state(first, alice, "slow")["status"] == "closed"
