"""`pegasus connect <agent>` / `pegasus disconnect <agent>`: one memory for every coding agent.

Each agent is one small table below: the file of its own it reads (under the person's HOME),
the Pegasus part written there, and how that part is recognised again (to replace it, check
it, or take it out). What is written runs `pegasus-hook` by its full path (./run's venv is not
on PATH, and a CLI that runs a bare name it cannot find fails silently); the server's URL and
the key go to one client file (`$XDG_CONFIG_HOME/pegasus/client.json`, owner-only) that the
hook and the Opencode plugin read, so no key is copied into the agents' settings, which people
share and commit.

A run changes a file only when its content would differ (a second run changes nothing), keeps
the file as it was beside it (`<name>.pegasus-backup`), leaves every other setting as it was,
and refuses a file it cannot read as JSON rather than overwrite it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pegasus.errors import PegasusError

BACKUP_SUFFIX = ".pegasus-backup"
OPENCODE_PLUGIN = Path(__file__).resolve().parents[2] / "integrations" / "opencode" / "dist" \
    / "src" / "index.js"


class ConnectError(PegasusError):
    """An agent cannot be connected as asked (a file that is not JSON, no pegasus-hook, …)."""


@dataclass(frozen=True)
class Places:
    """Where each agent keeps its files, from the environment as the agents read it."""

    home: Path
    codex_home: Path
    copilot_home: Path
    config_home: Path
    gemini_cli_home: Path | None = None  # GEMINI_CLI_HOME: Gemini's HOME, when set

    @property
    def gemini_home(self) -> Path:
        return self.gemini_cli_home or self.home

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Places:
        env = os.environ if environ is None else environ
        home = Path(env.get("HOME") or Path.home())
        return cls(home=home,
                   codex_home=Path(env.get("CODEX_HOME") or home / ".codex"),
                   copilot_home=Path(env.get("COPILOT_HOME") or home / ".copilot"),
                   config_home=Path(env.get("XDG_CONFIG_HOME") or home / ".config"),
                   gemini_cli_home=Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME")
                   else None)


def hook_program() -> Path:
    """The full path of `pegasus-hook`: beside this interpreter (a venv's bin, ./run's too),
    else on PATH."""
    here = Path(sys.executable).parent / "pegasus-hook"
    if here.is_file() and os.access(here, os.X_OK):
        return here
    found = shutil.which("pegasus-hook")
    if found:
        return Path(found).absolute()
    raise ConnectError("pegasus-hook is not installed beside this Python nor on PATH: install "
                       "Pegasus (pip install pegasus-memory, or ./run) and run connect again")


def _is_ours(command: object) -> bool:
    return isinstance(command, str) and "pegasus-hook" in command


@dataclass(frozen=True)
class HooksFile:
    """Claude Code's hook shape, shared by Codex, Qwen Code and Gemini CLI:
    `{"hooks": {Event: [{"hooks": [{"type": "command", "command": …, "timeout": …}]}]}}`."""

    events: dict[str, int]  # event → timeout, in the agent's unit
    named: bool = False  # Gemini CLI shows each hook by `name`

    def entry(self, hook: Path, event: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "command",
                                 "command": f"{shlex.quote(str(hook))} {event}",
                                 "timeout": self.events[event]}
        return {"name": f"pegasus-{event}", **entry} if self.named else entry

    def connect(self, config: dict[str, Any], hook: Path) -> dict[str, Any]:
        hooks = dict(self.disconnect(config).get("hooks") or {})
        for event in self.events:
            hooks[event] = [*hooks.get(event, []), {"hooks": [self.entry(hook, event)]}]
        return {**config, "hooks": hooks}

    def disconnect(self, config: dict[str, Any]) -> dict[str, Any]:
        hooks = config.get("hooks")
        if not isinstance(hooks, dict):
            return config
        kept: dict[str, Any] = {}
        for event, groups in hooks.items():
            if not isinstance(groups, list):
                kept[event] = groups
                continue
            left = []
            for group in groups:
                inner = group.get("hooks") if isinstance(group, dict) else None
                if not isinstance(inner, list):
                    left.append(group)
                    continue
                others = [h for h in inner if not (isinstance(h, dict)
                                                   and _is_ours(h.get("command")))]
                if others:
                    left.append({**group, "hooks": others})
            if left or not groups:
                kept[event] = left
        out = {**config, "hooks": kept}
        if not kept:
            del out["hooks"]
        return out

    def commands(self, config: dict[str, Any]) -> dict[str, list[str]]:
        found = config.get("hooks")
        hooks: dict[str, Any] = found if isinstance(found, dict) else {}
        return {event: [h["command"] for group in hooks.get(event) or []
                        if isinstance(group, dict)
                        for h in group.get("hooks") or []
                        if isinstance(h, dict) and _is_ours(h.get("command"))]
                for event in self.events}


@dataclass(frozen=True)
class CopilotHooksFile:
    """Copilot CLI's user hook file, a file of Pegasus's own in `$COPILOT_HOME/hooks/`:
    `{"version": 1, "hooks": {event: [{"type": "command", "bash": …, "timeoutSec": …}]}}`."""

    events: dict[str, float]

    def connect(self, config: dict[str, Any], hook: Path) -> dict[str, Any]:
        return {"version": 1, "hooks": {
            event: [{"type": "command", "bash": f"{shlex.quote(str(hook))} {event}",
                     "timeoutSec": timeout}] for event, timeout in self.events.items()}}

    def disconnect(self, config: dict[str, Any]) -> dict[str, Any]:
        return {}

    def commands(self, config: dict[str, Any]) -> dict[str, list[str]]:
        found = config.get("hooks")
        hooks: dict[str, Any] = found if isinstance(found, dict) else {}
        return {event: [h["bash"] for h in hooks.get(event) or []
                        if isinstance(h, dict) and _is_ours(h.get("bash"))]
                for event in self.events}


@dataclass(frozen=True)
class OpencodePlugin:
    """Opencode's global config: the Pegasus plugin (integrations/opencode) in `plugin`."""

    plugin: Path = OPENCODE_PLUGIN
    events: dict[str, float] = field(default_factory=dict)

    def _ours(self, entry: object) -> bool:
        return isinstance(entry, str) and (entry == self.plugin.as_uri()
                                           or entry.endswith("/opencode/dist/src/index.js")
                                           or "opencode-pegasus" in entry)

    def connect(self, config: dict[str, Any], hook: Path) -> dict[str, Any]:
        if not self.plugin.is_file():
            raise ConnectError(
                f"the Opencode plugin is not built ({self.plugin} is missing): run `npm install "
                f"&& npm run build` in {self.plugin.parents[2]}, then connect again")
        plugins = [p for p in config.get("plugin") or [] if not self._ours(p)]
        return {"$schema": "https://opencode.ai/config.json", **config,
                "plugin": [*plugins, self.plugin.as_uri()]}

    def disconnect(self, config: dict[str, Any]) -> dict[str, Any]:
        if "plugin" not in config:
            return config
        plugins = [p for p in config.get("plugin") or [] if not self._ours(p)]
        return {**config, "plugin": plugins} if plugins else \
            {k: v for k, v in config.items() if k != "plugin"}

    def commands(self, config: dict[str, Any]) -> dict[str, list[str]]:
        found = [p for p in config.get("plugin") or [] if self._ours(p)]
        return {"plugin": found}


Shape = HooksFile | CopilotHooksFile | OpencodePlugin
# Seconds, except Gemini CLI's milliseconds; a session's end gets 3 s (Codex's most).
CLAUDE_EVENTS = {"UserPromptSubmit": 10, "Stop": 10, "SessionEnd": 3}


@dataclass(frozen=True)
class Agent:
    """One coding-agent CLI: its id, the file Pegasus writes, and what that connects."""

    id: str
    name: str
    part: str  # the line `pegasus doctor` prints for it
    what: str  # what is connected, in the person's words
    file: Callable[[Places], Path]
    shape: Shape
    owns_file: bool = False  # the whole file is Pegasus's (removed on disconnect)
    note: str = ""


AGENTS: dict[str, Agent] = {agent.id: agent for agent in (
    Agent("claude-code", "Claude Code", "Claude Code hooks",
          "hooks: UserPromptSubmit recalls into the prompt and records it, Stop records the "
          "reply, SessionEnd closes the conversation",
          lambda p: p.home / ".claude" / "settings.json", HooksFile(CLAUDE_EVENTS)),
    Agent("codex", "Codex", "Codex hooks",
          "hooks (as Claude Code's), trusted in config.toml",
          lambda p: p.codex_home / "hooks.json", HooksFile(CLAUDE_EVENTS),
          note="`codex exec` runs hooks only with --dangerously-bypass-hook-trust"),
    Agent("opencode", "Opencode", "Opencode plugin",
          "the Pegasus plugin: recalls into the system prompt, records both turns, closes "
          "idle sessions",
          lambda p: p.config_home / "opencode" / "opencode.json", OpencodePlugin()),
    Agent("gemini", "Gemini CLI", "Gemini CLI hooks",
          "hooks: BeforeAgent recalls into the prompt and records it, AfterAgent records the "
          "reply, SessionEnd closes the conversation",
          lambda p: p.gemini_home / ".gemini" / "settings.json",
          HooksFile({"BeforeAgent": 10000, "AfterAgent": 10000, "SessionEnd": 3000},
                    named=True)),
    Agent("copilot", "GitHub Copilot CLI", "Copilot CLI hooks",
          "hooks: userPromptTransformed recalls into the prompt and records it, agentStop "
          "records the reply, sessionEnd closes the conversation",
          lambda p: p.copilot_home / "hooks" / "pegasus.json",
          CopilotHooksFile({"userPromptTransformed": 10, "agentStop": 10, "sessionEnd": 3}),
          owns_file=True),
    Agent("qwen", "Qwen Code", "Qwen Code hooks",
          "hooks (as Claude Code's)",
          lambda p: p.home / ".qwen" / "settings.json", HooksFile(CLAUDE_EVENTS)),
)}


def agent_named(name: str) -> Agent:
    if name not in AGENTS:
        raise ConnectError(f"unknown agent {name!r}: one of {', '.join(AGENTS)} "
                           "(`pegasus connect --list`)")
    return AGENTS[name]


# --- files --------------------------------------------------------------------------------

def read_json(path: Path) -> dict[str, Any]:
    """The file's JSON object ({} when there is no file); a file that is not one is refused."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise ConnectError(f"{path} cannot be read as JSON ({exc}): fix it (or move it "
                           "away), then run again; nothing was changed") from exc
    if not isinstance(data, dict):
        raise ConnectError(f"{path} is not a JSON object: fix it, then run again; nothing "
                           "was changed")
    return data


def write_text(path: Path, text: str, mode: int | None = None) -> str | None:
    """Write `text` unless the file already holds it; the old file is kept as the backup.
    What was done, in a line; None when nothing changed."""
    old = path.read_text(encoding="utf-8") if path.exists() else None
    if old == text:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if old is not None:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        shutil.copy2(path, backup)
        if mode is not None:
            os.chmod(backup, mode)
    temporary = path.with_name(path.name + ".pegasus-tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    with open(os.open(temporary, flags, mode if mode is not None else 0o644), "w",
              encoding="utf-8") as out:
        out.write(text)
    if mode is not None:
        os.chmod(temporary, mode)
    elif old is not None:
        shutil.copymode(path, temporary)
    os.replace(temporary, path)
    return f"wrote {path}" + (f" (the old one is {backup})" if backup else "")


def dump(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"


# --- connect, disconnect, check ----------------------------------------------------------

def connect(agent: Agent, places: Places, url: str, key: str,
            hook: Path | None = None, codex: str | None = None,
            trust: Sequence[Path] = ()) -> list[str]:
    """Write the agent's Pegasus part and the client file; what was done, line by line.
    `trust`: folders Gemini CLI is told to trust (it runs hooks only in trusted folders)."""
    if not key:
        raise ConnectError("no key: give --key, or set PEGASUS_API_KEY (a key of "
                           "PEGASUS_API_KEYS on the server)")
    hook = hook or hook_program()
    path = agent.file(places)
    config = read_json(path)
    done = [write_text(path, dump(agent.shape.connect(config, hook)))]
    client = client_path_for(places)
    done.append(write_text(client, dump({"url": url, "key": key}), mode=0o600))
    if agent.id == "codex":
        done += trust_codex_hooks(places, path, codex)
    if agent.id == "gemini":
        done += trust_gemini_folders(places, trust)
    elif trust:
        raise ConnectError("--trust-folder is Gemini CLI's step; other agents have none")
    lines = [line for line in done if line]
    if not any(line.startswith("wrote ") for line in lines):
        lines.insert(0, f"{agent.name} was already connected: nothing changed")
    return lines


def disconnect(agent: Agent, places: Places) -> list[str]:
    """Take the agent's Pegasus part out of its file; the client file stays for the others."""
    path = agent.file(places)
    if not path.exists():
        return [f"{agent.name} is not connected: nothing changed"]
    if agent.owns_file:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        shutil.copy2(path, backup)
        path.unlink()
        return [f"removed {path} (kept as {backup})"]
    config = read_json(path)
    changed = write_text(path, dump(agent.shape.disconnect(config)))
    return [changed] if changed else [f"{agent.name} is not connected: nothing changed"]


def client_path_for(places: Places) -> Path:
    return places.config_home / "pegasus" / "client.json"


def check(agent: Agent, places: Places, environ: dict[str, str] | None = None):
    """The check `pegasus doctor` runs for this agent: its Pegasus part is whole, the program
    it runs exists, and a key is there for it."""
    from pegasus.operations.checks import ok, problem, skipped

    env = os.environ if environ is None else environ
    path = agent.file(places)
    if not path.is_file():
        return skipped(agent.part, f"none in {path} (`pegasus connect {agent.id}`)")
    try:
        config = read_json(path)
    except ConnectError as exc:
        return problem(agent.part, str(exc))
    found = agent.shape.commands(config)
    if not any(found.values()):
        return skipped(agent.part, f"none in {path} (`pegasus connect {agent.id}`)")
    missing = [event for event, commands in found.items() if not commands]
    if missing:
        return problem(agent.part, f"{path} has no pegasus-hook for {', '.join(missing)}: run "
                       f"`pegasus connect {agent.id}`")
    if isinstance(agent.shape, OpencodePlugin):
        plugin = next(iter(found["plugin"]))
        where = Path(plugin.removeprefix("file://"))
        if plugin.startswith("file://") and not where.is_file():
            return problem(agent.part, f"{path} loads {where}, which is missing: build the "
                           "plugin (npm run build in integrations/opencode)")
        runs = plugin
    else:
        program = shlex.split(next(c for commands in found.values() for c in commands))[0]
        runs = shutil.which(program, path=env.get("PATH"))
        if runs is None:
            here = shutil.which("pegasus-hook", path=os.pathsep.join(
                [env.get("PATH", ""), str(Path(sys.executable).parent)]))
            todo = (f"use its full path {here} (run `pegasus connect {agent.id}`), or put "
                    f"{Path(here).parent} on PATH" if here else
                    "install Pegasus where the CLI runs, or give the hook's full path")
            return problem(agent.part, f"{path} runs {program!r}, which is not on PATH: "
                           f"{todo}")
    if not (env.get("PEGASUS_API_KEY") or _client_key(places)):
        return problem(agent.part, f"no key for it: run `pegasus connect {agent.id} --key …`, "
                       "or set PEGASUS_API_KEY where the CLI runs")
    events = ", ".join(e for e in found if e != "plugin")
    more = f"; {agent.note}" if agent.note else ""
    return ok(agent.part, f"{path}: {events + ' run ' if events else 'loads '}{runs}{more}")


def _client_key(places: Places) -> str | None:
    try:
        key = json.loads(client_path_for(places).read_text(encoding="utf-8")).get("key")
    except (OSError, ValueError, AttributeError):
        return None
    return key if isinstance(key, str) and key else None


# --- Gemini CLI's trust step ----------------------------------------------------------------

GEMINI_TRUST_NOTE = ("Gemini CLI runs hooks only in folders you trust: answer its trust "
                     "question in each project, or run `pegasus connect gemini --trust-folder "
                     "DIR`")


def trust_gemini_folders(places: Places, folders: Sequence[Path]) -> list[str]:
    """Gemini CLI runs no hook (and a headless run stops) in a folder the person has not
    trusted (`security.folderTrust`, on by default). Trusting a folder is the person's choice,
    so connect trusts only the folders named (`TRUST_FOLDER` in ~/.gemini/trustedFolders.json,
    as Gemini's own question writes it; the other entries kept); without any, it says how."""
    if not folders:
        return [GEMINI_TRUST_NOTE]
    for folder in folders:
        if not folder.is_dir():
            raise ConnectError(f"--trust-folder {folder}: not a folder; nothing was changed")
    path = places.gemini_home / ".gemini" / "trustedFolders.json"
    trusted = read_json(path)
    for name, level in trusted.items():
        if not isinstance(level, str):
            raise ConnectError(f"{path}: {name!r} has no trust level; fix it, then run again; "
                               "nothing was changed")
    for folder in folders:
        trusted[str(folder.resolve())] = "TRUST_FOLDER"
    changed = write_text(path, dump(trusted), mode=0o600)
    named = ", ".join(str(f.resolve()) for f in folders)
    return [changed, f"Gemini CLI trusts {named}"] if changed else []


# --- Codex's trust step --------------------------------------------------------------------

def trust_codex_hooks(places: Places, hooks_file: Path, codex: str | None = None) -> list[str]:
    """Codex runs a hook only once the person trusted it (`[hooks.state."<key>"]
    trusted_hash` in config.toml, as its TUI's "Trust all and continue" writes). The key and
    hash are Codex's own, so they are asked of Codex (`codex app-server`, `hooks/list`)
    rather than recomputed; without a codex on PATH, the person trusts them in the TUI."""
    program = codex or shutil.which("codex")
    if program is None:
        return ["codex is not on PATH: start `codex` once and choose \"Trust all and "
                "continue\" to trust the hooks"]
    try:
        listed = _codex_hooks(program, places)
    except (OSError, ValueError, TimeoutError) as exc:
        return [f"could not ask Codex which hooks it trusts ({exc}): start `codex` once and "
                "choose \"Trust all and continue\""]
    ours = [h for h in listed if _is_ours(h.get("command"))
            and Path(str(h.get("sourcePath", ""))) == hooks_file
            and isinstance(h.get("key"), str) and isinstance(h.get("currentHash"), str)]
    config = places.codex_home / "config.toml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    updated = text
    for hook in ours:
        updated = _with_trust(updated, hook["key"], hook["currentHash"])
    changed = write_text(config, updated) if updated != text else None
    return [f"{changed}: Codex trusts the {len(ours)} Pegasus hooks"] if changed else []


def _with_trust(toml: str, key: str, digest: str) -> str:
    """config.toml with `[hooks.state."<key>"] trusted_hash = "<digest>"`, the rest as it
    was (the table is replaced in place when it is there)."""
    header = f"[hooks.state.{json.dumps(key)}]"
    line = f"trusted_hash = {json.dumps(digest)}"
    lines = toml.splitlines()
    if header in lines:
        at = lines.index(header) + 1
        while at < len(lines) and not lines[at].lstrip().startswith("["):
            if lines[at].split("=")[0].strip() == "trusted_hash":
                lines[at] = line
                return "\n".join(lines) + "\n"
            at += 1
        lines.insert(lines.index(header) + 1, line)
        return "\n".join(lines) + "\n"
    return toml + ("\n" if toml and not toml.endswith("\n") else "") + \
        f"\n{header}\n{line}\n"


def _codex_hooks(program: str, places: Places, timeout_s: float = 60.0) -> list[dict]:
    """Codex's own list of the hooks it found (JSON-RPC over `codex app-server`'s stdio)."""
    env = {**os.environ, "HOME": str(places.home), "CODEX_HOME": str(places.codex_home)}
    with subprocess.Popen([program, "app-server"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                          text=True, start_new_session=True) as server:
        assert server.stdin is not None and server.stdout is not None
        try:
            for message in (
                    {"id": 1, "method": "initialize",
                     "params": {"clientInfo": {"name": "pegasus-connect", "version": "1"}}},
                    {"method": "initialized"},
                    {"id": 2, "method": "hooks/list", "params": {"cwds": [str(places.home)]}}):
                server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
            answers: queue.Queue[str] = queue.Queue()
            # a thread reads (select on a buffered pipe misses lines already buffered)
            def read_lines() -> None:
                for line in server.stdout or []:
                    answers.put(line)

            threading.Thread(target=read_lines, daemon=True).start()
            deadline = time.monotonic() + timeout_s
            while (left := deadline - time.monotonic()) > 0:
                try:
                    answer = json.loads(answers.get(timeout=left))
                except queue.Empty:
                    break
                if answer.get("id") == 2:
                    if "error" in answer:
                        raise OSError(str(answer["error"].get("message")))
                    return [hook for entry in answer["result"].get("data", [])
                            for hook in entry.get("hooks", [])]
            raise TimeoutError(f"codex app-server gave no answer in {timeout_s:.0f} s")
        finally:
            # npm's `codex` is a Node launcher of the native binary: stop both
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
