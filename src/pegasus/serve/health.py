"""/healthz (alive), /readyz (Neo4j answers, the schema is migrated, the model is loaded) and
/metrics (Prometheus). No API key: probes and scrapers carry none, and nothing here names a user;
both answer from the last probe (`metrics.Health`), so they never wait for Neo4j."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.exposition import generate_latest

from pegasus.serve.metrics import Health, extraction_state

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Neo4j answers, the schema is migrated, the model is loaded "
                               "(503 otherwise)")
async def readyz(request: Request) -> JSONResponse:
    from pegasus.embedding.embed import model_loaded

    health: Health = request.app.state.health
    await health.fresh()
    parts = dict(health.parts or {})
    parts["model"] = ("ok" if model_loaded(request.app.state.memory.settings.embedding_model)
                      else "not loaded")
    ready = all(v == "ok" for v in parts.values())
    return JSONResponse({"status": "ready" if ready else "not ready", **parts,
                         **extraction_state(request.app.state.memory)},
                        status_code=200 if ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    await request.app.state.health.fresh()
    return Response(generate_latest(request.app.state.metrics.registry),
                    media_type=CONTENT_TYPE_LATEST)
