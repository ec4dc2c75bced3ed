"""What `pegasus serve` writes about a request, in one middleware: the access-log line, the
request metrics, and an unexpected error's kind. No user word reaches a log or a metric
(docs/privacy.md, "Logs"): a request is named by its method and route template (never its
path, ids or query string), an error by its exception class and where it was raised (never
its message, which may quote the user's words, nor a body).
"""

from __future__ import annotations

import logging
import time
import traceback
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pegasus.serve.http import error
from pegasus.serve.metrics import METHODS

access = logging.getLogger("pegasus.access")
# What a request the client abandoned is counted and logged as (nginx's "client closed request");
# no one receives the answer.
CLIENT_CLOSED = 499
log = logging.getLogger("pegasus.serve")


def route_of(scope: Scope) -> str:
    """The route template a request matched (`/v1/memory/entities/{entity}`), else
    `unmatched`: never the path the client sent."""
    return getattr(scope.get("route"), "path", "unmatched")


def kind_of(exc: BaseException) -> str:
    """An exception as its class and the place it was raised (file:line): what an operator
    needs to find it, without its message."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"


def cause_of(exc: BaseException) -> str:
    """A failed extraction's cause for the log: a ConfigError's own message (it names settings
    and addresses, never the user's words: pegasus.llm.llm_problem), else `kind_of`."""
    from pegasus.errors import ConfigError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConfigError):
            return f"{type(seen).__name__}: {' '.join(str(seen).split())[:300]}"
        seen = seen.__cause__
    return kind_of(exc)
class Observe:
    """The ASGI middleware: count, time and log every response (500s too) when its head is
    sent, by method and route template. A plain ASGI middleware, not Starlette's
    BaseHTTPMiddleware: that one ends a streamed body cleanly when the route fails midway, so
    an export cut short by an outage reached the client as a whole, valid file (#47). Here a
    failure after the head goes on to the server, which drops the connection: the client sees
    an incomplete transfer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        method = scope["method"] if scope["method"] in METHODS else "other"
        status: int | None = None

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                seconds = time.perf_counter() - started
                route = route_of(scope)
                scope["app"].state.metrics.observe(method, route, status, seconds)
                access.info("%s %s %d %.1fms", method, route, status, seconds * 1000)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except ClientDisconnect:  # the client hung up mid-body (an upload): not a server error
            if status is not None:
                raise
            await Response(status_code=CLIENT_CLOSED)(scope, receive, sending)
        except Exception as exc:
            if status is not None:  # midway: the head is out, so the transfer must break
                log.error("%s %s broke after its head: %s", method, route_of(scope),
                          kind_of(exc))
                raise
            # a bug: answered here, so it is counted and logged by kind
            log.error("%s %s failed: %s", method, route_of(scope), kind_of(exc))
            await error(500, "internal error (the server logged its kind)",
                        "server_error")(scope, receive, sending)


def add_middleware(app: FastAPI) -> None:
    """Count, time and log every response (500s too), by method and route template."""
    app.add_middleware(Observe)


class KindOnly(logging.Filter):
    """Every traceback a library logs (uvicorn's "Exception in ASGI application", a failed
    stream) becomes its kind: a traceback prints the exception's message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {kind_of(record.exc_info[1])}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def log_config(level: str = "INFO") -> dict[str, Any]:
    """uvicorn's logging at `level`, with Pegasus's access log instead of uvicorn's (which
    prints the path and query string), and no traceback text anywhere."""
    kind_only = {"()": KindOnly}
    handler = {"formatter": "default", "class": "logging.StreamHandler",
               "stream": "ext://sys.stderr", "filters": ["kind_only"]}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"kind_only": kind_only},
        "formatters": {"default": {"()": "uvicorn.logging.DefaultFormatter",
                                   "fmt": "%(levelprefix)s %(name)s: %(message)s",
                                   "use_colors": None}},
        "handlers": {"default": handler},
        "root": {"handlers": ["default"], "level": "WARNING"},
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level, "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "pegasus": {"handlers": ["default"], "level": level, "propagate": False},
        },
    }
