"""Conversation close (read reinforcement, design §7.10), the backlog of closes awaiting
extraction (design §3), and the daily decay pass (design §6)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from neo4j import ManagedTransaction

from pegasus.models.reports import DecayReport
from pegasus.recall.read_log import read_log_row
from pegasus.settings import Settings
from pegasus.store import Store, run
from pegasus.write.reinforce import reinforce


def close_in_tx(tx: ManagedTransaction, settings: Settings, user_id: str, conversation_id: str,
                now: datetime) -> int:
    """Reinforce each edge the conversation's reads logged, once; the number reinforced."""
    log = run(tx, "read/read_log", user_id=user_id, conversation_id=conversation_id)[0]
    applied = set(log["applied"])
    entries = [e for e in dict.fromkeys(log["pending"]) if e not in applied]
    rows = [read_log_row(e) for e in entries]
    count = reinforce(tx, settings, user_id, rows, now) if rows else 0
    run(tx, "write/close_conversation", user_id=user_id, conversation_id=conversation_id, now=now,
        reinforced=count)
    return count


def await_extraction(store: Store, user_id: str, conversation_id: str, why: str,
                     now: datetime) -> None:
    """Keep a conversation that no LLM could extract as awaiting extraction (turns kept)."""
    store.write("write/await_extraction", user_id=user_id, conversation_id=conversation_id,
                  why=why, now=now)


def awaiting_extraction(store: Store, user_id: str | None = None) -> list[dict[str, Any]]:
    """The backlog in the order it closed: [{user_id, id, model}] (every user's, or one's)."""
    return store.read("read/awaiting_extraction", user_id=user_id)


def claim_extraction(store: Store, user_id: str, conversation_id: str, lease_s: float) -> bool:
    """Take one awaiting conversation's extraction for this worker; False when it is no
    longer awaiting or another worker holds it."""
    rows = store.write("write/claim_extraction", user_id=user_id,
                         conversation_id=conversation_id, now=datetime.now(UTC),
                         lease_s=int(lease_s))
    return bool(rows and rows[0]["claimed"])


def extraction_done(store: Store, user_id: str, conversation_id: str, now: datetime) -> None:
    """The conversation leaves the backlog; its turns' retention counts from `now`."""
    store.write("write/extracted", user_id=user_id, conversation_id=conversation_id, now=now)


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
