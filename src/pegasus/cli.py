"""The `pegasus` command: the verbs of the Python API, plus the local Neo4j server."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from pegasus.errors import PegasusError
from pegasus.settings import Settings

app = typer.Typer(help="Pegasus: temporal, cross-conversation memory on Neo4j.", no_args_is_help=True)
neo4j_app = typer.Typer(help="A local Neo4j Community server, without Docker.", no_args_is_help=True)
app.add_typer(neo4j_app, name="neo4j")

AtOption = Annotated[
    str | None, typer.Option("--at", help="A fixed clock (ISO-8601), for tests and replays.")
]


def parse_at(value: str | None) -> datetime | None:
    """`--at` as an aware datetime (UTC when no offset is given)."""
    if value is None:
        return None
    from pegasus.clock import parse_instant

    try:
        return parse_instant(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--at") from exc


def fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


@neo4j_app.command("start")
def neo4j_start() -> None:
    """Start (or reuse) the local server; prints where it listens."""
    from pegasus.neo4j_local import LocalNeo4j, ensure_jars

    settings = Settings()
    try:
        began = time.monotonic()
        _, downloaded = ensure_jars(settings)
        if downloaded:
            typer.echo(f"fetched Neo4j {settings.neo4j_version} jars from Maven Central")
        state = LocalNeo4j.managed(settings).start()
    except PegasusError as exc:
        fail(exc)
    typer.echo(
        f"Neo4j {state.version} running (pid {state.pid}) in {time.monotonic() - began:.1f}s\n"
        f"  bolt     {state.bolt_uri}  user {state.user}\n"
        f"  browser  {state.browser_url}\n"
        f"  password {LocalNeo4j.managed(settings).root / 'password'}"
    )


@neo4j_app.command("stop")
def neo4j_stop() -> None:
    """Stop the local server."""
    from pegasus.neo4j_local import LocalNeo4j

    stopped = LocalNeo4j.managed(Settings()).stop()
    typer.echo("stopped" if stopped else "not running")


@neo4j_app.command("status")
def neo4j_status() -> None:
    """Whether the local server runs, its version and addresses."""
    from pegasus.neo4j_local import LocalNeo4j
    from pegasus.store import Store

    settings = Settings()
    state = LocalNeo4j.managed(settings).state()
    if state is None:
        typer.echo("not running")
        raise typer.Exit(1)
    store = Store(settings.model_copy(update={"neo4j_uri": state.bolt_uri,
                                              "neo4j_password": state.password}))
    try:
        info = store.server_info()
    finally:
        store.close()
    typer.echo(
        f"running (pid {state.pid}) Neo4j {info.get('version')} {info.get('edition')}\n"
        f"  bolt     {state.bolt_uri}\n  browser  {state.browser_url}"
    )


@app.command()
def migrate() -> None:
    """Apply the versioned schema in cypher/schema (idempotent)."""
    from pegasus.memory import Memory

    try:
        with Memory(Settings()) as mem:
            applied = mem.migrate()
    except PegasusError as exc:
        fail(exc)
    typer.echo("\n".join(f"applied {name}" for name in applied) or "schema up to date")


def _read_json(path: Path) -> object:
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise typer.BadParameter(f"{path}: {exc}") from exc
