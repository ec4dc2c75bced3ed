"""Streams that fail end as failures (#47): an export while Neo4j is down is a 503 before its
first byte, on the API and on the page; one that fails midway breaks the transfer (no clean
end of the chunked body, no end line), and such a file is refused by the import. The page's
routes take the API's outage path: 503 within the probe's bound, not after the driver's retries.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from datetime import UTC, datetime
from urllib.parse import urlparse

import httpx
import pytest
from fastapi.testclient import TestClient

from pegasus.errors import InvalidExportError, Neo4jUnavailableError
from pegasus.serve.app import create_app
from pegasus.transfer import export as export_module
from pegasus.transfer.format import MINOR
from tests.helpers import rel
from tests.serve.servers import serving
from tests.serve.test_operations import AUTH, KEY, Relay, served
from tests.serve.test_page import csrf_of

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)
WORK = {"entities": [{"name": "Sarah", "kind": "PERSON"}, {"name": "Acme", "kind": "ORG"}],
        "relations": [rel("User", "HAS_BOSS", "Sarah", "my boss Sarah"),
                      rel("User", "WORKS_AT", "Acme", "I work at Acme")]}


def sign_in(http: TestClient | httpx.Client) -> str:
    answer = http.post("/sign-in", data={"key": KEY}, follow_redirects=False)
    assert answer.status_code == 303
    return csrf_of(http.get("/memories").text)


@contextlib.contextmanager
def outage(settings, user_id, **changes):
    """A served app whose Neo4j is behind a relay; (client, memory, relay), relay open."""
    relay = Relay(urlparse(settings.neo4j_uri).port)
    through = settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{relay.port}"})
    try:
        with served(through, user_id, **{"health_timeout_s": 1.5, "health_interval_s": 0.5,
                                         **changes}) as memory, \
                TestClient(create_app(memory)) as http:
            memory.commit(user_id, "c1", WORK, at=T1)
            yield http, memory, relay
    finally:
        relay.close()


def wait_until_down(http: TestClient) -> None:
    started = time.monotonic()
    while http.get("/readyz").status_code != 503:
        assert time.monotonic() - started < 15, "the probe never saw the outage"
        time.sleep(0.1)


def test_an_export_while_neo4j_is_down_is_a_503_before_the_first_byte(settings, user_id):
    with outage(settings, user_id) as (http, memory, relay):
        csrf = sign_in(http)
        assert http.get("/v1/memory/export", headers=AUTH).status_code == 200
        relay.stop()
        wait_until_down(http)
        asked = time.monotonic()
        api = http.get("/v1/memory/export", headers=AUTH)
        assert time.monotonic() - asked < 2.0
        assert api.status_code == 503 and api.json()["error"]["type"] == "unavailable_error"
        assert "pegasus-memory-export" not in api.text
        asked = time.monotonic()
        page = http.get("/export")
        assert time.monotonic() - asked < 2.0
        assert page.status_code == 503 and "pegasus-memory-export" not in page.text
        assert page.headers["content-type"].startswith("text/html")
        assert "Content-Disposition" not in page.headers
        # The import is refused before its upload is read, too.
        refused = http.post("/import", data={"csrf": csrf},
                            files={"file": ("m.jsonl", "x" * 100, "application/x-ndjson")})
        assert refused.status_code == 503


def test_an_export_the_probe_has_not_seen_fail_is_a_503_within_the_deadline(settings,
                                                                           user_id):
    # The probe last saw Neo4j up: the export's first line, read before the response starts,
    # meets the outage itself.
    with outage(settings, user_id, health_interval_s=600.0, request_deadline_s=3.0,
                neo4j_retry_time_s=2.0) as (http, memory, relay):
        relay.stop()
        asked = time.monotonic()
        api = http.get("/v1/memory/export", headers=AUTH)
        took = time.monotonic() - asked
        assert api.status_code == 503 and "pegasus-memory-export" not in api.text
        assert took < 3.0 + memory.settings.neo4j_connect_timeout_s + 2.0


def test_the_page_answers_503_within_the_probes_bound_in_an_outage(settings, user_id):
    with outage(settings, user_id) as (http, memory, relay):
        csrf = sign_in(http)
        [boss] = memory.memories(user_id, about="Sarah")
        relay.stop()
        wait_until_down(http)
        reads = ["/memories", f"/memories/{boss.id}", f"/entities/{boss.target_id}", "/merges"]
        changes = {"/search": {"q": "Sarah"}, f"/memories/{boss.id}/retract": {},
                   f"/entities/{boss.target_id}/rename": {"name": "Sara"},
                   f"/memories/{boss.id}/forget": {},
                   "/forget/conversation": {"conversation": "c1"},
                   "/forget/everything": {"confirm": "everything"}}
        for path in [*reads, *changes]:
            asked = time.monotonic()
            if path in changes:
                answer = http.post(path, data={"csrf": csrf, **changes[path]})
            else:
                answer = http.get(path)
            assert time.monotonic() - asked < 2.0, path
            assert answer.status_code == 503, path
            assert "try again shortly" in answer.text and "text/html" in \
                answer.headers["content-type"], path
        relay.open()
        back = time.monotonic()
        while http.get("/readyz").status_code != 200:
            assert time.monotonic() - back < 15
            time.sleep(0.2)
        assert http.get(f"/entities/{boss.target_id}").status_code == 200
        assert len(memory.memories(user_id)) == 2  # nothing was changed in the outage


def _failing_midway(monkeypatch) -> None:
    """Neo4j lost after the export's first memory: what the outage attack did midway."""
    original = export_module._memory
    seen = []

    def memory(row):
        seen.append(row)
        if len(seen) > 1:
            raise Neo4jUnavailableError("lost the connection to Neo4j during a read")
        return original(row)

    monkeypatch.setattr(export_module, "_memory", memory)


@pytest.mark.parametrize("route", ["/v1/memory/export", "/export"])
def test_an_export_that_fails_midway_breaks_the_transfer_and_the_file_is_refused(
        settings, user_id, monkeypatch, tmp_path, route):
    with served(settings, user_id) as memory:
        memory.commit(user_id, "c1", WORK, at=T1)
        app = create_app(memory)
        with serving(app) as base, httpx.Client(base_url=base, headers=AUTH, timeout=300) as http:
            whole = http.get(route) if route.startswith("/v1") else None
            if route == "/export":
                sign_in(http)
                whole = http.get(route)
            assert whole.status_code == 200
            assert json.loads(whole.text.splitlines()[-1])["type"] == "end"
            _failing_midway(monkeypatch)
            received = b""
            with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"), \
                    http.stream("GET", route) as answer:
                assert answer.status_code == 200  # the head was out before it failed
                for chunk in answer.iter_bytes():
                    received += chunk
            monkeypatch.undo()
            # The partition lock went with the broken transfer: a commit goes through.
            memory.commit(user_id, "c2", {"relations": [rel("User", "LIKES", "Tea")]}, at=T1)
    lines = received.decode().splitlines()
    assert json.loads(lines[0])["type"] == "header" and json.loads(lines[0])["minor"] == MINOR
    assert all(json.loads(line)["type"] != "end" for line in lines)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(received)
    with pytest.raises(InvalidExportError, match="ends without its end line"):
        memory_import(settings, cut)


def memory_import(settings, path) -> None:
    from pegasus import Memory

    with Memory(settings) as memory:
        memory.import_memory("someone-else", path)


def blocked(driver) -> bool:
    """Whether a transaction of the database waits for a lock another one holds."""
    rows = driver.execute_query("SHOW TRANSACTIONS YIELD status RETURN status").records
    return any(str(r["status"]).startswith("Blocked") for r in rows)


def test_an_export_reads_one_state_of_the_partition(settings, user_id, raw_driver):
    # A commit that lands while an export reads waits for it (the partition lock): the file
    # is the memory as it was when the export began, and it imports.
    with served(settings, user_id) as memory:
        memory.commit(user_id, "c1", WORK, at=T1)
        lines = memory.export(user_id)
        header = next(lines)
        committed = threading.Event()

        def commit() -> None:
            memory.commit(user_id, "c2", {
                "entities": [{"name": "Zed", "kind": "PERSON"}],
                "relations": [rel("User", "KNOWS", "Zed", "I know Zed")]}, at=T1)
            committed.set()

        writer = threading.Thread(target=commit)
        writer.start()
        waited = time.monotonic()
        while not blocked(raw_driver):  # the commit's transaction waits for the export's lock
            assert not committed.is_set(), "the commit landed while the export read"
            assert time.monotonic() - waited < 120
            time.sleep(0.1)
        rest = list(lines)
        writer.join(60)
        assert committed.is_set()
    records = [json.loads(line) for line in [header, *rest]]
    assert [r["name"] for r in records if r["type"] == "entity"] != [] and \
        "Zed" not in {r.get("name") for r in records}
    assert records[-1] == {"type": "end", "entities": 3, "memories": 2, "conversations": 1,
                           "merge_records": 0}
    assert re.search("I know Zed", "".join(rest)) is None


def test_a_reader_that_stops_reading_an_export_is_cut_off_and_holds_no_write(settings,
                                                                             user_id):
    """An export holds its snapshot's lock until it ends: a client that opened one and
    stopped reading held the person's commits for the export's 600 s (outside attack). Each
    part must reach the client within send_timeout_s: the stalled reader is cut off, its
    transaction ends, and the commit waiting on it goes through."""
    import socket

    with served(settings, user_id, send_timeout_s=2.0) as memory, \
            serving(create_app(memory)) as url:
        memory.commit(user_id, "c1", WORK, at=T1)
        words = "my sister Ines moved to Lisbon last spring and loves it there " * 3000
        for n in range(5):  # ~9 MB of turns: more than the sockets' buffers hold
            memory.record_turns(user_id, f"long-{n}", [
                {"role": "user", "content": words[:180_000]} for _ in range(10)])
        host, port = urlparse(url).hostname, urlparse(url).port
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect((host, port))
        stalled.sendall(f"GET /v1/memory/export?with_turns=true HTTP/1.1\r\nHost: {host}\r\n"
                        f"Authorization: Bearer {KEY}\r\n\r\n".encode())
        assert stalled.recv(1024).startswith(b"HTTP/1.1 200")  # then it reads no more
        started = time.monotonic()
        committed = httpx.post(url + "/v1/memory/commit", headers=AUTH, timeout=60, json={
            "conversation_id": "c2", "batch": {"entities": [{"name": "Ana", "kind": "PERSON"}],
                                               "relations": [rel("User", "HAS_FRIEND", "Ana",
                                                                 "my friend Ana")]}})
        assert committed.status_code == 200, committed.text
        assert time.monotonic() - started < 30  # the cut at ~2 s, not the export's 600 s
        # the stalled reader's transfer was broken: draining it finds no end line
        stalled.settimeout(30)
        rest = b""
        with contextlib.suppress(OSError):
            while chunk := stalled.recv(1 << 16):
                rest += chunk
        stalled.close()
        assert b'"type": "end"' not in rest and b'"type":"end"' not in rest
