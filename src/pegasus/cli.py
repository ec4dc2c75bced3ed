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
    applied = _with_memory(lambda mem: mem.migrate())
    typer.echo("\n".join(f"applied {name}" for name in applied) or "schema up to date")


def _read_json(path: Path) -> object:
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise typer.BadParameter(f"{path}: {exc}") from exc
    except RecursionError as exc:
        raise typer.BadParameter(f"{path}: JSON too deeply nested") from exc


UserOption = Annotated[str, typer.Option("--user", help="The user whose memory this is.")]
ConversationOption = Annotated[str, typer.Option("--conversation", help="Conversation id.")]


def _with_memory(action):
    """Run `action(memory)` against the configured database; errors exit with code 2."""
    from pegasus.memory import Memory

    try:
        with Memory(Settings()) as mem:
            return action(mem)
    except PegasusError as exc:
        fail(exc)


@app.command()
def commit(
    file: Annotated[Path, typer.Argument(help="Extraction batch (JSON), or - for stdin.")],
    user: UserOption,
    conversation: ConversationOption,
    at: AtOption = None,
    transcript: Annotated[
        Path | None, typer.Option(help="Transcript (JSON list of turns) to check snippets.")
    ] = None,
) -> None:
    """Commit an extraction batch without any LLM (design §3); prints the commit report."""
    batch = _read_json(file)
    turns = _read_json(transcript) if transcript else None
    when = parse_at(at)
    report = _with_memory(
        lambda mem: mem.commit(user, conversation, batch, at=when, transcript=turns))
    typer.echo(report.model_dump_json(indent=2, exclude_defaults=True))


@app.command()
def remember(
    transcript: Annotated[Path, typer.Argument(help="Transcript: JSON list of {role, content}.")],
    user: UserOption,
    conversation: ConversationOption,
    at: AtOption = None,
) -> None:
    """Extract with the configured LLM, then clean, merge and commit."""
    turns = _read_json(transcript)
    report = _with_memory(lambda mem: mem.remember(user, conversation, turns, at=parse_at(at)))
    typer.echo(report.model_dump_json(indent=2, exclude_defaults=True))


@app.command()
def recall(
    text: Annotated[str, typer.Argument(help="The user's message.")],
    user: UserOption,
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="Log the read on this conversation.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (design §9).")] = False,
    at: AtOption = None,
) -> None:
    """Print the [MEMORY]/[CONTEXT] block this message recalls (empty when nothing fires)."""
    result = _with_memory(lambda mem: mem.recall(user, text, conversation_id=conversation, at=parse_at(at)))
    if as_json:
        typer.echo(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
    elif result.render():
        typer.echo(result.render())


@app.command()
def close(user: UserOption, conversation: ConversationOption, at: AtOption = None) -> None:
    """Close a conversation: reinforce each edge its reads used, once."""
    count = _with_memory(lambda mem: mem.close_conversation(user, conversation, at=parse_at(at)))
    typer.echo(f"reinforced {count} edges")


@app.command()
def consolidate(
    at: AtOption = None,
    user: Annotated[str | None, typer.Option("--user", help="Only this user's partition.")] = None,
) -> None:
    """The daily decay pass over every edge (or one user's); run it daily, e.g. from cron."""
    when = parse_at(at)
    report = _with_memory(lambda mem: mem.consolidate(at=when, user_id=user))
    typer.echo(report.model_dump_json(indent=2))


@app.command()
def demo(
    llm: Annotated[bool, typer.Option(help="Extract the samples with the configured LLM.")] = False,
) -> None:
    """Start (or reuse) the local Neo4j, remember the sample conversations, recall a message."""
    from pegasus.demo import run_demo
    from pegasus.memory import Memory
    from pegasus.neo4j_local import LocalNeo4j, ensure_jars

    settings = Settings()
    try:
        if settings.neo4j_uri is None:
            typer.echo("starting Neo4j (first run fetches the jars from Maven Central)…")
            began = time.monotonic()
            ensure_jars(settings)
            state = LocalNeo4j.managed(settings).start()
            typer.echo(f"Neo4j {state.version} at {state.bolt_uri} "
                       f"({time.monotonic() - began:.1f}s); Browser: {state.browser_url}")
        with Memory(settings) as mem:
            applied = mem.migrate()
            typer.echo(f"schema: {', '.join(applied) if applied else 'up to date'}")
            typer.echo("loading the embedding model…")
            mem.embedder.embed(["warm up"])
            typer.echo("remembering the sample conversations:")
            block = run_demo(mem, typer.echo, use_llm=llm)
    except PegasusError as exc:
        fail(exc)
    typer.echo("\n" + (block or "(nothing recalled)"))


@app.command()
def review(
    user: UserOption,
    undo: Annotated[str | None, typer.Option(help="Undo the merge with this record id.")] = None,
    pending: Annotated[bool, typer.Option(help="Also list candidates awaiting review.")] = False,
    at: AtOption = None,
) -> None:
    """List flagged merges (to inspect), or undo one."""
    if undo:
        result = _with_memory(lambda mem: mem.undo_merge(user, undo, at=parse_at(at)))
        typer.echo(f"undone: {result.restored} is separate from {result.survivor} "
                   f"again ({result.edges_moved} edges moved back)")
        return
    records = _with_memory(lambda mem: mem.merges(user, include_pending=pending))
    if not records:
        typer.echo("nothing to review")
    for r in records:
        if r.status == "pending":
            typer.echo(f"{r.id}  pending  {r.absorbed_name} ({r.kind}) may be one of: "
                       f"{', '.join(r.candidate_names or [])}  [{r.conversation_id}]")
        else:
            typer.echo(f"{r.id}  flagged  {r.absorbed_name} → {r.survivor_name} "
                       f"({r.kind}, confidence {r.confidence:.2f})  [{r.conversation_id}]")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Listen address (PEGASUS_SERVE_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (PEGASUS_SERVE_PORT).")] = None,
) -> None:
    """The memory's HTTP API and the OpenAI-compatible proxy (keys from PEGASUS_API_KEYS)."""
    import uvicorn

    from pegasus.memory import Memory
    from pegasus.serve.app import create_app

    settings = Settings()
    try:
        memory = Memory(settings)
        memory.verify()
        memory.migrate()
        # Load the embedding model before the first request: a client's first recall must
        # not wait for it (the Opencode plugin gives a recall 10 s).
        memory.embedder.embed(["warm up"])
        application = create_app(memory)
    except PegasusError as exc:
        fail(exc)
    if not application.state.keys.users:
        typer.echo("warning: no API keys configured (PEGASUS_API_KEYS or PEGASUS_API_KEY_FILE): "
                   "every request will get 401", err=True)
    try:
        uvicorn.run(application, host=host or settings.serve_host,
                    port=port or settings.serve_port, log_level="info")
    finally:
        memory.close()


@app.command("mcp")
def mcp_stdio(user: UserOption) -> None:
    """An MCP server on stdin/stdout over one user's memory."""
    from pegasus.mcp_server import build_server
    from pegasus.memory import Memory

    try:
        memory = Memory(Settings())
        memory.verify()
    except PegasusError as exc:
        fail(exc)
    try:
        build_server(memory, user).run("stdio")
    finally:
        memory.close()
