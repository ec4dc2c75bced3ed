"""The server's background loops: the Neo4j watch, the idle sweep, the daily decay pass.

Each is supervised: every exception is logged by its kind (never its message: it may quote the
user's words), counted in pegasus_background_errors_total, and the loop goes on
(docs/reliability.md). `start` begins them with the app; the lifespan cancels them at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from pegasus.clock import aware
from pegasus.lifecycle import next_daily_run
from pegasus.serve.observe import kind_of

log = logging.getLogger("pegasus.serve")


def start(app: FastAPI) -> list[asyncio.Task[None]]:
    """Start the app's loops (the decay pass only when the server runs it)."""
    tasks = [asyncio.create_task(watch_neo4j(app)), asyncio.create_task(sweep_idle(app))]
    if app.state.memory.settings.decay_in_serve:
        tasks.append(asyncio.create_task(daily_decay(app)))
    return tasks


async def supervised(app: FastAPI, loop: str, body: Callable[[], Awaitable[None]],
                     pause: Callable[[], float]) -> None:
    """Run `body`, then wait `pause()` seconds, until cancelled; a failure is logged by kind,
    counted, and the loop goes on."""
    while True:
        try:
            await body()
        except Exception as exc:
            log.warning("%s failed, tried again later: %s", loop, kind_of(exc))
            app.state.metrics.failed(loop, exc)
        await asyncio.sleep(pause())


async def watch_neo4j(app: FastAPI) -> None:
    """Probe Neo4j every health_interval_s: /readyz and /metrics answer from it, and requests
    fail fast (503) while it does not answer."""
    settings = app.state.memory.settings
    await supervised(app, "health", app.state.health.check, lambda: settings.health_interval_s)


async def daily_decay(app: FastAPI) -> None:
    """Decay runs by itself: once at start-up if the last pass is over a day old, then daily at
    decay_hour_utc. The claim in the graph keeps servers sharing a database from both running."""
    memory = app.state.memory

    async def decay() -> None:
        report = await run_in_threadpool(memory.consolidate_if_due)
        if report is not None:
            log.info("decay pass: %d edges, %d newly dormant", report.edges, report.dormant_now)

    def until_next_run() -> float:
        now = aware(None)
        return (next_daily_run(now, memory.settings.decay_hour_utc) - now).total_seconds()

    await supervised(app, "decay", decay, until_next_run)


async def sweep_idle(app: FastAPI) -> None:
    """Close recorded conversations left unused for idle_close_s, and run the closes that are
    due (retries, and those a previous server left `closing`): at start-up, then every
    idle_sweep_s."""
    settings = app.state.memory.settings

    async def sweep() -> None:
        await run_in_threadpool(app.state.conversations.sweep, app.state.keys.users,
                                aware(None), settings.idle_close_s)

    await supervised(app, "idle_sweep", sweep, lambda: settings.idle_sweep_s)
