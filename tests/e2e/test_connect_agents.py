"""The real Gemini CLI, GitHub Copilot CLI and Qwen Code (pinned, from npm), connected to one
memory with `pegasus connect` only, end to end.

Each CLI runs headless in a HOME of its own (a temp folder) against a local stub model: Gemini
CLI through GOOGLE_GEMINI_BASE_URL (a stub of the Gemini API), Copilot CLI through its own
provider (COPILOT_PROVIDER_BASE_URL, offline) and Qwen Code through its OpenAI-compatible base
URL, both on the stub's Chat Completions. `pegasus connect <agent> --url … --key …` is the
only thing that tells them about Pegasus: the CLIs' environment holds no PEGASUS_* variable,
so the hooks find the server through the client file connect wrote. `pegasus serve` runs as a
subprocess with a scripted extraction model (tests/e2e/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from pegasus import Memory
from tests.e2e.gemini_stub import GeminiStub
from tests.e2e.opencode_llm import SAID
from tests.e2e.running import KEY, ROOT, SARAH, memory_block, wait_for
from tests.serve.servers import StubUpstream, serving

AGENTS = ROOT / "tests" / "e2e" / "agents"
BIN = AGENTS / "node_modules" / ".bin"
FIRST = f"Should I visit Sarah this spring? Also, {SAID}."
SECOND = "What could I give Maya before her marathon?"
THIRD = "Should I cook for Maya the night before the race?"
REPLY = "".join(StubUpstream.CHUNKS)


@pytest.fixture(scope="module")
def new_agents() -> None:
    """The pinned CLIs, installed from npm into tests/e2e/agents the first time."""
    npm = shutil.which("npm")
    assert npm, "npm not found: ./run installs Node.js and npm from Debian packages"
    if not all((BIN / cli).exists() for cli in ("gemini", "copilot", "qwen")):
        subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=AGENTS, check=True,
                       capture_output=True, timeout=1800)
    versions = [subprocess.run([str(BIN / cli), "--version"], capture_output=True, text=True,
                               timeout=120).stdout.strip().splitlines()[0]
                for cli in ("gemini", "copilot", "qwen")]
    assert versions == ["0.61.0", "GitHub Copilot CLI 1.0.102.", "0.24.4"]


@pytest.fixture
def gemini_stub():
    stub = GeminiStub()
    with serving(stub.app) as url:
        stub.url = url
        yield stub


def base_env(home: Path) -> dict[str, str]:
    """What every CLI (and the hooks it starts) gets: a HOME of its own and this clone's
    sources first; nothing about Pegasus."""
    return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            "HOME": str(home), "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            # a first recall on a busy machine can take seconds: within the hooks' 10 s
            "PEGASUS_HOOK_TIMEOUT_S": "8"}


def pegasus_connect(home: Path, agent: str, serve: str, *more: str
                    ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pegasus", "connect", agent, "--url", serve,
                           "--key", KEY, *more], env=base_env(home), capture_output=True,
                          text=True, timeout=120)


def run_cli(home: Path, command: list[str], **env: str) -> subprocess.CompletedProcess:
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    return subprocess.run(command, cwd=project, env={**base_env(home), **env},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)


def gemini(home: Path, message: str, url: str) -> subprocess.CompletedProcess:
    # a fixed model: "auto" first asks a classifier model, which the stub does not play;
    # the project folder is trusted by `pegasus connect gemini --trust-folder` (headless runs
    # in an untrusted folder stop, and Gemini runs no hook there either)
    return run_cli(home, [str(BIN / "gemini"), "-p", message, "-m", "gemini-2.5-flash"],
                   GOOGLE_GEMINI_BASE_URL=url, GEMINI_API_KEY="model-key")


def copilot(home: Path, message: str, url: str) -> subprocess.CompletedProcess:
    return run_cli(home, [str(BIN / "copilot"), "-p", message, "--allow-all-tools"],
                   COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL=url + "/v1",
                   COPILOT_PROVIDER_API_KEY="model-key", COPILOT_MODEL="gpt-4o")


def qwen(home: Path, message: str, url: str) -> subprocess.CompletedProcess:
    return run_cli(home, [str(BIN / "qwen"), "-p", message, "--auth-type", "openai"],
                   OPENAI_BASE_URL=url + "/v1", OPENAI_API_KEY="model-key",
                   OPENAI_MODEL="gpt-4o")


def body_for(bodies: list[dict], message: str) -> str:
    """The last request that carried this message, as JSON text."""
    found = [json.dumps(b) for b in bodies if message in json.dumps(b)]
    assert found, f"the model never got {message!r}: {len(bodies)} requests"
    return found[-1]


def one(found) -> Path:
    """The only path found; fails, naming them, when there are none or several."""
    found = sorted(found)
    assert len(found) == 1, found
    return found[0]


def turns(memory: Memory, user_id: str, session: str) -> list[dict]:
    return [json.loads(t) for t in memory.conversation_state(user_id, session)["turns"]]


def test_a_fact_taught_in_gemini_cli_is_recalled_in_copilot_cli_and_qwen_code(
        new_agents, stub, gemini_stub, serve, settings, user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    home = tmp_path / "home"
    # The person's own Gemini setting (how they sign in): connect keeps it.
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    (home / "project").mkdir()
    for agent in ("gemini", "copilot", "qwen"):
        trust = ["--trust-folder", str(home / "project")] if agent == "gemini" else []
        connected = pegasus_connect(home, agent, serve, *trust)
        assert connected.returncode == 0, connected.stdout + connected.stderr
        assert connected.stdout.splitlines()[-1].startswith("check: ok: "), connected.stdout
        again = pegasus_connect(home, agent, serve, *trust)
        assert again.stdout.splitlines()[0].endswith("was already connected: nothing changed")
    settings_json = json.loads((home / ".gemini" / "settings.json").read_text())
    assert settings_json["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert json.loads((home / ".gemini" / "trustedFolders.json").read_text()) == {
        str((home / "project").resolve()): "TRUST_FOLDER"}

    # A server's first recall plans its queries: on a busy machine that alone can take the
    # hook's 10 s, and the CLI then goes on without memory (what this test is not about).
    assert wait_for(lambda: httpx.post(
        f"{serve}/v1/memory/recall", json={"text": "Sarah"}, timeout=120,
        headers={"Authorization": f"Bearer {KEY}"}).status_code == 200, timeout_s=600)

    # Gemini CLI: the memory before the model (BeforeAgent), the turns recorded, the session
    # closed at its end and extracted: User -[HAS_SISTER]-> Maya.
    taught = gemini(home, FIRST, gemini_stub.url)
    assert taught.returncode == 0, taught.stderr[-3000:]
    assert REPLY in taught.stdout
    assert memory_block(body_for(gemini_stub.received, FIRST),
                        "my sister Sarah is moving again")
    with Memory(settings) as memory:
        maya = wait_for(lambda: [e for e in memory.edges(user_id) if e.target == "Maya"])
        assert [(e.source, e.relation) for e in maya] == [("User", "HAS_SISTER")]
        session = maya[0].conversations[0]
        assert turns(memory, user_id, session) == [
            {"role": "user", "content": FIRST}, {"role": "assistant", "content": REPLY}]

    # Copilot CLI recalls it (after the transformed prompt) and records its own turns.
    asked = copilot(home, SECOND, stub.url)
    assert asked.returncode == 0, asked.stderr[-3000:]
    assert REPLY in asked.stdout
    assert memory_block(body_for(stub.received, SECOND), SAID)
    # the session's own folder (the one with its transcript): Copilot keeps a lock folder
    # beside it, and a directory's order is the file system's
    copilot_session = one(
        (home / ".copilot" / "session-state").glob("*/events.jsonl")).parent.name
    with Memory(settings) as memory:
        assert wait_for(lambda: turns(memory, user_id, copilot_session) == [
            {"role": "user", "content": SECOND}, {"role": "assistant", "content": REPLY}]), \
            turns(memory, user_id, copilot_session)

    # Qwen Code (Claude Code's hooks) recalls it too.
    third = qwen(home, THIRD, stub.url)
    assert third.returncode == 0, third.stderr[-3000:]
    assert REPLY in third.stdout
    assert memory_block(body_for(stub.received, THIRD), SAID)
    qwen_session = one((home / ".qwen" / "projects").glob("*/chats/*.jsonl")).stem
    with Memory(settings) as memory:
        assert turns(memory, user_id, qwen_session) == [
            {"role": "user", "content": THIRD}, {"role": "assistant", "content": REPLY}]

    # Disconnected, a CLI's model gets no memory.
    gone = subprocess.run([sys.executable, "-m", "pegasus", "disconnect", "qwen"],
                          env=base_env(home), capture_output=True, text=True, timeout=120)
    assert gone.returncode == 0, gone.stderr
    bare = qwen(home, "Tell me about Maya again.", stub.url)
    assert bare.returncode == 0, bare.stderr[-3000:]
    assert not memory_block(body_for(stub.received, "Tell me about Maya again."))


def test_connecting_codex_trusts_its_hooks_as_codex_itself_reports(tmp_path):
    """The real Codex (0.171.0) is asked for each hook's key and hash; after connect, Codex
    lists the three Pegasus hooks as trusted, and a second connect changes nothing."""
    from pegasus.connect import Places, _codex_hooks

    codex = AGENTS / "node_modules" / ".bin" / "codex"
    assert codex.exists(), "run the e2e agents' npm install (tests/e2e/test_agents.py)"
    home = tmp_path / "home"
    env = {**base_env(home), "PATH": os.pathsep.join([str(BIN), base_env(home)["PATH"]]),
           "CODEX_HOME": str(home / ".codex")}
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text('model = "gpt-5.1-codex-mini"\n')
    connect = [sys.executable, "-m", "pegasus", "connect", "codex", "--url",
               "http://127.0.0.1:9", "--key", KEY]
    first = subprocess.run(connect, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Codex trusts the 3 Pegasus hooks" in first.stdout
    places = Places.from_environment(env)
    listed = _codex_hooks(str(codex), places)
    ours = {h["eventName"]: h["trustStatus"] for h in listed if "pegasus-hook" in h["command"]}
    assert ours == {"userPromptSubmit": "trusted", "stop": "trusted",
                    "sessionEnd": "trusted"}, listed
    assert (home / ".codex" / "config.toml").read_text().startswith(
        'model = "gpt-5.1-codex-mini"\n')
    again = subprocess.run(connect, env=env, capture_output=True, text=True, timeout=300)
    assert again.stdout.splitlines()[0] == "Codex was already connected: nothing changed"
