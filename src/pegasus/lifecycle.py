"""The daily decay pass (design §6): recomputing strengths, purging turns past retention, and
its schedule across servers sharing a database. (A conversation's close and its backlog live
in `pegasus.conversations`.)"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from pegasus.models.reports import DecayReport
from pegasus.settings import Settings
from pegasus.store import Store


def retention_start(now: datetime, days: float) -> datetime:
    """`days` before `now`; the earliest instant when that is before year 1 (a pass "at" an
    instant in year 1 keeps everything instead of failing)."""
    earliest = datetime.min.replace(tzinfo=now.tzinfo)
    return now - timedelta(days=days) if now - earliest > timedelta(days=days) else earliest


def consolidate(store: Store, settings: Settings, now: datetime,
                user_id: str | None = None) -> DecayReport:
    """Recompute edge strengths at `now` (every user's, or one user's); mark dormant, expired;
    delete the recorded turns past their retention (design §10)."""
    before = store.read("read/decay_counts", user_id=user_id)[0]
    store.autocommit("maintenance/decay", now=now, lambdas=settings.decay_lambdas,
               dormant_below=settings.dormant_below, batch_size=settings.decay_batch_size,
               user_id=user_id)
    after = store.read("read/decay_counts", user_id=user_id)[0]
    batches = -(-after["edges"] // settings.decay_batch_size) if after["edges"] else 0
    purged = store.write("maintenance/purge_turns", user_id=user_id, now=now,
                           before=retention_start(now, settings.turn_retention_days))
    return DecayReport(at=now, edges=after["edges"], turns_purged=purged[0]["purged"],
                       dormant_now=max(after["dormant"] - before["dormant"], 0),
                       dormant_total=after["dormant"],
                       expired_now=max(after["expired"] - before["expired"], 0),
                       batches=batches)


def scheduled_consolidate(store: Store, settings: Settings, now: datetime,
                          lease_s: float = 3600.0) -> DecayReport | None:
    """The daily pass, if no pass ran in the last `decay_interval_h` hours and no other
    process is running one (the claim is recorded in the graph); else None."""
    holder = uuid.uuid4().hex
    due_before = retention_start(now, settings.decay_interval_h / 24)
    claim = store.write("write/claim_decay", holder=holder, now=now, due_before=due_before,
                          lease_s=int(lease_s))[0]
    if not claim["claimed"]:
        return None
    report = consolidate(store, settings, now)
    store.write("write/finish_decay", holder=holder, now=now, edges=report.edges,
                  dormant_now=report.dormant_now)
    return report


def next_daily_run(now: datetime, hour: int) -> datetime:
    """The next `hour`:00 UTC strictly after `now`."""
    run_at = now.replace(hour=hour, minute=0, second=0, microsecond=0)
    return run_at if run_at > now else run_at + timedelta(days=1)
