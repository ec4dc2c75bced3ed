"""Health and metrics of `pegasus serve`: /healthz (alive), /readyz (Neo4j answers, the schema
is migrated, the model is loaded; and whether extraction is on), /metrics (Prometheus text
format, prometheus-client).

Neither health nor metrics asks for an API key: probes and scrapers carry none, and nothing
here names a user or holds their words (routes are labelled by their template, never a path).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from starlette.concurrency import run_in_threadpool

from pegasus import cypher
from pegasus.errors import PegasusError

PROXY_ROUTES = {"/v1/chat/completions", "/v1/models", "/v1/messages", "/v1/responses"}
COMMIT_ROUTES = {"/v1/memory/commit", "/v1/memory/remember"}


class Metrics:
    """One registry per application (tests build many apps in one process)."""

    def __init__(self, memory: Any) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("pegasus_http_requests", "HTTP requests by route and status",
                                ["method", "route", "status"], registry=self.registry)
        self.recall_seconds = Histogram(
            "pegasus_recall_seconds", "Time of one recall (API and proxy)",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0),
            registry=self.registry)
        self.commits = Counter("pegasus_commits", "Conversations committed (API, closes)",
                               registry=self.registry)
        self.upstream_errors = Counter("pegasus_upstream_errors",
                                       "Proxied requests the upstream model failed (502)",
                                       registry=self.registry)
        self.registry.register(_ServiceState(memory))

    def observe(self, method: str, route: str, status: int) -> None:
        self.requests.labels(method, route, str(status)).inc()
        if status == 502 and route in PROXY_ROUTES:
            self.upstream_errors.inc()
        if status == 200 and route in COMMIT_ROUTES:
            self.commits.inc()


class _ServiceState:
    """Gauges read from the graph at scrape time; left out when Neo4j does not answer."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    def describe(self) -> list:
        return []

    def collect(self):
        try:
            row = self.memory.store.query("read/service_state")[0]
        except PegasusError:
            return
        yield GaugeMetricFamily("pegasus_closes_pending", "Conversations waiting to close",
                                value=row["closes_pending"])
        yield GaugeMetricFamily("pegasus_closes_failed", "Conversations whose close failed",
                                value=row["closes_failed"])
        yield GaugeMetricFamily("pegasus_closes_awaiting_extraction",
                                "Conversations closed with no LLM to extract them, kept until "
                                "one is configured", value=row["awaiting_extraction"])
        if row["last_decay"] is not None:
            yield GaugeMetricFamily("pegasus_last_decay_timestamp_seconds",
                                    "When the daily decay pass last finished (Unix time)",
                                    value=row["last_decay"])


def readiness(memory: Any) -> dict[str, str]:
    """Each part of readiness: "ok", or what is wrong."""
    from pegasus.embed import model_loaded

    parts: dict[str, str] = {}
    try:
        applied = {r["version"]: r["checksum"]
                   for r in memory.store.query("read/applied_migrations")}
        pending = cypher.check_applied(applied, cypher.migrations())
        parts["neo4j"] = "ok"
        parts["migrations"] = "ok" if not pending else \
            f"{len(pending)} pending (run pegasus migrate)"
    except PegasusError as exc:
        parts.setdefault("neo4j", str(exc))
        parts.setdefault("migrations", "unknown")
    except Exception as exc:  # a driver error: Neo4j does not answer
        parts["neo4j"] = f"{type(exc).__name__}: {exc}"[:300]
        parts["migrations"] = "unknown"
    parts["model"] = "ok" if model_loaded(memory.settings.embedding_model) else "not loaded"
    return parts


def extraction_state(memory: Any) -> dict[str, str]:
    """/readyz's word on extraction: "on: <model> via <where>" or "off: <why, what to set>".
    Off never makes the server unready: closes wait for an LLM and lose nothing."""
    return {"extraction": memory.extraction.describe()}


def add_routes(app: FastAPI) -> None:
    """/healthz, /readyz and /metrics, and the middleware that counts requests."""

    @app.middleware("http")
    async def count(request: Request, call_next):
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        request.app.state.metrics.observe(request.method, route, response.status_code)
        return response

    @app.get("/healthz", tags=["health"], summary="The process is alive")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], summary="Neo4j answers, the schema is migrated, the "
                                                  "model is loaded (503 otherwise)")
    async def readyz(request: Request) -> JSONResponse:
        parts = await run_in_threadpool(readiness, request.app.state.memory)
        ready = all(v == "ok" for v in parts.values())
        return JSONResponse({"status": "ready" if ready else "not ready", **parts,
                             **extraction_state(request.app.state.memory)},
                            status_code=200 if ready else 503)

    @app.get("/metrics", tags=["health"], summary="Prometheus metrics", response_class=Response)
    async def metrics(request: Request) -> Response:
        body = await run_in_threadpool(generate_latest, request.app.state.metrics.registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
