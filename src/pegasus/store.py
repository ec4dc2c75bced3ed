"""The one module that holds a Neo4j driver: named queries, transactions, retries, migrations."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

import neo4j
from neo4j import GraphDatabase, ManagedTransaction
from neo4j.exceptions import (
    AuthError,
    ClientError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)
from neo4j.graph import Node, Relationship
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from pegasus import cypher
from pegasus.errors import ConfigError, MigrationError, Neo4jUnavailableError, PegasusError
from pegasus.settings import Settings, secret_text

T = TypeVar("T")

# What the one retry policy retries (docs/reliability.md, "Retries"): a lost connection, a
# server restarting, a deadlock or a leader switch. The driver's managed transactions retry
# exactly these, within the window given to their session; nothing retries on top of it.
_RETRYABLE = (ServiceUnavailable, SessionExpired, TransientError)

log = logging.getLogger(__name__)

# When the work of the current request must have ended (time.monotonic()); None outside one.
_deadline: ContextVar[float | None] = ContextVar("pegasus_deadline", default=None)
_writes_bounded: ContextVar[bool] = ContextVar("pegasus_writes_bounded", default=False)


@contextlib.contextmanager
def deadline(seconds: float, writes: bool = True) -> Iterator[None]:
    """Bound every retry of the Neo4j work inside to `seconds` from now (a request's
    deadline): a unit of work is not tried again after it, and fails with a clear error.
    `writes`: each write transaction also ends by then (not for work that may rightly write
    longer, such as a whole import)."""
    token = _deadline.set(time.monotonic() + seconds)
    bounded = _writes_bounded.set(writes)
    try:
        yield
    finally:
        _writes_bounded.reset(bounded)
        _deadline.reset(token)


def plain(value: Any) -> Any:
    """A result value as plain Python: nodes and relationships as property dicts.

    Like `Record.data()`, except that byte arrays stay whole (the driver's exporter rebuilds
    them byte by byte, which made reading packed key vectors slower than float lists).
    """
    if isinstance(value, Node | Relationship):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, bytes | bytearray | str):
        return value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def run(tx: ManagedTransaction, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """Run the named Cypher file inside a transaction; rows as plain dicts."""
    return [{k: plain(v) for k, v in record.items()}
            for record in tx.run(cypher.load(name), params)]


def rows(tx: neo4j.Transaction, name: str, /, **params: Any) -> Iterator[dict[str, Any]]:
    """`run` whose rows arrive as they are consumed, a fetch at a time (in `Store.stream`)."""
    for record in tx.run(cypher.load(name), params):
        yield {k: plain(v) for k, v in record.items()}


def run_values(tx: ManagedTransaction, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """`run` for a query that returns no node or relationship (only maps, lists and values):
    rows as the driver hands them, not copied value by value. A recall's walk returns hundreds
    of maps, and copying them through `plain` cost 2 ms of its time (#38)."""
    return [dict(record.items()) for record in tx.run(cypher.load(name), params)]


def _unit(work: str | Callable[[ManagedTransaction], T], params: dict[str, Any]
          ) -> Callable[[ManagedTransaction], Any]:
    """A transaction function: `work` itself, or one that runs the statement named `work`."""
    if isinstance(work, str):
        # `run` looked up when called, so a test can put a faulty one in its place.
        return lambda tx: run(tx, work, **params)
    if params:
        raise TypeError("parameters go with a statement's name, not a transaction function")
    return work


def resolve_connection(settings: Settings) -> tuple[str, tuple[str, str] | None]:
    """URI and auth: the configured server, else the local one `pegasus neo4j start` runs."""
    if settings.neo4j_uri:
        password = secret_text(settings.neo4j_password)
        auth = (settings.neo4j_user, password) if password is not None else None
        return settings.neo4j_uri, auth
    from pegasus.operations.neo4j_local import LocalNeo4j

    state = LocalNeo4j.managed(settings).state()
    if state is None:
        raise ConfigError(
            "no Neo4j configured: set NEO4J_URI (and NEO4J_PASSWORD), "
            "or run `pegasus neo4j start` for a local server"
        )
    auth = (state.user, state.password) if state.password else None
    return state.bolt_uri, auth


def too_old(version: str) -> bool:
    """Whether a Neo4j version is older than 2025.01: seeds need its vector index filtered by
    user (Cypher 25's SEARCH)."""
    major = int(version.split(".")[0]) if version[:1].isdigit() else 0
    return major < 2025


# How long closing a store waits for a thread still in a session (a request that outlived its
# deadline, a background probe) before it closes the connections under it anyway.
CLOSE_WAIT_S = 10.0

URI_SCHEMES = {"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"}


def connection_problem(exc: Exception, settings: Settings, uri: str) -> PegasusError | None:
    """A driver error that means a setting is wrong, as one line naming the setting and what
    to do; None for anything else."""
    if isinstance(exc, AuthError):
        if settings.neo4j_password is None and settings.neo4j_uri:
            return ConfigError(f"Neo4j at {uri} needs a password: set NEO4J_PASSWORD "
                               "(and NEO4J_USER if it is not neo4j)")
        return ConfigError(f"Neo4j at {uri} refused user {settings.neo4j_user!r} and its "
                           "password: set NEO4J_USER and NEO4J_PASSWORD to the server's")
    if isinstance(exc, ClientError) and exc.code and "DatabaseNotFound" in exc.code:
        return ConfigError(f"NEO4J_DATABASE={settings.neo4j_database!r}: no such database on "
                           f"{uri}; create it, or set NEO4J_DATABASE to one that exists "
                           "(neo4j by default)")
    if isinstance(exc, ServiceUnavailable | OSError):
        if "+s" in uri.split("://", 1)[0]:
            return ConfigError(f"NEO4J_URI={uri}: the TLS connection failed; a server without "
                               "TLS is reached with neo4j:// or bolt://, one with a "
                               "self-signed certificate with neo4j+ssc://")
        return Neo4jUnavailableError(f"cannot reach Neo4j at {uri}: check NEO4J_URI and that "
                                     "the server is running")
    if isinstance(exc, neo4j.exceptions.ConfigurationError | ValueError):
        return ConfigError(f"NEO4J_URI={uri!r} is not a Neo4j address (bolt://, neo4j://, "
                           f"neo4j+s://, …): {exc}")
    return None


class Store:
    """Named, parameterised Cypher against one database, with retries on lost connections."""

    def __init__(self, settings: Settings, driver: neo4j.Driver | None = None) -> None:
        self.settings = settings
        self.uri = settings.neo4j_uri or "the local server"
        if driver is None:
            uri, auth = resolve_connection(settings)
            self.uri = uri
            if uri.split("://", 1)[0] not in URI_SCHEMES:
                raise ConfigError(f"NEO4J_URI={uri!r} is not a Neo4j address: it starts with "
                                  "bolt://, neo4j://, neo4j+s:// (or +ssc, bolt+s …)")
            try:
                # Bounded connecting and waiting for a pooled connection: with Neo4j away, a
                # request learns it in seconds (docs/reliability.md, "Outages").
                driver = GraphDatabase.driver(
                    uri, auth=auth, max_transaction_retry_time=settings.neo4j_retry_time_s,
                    notifications_min_severity="OFF",
                    connection_timeout=settings.neo4j_connect_timeout_s,
                    connection_acquisition_timeout=settings.neo4j_connect_timeout_s,
                )
            except (neo4j.exceptions.ConfigurationError, ValueError) as exc:
                problem = connection_problem(exc, settings, uri)
                if problem is None:
                    raise
                raise problem from exc
        self.driver = driver
        self.database = settings.neo4j_database
        # Every session of this store chains the bookmarks of the ones before it: on a cluster
        # a recall right after a commit reads from a server that has the commit (causal
        # consistency); on a single server it costs nothing.
        self.bookmarks = GraphDatabase.bookmark_manager()
        # Sessions in use, so that close() waits for a thread still in one (a request the
        # server stopped waiting for, a background probe): the driver's connections are not
        # safe to close under a thread that writes to them.
        self._in_use = 0
        self._settled = threading.Condition()

    @contextlib.contextmanager
    def _using(self) -> Iterator[None]:
        with self._settled:
            self._in_use += 1
        try:
            yield
        finally:
            with self._settled:
                self._in_use -= 1
                self._settled.notify_all()

    @contextlib.contextmanager
    def _session(self, **config: Any) -> Iterator[neo4j.Session]:
        with self._using(), self.driver.session(
                database=self.database, bookmark_manager=self.bookmarks,
                max_transaction_retry_time=self.retry_window(), **config) as session:
            yield session

    def retry_window(self) -> float:
        """How long a unit of work may still be retried: neo4j_retry_time_s, cut short by the
        current request's deadline."""
        window = self.settings.neo4j_retry_time_s
        until = _deadline.get()
        if until is not None:
            window = min(window, until - time.monotonic())
        return max(window, 0.0)

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Close the driver once no thread is in a session (waiting up to `wait_s`)."""
        with self._settled:
            self._settled.wait_for(lambda: self._in_use == 0, timeout=wait_s)
        self.driver.close()

    def verify(self) -> None:
        """Fail with one clear line when a setting is wrong: the server cannot be reached, it
        refuses the credentials, the database does not exist, or it is older than 2025.01."""
        try:
            with self._using():
                self.driver.verify_connectivity()
            version = self.server_version()
        except (AuthError, ClientError, ServiceUnavailable, OSError) as exc:
            problem = connection_problem(exc, self.settings, self.uri)
            if problem is None:
                raise
            raise problem from exc
        if too_old(version):
            raise ConfigError(
                f"Neo4j at {self.uri} is {version or 'of unknown version'}; Pegasus needs "
                "2025.01 or later (its vector index filtered per user). Upgrade the server "
                "(README, \"Upgrading from Neo4j 5.26\")")

    def _retrying(self, work: Callable[[], T]) -> T:
        """Run `work` (the driver retries it within `retry_window`); then a clear error."""
        try:
            return work()
        except (ServiceUnavailable, SessionExpired) as exc:
            raise Neo4jUnavailableError(
                f"lost the connection to Neo4j and could not get it back within "
                f"{self.settings.neo4j_retry_time_s:g} s ({type(exc).__name__}); "
                "the transaction was not committed") from exc
        except TransientError as exc:
            raise Neo4jUnavailableError(
                f"Neo4j stayed busy ({exc.code}) until the retry deadline; the transaction "
                "was not committed: try again") from exc

    # Four ways in, by intent: `read`, `write`, `autocommit`, `stream`. `read` and `write`
    # take a transaction function (a unit of work, retried as a whole) or the name of one
    # Cypher statement, whose rows come back as plain dicts.

    @overload
    def read(self, work: str, /, **params: Any) -> list[dict[str, Any]]: ...

    @overload
    def read(self, work: Callable[[ManagedTransaction], T], /) -> T: ...

    def read(self, work: str | Callable[[ManagedTransaction], Any], /, **params: Any) -> Any:
        """Run `work` (a transaction function, or a named read statement with `params`) in a
        read transaction, retried as a whole."""
        fn = _unit(work, params)

        def attempt() -> Any:
            with self._session() as session:
                return session.execute_read(fn)
        return self._retrying(attempt)

    @overload
    def write(self, work: str, /, **params: Any) -> list[dict[str, Any]]: ...

    @overload
    def write(self, work: Callable[[ManagedTransaction], T], /, *,
              rollback: bool = False) -> T: ...

    def write(self, work: str | Callable[[ManagedTransaction], Any], /, *,
              rollback: bool = False, **params: Any) -> Any:
        """Run `work` (a transaction function, or a named write statement with `params`) in
        one write transaction: all of it commits, or none of it. Within a request's deadline
        the transaction ends with it: a write that waits on a lock another transaction holds
        (an export's) fails then, instead of holding its request.

        `rollback=True` rehearses: `work` runs once (not retried) and is rolled back, so Neo4j
        plans and runs its queries (their plans cached for later) and nothing is kept."""
        fn = _unit(work, params)
        if rollback:
            with self._session() as session:
                tx = session.begin_transaction()
                try:
                    return fn(tx)  # type: ignore[arg-type]  # an explicit tx runs queries alike
                finally:
                    tx.rollback()
        until = _deadline.get()
        if until is not None and _writes_bounded.get():
            fn = neo4j.unit_of_work(timeout=max(until - time.monotonic(), 0.1))(fn)

        def attempt() -> Any:
            with self._session() as session:
                return session.execute_write(fn)
        try:
            return self._retrying(attempt)
        except ClientError as exc:
            if "TransactionTimedOut" not in (exc.code or ""):
                raise
            raise Neo4jUnavailableError(
                "the change waited on another one (an export, a merge) past the request's "
                "deadline; nothing was written: try again") from exc

    def autocommit(self, name: str, /, **params: Any) -> None:
        """A named statement in an auto-commit transaction (needed by CALL … IN TRANSACTIONS).

        Safe to retry only because every such statement here is idempotent.
        """
        def work() -> None:
            # An auto-commit transaction is not a managed one: it is retried here, by the same
            # rule (what, and for how long) as the driver's.
            for attempt in Retrying(
                retry=retry_if_exception_type(_RETRYABLE),
                wait=wait_exponential(multiplier=0.5, max=8),
                stop=stop_after_delay(self.retry_window()),
                before_sleep=before_sleep_log(log, logging.WARNING), reraise=True,
            ):
                with attempt, self._session() as session:
                    session.run(cypher.load(name), params).consume()
        self._retrying(work)

    @overload
    def stream(self, work: str, /, *, timeout_s: float | None = None,
               **params: Any) -> Iterator[dict[str, Any]]: ...

    @overload
    def stream(self, work: Callable[[neo4j.Transaction], Iterator[T]], /, *,
               timeout_s: float | None = None) -> Iterator[T]: ...

    def stream(self, work: str | Callable[[neo4j.Transaction], Iterator[Any]], /, *,
               timeout_s: float | None = None, **params: Any) -> Iterator[Any]:
        """What a long read hands on as it is consumed, a fetch at a time (an export of a node
        with tens of thousands of edges never sits in one list): the rows of a named read
        statement, or what the generator `work` yields from one transaction it is given (a lock
        its first statement takes is held until the last item is taken). Not retried: items
        already handed on cannot be taken back. Neo4j ends the transaction after `timeout_s`,
        so a reader that stalls cannot hold what it locked for ever; a function's transaction
        is rolled back at the end (it writes nothing). A lost connection, at its start or
        midway, is a Neo4jUnavailableError."""
        try:
            if isinstance(work, str):
                with self._session(fetch_size=500,
                                   default_access_mode=neo4j.READ_ACCESS) as session:
                    yield from (
                        {k: plain(v) for k, v in record.items()}
                        for record in session.run(
                            neo4j.Query(cypher.load(work), timeout=timeout_s), params))
                return
            if params:
                raise TypeError("parameters go with a statement's name, not a function")
            with self._session(fetch_size=500) as session, \
                    session.begin_transaction(timeout=timeout_s) as tx:
                yield from work(tx)
        except (ServiceUnavailable, SessionExpired) as exc:
            raise Neo4jUnavailableError(
                f"lost the connection to Neo4j during a read ({type(exc).__name__}); what was "
                "read so far is incomplete") from exc
        except TransientError as exc:
            raise Neo4jUnavailableError(
                f"Neo4j ended a read ({exc.code}); what was read so far is incomplete") from exc
        except ClientError as exc:
            if "TransactionTimedOut" not in (exc.code or ""):
                raise
            raise PegasusError(f"the read took longer than its {timeout_s:g} s and Neo4j ended "
                               "it; what was read so far is incomplete") from exc

    # --- schema ------------------------------------------------------------------------

    def migrate_schema(self, wait_s: float = 300.0) -> list[str]:
        """Apply the pending `cypher/schema` migrations in order; the names applied. The first
        step of `pegasus.migrations.migrate`, which runs the data steps after it.

        Concurrent runs (two servers starting at once) serialise on a lock node: the second
        waits, then finds nothing left to apply. Each version is recorded once (a constraint)."""
        self.require_server()
        self._run_schema("maintenance/migration_bootstrap", cypher.split_statements(
            cypher.load("maintenance/migration_bootstrap")))
        holder = uuid.uuid4().hex
        deadline = time.monotonic() + wait_s
        while not self.write("write/migration_lock", holder=holder,
                             lease_s=int(wait_s))[0]["taken"]:
            if time.monotonic() > deadline:
                raise MigrationError("another `pegasus migrate` holds the schema lock; try again "
                                     "when it has finished")
            time.sleep(0.5)
        try:
            return self._apply_pending()
        finally:
            self.write("write/migration_unlock", holder=holder)

    def require_server(self) -> None:
        """Refuse a server older than Neo4j 2025: seeds need a vector index filtered by user."""
        version = self.server_version()
        if too_old(version):
            raise MigrationError(
                f"Pegasus needs Neo4j 2025.x or later (its vector index filtered per user); "
                f"this server is {version or 'of unknown version'}. Move the database to "
                "2026.08 first (README, \"Upgrading from Neo4j 5.26\")"
            )

    def _run_schema(self, name: str, statements: list[str]) -> None:
        # Schema statements cannot share a transaction with writes: one each. Two processes
        # creating the same constraint at once can deadlock on the schema lock: every
        # statement is IF NOT EXISTS, so a transient failure is simply tried again.
        for statement in statements:
            try:
                for attempt in Retrying(
                    retry=retry_if_exception_type(neo4j.exceptions.TransientError),
                    wait=wait_exponential(multiplier=0.2, max=2), stop=stop_after_attempt(8),
                    before_sleep=before_sleep_log(log, logging.INFO), reraise=True,
                ):
                    with attempt, self._session() as session:
                        session.run(statement).consume()
            except neo4j.exceptions.Neo4jError as exc:
                raise MigrationError(f"{name} failed: {exc.message}") from exc

    def _apply_pending(self) -> list[str]:
        available = cypher.migrations()
        applied = {r["version"]: r["checksum"] for r in self.read("read/applied_migrations")}
        done: list[str] = []
        for migration in cypher.check_applied(applied, available):
            self._run_schema(migration.path.name, migration.statements)
            self.write(
                "write/record_migration",
                version=migration.version,
                description=migration.description,
                checksum=migration.checksum,
                applied_at=datetime.now(UTC).isoformat(),
            )
            done.append(migration.path.name)
        return done

    def server_version(self) -> str:
        """The server's version, e.g. "2026.08.1" (empty when it does not say)."""
        return str(self.server_info().get("version") or "")

    def server_info(self) -> dict[str, Any]:
        rows = self.read("read/server_info")
        return rows[0] if rows else {}
