"""The `pegasus` command: the verbs of the Python API, plus the local Neo4j server."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr

from pegasus.errors import ConfigError, PegasusError
from pegasus.settings import Settings

app = typer.Typer(help="Pegasus: temporal, cross-conversation memory on Neo4j.", no_args_is_help=True)
# The driver logs its own account of a failed connection; the CLI says it once, in one line.
logging.getLogger("neo4j").setLevel(logging.CRITICAL)
neo4j_app = typer.Typer(help="A local Neo4j Community server, without Docker.", no_args_is_help=True)
app.add_typer(neo4j_app, name="neo4j")
correct_app = typer.Typer(help="Correct a user's memory: a memory in place, retract, rename, aliases, merge.",
                          no_args_is_help=True)
app.add_typer(correct_app, name="correct")

def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"pegasus {version('pegasus-memory')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("pegasus (not installed)")
        raise typer.Exit()


@app.callback()
def main(
    show_version: Annotated[bool | None, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None,
) -> None:
    """Pegasus: temporal, cross-conversation memory on Neo4j."""


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


def load_settings() -> Settings:
    """Settings from the environment and .env; a malformed one is one line and exit 2."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    try:
        settings = Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "PEGASUS_" + "_".join(str(p) for p in first["loc"][:1]).upper()
        fail(ConfigError(f"{name}: {first['msg']} (got {str(first.get('input'))[:80]!r})"))
    except SettingsError as exc:
        field = re.search(r'field "(\w+)"', str(exc))
        name = f"PEGASUS_{field[1].upper()}" if field else "a setting"
        fail(ConfigError(f"{name} cannot be read: it must be JSON (a map such as "
                         '{"key": "value"}, or a list)'))
    if settings.neo4j_uri is None and settings.neo4j_password is not None:
        # Said, not ignored: the password is for a server NEO4J_URI names.
        typer.echo("warning: NEO4J_PASSWORD is set but NEO4J_URI is not: Pegasus uses its own "
                   "local Neo4j (`pegasus neo4j start`) with the password in its state file; "
                   "set NEO4J_URI to use the server that password is for", err=True)
    return settings


@neo4j_app.command("start")
def neo4j_start() -> None:
    """Start (or reuse) the local server; prints where it listens."""
    from pegasus.operations.neo4j_local import LocalNeo4j, ensure_jars

    settings = load_settings()
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
    from pegasus.operations.neo4j_local import LocalNeo4j

    stopped = LocalNeo4j.managed(load_settings()).stop()
    typer.echo("stopped" if stopped else "not running")


@neo4j_app.command("compact")
def neo4j_compact(
    yes: Annotated[bool, typer.Option("--yes", help="Do it (the server is offline meanwhile).")]
    = False,
) -> None:
    """Rebuild the local server's store so that erased words leave its disk (docs/privacy.md)."""
    from pegasus.operations.compact import compact
    from pegasus.operations.neo4j_local import LocalNeo4j

    if not yes:
        fail(PegasusError("compaction takes the local server offline while it copies every "
                          "memory into a fresh store; run again with --yes"))
    server = LocalNeo4j.managed(load_settings())
    if server.state() is None:
        fail(PegasusError("the local server is not running: start it with `pegasus neo4j start`"))
    try:
        report = compact(server, say=typer.echo)
    except PegasusError as exc:
        fail(exc)
    typer.echo(f"compacted: {report.nodes:,} nodes, {report.relationships:,} relationships, "
               f"{report.users:,} users checked, in {report.seconds:.1f}s; data folder "
               f"{report.bytes_before / 1e6:.1f} MB -> {report.bytes_after / 1e6:.1f} MB")


@neo4j_app.command("status")
def neo4j_status() -> None:
    """Whether the local server runs, its version and addresses."""
    from pegasus.operations.neo4j_local import LocalNeo4j
    from pegasus.store import Store

    settings = load_settings()
    state = LocalNeo4j.managed(settings).state()
    if state is None:
        typer.echo("not running")
        raise typer.Exit(1)
    store = Store(settings.model_copy(update={"neo4j_uri": state.bolt_uri,
                                              "neo4j_password": SecretStr(state.password)
                                              if state.password else None}))
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
    from pegasus.operations.preflight import check_embedding_model, check_home

    settings = load_settings()
    try:
        check_home(settings)
        check_embedding_model(settings)
        with Memory(settings) as mem:
            mem.verify()
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
    from pegasus.operations.neo4j_local import LocalNeo4j, ensure_jars

    settings = load_settings()
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


# --- the person's control over their memory (design §10) -------------------------------------

EntityArgument = Annotated[str, typer.Argument(help="An entity: its name, an alias or its id.")]


def _echo_json(value) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


@app.command()
def memories(
    user: UserOption,
    about: Annotated[str | None, typer.Option(help="Only memories of this entity.")] = None,
    state: Annotated[str, typer.Option(
        help="current, superseded, dormant, expired, retracted or all.")] = "current",
    limit: Annotated[int | None, typer.Option(help="At most this many (1-1000).")] = None,
    offset: Annotated[int, typer.Option(help="Skip this many first.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    at: AtOption = None,
) -> None:
    """List a user's memories: relation, strength, state, dates, words, conversations."""
    found = _with_memory(lambda mem: mem.memories(user, about, state, limit, offset,
                                                  parse_at(at)))
    if as_json:
        _echo_json([m.model_dump(mode="json") for m in found])
        return
    for m in found:
        strength = f"{m.strength:5.1f}" if m.strength is not None else "    -"
        typer.echo(f"{m.id}  {m.state:<10} {strength}  {m.source} -[{m.relation}]-> {m.target}"
                   f"  ({(m.created_at or '')[:10]})  \"{m.snippet or ''}\"")
    if not found:
        typer.echo("no memories")


@app.command("memory")
def memory_history(
    memory_id: Annotated[str, typer.Argument(help="The memory's id (from `pegasus memories`).")],
    user: UserOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    at: AtOption = None,
) -> None:
    """One memory with its history: sightings, reinforcements, strength now, successor."""
    story = _with_memory(lambda mem: mem.memory(user, memory_id, parse_at(at)))
    if as_json:
        _echo_json(story.model_dump(mode="json"))
        return
    m = story.memory
    typer.echo(f"{m.source} -[{m.relation}]-> {m.target}  ({m.state})\n"
               f"  words     \"{m.snippet}\" (said {(story.said_at or '?')[:10]})\n"
               f"  strength  {story.strength_now:.1f} now, {story.reinforcements} reinforcements")
    for s in story.sightings:
        typer.echo(f"  seen in   {s.conversation_id} {(s.at or '')[:10]}  \"{s.snippet or ''}\"")
    if story.superseded_by_line or story.superseded_by:
        typer.echo(f"  replaced  by {story.superseded_by_line or story.superseded_by}")


def _correction(result) -> None:
    typer.echo(result.model_dump_json(indent=2, exclude_defaults=True))


@correct_app.command("retract")
def correct_retract(
    memory_id: Annotated[str, typer.Argument(help="The memory that is wrong.")],
    user: UserOption,
    undo: Annotated[bool, typer.Option(help="Take the retraction back.")] = False,
    at: AtOption = None,
) -> None:
    """Retract a wrong memory: never recalled again, kept with the date (--undo restores)."""
    _correction(_with_memory(lambda mem: mem.retract(user, memory_id, parse_at(at), undo)))


@correct_app.command("memory")
def correct_memory(
    memory_id: Annotated[str, typer.Argument(help="The memory to correct.")],
    user: UserOption,
    to: Annotated[str | None, typer.Option(
        "--to", help="The right other end (an entity's name, alias or id).")] = None,
    words: Annotated[str | None, typer.Option(help="The right words.")] = None,
    since: Annotated[str | None, typer.Option(help="When it began (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(help="When it ends (ISO 8601).")] = None,
    no_end: Annotated[bool, typer.Option("--no-end", help="It has no end.")] = False,
    undo: Annotated[bool, typer.Option(
        help="Take the correction MEMORY_ID back: the old version is current again.")] = False,
    at: AtOption = None,
) -> None:
    """Correct a memory in place (its other end, words, dates); the old version stays as
    history, never recalled; --undo with the correction's id takes it back."""
    began, ends = parse_at(since), parse_at(until)
    _correction(_with_memory(lambda mem: mem.correct_memory(
        user, memory_id, to, words, began, ends, no_end, parse_at(at), "cli", undo)))


@correct_app.command("rename")
def correct_rename(entity: EntityArgument,
                   new_name: Annotated[str, typer.Argument(help="The right name.")],
                   user: UserOption, at: AtOption = None) -> None:
    """Rename an entity (its keys are re-embedded)."""
    _correction(_with_memory(lambda mem: mem.rename_entity(user, entity, new_name,
                                                           parse_at(at))))


@correct_app.command("alias")
def correct_alias(
    entity: EntityArgument,
    user: UserOption,
    add: Annotated[list[str] | None, typer.Option("--add", help="An alias to add.")] = None,
    remove: Annotated[list[str] | None, typer.Option("--remove", help="One to remove.")] = None,
    at: AtOption = None,
) -> None:
    """Add or remove aliases of an entity."""
    _correction(_with_memory(lambda mem: mem.edit_aliases(user, entity, add, remove,
                                                          parse_at(at))))


@correct_app.command("merge")
def correct_merge(
    keep: Annotated[str, typer.Argument(help="The entity that stays.")],
    absorb: Annotated[str, typer.Argument(help="The one that is the same and goes into it.")],
    user: UserOption,
    at: AtOption = None,
) -> None:
    """Merge two entities that are one (undo: `pegasus review --undo RECORD`)."""
    _correction(_with_memory(lambda mem: mem.merge_entities(user, keep, absorb, parse_at(at))))


@app.command()
def forget(
    user: UserOption,
    memory: Annotated[str | None, typer.Option("--memory", help="One memory, by id.")] = None,
    entity: Annotated[str | None, typer.Option(
        "--entity", help="One entity (name, alias or id) with all its memories.")] = None,
    conversation: Annotated[str | None, typer.Option(
        "--conversation", help="One conversation: what only it taught, its words.")] = None,
    everything: Annotated[bool, typer.Option(
        "--everything", help="Everything of the user (needs --yes).")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm --everything.")] = False,
    at: AtOption = None,
) -> None:
    """Erase (not decay): one memory, one entity, one conversation or everything of a user,
    from every place the words live. Prints what was removed."""
    chosen = [name for name, given in (("--memory", memory), ("--entity", entity),
                                       ("--conversation", conversation),
                                       ("--everything", everything)) if given]
    if len(chosen) != 1:
        fail(PegasusError("name exactly one of --memory, --entity, --conversation, "
                          "--everything"))
    if everything and not yes:
        fail(PegasusError(f"--everything erases all of {user}'s memory and cannot be undone; "
                          "add --yes to confirm"))
    when = parse_at(at)

    def act(mem):
        if memory:
            return mem.forget_memory(user, memory, when)
        if entity:
            return mem.forget_entity(user, entity, when)
        if conversation:
            return mem.forget_conversation(user, conversation, when)
        return mem.forget_everything(user, when)

    typer.echo(_with_memory(act).model_dump_json(indent=2))


@app.command("export")
def export_memory(
    user: UserOption,
    output: Annotated[Path | None, typer.Option("-o", "--output",
                                                help="Write here (default: stdout).")] = None,
    with_turns: Annotated[bool, typer.Option(help="Include recorded turns.")] = False,
    at: AtOption = None,
) -> None:
    """Export a user's memory as JSON Lines (format v1; docs/design.md §11)."""
    # Written beside the output and renamed over it once whole: an export that fails midway
    # leaves no file under the name asked for (stdout gets the lines so far, no end line).
    partial = output.with_name(output.name + ".partial") if output else None

    def write(mem) -> int:
        lines = 0
        with (partial.open("w", encoding="utf-8") if partial else contextlib.nullcontext(
                sys.stdout)) as out:
            for line in mem.export(user, with_turns, parse_at(at)):
                out.write(line)
                lines += 1
        return lines

    try:
        lines = _with_memory(write)
    except BaseException:  # the error was said (exit 2); its part holds words and is no file
        if partial:
            partial.unlink(missing_ok=True)
        raise
    if output and partial:
        partial.replace(output)
        typer.echo(f"exported {lines - 2} records of {user} to {output}", err=True)


@app.command("import")
def import_memory(
    file: Annotated[Path, typer.Argument(help="An export file (JSON Lines).")],
    user: UserOption,
    replace: Annotated[bool, typer.Option(
        help="Forget the user's memory first, then import.")] = False,
    at: AtOption = None,
) -> None:
    """Import an export file as this user's memory (into an empty partition)."""
    if not file.is_file():
        fail(PegasusError(f"{file}: no such file"))
    report = _with_memory(lambda mem: mem.import_memory(user, file, replace, parse_at(at)))
    typer.echo(report.model_dump_json(indent=2))


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Listen address (PEGASUS_SERVE_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (PEGASUS_SERVE_PORT).")] = None,
    workers: Annotated[int, typer.Option(
        min=1, help="Worker processes on the one port (each loads the model, ~0.5 GB).")] = 1,
) -> None:
    """The memory's HTTP API and the proxy for OpenAI and Anthropic clients (keys from
    PEGASUS_API_KEYS)."""
    import uvicorn

    from pegasus.memory import Memory
    from pegasus.operations.preflight import check_embedding_model, check_home, check_port
    from pegasus.serve.app import create_app
    from pegasus.serve.observe import log_config
    from pegasus.serve.slow_clients import uvicorn_options

    settings = load_settings()
    bind_host, bind_port = host or settings.serve_host, port or settings.serve_port
    address: dict[str, Any] = {"host": bind_host, "port": bind_port}
    try:
        check_port(bind_host, bind_port)
        check_home(settings)
        check_embedding_model(settings)
        memory = Memory(settings)
        memory.verify()
        memory.migrate()
        application = create_app(memory)  # the API keys are checked here, before the model
        if workers == 1:
            # Load the embedding model before the first request: a client's first recall must
            # not wait for it (the Opencode plugin gives a recall 10 s).
            memory.embedder.embed(["warm up"])
    except PegasusError as exc:
        fail(exc)
    # One line on what forms memories (or what to set so that something does): closes wait
    # for an LLM rather than vanish, but the person must know they are waiting.
    typer.echo(f"pegasus serve: extraction {memory.extraction.describe()}", err=True)
    if not application.state.keys.users:
        typer.echo("warning: no API keys configured (PEGASUS_API_KEYS or PEGASUS_API_KEY_FILE): "
                   "every request will get 401", err=True)
    # SIGTERM: open requests get half the grace, the running close the other half (then it
    # is released: docs/reliability.md, "Shutdown"). Access lines come from Pegasus's own
    # middleware (route templates, never paths), uvicorn's are off. serve speaks no WebSocket:
    # an upgrade request is a plain one (uvicorn logged a WebSocket's path and, at DEBUG, its
    # headers: the key and the session cookie).
    address |= {"ws": "none", "log_level": settings.log_level.lower(),
                "log_config": log_config(settings.log_level), "access_log": False,
                "timeout_graceful_shutdown": settings.shutdown_grace_s / 2,
                **uvicorn_options(settings)}  # slow clients' deadlines
    if workers > 1:
        # Checked above, once; each worker process builds its own Memory and app (its own
        # driver, model and close worker: closes are leased, decay claimed, design §13).
        memory.close()
        uvicorn.run("pegasus.serve.app:worker_app", factory=True, workers=workers, **address)
        return
    try:
        uvicorn.run(application, **address)
    finally:
        memory.close()


@app.command()
def extract(
    pending: Annotated[bool, typer.Option(
        "--pending", help="Extract the conversations closed while no LLM was configured.")
    ] = False,
    user: Annotated[str | None, typer.Option("--user", help="Only this user's.")] = None,
) -> None:
    """Extract the conversations awaiting extraction, in the order they closed, each once."""
    if not pending:
        raise typer.BadParameter("say --pending: it extracts the conversations awaiting "
                                 "extraction (`pegasus remember` extracts a transcript file)")

    def run(mem):
        if not mem.has_llm:
            raise ConfigError(f"no LLM configured: {mem.extraction.why}")
        return mem.extract_pending(user)

    results = _with_memory(run)
    for result in results:
        why = f": {result['why']}" if result.get("why") else ""
        typer.echo(f"{result['user_id']}/{result['conversation_id']}: "
                   f"{result['outcome'].replace('_', ' ')}{why}")
    done = sum(r["outcome"] == "extracted" for r in results)
    typer.echo(f"extracted {done} of {len(results)} conversations awaiting extraction")


@app.command()
def doctor(
    serve_url: Annotated[str | None, typer.Option(
        "--serve-url", help="Where pegasus serve runs (PEGASUS_URL, else "
                            "http://PEGASUS_SERVE_HOST:PEGASUS_SERVE_PORT).")] = None,
) -> None:
    """Check every part Pegasus depends on; a table, and the one thing to do per problem.
    Exit 1 when something needs doing."""
    import os

    from rich.console import Console
    from rich.table import Table

    from pegasus.operations.doctor import checks

    settings = load_settings()
    url = serve_url or os.environ.get("PEGASUS_URL") or \
        f"http://{settings.serve_host}:{settings.serve_port}"
    codex_home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    table = Table("part", "", "what it found, or the one thing to do", show_lines=False)
    marks = {"ok": "[green]ok[/]", "problem": "[red]fix[/]", "skipped": "[dim]–[/]"}
    problems = 0
    for check in checks(settings, url, Path.home(), codex_home):
        problems += check.state == "problem"
        table.add_row(check.part, marks[check.state], check.detail)
    console = Console(width=max(Console().width, 120))
    console.print(table)
    console.print(f"{problems} problem(s)" if problems else "everything is fine")
    raise typer.Exit(1 if problems else 0)


@app.command("mcp")
def mcp_stdio(user: UserOption) -> None:
    """An MCP server on stdin/stdout over one user's memory."""
    from pegasus.mcp_server import build_server
    from pegasus.memory import Memory

    try:
        memory = Memory(load_settings())
        memory.verify()
    except PegasusError as exc:
        fail(exc)
    try:
        build_server(memory, user).run("stdio")
    finally:
        memory.close()


# --- coding agents (`pegasus connect`) -------------------------------------------------------

def _agent_lines(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


@app.command("connect")
def connect_agent(
    agent: Annotated[str | None, typer.Argument(
        help="claude-code, codex, opencode, gemini, copilot or qwen.")] = None,
    list_agents: Annotated[bool, typer.Option("--list", help="List the agents and exit.")]
    = False,
    url: Annotated[str | None, typer.Option(
        help="Where pegasus serve runs (PEGASUS_URL, else http://127.0.0.1:8080).")] = None,
    key: Annotated[str | None, typer.Option(
        help="Your key for pegasus serve (PEGASUS_API_KEY, else the one connect kept).")]
    = None,
    trust_folder: Annotated[list[Path] | None, typer.Option(
        "--trust-folder", help="Gemini CLI: trust this project folder (it runs hooks only in "
        "trusted folders); repeat for more.")] = None,
) -> None:
    """Connect a coding agent to your memory: writes its hooks (or plugin) in its own files
    under HOME, with pegasus-hook's full path, then checks them as `pegasus doctor` does."""
    import os

    from pegasus.connect import AGENTS, ConnectError, Places, agent_named, check, connect
    from pegasus.hook import client_settings

    places = Places.from_environment()
    if list_agents or agent is None:
        for known in AGENTS.values():
            state = check(known, places).state
            shown = {"ok": "connected", "problem": "needs fixing", "skipped": "not connected"}
            typer.echo(f"{known.id:<12} {known.name:<19} {shown[state]:<14} {known.what}")
        if agent is None and not list_agents:
            raise typer.Exit(2)
        return
    # what an earlier connect kept serves the next agent: one --key, every agent
    known = client_settings()
    try:
        chosen = agent_named(agent)
        lines = connect(chosen, places,
                        url or os.environ.get("PEGASUS_URL") or known.get("url")
                        or "http://127.0.0.1:8080",
                        key or os.environ.get("PEGASUS_API_KEY") or known.get("key") or "",
                        trust=trust_folder or [])
    except ConnectError as exc:
        fail(exc)
    _agent_lines(lines)
    result = check(chosen, places)
    typer.echo(f"check: {result.state}: {result.detail}")
    raise typer.Exit(0 if result.state == "ok" else 1)


@app.command("disconnect")
def disconnect_agent(
    agent: Annotated[str, typer.Argument(
        help="claude-code, codex, opencode, gemini, copilot or qwen.")],
) -> None:
    """Take Pegasus out of a coding agent's files (the rest of them as they were)."""
    from pegasus.connect import ConnectError, Places, agent_named, disconnect

    try:
        _agent_lines(disconnect(agent_named(agent), Places.from_environment()))
    except ConnectError as exc:
        fail(exc)


# --- a person's chat history (`pegasus import-history`) --------------------------------------

@app.command("import-history")
def import_history(
    file: Annotated[Path, typer.Argument(
        help="ChatGPT's or Claude's conversations.json (or the export's zip).")],
    user: UserOption,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Check the file and show the estimate; record nothing.")] = False,
) -> None:
    """Bring in your past conversations from ChatGPT's or Claude's data export: each one
    recorded with its own dates, then extracted oldest first (a backlog that resumes)."""
    from tqdm import tqdm

    from pegasus.transfer import history

    if not file.is_file():
        fail(PegasusError(f"{file}: no such file"))
    try:
        data = history.load(file)
    except PegasusError as exc:
        fail(exc)

    def say_estimate(report) -> None:
        e = report.estimate
        typer.echo(f"{report.conversations} conversations from {report.source} "
                   f"({e.turns} turns); extracting them takes about {e.calls} model calls, "
                   f"~{e.input_tokens:,} input and ~{e.output_tokens:,} output tokens",
                   err=True)
        if report.shortened_turns:
            typer.echo(f"{report.shortened_turns} turn(s) longer than a turn may be are kept "
                       "to their first characters", err=True)

    def bar(total: int, what: str):
        return tqdm(total=total, desc=what, unit="conversation", file=sys.stderr)

    report = _with_memory(lambda mem: history.import_history(mem, user, data, dry_run=dry_run,
                                                             progress=bar,
                                                             before=say_estimate))
    typer.echo(report.model_dump_json(indent=2))
