"""How long `pegasus serve` waits for a client's request headers (docs/reliability.md, "Slow
clients"): a connection that has not sent a whole request head within header_timeout_s of its
first byte (of its opening, for its first request) is closed. uvicorn bounds a head's size
(h11_max_incomplete_event_size) and the idle time between requests (timeout_keep_alive) but
not the time a head takes, so 400 sockets sending half their headers held 400 connections for
good. The body's deadline is the body limit's (serve/limits.py), as it reads the body.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

from pegasus.settings import Settings


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is late."""

    # Set by `uvicorn_options`; a `--workers` process (spawned, this module fresh) reads it
    # from its settings once.
    timeout_s: ClassVar[float | None] = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._waiting_for_head():
            self._disarm()
        elif self._head_timer is None:  # the first byte of a next request's head
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if HeaderDeadline.timeout_s is None:
            HeaderDeadline.timeout_s = Settings().header_timeout_s
        self._head_timer = self.loop.call_later(HeaderDeadline.timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expire(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.transport.close()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The uvicorn options that bound a slow client (`pegasus serve` runs with them)."""
    HeaderDeadline.timeout_s = settings.header_timeout_s
    return {"http": HeaderDeadline, "timeout_keep_alive": 5}
