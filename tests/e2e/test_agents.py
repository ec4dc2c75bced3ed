"""The real Claude Code and Codex CLIs (pinned, from npm), with Pegasus, end to end.

Each way a person can connect them is run as they would run it:
- through the hooks: the CLI talks to the model directly (the stub upstream), and
  `pegasus-hook` records, recalls and closes on `pegasus serve`;
- through the proxy: the CLI's model endpoint is `pegasus serve` (Claude Code's
  ANTHROPIC_BASE_URL, Codex's `[model_providers.x]` with `wire_api = "responses"`).
`pegasus serve` runs as a subprocess with a scripted extraction model; the stub records every
request the model got. Each CLI runs headless (`claude -p`, `codex exec`) with a fresh HOME /
CODEX_HOME, offline. Where a CLI puts hook context depends on the model, so the assertions
look at the whole request body.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from pegasus import Memory
from pegasus.operations.neo4j_local import free_port
from tests.e2e.opencode_llm import SAID
from tests.e2e.running import KEY, ROOT, SARAH, memory_block, pegasus_serve, wait_for
from tests.serve.servers import StubUpstream

AGENTS = ROOT / "tests" / "e2e" / "agents"
CLAUDE = AGENTS / "node_modules" / ".bin" / "claude"
CODEX = AGENTS / "node_modules" / ".bin" / "codex"
FIRST = f"Should I visit Sarah this spring? Also, {SAID}."
SECOND = "What could I give Maya before her marathon?"
REPLY = "".join(StubUpstream.CHUNKS)
EVENTS = ("UserPromptSubmit", "Stop", "SessionEnd")


@pytest.fixture(scope="module")
def agents() -> None:
    """The pinned CLIs, installed from npm into tests/e2e/agents the first time."""
    npm = shutil.which("npm")
    assert npm, "npm not found: ./run installs Node.js and npm from Debian packages"
    if not (CLAUDE.exists() and CODEX.exists()):
        subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=AGENTS, check=True,
                       capture_output=True, timeout=1800)
    versions = [subprocess.run([str(cli), "--version"], capture_output=True, text=True,
                               timeout=120).stdout.strip() for cli in (CLAUDE, CODEX)]
    assert versions == ["2.1.197 (Claude Code)", "codex-cli 0.171.0"]


def hooks_config() -> dict:
    """The hooks both CLIs read (Claude Code's settings.json, Codex's hooks.json)."""
    # seconds; Codex allows a SessionEnd hook 3 at most
    timeouts = {"UserPromptSubmit": 10, "Stop": 10, "SessionEnd": 3}
    return {"hooks": {event: [{"hooks": [{"type": "command", "command": f"pegasus-hook {event}",
                                          "timeout": timeouts[event]}]}]
                      for event in EVENTS}}


def hook_env(home: Path, pegasus_url: str) -> dict[str, str]:
    """What the hooks inherit: the user's server and key, this clone's sources first."""
    return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            "HOME": str(home), "PEGASUS_URL": pegasus_url, "PEGASUS_API_KEY": KEY,
            "PEGASUS_HOOK_SPOOL": str(home / "pegasus-spool.json"),
            # a first recall on a busy CI machine can take seconds: within the hook's 10 s
            "PEGASUS_HOOK_TIMEOUT_S": "8",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


def claude(home: Path, message: str, model_url: str, key: str, pegasus_url: str = "",
           hooks: bool = False, options: tuple[str, ...] = (), **more_env: str
           ) -> subprocess.CompletedProcess:
    home.mkdir(exist_ok=True)
    command = [str(CLAUDE), "-p", message, "--model", "claude-sonnet-4-5", *options]
    if hooks:
        (home / "settings.json").write_text(json.dumps(hooks_config(), indent=2))
        command += ["--settings", str(home / "settings.json")]
    env = {**hook_env(home, pegasus_url), "ANTHROPIC_BASE_URL": model_url,
           "ANTHROPIC_API_KEY": key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", **more_env}
    project = home / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def codex_config(model_url: str, key_variable: str, provider: str = "stub") -> str:
    """The config.toml of a Codex pointed at `model_url` (a Responses API), kept offline."""
    return f"""model = "gpt-5.1-codex-mini"
model_provider = "{provider}"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.{provider}]
name = "{provider.title()}"
base_url = "{model_url}"
env_key = "{key_variable}"
wire_api = "responses"
"""


def codex(home: Path, message: str, model_url: str, key: str, pegasus_url: str = "",
          hooks: bool = False) -> subprocess.CompletedProcess:
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    provider = "pegasus" if key == KEY else "stub"  # the proxy, or the model directly
    (codex_home / "config.toml").write_text(codex_config(model_url, "MODEL_KEY", provider))
    hooks_file = codex_home / "hooks.json"
    if hooks:
        hooks_file.write_text(json.dumps(hooks_config(), indent=2))
    elif hooks_file.exists():
        hooks_file.unlink()
    env = {**hook_env(home, pegasus_url), "CODEX_HOME": str(codex_home), "MODEL_KEY": key}
    project = home / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run([str(CODEX), "exec", "--skip-git-repo-check",
                           "--dangerously-bypass-hook-trust", message],
                          cwd=project, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def body_for(bodies: list[dict], message: str) -> dict:
    """The request that carried this message (the main turn, not a side request)."""
    found = [b for b in bodies if message in json.dumps(b)]
    assert found, f"the model never got {message!r}: {len(bodies)} requests"
    return found[-1]


def claude_session(body: dict) -> str:
    return json.loads(body["metadata"]["user_id"])["session_id"]


def codex_session(body: dict) -> str:
    return body["client_metadata"]["session_id"]


def closed_with_turns(settings, user_id: str, session: str) -> list[dict]:
    """Once the session's conversation is closed (and extracted): its recorded turns."""
    with Memory(settings) as memory:
        assert wait_for(lambda: memory.conversation_state(user_id, session)["status"]
                        == "closed"), memory.conversation_state(user_id, session)
        turns = memory.conversation_state(user_id, session)["turns"]
        maya = [e for e in memory.edges(user_id) if e.target == "Maya"]
        assert [(e.source, e.relation, e.conversations) for e in maya] == [
            ("User", "HAS_SISTER", [session])], "the close extracted the session once"
    return [json.loads(t) for t in turns]


def test_claude_code_with_the_hooks_recalls_records_and_remembers(
        agents, stub, serve, settings, user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    home = tmp_path / "home"
    began = time.monotonic()
    first = claude(home, FIRST, stub.url, "model-key", serve, hooks=True)
    elapsed = time.monotonic() - began
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.strip() == REPLY
    body = body_for(stub.received_messages, FIRST)
    spool = home / "pegasus-spool.json"
    assert memory_block(json.dumps(body), "my sister Sarah is moving again"), (
        spool.read_text() if spool.exists() else "no spool")
    assert elapsed < 60, elapsed

    # The prompt and the reply reached the server; the session's end closed and extracted it.
    session = claude_session(body)
    assert closed_with_turns(settings, user_id, session) == [
        {"role": "user", "content": FIRST}, {"role": "assistant", "content": REPLY}]

    second = claude(home, SECOND, stub.url, "model-key", serve, hooks=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert memory_block(json.dumps(body_for(stub.received_messages, SECOND)), SAID), (
        "the first session is recalled")

    # The same CLI without the hooks: the model gets no memory.
    bare = claude(tmp_path / "bare", "Tell me about Sarah again.", stub.url, "model-key")
    assert bare.returncode == 0, bare.stderr[-3000:]
    assert not memory_block(json.dumps(body_for(stub.received_messages,
                                                "Tell me about Sarah again.")))


def test_codex_with_the_hooks_recalls_records_and_remembers(
        agents, stub, serve, settings, user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    home = tmp_path / "home"
    first = codex(home, FIRST, stub.url + "/v1", "model-key", serve, hooks=True)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.strip() == REPLY
    body = body_for(stub.received_responses, FIRST)
    assert memory_block(json.dumps(body), "my sister Sarah is moving again")

    session = codex_session(body)
    assert closed_with_turns(settings, user_id, session) == [
        {"role": "user", "content": FIRST}, {"role": "assistant", "content": REPLY}]

    second = codex(home, SECOND, stub.url + "/v1", "model-key", serve, hooks=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert memory_block(json.dumps(body_for(stub.received_responses, SECOND)), SAID)

    bare = codex(tmp_path / "bare", "Tell me about Sarah again.", stub.url + "/v1", "model-key")
    assert bare.returncode == 0, bare.stderr[-3000:]
    assert not memory_block(json.dumps(body_for(stub.received_responses,
                                                "Tell me about Sarah again.")))


def test_claude_code_through_the_proxy(agents, stub, serve, settings, user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    first = claude(tmp_path / "home", FIRST, serve, KEY)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.strip() == REPLY
    body = body_for(stub.received_messages, FIRST)
    assert memory_block(json.dumps(body["system"]), "my sister Sarah is moving again")
    session = claude_session(body)
    # No session end reaches a proxy: the conversation closes when idle, or when asked.
    answer = httpx.post(f"{serve}/v1/conversations/{session}/close",
                        headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 202
    assert closed_with_turns(settings, user_id, session) == [
        {"role": "user", "content": FIRST}, {"role": "assistant", "content": REPLY}]
    second = claude(tmp_path / "home", SECOND, serve, KEY)
    assert second.returncode == 0, second.stderr[-3000:]
    assert memory_block(json.dumps(body_for(stub.received_messages, SECOND)["system"]), SAID)
    # Claude Code retries a 401 for minutes by default: once is enough to see the answer
    refused = claude(tmp_path / "home", SECOND + " Again.", serve, "key-not-in-the-map",
                     CLAUDE_CODE_MAX_RETRIES="0")
    assert refused.returncode != 0
    assert "API key" in refused.stdout, refused.stdout  # Claude Code's words for our 401
    assert SECOND + " Again." not in json.dumps(stub.received_messages)  # never forwarded


def test_codex_through_the_proxy(agents, stub, serve, settings, user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    first = codex(tmp_path / "home", FIRST, serve + "/v1", KEY)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.strip() == REPLY
    body = body_for(stub.received_responses, FIRST)
    notes = [i for i in body["input"] if i.get("role") == "developer"
             and memory_block(json.dumps(i), "my sister Sarah is moving again")]
    assert len(notes) == 1
    session = codex_session(body)
    httpx.post(f"{serve}/v1/conversations/{session}/close",
               headers={"Authorization": f"Bearer {KEY}"}).raise_for_status()
    assert closed_with_turns(settings, user_id, session) == [
        {"role": "user", "content": FIRST}, {"role": "assistant", "content": REPLY}]
    second = codex(tmp_path / "home", SECOND, serve + "/v1", KEY)
    assert second.returncode == 0, second.stderr[-3000:]
    assert memory_block(json.dumps(body_for(stub.received_responses, SECOND)), SAID)


def test_one_memory_taught_through_claude_code_recalled_through_codex(
        agents, stub, serve, settings, user_id, tmp_path):
    taught = claude(tmp_path / "home", FIRST, stub.url, "model-key", serve, hooks=True)
    assert taught.returncode == 0, taught.stderr[-3000:]
    closed_with_turns(settings, user_id, claude_session(body_for(stub.received_messages,
                                                                 FIRST)))
    asked = codex(tmp_path / "home", SECOND, stub.url + "/v1", "model-key", serve, hooks=True)
    assert asked.returncode == 0, asked.stderr[-3000:]
    assert memory_block(json.dumps(body_for(stub.received_responses, SECOND)), SAID)


def test_the_hooks_go_on_when_pegasus_serve_is_down_and_send_later(
        agents, stub, serve, settings, user_id, tmp_path):
    home = tmp_path / "home"
    nobody = f"http://127.0.0.1:{free_port()}"
    # stream-json with hook events: what the person would see of each hook's answer
    run = claude(home, FIRST, stub.url, "model-key", nobody, hooks=True,
                 options=("--output-format", "stream-json", "--verbose",
                          "--include-hook-events"))
    assert run.returncode == 0, run.stderr[-3000:]
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert events[-1]["result"] == REPLY
    shown = [e["output"] for e in events if e.get("subtype") == "hook_response"
             and e["output"].strip()]
    assert len(shown) == 1 and shown[0].startswith("[pegasus] pegasus serve at "), shown
    assert "unavailable" in shown[0] and "the prompt goes on" in shown[0]
    assert not memory_block(json.dumps(body_for(stub.received_messages, FIRST)))
    spool = json.loads((home / "pegasus-spool.json").read_text())
    assert [p.get("turn", {}).get("role", "close") for p in spool["pending"]] == [
        "user", "assistant", "close"]
    assert spool["down"] is True
    session = claude_session(body_for(stub.received_messages, FIRST))

    # The server is back: the next hook (here Codex's) sends what waited, in order.
    again = codex(home, SECOND, stub.url + "/v1", "model-key", serve, hooks=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert closed_with_turns(settings, user_id, session) == [
        {"role": "user", "content": FIRST}, {"role": "assistant", "content": REPLY}]
    assert json.loads((home / "pegasus-spool.json").read_text())["down"] is False


def no_llm_env(neo4j_env: dict[str, str], user_id: str, tmp_path: Path) -> dict[str, str]:
    """`pegasus serve`'s environment with no LLM and no upstream: nothing can extract."""
    return {**{k: v for k, v in neo4j_env.items() if not k.startswith("PEGASUS_LLM_")},
            "PEGASUS_API_KEYS": json.dumps({KEY: user_id}),
            "PEGASUS_HOME": str(tmp_path / "pegasus-home")}


def test_with_no_llm_each_cli_tells_the_person_once(agents, stub, neo4j_env, settings,
                                                    user_id, tmp_path):
    """#36: serve with no LLM and no upstream; the hooks' first prompt of a session tells the
    person. Headless, both CLIs show only the model's reply, so the model is handed the notice;
    Claude Code's stream-json shows the hook's message as the interactive CLI does."""
    env = no_llm_env(neo4j_env, user_id, tmp_path)
    notice = "memories are not being formed: pegasus serve has no LLM to extract memories with"
    with pegasus_serve(env, tmp_path / "serve.log") as url:
        home = tmp_path / "home"
        run = claude(home, FIRST, stub.url, "model-key", url, hooks=True,
                     options=("--output-format", "stream-json", "--verbose",
                              "--include-hook-events"))
        assert run.returncode == 0, run.stderr[-3000:]
        events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        shown = [e["output"] for e in events if e.get("subtype") == "hook_response"
                 and notice in e.get("output", "")]
        assert len(shown) == 1, [e for e in events if e.get("subtype") == "hook_response"]
        assert notice in json.dumps(body_for(stub.received_messages, FIRST))
        asked = codex(home, SECOND, stub.url + "/v1", "model-key", url, hooks=True)
        assert asked.returncode == 0, asked.stderr[-3000:]
        assert notice in json.dumps(body_for(stub.received_responses, SECOND))
        session = claude_session(body_for(stub.received_messages, FIRST))
        with Memory(settings) as memory:
            assert wait_for(lambda: memory.conversation_state(user_id, session)
                            ["awaiting_extraction"])


def pane(session: str) -> str:
    """What the person sees in a tmux pane, wrapped lines joined."""
    shown = subprocess.run(["tmux", "capture-pane", "-p", "-J", "-t", session],
                           capture_output=True, text=True, timeout=30)
    return shown.stdout


def in_tmux(session: str, cwd: Path, env: dict[str, str], *command: str) -> None:
    """Start a CLI in a detached 200x100 tmux pane (tall enough that nothing scrolls out of
    what `pane` reads), with exactly this environment."""
    tmux = shutil.which("tmux")
    assert tmux, "tmux not found: apt-get install tmux"
    subprocess.run([tmux, "new-session", "-d", "-s", session, "-x", "200", "-y", "100",
                    "-c", str(cwd), "env", *(f"{k}={v}" for k, v in env.items()), *command],
                   check=True, timeout=30)


def keys(session: str, *sent: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", session, *sent], check=True, timeout=30)


def test_interactive_claude_code_under_tmux_shows_the_notice_once(agents, stub, neo4j_env,
                                                                  user_id, tmp_path):
    """#36: the interactive Claude Code, driven in a tmux pane, shows the hook's notice (no
    LLM) on the session's first prompt, and not again on the next."""
    env = no_llm_env(neo4j_env, user_id, tmp_path)
    notice = "memories are not being formed"
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    key = "model-key-for-the-stub-0001"
    # What a person who has used Claude Code has already answered: onboarding done, this key
    # approved (by its last 20 characters), the project folder trusted.
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "projects": {str(project): {"hasTrustDialogAccepted": True}}}))
    (home / "settings.json").write_text(json.dumps(hooks_config(), indent=2))
    session = f"pegasus-{user_id}"
    with pegasus_serve(env, tmp_path / "serve.log") as url:
        cli_env = {**hook_env(home, url), "ANTHROPIC_BASE_URL": stub.url,
                   "ANTHROPIC_API_KEY": key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                   "TERM": "xterm-256color"}
        in_tmux(session, project, cli_env, str(CLAUDE), "--model", "claude-sonnet-4-5",
                "--settings", str(home / "settings.json"))
        try:
            assert wait_for(lambda: "for shortcuts" in pane(session)), pane(session)
            for answered, message in enumerate((FIRST, SECOND), start=1):
                keys(session, "-l", message)
                # Keys that arrive at once are taken as a paste, Enter included (a new line):
                # the person presses Enter after typing.
                time.sleep(2)
                keys(session, "Enter")
                assert wait_for(lambda m=message: any(
                    m in json.dumps(b) for b in stub.received_messages)), pane(session)
                assert wait_for(lambda n=answered: pane(session).count(REPLY) >= n), \
                    pane(session)
            time.sleep(2)  # the second prompt's hook has answered: anything it shows is up
            assert pane(session).count(notice) == 1, pane(session)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], timeout=30)


def paste(session: str, text: str) -> None:
    """Paste text into the pane as a terminal does (bracketed), so no key in it is a command."""
    subprocess.run(["tmux", "load-buffer", "-b", session, "-"], input=text, text=True,
                   check=True, timeout=30)
    subprocess.run(["tmux", "paste-buffer", "-p", "-d", "-b", session, "-t", session],
                   check=True, timeout=30)


def test_interactive_codex_under_tmux_asks_to_trust_the_hooks_then_shows_the_notice_once(
        agents, stub, neo4j_env, user_id, tmp_path):
    """#36: the interactive Codex TUI in a tmux pane. A new user's first start stops at "Hooks
    need review"; trusting them keeps the trust in config.toml, so the next start goes
    straight to the prompt, where the hook's notice (no LLM) shows once, under the session's
    first prompt, as `↳ Hook · [pegasus] …`."""
    env = no_llm_env(neo4j_env, user_id, tmp_path)
    notice = "↳ Hook · [pegasus] memories are not being formed: pegasus serve has no LLM"
    home = tmp_path / "home"
    codex_home = home / "codex"
    project = home / "project"
    project.mkdir(parents=True)
    codex_home.mkdir()
    # A git repository, as most projects are: Codex asks to trust such a folder, and a
    # returning user's config.toml has the answer.
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    config = codex_home / "config.toml"
    config.write_text(codex_config(stub.url + "/v1", "MODEL_KEY")
                      + f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
    (codex_home / "hooks.json").write_text(json.dumps(hooks_config(), indent=2))
    session = f"codex-{user_id}"
    with pegasus_serve(env, tmp_path / "serve.log") as url:
        cli_env = {**hook_env(home, url), "CODEX_HOME": str(codex_home),
                   "MODEL_KEY": "model-key", "TERM": "xterm-256color"}
        try:
            in_tmux(session, project, cli_env, str(CODEX))
            assert wait_for(lambda: "Hooks need review" in pane(session)), pane(session)
            for option in ("1. Review hooks", "2. Trust all and continue",
                           "3. Continue without trusting (hooks won't run)"):
                assert option in pane(session), pane(session)
            keys(session, "Down")
            assert wait_for(lambda: "› 2. Trust all and continue" in pane(session)), \
                pane(session)
            keys(session, "Enter")
            assert wait_for(lambda: "for shortcuts" in pane(session)), pane(session)
            trusted = tomllib.loads(config.read_text())["hooks"]["state"]
            assert sorted(name.split(":")[1] for name in trusted) == [
                "session_end", "stop", "user_prompt_submit"], trusted
            assert all(s["trusted_hash"].startswith("sha256:") for s in trusted.values())
            subprocess.run(["tmux", "kill-session", "-t", session], timeout=30)

            # The returning user: nothing to answer, the prompt at once.
            in_tmux(session, project, cli_env, str(CODEX))
            assert wait_for(lambda: "Ask Codex to do anything" in pane(session)), pane(session)
            assert "Hooks need review" not in pane(session)
            for answered, message in enumerate((FIRST, SECOND), start=1):
                paste(session, message)
                # Enter once the composer shows the whole message (the paste has landed).
                assert wait_for(lambda m=message: f"› {m}" in pane(session)), pane(session)
                keys(session, "Enter")
                assert wait_for(lambda m=message: any(
                    m in json.dumps(b) for b in stub.received_responses)), pane(session)
                # The hook answers before the request, and its line is drawn before the reply.
                assert wait_for(lambda n=answered: pane(session).count(REPLY) >= n), \
                    pane(session)
            assert pane(session).count(notice) == 1, pane(session)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], timeout=30)
            # The TUI's first start left Codex's app server running (it runs the hooks), and
            # its updater, which `daemon stop` leaves: both would outlive the test.
            subprocess.run(["env", *(f"{k}={v}" for k, v in cli_env.items()), str(CODEX),
                            "app-server", "daemon", "stop"], capture_output=True, timeout=120)
            updater = codex_home / "app-server-daemon" / "daemon-updater.pid"
            if updater.exists():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(json.loads(updater.read_text())["pid"], signal.SIGTERM)
