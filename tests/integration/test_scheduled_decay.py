"""Decay runs by itself (design §6): once a day, never twice for servers sharing a database."""

import threading
import time
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from pegasus import Memory
from pegasus.lifecycle import next_daily_run
from pegasus.serve.app import create_app
from tests.helpers import edges, rel

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def last_run(raw_driver):
    rows = raw_driver.execute_query(
        "MATCH (m:PegasusMaintenance {name: 'decay'}) RETURN m.last_run_at AS at").records
    return rows[0]["at"].to_native() if rows and rows[0]["at"] else None


def test_two_servers_due_at_once_run_the_pass_once(settings, raw_driver, user_id):
    with Memory(settings) as a, Memory(settings) as b:
        a.commit(user_id, "c1", {"relations": [rel("User", "LIKES", "Tea", "I like tea",
                                                   stability="mutable")]}, at=T0)
        at = T0 + timedelta(days=10)
        results: list = []
        threads = [threading.Thread(target=lambda m=m: results.append(m.consolidate_if_due(at)))
                   for m in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ran = [r for r in results if r is not None]
        assert len(ran) == 1 and ran[0].edges >= 1
        assert last_run(raw_driver) == at
        assert a.consolidate_if_due(at + timedelta(hours=12)) is None  # not a day yet
        later = b.consolidate_if_due(at + timedelta(days=1))
        assert later is not None and last_run(raw_driver) == at + timedelta(days=1)
    [(_, _, _, tea)] = edges(raw_driver, user_id)
    assert tea["strength"] < 100.0  # the pass did decay the edge


def test_serve_runs_an_overdue_pass_at_start_up(settings, raw_driver, user_id):
    served = settings.model_copy(update={"decay_in_serve": True})
    with Memory(served) as mem:
        mem.commit(user_id, "c1", {"relations": [rel("User", "LIKES", "Tea", "I like tea")]})
        assert last_run(raw_driver) is None
        with TestClient(create_app(mem)):
            deadline = time.monotonic() + 60
            while last_run(raw_driver) is None and time.monotonic() < deadline:
                time.sleep(0.2)
    assert last_run(raw_driver) is not None


def test_the_next_run_is_the_next_configured_hour():
    assert next_daily_run(datetime(2026, 5, 1, 2, 59, tzinfo=UTC), 3) == datetime(
        2026, 5, 1, 3, tzinfo=UTC)
    assert next_daily_run(datetime(2026, 5, 1, 3, 0, tzinfo=UTC), 3) == datetime(
        2026, 5, 2, 3, tzinfo=UTC)
