"""Health and metrics of `pegasus serve`, as its /healthz, /readyz and /metrics (serve/health.py)
answer them: readiness parts, whether extraction is on, the Prometheus registry
(prometheus-client).

Neither health nor metrics asks for an API key: probes and scrapers carry none, and nothing
here names a user or holds their words (routes are labelled by their template, never a path).
Neither waits for Neo4j either: both answer from what the last probe saw (`Health`), and a
probe is bounded by health_timeout_s, so a probe or a scrape answers within 2 s whatever Neo4j
does (docs/reliability.md, "Outages").
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from starlette.concurrency import run_in_threadpool

from pegasus import cypher
from pegasus.errors import Neo4jUnavailableError, PegasusError
from pegasus.store import deadline

# The proxy's reasons for going on with less memory (serve/proxy.py sets them).
FALLBACKS = ("budget", "error", "turn_too_long", "transcript_full")
PROXY_ROUTES = {"/v1/chat/completions", "/v1/models", "/v1/messages", "/v1/responses"}
COMMIT_ROUTES = {"/v1/memory/commit", "/v1/memory/remember"}
# Any other method a client sends is counted as `other`: a label copied from the request
# would let anyone create series without end.
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
# Of a close: extracted (a batch committed), awaiting (no LLM or no model for it: kept
# awaiting extraction, #36), empty (nothing to extract: no user turn, nothing said worth
# keeping, or already committed), failed (the attempt raised; tried again later), skipped
# (another worker holds it, or it is no longer closing). Others add their own value.
CLOSE_OUTCOMES = ("extracted", "awaiting", "empty", "failed", "skipped")


class Metrics:
    """One registry per application (tests build many apps in one process)."""

    def __init__(self, health: Health) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("pegasus_http_requests",
                                "HTTP responses by method (unknown ones: other), route template "
                                "and status, 500s included", ["method", "route", "status"],
                                registry=self.registry)
        self.request_seconds = Histogram(
            "pegasus_http_request_seconds", "Time to the response's head, by route template",
            ["method", "route"], registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
        self.recall_seconds = Histogram(
            "pegasus_recall_seconds", "Time of one recall (API and proxy)",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0),
            registry=self.registry)
        self.commits = Counter("pegasus_commits", "Conversations committed (API, closes)",
                               registry=self.registry)
        self.closes = Counter("pegasus_closes", "Close attempts run by this server, by outcome "
                              "(extracted, awaiting, empty, failed, skipped)", ["outcome"],
                              registry=self.registry)
        self.consolidations = Counter(
            "pegasus_consolidations", "In-session extractions of open conversations run by "
            "this server, by outcome (extracted, empty, awaiting, failed, skipped)", ["outcome"],
            registry=self.registry)
        self.background_errors = Counter(
            "pegasus_background_errors", "Exceptions in this server's background work, by loop "
            "and exception class (the loop goes on)", ["loop", "kind"], registry=self.registry)
        self.upstream_errors = Counter("pegasus_upstream_errors",
                                       "Proxied requests the upstream model failed (502)",
                                       registry=self.registry)
        for outcome in CLOSE_OUTCOMES:
            self.closes.labels(outcome)

        self.memory_fallbacks = Counter(
            "pegasus_memory_fallbacks",
            "Proxied requests whose memory fell short, by reason: forwarded without memory "
            "(budget, error) or recalled with the turn not wholly recorded (turn_too_long, "
            "transcript_full)", ["reason"], registry=self.registry)
        for reason in FALLBACKS:
            self.memory_fallbacks.labels(reason)
        self.registry.register(_ServiceState(health))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        method = method if method in METHODS else "other"
        self.requests.labels(method, route, str(status)).inc()
        self.request_seconds.labels(method, route).observe(seconds)
        if status == 502 and route in PROXY_ROUTES:
            self.upstream_errors.inc()
        if status == 200 and route in COMMIT_ROUTES:
            self.commits.inc()

    def failed(self, loop: str, exc: BaseException) -> None:
        """Count an exception of a background loop (by its class: never its message)."""
        self.background_errors.labels(loop, type(exc).__name__).inc()


def readiness(memory: Any) -> dict[str, str]:
    """Each part of readiness as Neo4j sees it: "ok", or what is wrong (no user named)."""
    parts: dict[str, str] = {}
    try:
        applied = memory.applied_migrations()
        pending = cypher.check_applied(applied, cypher.migrations())
        parts["neo4j"] = "ok"
        parts["migrations"] = "ok" if not pending else \
            f"{len(pending)} pending (run pegasus migrate)"
    except Neo4jUnavailableError as exc:
        # Said by the store ("lost the connection to Neo4j…"): the operator is told which.
        parts["neo4j"] = f"Neo4j at {memory.neo4j_address} does not answer: {exc}"
        parts["migrations"] = "unknown"
    except PegasusError as exc:
        parts.setdefault("neo4j", str(exc))
        parts.setdefault("migrations", "unknown")
    except Exception as exc:  # a driver error: Neo4j does not answer
        parts["neo4j"] = f"Neo4j at {memory.neo4j_address} does not answer ({type(exc).__name__})"
        parts["migrations"] = "unknown"
    return parts


def extraction_state(memory: Any) -> dict[str, str]:
    """/readyz's word on extraction: "on: <model> via <where>" or "off: <why, what to set>",
    for conversations held through the proxy and for those recorded without it (hooks).
    Off never makes the server unready: closes wait for an LLM and lose nothing."""
    return {"extraction": memory.extraction.describe(),
            "hook_conversations": memory.hooks_extraction()}


class Health:
    """What the last probe saw of Neo4j: the readiness parts and the database-wide gauges.

    One probe runs at a time: while a probe hangs (a black-holed connection), the next check
    waits for that one, at most timeout_s, instead of starting another thread.
    """

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.timeout_s = memory.settings.health_timeout_s
        self.parts: dict[str, str] | None = None  # None: not probed yet
        self.state: dict[str, Any] | None = None  # read/service_state's row, when it answered
        self.checked_at = float("-inf")
        self._probe: asyncio.Future | None = None

    @property
    def neo4j_down(self) -> bool:
        """The last probe found Neo4j unreachable (requests then fail fast, 503)."""
        return self.parts is not None and self.parts["neo4j"] != "ok"

    def stale(self) -> bool:
        return time.monotonic() - self.checked_at > self.memory.settings.health_interval_s

    def _probe_now(self) -> tuple[dict[str, str], dict[str, Any] | None]:
        with deadline(self.timeout_s):
            parts = readiness(self.memory)
            state = None
            if parts["neo4j"] == "ok":
                state = self.memory.service_state()
        return parts, state

    async def check(self) -> None:
        """Probe Neo4j, waiting at most timeout_s for the answer (the first probe of a server
        also gets neo4j_connect_timeout_s: the driver's first connection)."""
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(run_in_threadpool(self._probe_now))
            # A probe that answers after its caller stopped waiting still counts.
            self._probe.add_done_callback(self._answered)
        limit = self.timeout_s
        if self.parts is None:
            limit += self.memory.settings.neo4j_connect_timeout_s
        try:
            await asyncio.wait_for(asyncio.shield(self._probe), limit)
        except TimeoutError:
            self.parts = {"neo4j": f"Neo4j at {self.memory.neo4j_address} gave no answer within "
                                   f"{limit:g} s", "migrations": "unknown"}
            self.state = None
            self.checked_at = time.monotonic()
        except Exception:  # noqa: S110 - _answered has recorded it
            pass

    def _answered(self, probe: asyncio.Future) -> None:
        if probe.cancelled():
            return
        if probe.exception() is not None:  # the probe itself failed: Neo4j is not usable
            self.parts = {"neo4j": f"Neo4j at {self.memory.neo4j_address} does not answer "
                                   f"({type(probe.exception()).__name__})",
                          "migrations": "unknown"}
            self.state = None
        else:
            self.parts, self.state = probe.result()
        self.checked_at = time.monotonic()

    async def fresh(self) -> None:
        """Probe when the background watch has not (not running, or the answer is old)."""
        if self.stale():
            await self.check()


class _ServiceState:
    """Gauges from the last probe of the graph; left out when Neo4j did not answer."""

    def __init__(self, health: Health) -> None:
        self.health = health

    def describe(self) -> list:
        return []

    def collect(self):
        yield GaugeMetricFamily("pegasus_neo4j_up", "Whether the last probe of Neo4j (every "
                                "health_interval_s) got an answer",
                                value=0 if self.health.neo4j_down or self.health.parts is None
                                else 1)
        row = self.health.state
        if row is None:
            return
        # Counted over the whole database: every replica on it reports the same value, so
        # take one replica's (max), never the sum.
        yield GaugeMetricFamily("pegasus_closes_pending", "Conversations waiting to close, in "
                                "the whole database (the same on every replica: do not sum)",
                                value=row["closes_pending"])
        yield GaugeMetricFamily("pegasus_closes_failed", "Conversations whose close failed, in "
                                "the whole database (the same on every replica: do not sum)",
                                value=row["closes_failed"])
        yield GaugeMetricFamily("pegasus_closes_awaiting_extraction",
                                "Conversations closed with no LLM to extract them, kept until one "
                                "is configured, in the whole database (the same on every "
                                "replica: do not sum)", value=row["awaiting_extraction"])
        if row["last_decay"] is not None:
            yield GaugeMetricFamily("pegasus_last_decay_timestamp_seconds",
                                    "When the daily decay pass last finished, on any replica "
                                    "(Unix time)", value=row["last_decay"])
