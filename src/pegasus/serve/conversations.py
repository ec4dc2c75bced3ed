"""Recorded conversations (the proxy's and the Opencode plugin's): which one a request
belongs to, its turns, and closing it.

Every turn is in the graph as soon as it happens, and its user turns are recallable from the
user's other conversations at once (design §7.11). While a conversation stays open, its new user
turns are consolidated (extracted and committed) once it has been quiet for consolidate_after_s,
once consolidate_every_turns of them wait, or once the user opens another conversation (design
§9, "Consolidated during the session"). A close is accepted at once and marked
`closing` in the graph; one background worker extracts what is left of the recorded transcript
(when an LLM is configured) and applies the read reinforcement, so no reply ever waits for it;
with no LLM, the conversation closes awaiting extraction, and the backlog is extracted once one
is configured. A failed attempt
is tried again after close_retry_s, doubling, up to close_max_attempts; a server that restarts
finds the `closing` conversations in the graph and goes on with them. At shutdown the worker
gets a grace period: a close still running after it is released (its lease cleared) for another
server, or this one's next start, and the process exits without waiting for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any

from pegasus.clock import aware
from pegasus.errors import PegasusError
from pegasus.memory import Memory
from pegasus.models.reports import CommitReport
from pegasus.serve.observe import cause_of, kind_of

log = logging.getLogger("pegasus.serve")
MAX_CONTINUATIONS = 100
MAX_ID_CHARS = 200  # the limit of every id (screen.check_id, the HTTP models)


def continuation_id(base: str, n: int) -> str:
    """The n-th continuation of a closed conversation, `base.n`, never past the id limit: a
    base too long for it keeps its head and a digest of the whole (deterministic, so every
    turn and every replica finds the same continuation)."""
    plain = f"{base}.{n}"
    if len(plain) <= MAX_ID_CHARS:
        return plain
    digest = hashlib.sha256(base.encode()).hexdigest()[:16]
    tail = f"~{digest}.{n}"
    return base[:MAX_ID_CHARS - len(tail)] + tail
_STOP = None  # what the worker's queue holds to tell it to end


def derived_id(user_id: str, messages: list[dict[str, Any]]) -> str:
    """A conversation id from the history a client resends each turn: its opening messages.

    Clients resend the whole history, so the system prompt and the first user message are
    stable for the life of a conversation. Two conversations that open with the very same
    words share an id: clients that can should send the X-Pegasus-Conversation header.
    """
    system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
    first = next((m.get("content") for m in messages if m.get("role") == "user"), None)
    digest = hashlib.sha256(json.dumps([user_id, system, first], default=str).encode())
    return "auto-" + digest.hexdigest()[:20]


class Conversations:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.metrics = None  # set by the application: closes are counted by outcome
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closing: set[tuple[str, str]] = set()
        self._consolidating: set[tuple[str, str]] = set()
        # After a failed in-session extraction, when the conversation may be tried again
        # (monotonic seconds): the sweep would otherwise ask a failing LLM every idle_sweep_s.
        self._retry_at: dict[tuple[str, str], float] = {}
        self._running: tuple[str, str] | None = None
        self._stopping = threading.Event()
        self.holder = uuid.uuid4().hex  # this server's name on the close leases it holds
        self._lock = threading.Lock()
        # A daemon thread: the process may exit while a close (an LLM call) still runs in it;
        # the close is released first and done again elsewhere.
        self._worker = threading.Thread(target=self._work, name="pegasus-close", daemon=True)
        self._worker.start()

    def _work(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            future, fn, args = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # the future carries it to whoever waits
                    future.set_exception(exc)

    def _enqueue(self, fn: Callable[..., Any], *args: Any) -> Future:
        future: Future = Future()
        self._queue.put((future, fn, args))
        return future

    def shutdown(self, grace_s: float = 30.0) -> None:
        """Stop: closes not started stay `closing` in the graph; the running one gets grace_s,
        then its lease is released for another server or the next start."""
        self._stopping.set()
        self._queue.put(_STOP)
        self._worker.join(timeout=grace_s)
        with self._lock:
            running = self._running
        if self._worker.is_alive() and running is not None:
            log.warning("a close was still running at shutdown: released for another server "
                        "or the next start")
            user_id, conversation_id = running
            self.memory.release_close(user_id, conversation_id, self.holder)

    def wait(self, timeout_s: float = 120.0) -> None:
        """Return once every close scheduled so far has run (one worker: they run in order)."""
        self._enqueue(lambda: None).result(timeout=timeout_s)

    def _state(self, user_id: str, conversation_id: str) -> dict[str, Any]:
        return self.memory.conversation_state(user_id, conversation_id)

    def resolve(self, user_id: str, base: str) -> str:
        """`base` while it is open (or new); after it closed, `base.2`, `base.3` … ."""
        for n in range(1, MAX_CONTINUATIONS + 1):
            candidate = base if n == 1 else continuation_id(base, n)
            with self._lock:
                closing = (user_id, candidate) in self._closing
            state = self._state(user_id, candidate)
            if not closing and (not state["exists"] or state["status"] == "open"):
                return candidate
        raise PegasusError(f"conversation {base!r} was closed {MAX_CONTINUATIONS} times; "
                           "start a new one")

    def record(self, user_id: str, conversation_id: str, turns: list[dict[str, Any]],
               now: datetime, source: str = "proxy", model: str | None = None) -> int:
        """Append turns to the conversation's transcript; the number of turns it now holds.
        `model`: the model the client asked for (the proxy's requests name it). A new
        conversation starts the consolidation of the user's paused ones; a conversation with
        consolidate_every_turns user turns waiting is consolidated now."""
        if not turns:
            return len(self._state(user_id, conversation_id)["turns"])
        recorded = self.memory.record(user_id, conversation_id, turns, now, source, model)
        settings = self.memory.settings
        if self.memory.has_llm and not self._stopping.is_set():
            if recorded.created:
                for paused in self.memory.paused_conversations(user_id, now, conversation_id):
                    self.consolidate(user_id, paused)
            every = settings.consolidate_every_turns
            if every and recorded.pending >= every:
                self.consolidate(user_id, conversation_id)
        return recorded.turns

    def consolidate(self, user_id: str, conversation_id: str) -> Future | None:
        """Extract an open conversation's user turns not consolidated yet, in the worker; None
        when it is already queued, closing, or waiting after a failure."""
        key = (user_id, conversation_id)
        with self._lock:
            if (key in self._consolidating or key in self._closing
                    or self._retry_at.get(key, 0.0) > time.monotonic()):
                return None
            self._consolidating.add(key)
        return self._enqueue(self._consolidate, user_id, conversation_id)

    def _consolidate(self, user_id: str, conversation_id: str) -> dict[str, Any]:
        key = (user_id, conversation_id)
        try:
            if self._stopping.is_set():
                return {"outcome": "skipped"}
            state = self._state(user_id, conversation_id)
            if state["status"] != "open":  # its close extracts what is left
                return {"outcome": "skipped"}
            extracted = self.memory.extract_turns(user_id, conversation_id)
        except Exception as exc:
            delay = self.memory.settings.close_retry_s
            with self._lock:
                self._retry_at[key] = time.monotonic() + delay
            # By kind: its message may quote the user's words (docs/privacy.md, "Logs").
            log.warning("consolidating an open conversation failed, tried again in %.0f s or "
                        "at its close: %s", delay, cause_of(exc))
            self._count_consolidation("failed")
            return {"outcome": "failed"}
        finally:
            with self._lock:
                self._consolidating.discard(key)
        if extracted.outcome == "awaiting":
            with self._lock:  # no model for it now: asked again after a while, or at close
                self._retry_at[key] = time.monotonic() + self.memory.settings.close_retry_s * 20
        with self._lock:
            if extracted.outcome != "awaiting":
                self._retry_at.pop(key, None)
        self._count_consolidation(extracted.outcome)
        if extracted.outcome == "extracted" and extracted.report is not None:
            if self.metrics is not None:
                self.metrics.commits.inc()
            log.info("consolidated an open conversation: %s", counts(extracted.report))
        return {"outcome": extracted.outcome, "turns": extracted.turns}

    def _count_consolidation(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.consolidations.labels(outcome).inc()

    def turns(self, user_id: str, conversation_id: str) -> list[dict[str, str]]:
        return [json.loads(t) for t in self._state(user_id, conversation_id)["turns"]]

    def close(self, user_id: str, conversation_id: str, at: datetime | None = None,
              source: str = "proxy") -> Future | None:
        """Accept a close: marked `closing` in the graph, then run by the worker. None when
        the conversation is already closed or its close is already running."""
        was = self.memory.request_close(user_id, conversation_id, at, source)
        if was == "closed":
            return None
        return self._submit(user_id, conversation_id, at)

    def _submit(self, user_id: str, conversation_id: str, at: datetime | None
                ) -> Future | None:
        with self._lock:
            if (user_id, conversation_id) in self._closing:
                return None
            self._closing.add((user_id, conversation_id))
        return self._enqueue(self._close, user_id, conversation_id, at)

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.closes.labels(outcome).inc()

    def _close(self, user_id: str, conversation_id: str, at: datetime | None) -> dict[str, Any]:
        result: dict[str, Any] = {"conversation_id": conversation_id, "remembered": None}
        try:
            # Another server (or this one, a moment ago) may hold it: it runs there, once.
            # A server shutting down starts none: they stay `closing` for the next start.
            if (self._stopping.is_set()
                    or not self.memory.claim_close(user_id, conversation_id, self.holder)):
                result["skipped"] = "held by another worker, or no longer closing"
                self._count("skipped")
                return result
            with self._lock:
                self._running = (user_id, conversation_id)
            with self._renewing(user_id, conversation_id):
                result.update(self.memory.finish_close(user_id, conversation_id, at))
            remembered = result["remembered"]
            committed = bool(remembered) and not remembered.get("skipped")
            if self.metrics is not None and committed:
                self.metrics.commits.inc()
            outcome = ("extracted" if committed
                       else "awaiting" if "awaiting_extraction" in result else "empty")
            self._count(outcome)
            # One line per outcome, counts only (docs/privacy.md, "Logs").
            log.info("closed a conversation: %s, %d memories reinforced by its reads", outcome
                     if remembered is None else counts(CommitReport.model_validate(
                         {"user_id": user_id, "conversation_id": conversation_id,
                          **remembered})), result["reinforced"])
            return result
        except Exception as exc:
            if not self._stopping.is_set():  # a close cut off by the shutdown is released
                self._count("failed")
                self._failed(user_id, conversation_id, exc)
            raise
        finally:
            with self._lock:
                self._closing.discard((user_id, conversation_id))
                self._running = None

    @contextlib.contextmanager
    def _renewing(self, user_id: str, conversation_id: str) -> Iterator[None]:
        """Renew the close's lease every third of it while the close runs (an extraction may
        outlast one lease: no other server takes the close over meanwhile)."""
        stop = threading.Event()
        every = self.memory.settings.close_lease_s / 3

        def heartbeat() -> None:
            while not stop.wait(every):
                try:
                    if not self.memory.renew_close(user_id, conversation_id, self.holder):
                        log.warning("the lease on a running close was lost")
                        return
                except PegasusError as exc:  # Neo4j away: the next beat tries again
                    log.warning("renewing the lease on a running close failed: %s",
                                kind_of(exc))

        beat = threading.Thread(target=heartbeat, name="pegasus-close-lease", daemon=True)
        beat.start()
        try:
            yield
        finally:
            stop.set()
            beat.join()

    def _failed(self, user_id: str, conversation_id: str, exc: Exception) -> None:
        """Count the failed attempt and set the next one (backoff), or give up: `failed`."""
        settings = self.memory.settings
        state = self._state(user_id, conversation_id)
        delay = settings.close_retry_s * 2 ** state["close_attempts"]
        try:
            status, attempts = self.memory.close_failed(
                user_id, conversation_id, f"{type(exc).__name__}: {exc}",
                aware(None) + timedelta(seconds=delay), settings.close_max_attempts)
        except PegasusError as again:  # Neo4j is away: the conversation stays `closing`
            log.warning("a close failed (%s), and recording that failed too (%s)",
                        kind_of(exc), kind_of(again))
            return
        # By kind only: ids and messages may hold the user's words (docs/privacy.md, "Logs");
        # the conversation keeps its error for `pegasus` to show its owner.
        if status == "failed":
            log.error("a close failed %d times, giving up (its turns stay recorded; close it "
                      "again to retry): %s", attempts, cause_of(exc))
        else:
            log.warning("a close failed (attempt %d of %d), next try in %.0f s: %s", attempts,
                        settings.close_max_attempts, delay, cause_of(exc))

    def extract_backlog(self) -> Future:
        """Extract the conversations awaiting extraction, in the close worker (after the
        closes already scheduled, one at a time); its future holds the results."""
        return self._enqueue(self._extract_backlog)

    def _extract_backlog(self) -> list[dict[str, Any]]:
        results = self.memory.extract_pending()
        done = sum(r["outcome"] == "extracted" for r in results)
        if self.metrics is not None:
            self.metrics.commits.inc(done)
        if results:
            # Outcomes, not their reasons: a failure's message may quote the user's words.
            left = sorted({r["outcome"] for r in results} - {"extracted"})
            log.info("extracted %d conversation(s) awaiting extraction; %d left%s", done,
                     len(results) - done, f" ({', '.join(left)})" if left else "")
        return results

    def sweep(self, users: set[str], now: datetime, idle_s: float) -> list[Future]:
        """Close every recorded conversation of these users unused for `idle_s` seconds, run
        every close whose next attempt is due (after a failure, or a restart), and consolidate
        the open conversations quiet for consolidate_after_s (design §9)."""
        before = now - timedelta(seconds=idle_s)
        quiet = self.memory.settings.consolidate_after_s
        futures = []
        for user_id in sorted(users):
            for conversation_id in self.memory.idle_conversations(user_id, before):
                self.memory.request_close(user_id, conversation_id, now)
            for conversation_id in self.memory.due_closes(user_id, now):
                future = self._submit(user_id, conversation_id, None)
                if future is not None:
                    futures.append(future)
            if quiet and self.memory.has_llm:
                settings = self.memory.settings
                for conversation_id in self.memory.paused_conversations(
                        user_id, now - timedelta(seconds=quiet),
                        small_quiet_since=now - timedelta(
                            seconds=max(quiet, settings.consolidate_small_after_s)),
                        min_chars=settings.consolidate_min_chars):
                    future = self.consolidate(user_id, conversation_id)
                    if future is not None:
                        futures.append(future)
        return futures


def counts(report: CommitReport) -> str:
    """A commit's outcome in counts, never its words (docs/privacy.md, "Logs")."""
    if report.skipped:
        return "nothing new"
    return (f"{len(report.created)} entities created, {len(report.edges_created)} memories "
            f"created, {len(report.reinforced)} reinforced, {len(report.superseded)} "
            f"superseded, {len(report.dropped)} dropped")
