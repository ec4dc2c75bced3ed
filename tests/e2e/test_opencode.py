"""The real Opencode CLI (opencode-ai from npm) with the Pegasus plugin, end to end.

`pegasus serve` runs as a user runs it (a subprocess, a scripted extraction model plugged in
with PEGASUS_LLM_FACTORY); a stub OpenAI-compatible upstream records what the model was sent.
Opencode runs headless (`opencode run`) in a project whose opencode.json loads the plugin from
this repository (or, for the proxy route, points its provider at `pegasus serve`). Its HOME is
a fresh folder whose config dir already holds @opencode-ai/plugin, so nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from pegasus import Memory
from pegasus.operations.neo4j_local import free_port
from tests.e2e.opencode_llm import SAID
from tests.e2e.running import KEY, ROOT, SARAH, memory_block, wait_for
from tests.serve.servers import StubUpstream

PLUGIN = ROOT / "integrations" / "opencode"
OPENCODE = PLUGIN / "node_modules" / ".bin" / "opencode"
FIRST = f"Should I visit Sarah this spring? Also, {SAID}."
FAR = datetime(9999, 1, 1, tzinfo=UTC)
SECOND = "What could I give Maya before her marathon?"


@pytest.fixture(scope="module")
def opencode_plugin() -> Path:
    """The plugin built from this repo, and the pinned Opencode CLI beside it."""
    npm = shutil.which("npm")
    assert npm, "npm not found: ./run installs Node.js and npm from Debian packages"
    if not OPENCODE.exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=PLUGIN, check=True,
                       capture_output=True, timeout=900)
    subprocess.run([npm, "run", "build"], cwd=PLUGIN, check=True, capture_output=True,
                   timeout=300)
    version = subprocess.run([str(OPENCODE), "--version"], capture_output=True, text=True,
                             timeout=120).stdout.strip()
    assert version == "1.18.33"
    return PLUGIN / "dist" / "src" / "index.js"


def project(tmp_path: Path, name: str, provider_url: str, api_key: str,
            plugin: Path | None) -> Path:
    """A project folder with its opencode.json, as a user writes it."""
    folder = tmp_path / name
    folder.mkdir()
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"stub": {"npm": "@ai-sdk/openai-compatible", "name": "Stub",
                              "options": {"baseURL": provider_url, "apiKey": api_key},
                              "models": {"stub-model": {"name": "Stub model"}}}},
        "model": "stub/stub-model",
    }
    if plugin is not None:
        config["plugin"] = [plugin.as_uri()]
    (folder / "opencode.json").write_text(json.dumps(config, indent=2))
    return folder


def opencode_run(folder: Path, home: Path, message: str, pegasus_url: str | None
                 ) -> subprocess.CompletedProcess:
    """`opencode run` in `folder`; with no `pegasus_url`, nothing of Pegasus in its
    environment (what `pegasus connect` wrote is all it has)."""
    config_dir = home / ".config" / "opencode"
    if not (config_dir / "package.json").exists():  # what Opencode would install from npm
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "package.json").write_text(
            json.dumps({"dependencies": {"@opencode-ai/plugin": "1.18.33"}}))
        (config_dir / "node_modules").symlink_to(PLUGIN / "node_modules")
    env = {"PATH": os.environ["PATH"], "HOME": str(home),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
           "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local/state"),
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    if pegasus_url is not None:
        env |= {"PEGASUS_URL": pegasus_url, "PEGASUS_API_KEY": KEY}
    return subprocess.run([str(OPENCODE), "run", "--print-logs", message], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def sent_to_model(stub: StubUpstream, message: str) -> list[str]:
    """The system prompt parts of the main (not the title) request for this message."""
    for body in stub.received:
        if "title generator" in json.dumps(body["messages"][0]["content"]):
            continue  # Opencode's own request for a session title
        users = [m for m in body["messages"] if m["role"] == "user"]
        if users and message in json.dumps(users[-1]["content"]):
            return [json.dumps(m["content"]) for m in body["messages"] if m["role"] == "system"]
    raise AssertionError(f"the model never got {message!r}: {len(stub.received)} requests")


def test_opencode_with_the_plugin_recalls_records_and_remembers(
        opencode_plugin, stub, serve, settings, user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    home = tmp_path / "home"
    folder = project(tmp_path, "app", stub.url + "/v1", "stub-key", opencode_plugin)

    first = opencode_run(folder, home, FIRST, serve)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Tell her after the trip." in first.stdout
    system = sent_to_model(stub, FIRST)
    assert any(memory_block(s, "my sister Sarah is moving again") for s in system), system

    # The turns reached the server as they happened; Opencode quit after an idle session,
    # so the plugin closed it, and the server extracted it in the background.
    with Memory(settings) as memory:
        closed = wait_for(lambda: [
            e for e in memory.edges(user_id) if e.target == "Maya"])
        assert [(e.source, e.relation) for e in closed] == [("User", "HAS_SISTER")]
        assert memory.idle_conversations(user_id, FAR) == []  # none is left open
        session = next(c for c in closed[0].conversations if c.startswith("opencode-"))
        assert wait_for(lambda: memory.conversation_state(user_id, session)["status"]
                        == "closed")
        state = memory.conversation_state(user_id, session)
        turns = [json.loads(t) for t in state["turns"]]
        assert [t["role"] for t in turns] == ["user", "assistant"]
        # `opencode run` 1.18.33 hands the model its message in double quotes
        assert turns[0]["content"] == f'"{FIRST}"' and turns[1]["content"] == "Tell her after the trip."

    second = opencode_run(folder, home, SECOND, serve)
    assert second.returncode == 0, second.stderr[-3000:]
    assert any(memory_block(s, SAID) for s in sent_to_model(stub, SECOND)), (
        "the first run is recalled")

    # The same project without the plugin: the model gets no memory at all.
    bare = project(tmp_path, "bare", stub.url + "/v1", "stub-key", None)
    third = opencode_run(bare, home, "Tell me about Sarah again.", serve)
    assert third.returncode == 0, third.stderr[-3000:]
    assert not any(memory_block(s) for s in sent_to_model(stub, "Tell me about Sarah again."))


def test_opencode_through_the_proxy_without_the_plugin(opencode_plugin, stub, serve, settings,
                                                       user_id, tmp_path):
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    folder = project(tmp_path, "proxied", serve + "/v1", KEY, None)
    run = opencode_run(folder, tmp_path / "home", FIRST, serve)
    assert run.returncode == 0, run.stderr[-3000:]
    system = sent_to_model(stub, FIRST)
    assert any(memory_block(s, "my sister Sarah is moving again") for s in system), system
    with Memory(settings) as memory:
        # open, under ids the proxy derived (Opencode's title request is one of its own)
        recorded = [[json.loads(t) for t in memory.conversation_state(user_id, c)["turns"]]
                    for c in memory.idle_conversations(user_id, FAR)]
        assert ["user", "assistant"] in [[t["role"] for t in turns] for turns in recorded
                                         if turns[0]["content"] == f'"{FIRST}"']


def test_opencode_goes_on_when_pegasus_serve_is_down(opencode_plugin, stub, tmp_path):
    folder = project(tmp_path, "app", stub.url + "/v1", "stub-key", opencode_plugin)
    home = tmp_path / "home"
    nobody = f"http://127.0.0.1:{free_port()}"
    run = opencode_run(folder, home, FIRST, nobody)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Tell her after the trip." in run.stdout
    assert not any(memory_block(s) for s in sent_to_model(stub, FIRST))
    warnings = [line for line in (run.stdout + run.stderr).splitlines() if "[pegasus]" in line]
    assert len(warnings) == 1 and "turn goes on" in warnings[0], warnings
    spool = json.loads((home / ".local/state/opencode-pegasus/spool.json").read_text())
    assert [p.get("turn", {}).get("role", "close") for p in spool["pending"]] == [
        "user", "assistant", "close"]


def test_opencode_connected_by_pegasus_connect_alone(opencode_plugin, stub, serve, settings,
                                                     user_id, tmp_path):
    """`pegasus connect opencode` puts the built plugin in the global opencode.json: a project
    that names no plugin, run with nothing of Pegasus in the environment, gets the memory."""
    with Memory(settings) as memory:
        memory.commit(user_id, "earlier", SARAH)
    home = tmp_path / "home"
    env = {"PATH": os.environ["PATH"], "HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    connected = subprocess.run([sys.executable, "-m", "pegasus", "connect", "opencode", "--url",
                                serve, "--key", KEY], env=env, capture_output=True, text=True,
                               timeout=120)
    assert connected.returncode == 0, connected.stdout + connected.stderr
    assert connected.stdout.splitlines()[-1] == (
        f"check: ok: {home / '.config' / 'opencode' / 'opencode.json'}: loads "
        f"{opencode_plugin.as_uri()}")
    # the server's first recall plans its queries, which on a busy machine can take the
    # plugin's 10 s for a recall: warmed here, as a person's earlier turns would have
    assert wait_for(lambda: httpx.post(
        f"{serve}/v1/memory/recall", json={"text": "Sarah"}, timeout=120,
        headers={"Authorization": f"Bearer {KEY}"}).status_code == 200, timeout_s=600)
    folder = project(tmp_path, "plain", stub.url + "/v1", "stub-key", None)
    run = opencode_run(folder, home, FIRST, None)
    assert run.returncode == 0, run.stderr[-3000:]
    system = sent_to_model(stub, FIRST)
    said = [line for line in (run.stdout + run.stderr).splitlines()
            if "pegasus" in line.lower()]
    assert any(memory_block(s, "my sister Sarah is moving again") for s in system), said
