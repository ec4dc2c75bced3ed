"""What an operator sees of `pegasus serve` (docs/reliability.md, docs/privacy.md): logs and
metrics without user words, every response counted, supervised background loops, a bounded
shutdown, outages answered fast, one retry policy bounded by the request deadline."""

from __future__ import annotations

import contextlib
import logging
import socket
import stat
import threading
import time

import pytest
from fastapi.testclient import TestClient
from neo4j.exceptions import TransientError

from pegasus import Memory
from pegasus.hook import Spool, locked_spool
from pegasus.llm import Extraction
from pegasus.serve.app import create_app
from pegasus.serve.conversations import Conversations
from tests.helpers import rel
from tests.serve.test_health import samples

KEY = "key-operations-01"
AUTH = {"Authorization": f"Bearer {KEY}"}
MARKER = "Zyxqwvmarker"  # a word no log line, label or status text could hold by chance


@contextlib.contextmanager
def served(settings, user_id, **changes):
    """A Memory with this test's key, its model loaded (as `pegasus serve` loads it before it
    listens: a first recall must not count the load against its deadline)."""
    # Generous bounds unless a test sets its own: the shared test machine can be slow.
    bounds = {"health_timeout_s": 10.0, "request_deadline_s": 120.0}
    with Memory(settings.model_copy(update={"api_keys": {KEY: user_id},
                                            **bounds, **changes})) as memory:
        memory.embedder.embed(["warm up"])
        yield memory


def test_logs_and_metrics_name_routes_never_words_and_count_500s(settings, user_id, caplog,
                                                                  capfd, monkeypatch):
    caplog.set_level(logging.INFO, logger="pegasus")
    with served(settings, user_id) as memory, TestClient(create_app(memory)) as http:
        committed = http.post("/v1/memory/commit", headers=AUTH, json={
            "conversation_id": f"c-{MARKER}", "batch": {"relations": [
                rel("User", "HAS_BOSS", f"{MARKER}a", f"my boss {MARKER}a")]}})
        assert committed.status_code == 200
        recalled = http.post("/v1/memory/recall", headers=AUTH, json={"text": f"{MARKER}a"})
        assert recalled.status_code == 200, recalled.text
        renamed = http.patch(f"/v1/memory/entities/{MARKER}a?why={MARKER}q", headers=AUTH,
                             json={"name": f"{MARKER}b", "add_aliases": [f"{MARKER}c"]})
        assert renamed.status_code == 200
        assert http.get(f"/v1/memory/entities/{MARKER}zz", headers=AUTH).status_code == 404
        assert http.post("/v1/memory/turns", headers=AUTH, json={
            "conversation_id": f"t-{MARKER}",
            "turns": [{"role": "user", "content": f"hello {MARKER}"}]}).status_code == 200

        def broken(*args):
            raise RuntimeError(f"a bug quoting the user: {MARKER}" * 1000)

        monkeypatch.setattr(memory, "merges", broken)
        failed = http.get("/v1/memory/merges", headers=AUTH)
        assert failed.status_code == 500
        assert failed.json()["error"]["type"] == "server_error" and MARKER not in failed.text
        assert http.request("ANYTHING", "/metrics").status_code == 405
        assert http.delete("/v1/memory?confirm=everything", headers=AUTH).status_code == 200
        text = http.get("/metrics").text
    out, err = capfd.readouterr()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for where in (text, logged, out, err):
        assert MARKER not in where and user_id not in where
    assert "PATCH /v1/memory/entities/{entity} 200" in logged
    assert "GET /v1/memory/merges failed: RuntimeError at test_operations.py" in logged
    got = samples(text)
    requests = "pegasus_http_requests_total"
    assert got[(requests, (("method", "GET"), ("route", "/v1/memory/merges"),
                           ("status", "500")))] == 1
    assert got[(requests, (("method", "other"), ("route", "/metrics"), ("status", "405")))] == 1
    assert not any(k[0] == requests and ("method", "ANYTHING") in k[1] for k in got)
    assert got[("pegasus_http_request_seconds_count",
                (("method", "PATCH"), ("route", "/v1/memory/entities/{entity}")))] == 1
    assert got[("pegasus_neo4j_up", ())] == 1
    assert got[("pegasus_closes_pending", ())] == 0
    assert "the same on every replica: do not sum" in text


def test_a_failing_background_loop_is_logged_counted_and_goes_on(settings, user_id, caplog,
                                                                 monkeypatch):
    caplog.set_level(logging.INFO, logger="pegasus")
    calls: list[float] = []
    original = Conversations.sweep

    def sweep_failing_once(self, *args):
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise TransientError(f"deadlock on {MARKER}")
        if len(calls) == 2:
            raise RuntimeError(f"not a PegasusError: {MARKER}")
        return original(self, *args)

    monkeypatch.setattr(Conversations, "sweep", sweep_failing_once)
    with served(settings, user_id, idle_sweep_s=0.2, idle_close_s=0.5) as memory, \
            TestClient(create_app(memory)) as http:
        assert http.post("/v1/memory/turns", headers=AUTH, json={
            "conversation_id": f"idle-{MARKER}",
            "turns": [{"role": "user", "content": "hello"}]}).status_code == 200
        deadline = time.monotonic() + 60
        while memory.conversation_state(user_id, f"idle-{MARKER}")["status"] != "closed":
            assert time.monotonic() < deadline, "the sweep stopped after its errors"
            time.sleep(0.2)
        got = samples(http.get("/metrics").text)
    errors = "pegasus_background_errors_total"
    assert got[(errors, (("kind", "TransientError"), ("loop", "idle_sweep")))] == 1
    assert got[(errors, (("kind", "RuntimeError"), ("loop", "idle_sweep")))] == 1
    assert got[("pegasus_closes_total", (("outcome", "awaiting"),))] == 1  # no LLM configured
    assert len(calls) >= 3
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "idle_sweep failed, tried again later: TransientError at test_operations.py" in logged
    # closed awaiting extraction (no LLM): said without naming the conversation or its user
    assert "closed a conversation without extracting it, kept awaiting extraction" in logged
    assert MARKER not in logged and user_id not in logged


def test_a_request_ends_by_its_deadline_with_a_clear_503(settings, user_id, monkeypatch):
    import pegasus.store as store_module

    original = store_module.run

    def always_transient(tx, name, **params):
        if name.startswith("read/entity_by_name"):
            raise TransientError("Neo.TransientError.Transaction.DeadlockDetected")
        return original(tx, name, **params)

    monkeypatch.setattr(store_module, "run", always_transient)
    # The retry window alone would keep retrying for 60 s; the request's deadline is 2 s.
    with served(settings, user_id, request_deadline_s=2.0, neo4j_retry_time_s=60.0) as memory:
        http = TestClient(create_app(memory))
        started = time.monotonic()
        answer = http.get("/v1/memory/entities/Sarah", headers=AUTH)
        took = time.monotonic() - started
    assert answer.status_code == 503
    assert answer.json()["error"]["type"] == "unavailable_error"
    assert "Neo4j stayed busy" in answer.json()["error"]["message"]
    assert took < 2.0 + 3.0  # the deadline, and at most one retry delay past it


class Relay:
    """A TCP relay on 127.0.0.1 in front of Neo4j's bolt port: `stop()` cuts every connection
    and refuses new ones, `black_hole()` keeps accepting but forwards nothing."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.mode = "open"
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.mode == "stopped":
                client.close()
                continue
            self.sockets.append(client)
            if self.mode == "black_hole":
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while self.mode == "open" and (data := source.recv(65536)):
                if self.mode != "open":
                    return  # black-holed: swallowed
                sink.sendall(data)
        except OSError:
            pass

    def _cut(self) -> None:
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self.sockets.clear()

    def stop(self) -> None:
        self.mode = "stopped"
        self._cut()

    def black_hole(self) -> None:
        self.mode = "black_hole"

    def open(self) -> None:
        self.mode = "open"

    def close(self) -> None:
        self.stop()
        self.listener.close()


@pytest.mark.parametrize("outage", ["stop", "black_hole"])
def test_an_outage_is_answered_fast_and_ends_fast(settings, user_id, outage):
    from urllib.parse import urlparse

    relay = Relay(urlparse(settings.neo4j_uri).port)
    through = settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{relay.port}"})
    try:
        with served(through, user_id, health_timeout_s=1.5, health_interval_s=0.5) as memory, \
                TestClient(create_app(memory)) as http:
            assert http.get("/readyz").status_code == 200
            getattr(relay, outage)()
            started = time.monotonic()
            while http.get("/readyz").status_code != 503:
                assert time.monotonic() - started < 10
            for path in ("/healthz", "/readyz", "/metrics"):
                asked = time.monotonic()
                answer = http.get(path)
                assert time.monotonic() - asked < 2.0, path
            assert http.get("/healthz").status_code == 200
            ready = http.get("/readyz")
            assert ready.status_code == 503 and "Neo4j at bolt://127.0.0.1" in ready.json()["neo4j"]
            assert samples(http.get("/metrics").text)[("pegasus_neo4j_up", ())] == 0
            asked = time.monotonic()
            recalled = http.post("/v1/memory/recall", headers=AUTH, json={"text": "Sarah"})
            assert time.monotonic() - asked < 5.0
            assert recalled.status_code == 503
            assert recalled.json()["error"]["type"] == "unavailable_error"
            if outage == "black_hole":
                relay._cut()  # what a restarted network does to the hung connections
            relay.open()
            back = time.monotonic()
            while (answer := http.get("/readyz")).status_code != 200:
                assert time.monotonic() - back < 15, answer.json()
                time.sleep(0.2)
            assert http.post("/v1/memory/recall", headers=AUTH,
                             json={"text": "Sarah"}).status_code == 200
    finally:
        relay.close()


def test_a_shutdown_step_that_never_ends_costs_its_grace_not_forever(settings, user_id,
                                                                      monkeypatch, caplog):
    """A TestClient's exit once hung for ten minutes waiting for the app's shutdown (whole
    suite, loaded machine): each step of the shutdown is now waited for shutdown_grace_s at
    most, then cancelled, and the next runs. Here closing the upstream client never ends."""
    import asyncio

    import httpx

    closing: list[bool] = []

    async def never(self) -> None:
        closing.append(True)
        await asyncio.Event().wait()

    monkeypatch.setattr(httpx.AsyncClient, "aclose", never)
    graced = settings.model_copy(update={"shutdown_grace_s": 1.0,
                                         "upstream_base_url": "http://127.0.0.1:9/v1"})
    with Memory(graced) as memory, caplog.at_level(logging.WARNING, "pegasus"):
        client = TestClient(create_app(memory))
        with client:
            assert client.get("/healthz").status_code == 200
            began = time.monotonic()
        assert time.monotonic() - began < 10
    assert closing and "shutdown step did not end within 1 s" in caplog.text


def test_shutdown_is_bounded_and_releases_the_running_close(settings, user_id, raw_driver,
                                                            monkeypatch):
    started_close = threading.Event()

    def slow_extraction(self, *args, **kwargs):  # stands for an LLM call that takes minutes
        started_close.set()
        time.sleep(60)

    with Memory(settings) as memory:
        monkeypatch.setattr(type(memory), "has_llm", property(lambda self: True))
        # An LLM that extracts every conversation (#36: the close asks which one extracts it)
        monkeypatch.setattr(type(memory), "extraction_for", lambda self, used: Extraction(
            "factory", "a slow scripted model", "SlowModel"))
        monkeypatch.setattr(type(memory.conversations), "commit_turns", slow_extraction)
        conversations = Conversations(memory)
        for n in range(3):
            memory.record_turns(user_id, f"q{n}", [{"role": "user", "content": "hi"}])
            conversations.close(user_id, f"q{n}")
        assert started_close.wait(30)
        asked = time.monotonic()
        conversations.shutdown(1.0)
        assert time.monotonic() - asked < 3.0
    rows = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u}) RETURN c.id AS id, c.status AS status, "
        "c.close_holder AS holder, c.close_attempts AS attempts ORDER BY id", u=user_id).records
    assert [(r["id"], r["status"], r["holder"], r["attempts"]) for r in rows] == [
        (f"q{n}", "closing", None, 0) for n in range(3)]  # released, not counted as failed
    monkeypatch.undo()
    with Memory(settings) as memory:  # the next start, or another replica
        again = Conversations(memory)
        for future in again.sweep({user_id}, time_now(), 3600):
            future.result(timeout=60)
        again.shutdown(5.0)
        assert [memory.conversation_state(user_id, f"q{n}")["status"] for n in range(3)] == \
            ["closed"] * 3


def time_now():
    from pegasus.clock import aware

    return aware(None)


def test_the_hook_spool_is_readable_by_its_owner_only(tmp_path):
    path = tmp_path / "state" / "pegasus" / "hook-spool.json"
    with locked_spool(path) as spool:
        spool.pending.append({"prompt": "my words"})
        spool.save()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert Spool(path).pending == [{"prompt": "my words"}]


def test_the_hook_spool_narrows_a_wider_folder_and_files(tmp_path):
    folder = tmp_path / "state" / "pegasus"
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)  # as an older version, or a umask, left it
    path = folder / "hook-spool.json"
    path.write_text('{"pending": [{"prompt": "older words"}]}')
    path.chmod(0o644)
    lock = folder / "hook-spool.json.lock"
    lock.touch(mode=0o644)
    lock.chmod(0o644)
    with locked_spool(path) as spool:
        assert spool.pending == [{"prompt": "older words"}]
        spool.pending.append({"prompt": "my words"})
        spool.save()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert Spool(path).pending == [{"prompt": "older words"}, {"prompt": "my words"}]


def test_the_hook_never_reads_or_writes_a_spool_through_a_planted_link(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # a sticky shared folder (as /tmp) is left as it is
    planted = tmp_path / "attacker.json"
    planted.write_text('{"pending": [{"prompt": "words the person never said"}]}')
    path = shared / "hook-spool.json"
    path.symlink_to(planted)
    with pytest.raises(PermissionError, match="folder of your own"), locked_spool(path):
        pass
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert planted.read_text() == '{"pending": [{"prompt": "words the person never said"}]}'
    temporary = shared / "hook-spool2.json.tmp"
    temporary.symlink_to(planted)
    spool = Spool(shared / "hook-spool2.json")
    with pytest.raises(OSError):
        spool.save()  # O_NOFOLLOW: the planted .tmp is not written through
    assert "never said" in planted.read_text()
