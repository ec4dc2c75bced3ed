"""The read log written off the request path: a background writer, in order, at least once."""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from neo4j import ManagedTransaction

from pegasus.errors import Neo4jUnavailableError
from pegasus.store import Store, run

log = logging.getLogger(__name__)


def read_log_id(value: str) -> str:
    """An id as a read-log entry writes it: "%" and "/" escaped, so an id that holds "/" (an
    imported one may) never splits into two."""
    return value.replace("%", "%25").replace("/", "%2F")


def _id_of(part: str) -> str:
    return part.replace("%2F", "/").replace("%25", "%")


def read_log_entry(source_id: str, edge_id: str, target_id: str) -> str:
    """One edge in a conversation's read log: "source/edge/target", each id escaped."""
    return "/".join(read_log_id(i) for i in (source_id, edge_id, target_id))


def read_log_row(entry: str) -> dict[str, str | None]:
    """A read-log entry as a reinforce row; entries logged before targets were ("source/edge")
    have no target."""
    source_id, edge_id, *target = entry.split("/", 2)
    return {"source_id": _id_of(source_id), "edge_id": _id_of(edge_id),
            "target_id": _id_of(target[0]) if target else None}


@dataclass(frozen=True)
class Read:
    """One recall's entries for one conversation's read log."""

    user_id: str
    conversation_id: str
    entries: list[str]
    now: datetime


def write_reads(tx: ManagedTransaction, reads: list[Read]) -> None:
    """Append each read to its conversation's log, in the order they were read."""
    for r in reads:
        run(tx, "write/read_log", user_id=r.user_id, conversation_id=r.conversation_id,
            entries=r.entries, now=r.now)


class ReadLogWriter:
    """Writes reads on one background thread (design §7.10, "Off the request path").

    Order: one thread writes the reads in the order they were queued, those queued meanwhile
    together in one transaction. At least once: a write that fails (the store has already
    retried it) stays at the head of the queue and is tried again, so nothing queued is lost
    while the process lives; an entry written twice is harmless, a close reinforces each edge
    once. Whatever reads the log (a close, an erasure, an export) calls `flush` first."""

    def __init__(self, store: Store, retry_s: float = 1.0) -> None:
        self.store = store
        self.retry_s = retry_s
        self._pending: deque[Read] = deque()
        self._queued = 0  # reads queued since start
        self._written = 0  # reads written since start (a prefix of the queue's order)
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def append(self, read: Read) -> None:
        """Queue one read; returns at once."""
        with self._changed:
            self._pending.append(read)
            self._queued += 1
            if self._thread is None or not self._thread.is_alive():
                self._stopping = False
                self._thread = threading.Thread(target=self._run, name="pegasus-read-log",
                                                daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait until every read queued before this call is written."""
        with self._changed:
            target = self._queued
            if not self._changed.wait_for(lambda: self._written >= target, timeout=timeout_s):
                raise Neo4jUnavailableError(
                    f"{target - self._written} recalls' read logs are not written yet (Neo4j "
                    "unreachable?); nothing was changed, try again")

    def close(self, timeout_s: float = 60.0) -> None:
        """Write what is queued, then stop the thread."""
        if self._thread is None:
            return
        try:
            self.flush(timeout_s)
        finally:
            with self._changed:
                self._stopping = True
                self._changed.notify_all()
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending or self._stopping)
                if not self._pending:
                    return
                batch = list(self._pending)
            try:
                self.store.write(partial(write_reads, reads=batch))
            except Exception:  # kept and tried again: a read log is never dropped
                log.exception("read log not written (%d reads); retrying in %.0f s",
                              len(batch), self.retry_s)
                with self._changed:
                    self._changed.wait(self.retry_s)
                continue
            with self._changed:
                for _ in batch:
                    self._pending.popleft()
                self._written += len(batch)
                self._changed.notify_all()
