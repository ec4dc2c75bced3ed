"""How large a request body `pegasus serve` takes, checked before the body is read (#35).

One ASGI middleware for every route: when a route asks for the body of a request that declares
a Content-Length over the route's limit, it gets a 413 at once, without a byte of the body
read; a body without one (chunked) is counted as the route reads it and refused the moment it
passes the limit, so no route ever holds more than the limit. An import (the API's and the
page's, streamed to disk) may be max_upload_bytes, every other body max_request_bytes.
The same reads are timed (docs/reliability.md, "Slow clients"): a body must arrive within
body_timeout_s of the request's head plus one second per body_min_rate bytes received (a large
upload at a fair pace has the time it needs; a body at 1 byte/s has body_timeout_s), else 408
and the connection closed. Starlette's RequestBodyLimitMiddleware counts the same way, but
answers in plain text and takes its limit per route decorator: this one answers in the API's
JSON error shape (Anthropic's on /v1/messages, by that route's own error handling) and keeps
the limits in one place.
"""

from __future__ import annotations

import anyio
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pegasus.serve.http import Unauthorized, error, key_user

# Routes (templates) whose body is an export file, streamed to disk as it arrives.
UPLOADS = frozenset({"/v1/memory/import", "/import", "/v1/memory/import-history",
                     "/import-history"})


class BodyTooLarge(HTTPException):
    """A body over its route's limit: declared so, or found so while it was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over this route's limit of {limit:,} "
                              "bytes; nothing was read or stored")


class BodyTooSlow(HTTPException):
    """A body that did not arrive by its deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body did not arrive within {seconds:.0f} s "
                              "(body_timeout_s, and body_min_rate bytes per second after it); "
                              "nothing was stored", headers={"Connection": "close"})


class BodyLimit:
    """The ASGI middleware: the route's first read of a body declared over the limit, or the
    read that passes it, raises BodyTooLarge (answered 413 by the application)."""

    def __init__(self, app: ASGIApp, fastapi: FastAPI) -> None:
        self.app = app
        self.fastapi = fastapi
        self.settings = fastapi.state.memory.settings

    def _keyless(self, scope: Scope) -> bool:
        """An API request without a known key: its body is never read (an API route parses
        its body before its key dependency runs, so a keyless 64 MiB JSON body cost the server
        ~0.7 GB; found by the outside attack). The page's routes have their own session check."""
        if not scope["path"].startswith("/v1/"):
            return False
        headers = Headers(scope=scope)
        scheme, _, bearer = headers.get("authorization", "").partition(" ")
        return key_user(self.fastapi.state.keys,
                        bearer.strip() if scheme.lower() == "bearer" else None,
                        headers.get("x-api-key")) is None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        read, whole = 0, False
        started = anyio.current_time()

        async def counted() -> Message:
            nonlocal read, whole
            if whole:  # the body is in: what comes now is the client leaving
                return await receive()
            # The route is known by now (the router set it before the route reads).
            route = getattr(scope.get("route"), "path", None)
            limit = (self.settings.max_upload_bytes if route in UPLOADS
                     else self.settings.max_request_bytes)
            if not read and self._keyless(scope):
                raise Unauthorized
            if declared.isdigit() and int(declared) > limit:
                raise BodyTooLarge(limit)
            allowed = self.settings.body_timeout_s + read / self.settings.body_min_rate
            with anyio.move_on_after(started + allowed - anyio.current_time()) as late:
                message = await receive()
            if late.cancelled_caught:
                raise BodyTooSlow(allowed)
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                whole = not message.get("more_body", False)
                if read > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, counted, send)


def add_body_limit(app: FastAPI) -> None:
    """Limit every route's request body, in size and in time."""

    async def refused(request: Request, exc: BodyTooLarge) -> JSONResponse:
        return error(413, exc.detail, "too_large_error")

    async def late(request: Request, exc: BodyTooSlow) -> JSONResponse:
        return error(408, exc.detail, "timeout_error", dict(exc.headers or {}))

    # Starlette types a handler as taking any Exception; these are only given their own.
    app.add_exception_handler(BodyTooLarge, refused)  # type: ignore[arg-type]
    app.add_exception_handler(BodyTooSlow, late)  # type: ignore[arg-type]
    app.add_middleware(BodyLimit, fastapi=app)
