import math
from datetime import UTC, datetime, timedelta

import pytest

from pegasus import Memory
from pegasus.vocab import STABILITIES
from tests.helpers import edges, rel

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LAMBDA = {"immutable": 0.0, "stable": 0.005, "mutable": 0.020, "time_bound": 0.050,
          "ephemeral": 0.200}


@pytest.fixture
def mem(settings, user_id):
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", {
            "entities": [{"name": s.title(), "kind": "THING"} for s in STABILITIES],
            "relations": [rel("User", "HAS", s.title(), stability=s) for s in STABILITIES],
        }, at=T0)
        yield memory


def strengths(driver, user_id):
    return {p["stability"]: p for _, _, _, p in edges(driver, user_id)}


@pytest.mark.parametrize("days", [1, 30, 365])
def test_each_stability_follows_the_formula(mem, raw_driver, user_id, days):
    report = mem.consolidate(at=T0 + timedelta(days=days))
    assert report.edges >= 5
    for stability, p in strengths(raw_driver, user_id).items():
        expected = 100 * math.exp(-LAMBDA[stability] * days)
        assert p["strength"] == pytest.approx(expected, abs=1e-9), stability
        assert p["dormant"] == (expected < 2.0)
        assert p["strength_at_touch"] == 100.0  # decay never moves S0


def test_daily_for_sixty_days_equals_once_on_day_sixty(mem, raw_driver, user_id, settings):
    for day in range(1, 61):
        mem.consolidate(at=T0 + timedelta(days=day))
    daily = {s: p["strength"] for s, p in strengths(raw_driver, user_id).items()}
    mem.consolidate(at=T0 + timedelta(days=60))
    mem.consolidate(at=T0 + timedelta(days=60))
    once = {s: p["strength"] for s, p in strengths(raw_driver, user_id).items()}
    assert daily == pytest.approx(once, abs=1e-12)
    assert daily["immutable"] == 100.0


def test_ephemeral_goes_dormant_within_twenty_days_and_reinforcement_revives_it(
        mem, raw_driver, user_id):
    report = mem.consolidate(at=T0 + timedelta(days=19))
    p = strengths(raw_driver, user_id)["ephemeral"]
    assert p["dormant"] is False  # 100·e^(−3.8) ≈ 2.24
    report = mem.consolidate(at=T0 + timedelta(days=20))
    p = strengths(raw_driver, user_id)["ephemeral"]
    assert p["dormant"] is True and report.dormant_now == 1  # 100·e^(−4) ≈ 1.83
    recall = mem.recall(user_id, "ephemeral", at=T0 + timedelta(days=20))
    # A dormant edge is never a memory line; its own words still quote it (design §7.6).
    assert all("Ephemeral" not in line for line in recall.memory)
    assert recall.context == ["User has Ephemeral"]
    revive_at = T0 + timedelta(days=21)
    mem.commit(user_id, "c2", {"relations": [rel("User", "HAS", "Ephemeral",
                                                 stability="ephemeral")]}, at=revive_at)
    p = strengths(raw_driver, user_id)["ephemeral"]
    assert p["dormant"] is False
    assert p["strength"] == pytest.approx(100 * math.exp(-0.2 * 21) + 15, abs=1e-9)
    mem.consolidate(at=revive_at)
    assert strengths(raw_driver, user_id)["ephemeral"]["dormant"] is False


def test_decay_never_deletes(mem, raw_driver, user_id):
    mem.consolidate(at=T0 + timedelta(days=3650))
    assert len(edges(raw_driver, user_id)) == 5
    assert strengths(raw_driver, user_id)["immutable"]["strength"] == 100.0
