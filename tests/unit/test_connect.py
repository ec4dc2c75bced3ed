"""`pegasus connect` / `disconnect` on each agent's own files, in a HOME of its own: what is
written, that a second run changes nothing, that the person's other settings stay, that a file
that is not JSON is refused untouched; and `pegasus-hook`'s reading of the other CLIs' events."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pegasus import connect as connecting
from pegasus.cli import app
from pegasus.connect import AGENTS, BACKUP_SUFFIX, ConnectError, Places, check, connect, disconnect
from pegasus.hook import canonical, last_assistant_message

URL, KEY = "http://127.0.0.1:8181", "key-connect-0001"
# What a person already has in each agent's file: none of it may change.
THEIRS = {
    "claude-code": {"theme": "dark", "hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "notify-send done"}]}]}},
    "codex": {"hooks": {"SessionStart": [{"hooks": [{"type": "command",
                                                      "command": "git status"}]}]}},
    "opencode": {"model": "anthropic/claude-sonnet-4-5", "plugin": ["opencode-wakatime"]},
    "gemini": {"security": {"auth": {"selectedType": "gemini-api-key"}},
               "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [
                   {"name": "lint", "type": "command", "command": "ruff check"}]}]}},
    "qwen": {"model": {"name": "qwen3-coder-plus"}},
}


@pytest.fixture
def places(tmp_path) -> Places:
    home = tmp_path / "home"
    return Places(home=home, codex_home=home / ".codex", copilot_home=home / ".copilot",
                  config_home=home / ".config")


@pytest.fixture
def hook(tmp_path) -> Path:
    """A pegasus-hook at a path with a space (./run users' HOME may have one)."""
    program = tmp_path / "my bin" / "pegasus-hook"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def plugin(tmp_path, monkeypatch) -> Path:
    built = tmp_path / "opencode" / "dist" / "src" / "index.js"
    built.parent.mkdir(parents=True)
    built.write_text("export default async () => ({});\n")
    monkeypatch.setitem(AGENTS, "opencode", AGENTS["opencode"].__class__(
        **{**AGENTS["opencode"].__dict__, "shape": connecting.OpencodePlugin(built)}))
    return built


def commands_in(agent_id: str, config: dict) -> list[str]:
    return [c for found in AGENTS[agent_id].shape.commands(config).values() for c in found]


@pytest.mark.parametrize("agent_id", list(AGENTS))
def test_connect_writes_the_full_hook_path_once_and_keeps_the_rest(agent_id, places, hook,
                                                                   plugin):
    agent = AGENTS[agent_id]
    path = agent.file(places)
    before = THEIRS.get(agent_id)
    if before is not None:
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(before))

    said = connect(agent, places, URL, KEY, hook=hook, codex="/nowhere/codex")
    config = json.loads(path.read_text())
    if agent_id == "opencode":
        assert config["plugin"] == ["opencode-wakatime", plugin.as_uri()]
    else:
        found = agent.shape.commands(config)
        assert sorted(found) == sorted(agent.shape.events)
        assert all(commands == [f"'{hook}' {event}"] for event, commands in found.items())
    for name, value in (before or {}).items():  # their settings, and their own hooks, stay
        if name == "hooks":
            for event, groups in value.items():
                assert config["hooks"][event][:len(groups)] == groups
        elif name != "plugin":
            assert config[name] == value
    if before is not None:
        assert json.loads(path.with_name(path.name + BACKUP_SUFFIX).read_text()) == before
    client = places.config_home / "pegasus" / "client.json"
    assert json.loads(client.read_text()) == {"url": URL, "key": KEY}
    assert stat.S_IMODE(client.stat().st_mode) == 0o600  # the key: its owner's only
    assert said[0] == f"wrote {path}" + (
        f" (the old one is {path}{BACKUP_SUFFIX})" if before is not None else "")
    assert check(agent, places, {"PATH": ""}).state == "ok"

    # A second run changes nothing, not even the backup.
    written = path.read_text()
    backups = sorted(p.name for p in path.parent.iterdir())
    again = connect(agent, places, URL, KEY, hook=hook, codex="/nowhere/codex")
    assert again[0] == f"{agent.name} was already connected: nothing changed"
    if agent_id == "codex":  # no Codex to ask: the person is told how to trust them
        assert again[1].startswith("could not ask Codex which hooks it trusts (")
        assert again[1].endswith('start `codex` once and choose "Trust all and continue"')
    assert path.read_text() == written
    assert sorted(p.name for p in path.parent.iterdir()) == backups

    # Disconnect takes out Pegasus's part alone.
    disconnect(agent, places)
    if agent.owns_file:
        assert not path.exists()
    else:
        left = json.loads(path.read_text())
        assert commands_in(agent_id, left) == []
        assert left == (before or {}) or (agent_id == "opencode" and left == {
            "$schema": "https://opencode.ai/config.json", **before})
    assert check(agent, places).state == "skipped"
    assert disconnect(agent, places) == [f"{agent.name} is not connected: nothing changed"]


def test_a_file_that_is_not_json_is_refused_and_left_as_it_was(places, hook):
    path = AGENTS["gemini"].file(places)
    path.parent.mkdir(parents=True)
    path.write_text('{"theme": "dark", // my comment\n}')
    with pytest.raises(ConnectError, match="cannot be read as JSON") as refused:
        connect(AGENTS["gemini"], places, URL, KEY, hook=hook)
    assert "nothing was changed" in str(refused.value)
    assert path.read_text() == '{"theme": "dark", // my comment\n}'
    assert not (places.config_home / "pegasus" / "client.json").exists()
    path.write_text("[1, 2]")
    with pytest.raises(ConnectError, match="is not a JSON object"):
        connect(AGENTS["gemini"], places, URL, KEY, hook=hook)


def test_connect_without_a_key_says_how_to_give_one(places, hook):
    with pytest.raises(ConnectError, match="no key: give --key, or set PEGASUS_API_KEY"):
        connect(AGENTS["claude-code"], places, URL, "", hook=hook)
    assert not AGENTS["claude-code"].file(places).exists()


def test_the_check_names_what_is_missing(places, hook):
    agent = AGENTS["qwen"]
    connect(agent, places, URL, KEY, hook=hook)
    path = agent.file(places)
    config = json.loads(path.read_text())
    del config["hooks"]["Stop"]
    path.write_text(json.dumps(config))
    found = check(agent, places)
    assert (found.state, found.detail) == ("problem", f"{path} has no pegasus-hook for Stop: "
                                                      "run `pegasus connect qwen`")
    connect(agent, places, URL, KEY, hook=hook)
    (places.config_home / "pegasus" / "client.json").unlink()
    found = check(agent, places, {"PATH": ""})
    assert found.state == "problem" and found.detail.startswith("no key for it")
    assert check(agent, places, {"PATH": "", "PEGASUS_API_KEY": KEY}).state == "ok"


def test_a_hook_not_on_path_is_told_where_pegasus_hook_is(places, monkeypatch):
    """A hand-written bare `pegasus-hook` (README's old block) where PATH lacks ./run's venv:
    the one thing to do names the program beside the interpreter running doctor."""
    path = AGENTS["claude-code"].file(places)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": {event: [{"hooks": [
        {"type": "command", "command": f"pegasus-hook {event}"}]}]
        for event in ("UserPromptSubmit", "Stop", "SessionEnd")}}))
    found = check(AGENTS["claude-code"], places, {"PATH": str(places.home / "empty"),
                                                   "PEGASUS_API_KEY": KEY})
    beside = Path(sys.executable).parent
    assert (found.part, found.state) == ("Claude Code hooks", "problem")
    assert found.detail == (f"{path} runs 'pegasus-hook', which is not on PATH: use its full "
                            f"path {beside / 'pegasus-hook'} (run `pegasus connect "
                            f"claude-code`), or put {beside} on PATH")


def test_codex_trust_is_written_as_codex_reports_it(places, hook, monkeypatch):
    """Codex's key and hash for each hook (`hooks/list`) go to config.toml, beside what the
    person has there; a hash that changed replaces the old one in place."""
    agent = AGENTS["codex"]
    config = places.codex_home / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "gpt-5.1-codex-mini"\n\n[projects."/src/app"]\n'
                      'trust_level = "trusted"\n')
    hooks_file = agent.file(places)
    digest = {"stop": "sha256:" + "a" * 64}

    def listed(program, where):
        assert (program, where) == ("/bin/codex", places)
        return [{"key": f"{hooks_file}:{name}:0:0", "sourcePath": str(hooks_file),
                 "command": f"'{hook}' {event}", "currentHash": digest.get(name, "sha256:1")}
                for name, event in (("user_prompt_submit", "UserPromptSubmit"),
                                    ("stop", "Stop"), ("session_end", "SessionEnd"))] + [
            {"key": "other", "sourcePath": str(hooks_file), "command": "git status",
             "currentHash": "sha256:2"}]

    monkeypatch.setattr(connecting, "_codex_hooks", listed)
    said = connect(agent, places, URL, KEY, hook=hook, codex="/bin/codex")
    assert said[-1].endswith(": Codex trusts the 3 Pegasus hooks")
    import tomllib

    trusted = tomllib.loads(config.read_text())
    assert trusted["model"] == "gpt-5.1-codex-mini"
    assert trusted["projects"] == {"/src/app": {"trust_level": "trusted"}}
    assert {k.split(":")[1]: v["trusted_hash"] for k, v in trusted["hooks"]["state"].items()} \
        == {"user_prompt_submit": "sha256:1", "stop": "sha256:" + "a" * 64,
            "session_end": "sha256:1"}
    assert connect(agent, places, URL, KEY, hook=hook, codex="/bin/codex") == [
        "Codex was already connected: nothing changed"]
    digest["stop"] = "sha256:" + "b" * 64
    connect(agent, places, URL, KEY, hook=hook, codex="/bin/codex")
    again = tomllib.loads(config.read_text())["hooks"]["state"]
    assert again[f"{hooks_file}:stop:0:0"] == {"trusted_hash": "sha256:" + "b" * 64}
    assert len(again) == 3


def test_the_cli_connects_lists_and_disconnects(tmp_path, hook, monkeypatch):
    home = tmp_path / "home"
    for name, value in {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                        "PEGASUS_API_KEY": KEY, "PEGASUS_URL": URL}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(connecting, "hook_program", lambda: hook)
    runner = CliRunner()
    first = runner.invoke(app, ["connect", "gemini"])
    assert first.exit_code == 0, first.output
    assert first.output.splitlines()[-1].startswith(
        f"check: ok: {home / '.gemini' / 'settings.json'}: BeforeAgent, AfterAgent, "
        f"SessionEnd run {hook}")
    again = runner.invoke(app, ["connect", "gemini"])
    assert again.output.splitlines()[0] == "Gemini CLI was already connected: nothing changed"
    listed = runner.invoke(app, ["connect", "--list"])
    states = {line.split()[0]: line for line in listed.output.splitlines()}
    assert sorted(states) == sorted(AGENTS)
    assert " connected " in states["gemini"] and "not connected" in states["qwen"]
    unknown = runner.invoke(app, ["connect", "cursor"])
    assert unknown.exit_code == 2 and "unknown agent 'cursor'" in unknown.output
    # the key given once serves the next agent
    monkeypatch.delenv("PEGASUS_API_KEY")
    monkeypatch.delenv("PEGASUS_URL")
    qwen = runner.invoke(app, ["connect", "qwen"])
    assert qwen.exit_code == 0, qwen.output
    assert json.loads((home / ".config" / "pegasus" / "client.json").read_text()) == {
        "url": URL, "key": KEY}
    gone = runner.invoke(app, ["disconnect", "gemini"])
    assert gone.exit_code == 0 and gone.output.startswith("wrote ")
    assert json.loads((home / ".gemini" / "settings.json").read_text()) == {}


# --- pegasus-hook reads the other CLIs' events ----------------------------------------------

def test_gemini_cli_events_read_as_claude_codes():
    assert canonical("BeforeAgent", {"session_id": "g1", "prompt": "hi"}) == (
        "UserPromptSubmit", {"session_id": "g1", "prompt": "hi"})
    event, payload = canonical("AfterAgent", {"session_id": "g1", "prompt": "hi",
                                              "prompt_response": "Hello."})
    assert (event, payload["last_assistant_message"]) == ("Stop", "Hello.")
    assert canonical("SessionEnd", {"session_id": "g1"}) == ("SessionEnd", {"session_id": "g1"})


def test_copilot_cli_events_read_as_claude_codes(tmp_path):
    transcript = tmp_path / "events.jsonl"
    lines = [{"type": "user.message", "data": {"content": "first"}},
             {"type": "assistant.message", "data": {"content": "An old reply."}},
             {"type": "user.message", "data": {"content": "second"}},
             {"type": "assistant.message", "data": {"content": "Let me look.",
                                                    "toolRequests": [{"name": "view"}]}},
             {"type": "assistant.message", "data": {"content": ""}},
             {"type": "assistant.message", "data": {"content": "Tell her after the trip."}},
             {"type": "assistant.turn_end", "data": {}}]
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    event, payload = canonical("agentStop", {"sessionId": "c1", "transcriptPath":
                                             str(transcript), "stopReason": "end_turn"})
    assert (event, payload["session_id"], payload["last_assistant_message"]) == (
        "Stop", "c1", "Tell her after the trip.")
    assert canonical("userPromptTransformed", {"sessionId": "c1", "prompt": "hi",
                                               "transformedPrompt": "<d/>\n\nhi"})[0] == \
        "UserPromptSubmit"
    assert canonical("sessionEnd", {"sessionId": "c1", "reason": "complete"})[1][
        "session_id"] == "c1"
    # a turn with no reply yet, or no transcript at all: nothing to record
    transcript.write_text(json.dumps(lines[2]) + "\n")
    assert last_assistant_message(str(transcript)) is None
    assert last_assistant_message(str(tmp_path / "missing.jsonl")) is None
    assert last_assistant_message(None) is None


def test_agent_stop_waits_for_a_reply_copilot_writes_a_moment_later(tmp_path):
    transcript = tmp_path / "events.jsonl"
    transcript.write_text(json.dumps({"type": "user.message", "data": {"content": "hi"}}) + "\n")

    def reply_later() -> None:
        time.sleep(0.4)
        with transcript.open("a") as out:
            out.write(json.dumps({"type": "assistant.message",
                                  "data": {"messageId": "m-9", "content": "Hello."}}) + "\n")

    writer = threading.Thread(target=reply_later)
    writer.start()
    event, payload = canonical("agentStop", {"sessionId": "c1",
                                             "transcriptPath": str(transcript)})
    writer.join()
    assert (event, payload["last_assistant_message"], payload["assistant_message_id"]) == (
        "Stop", "Hello.", "m-9")


def test_the_hook_reads_the_client_file_when_the_environment_names_no_key(tmp_path,
                                                                            monkeypatch):
    from pegasus import hook as hooks

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert hooks.client_settings() == {}
    (tmp_path / "pegasus").mkdir()
    (tmp_path / "pegasus" / "client.json").write_text(json.dumps(
        {"url": URL, "key": KEY, "other": 1}))
    assert hooks.client_settings() == {"url": URL, "key": KEY}
    (tmp_path / "pegasus" / "client.json").write_text("[1]")
    assert hooks.client_settings() == {}
    assert os.environ.get("XDG_CONFIG_HOME") == str(tmp_path)


def test_gemini_trusts_only_the_folders_named_and_keeps_the_persons_own(places, hook,
                                                                        tmp_path):
    project = tmp_path / "work" / "project"
    project.mkdir(parents=True)
    trusted = tmp_path / "home" / ".gemini" / "trustedFolders.json"
    trusted.parent.mkdir(parents=True, exist_ok=True)
    trusted.write_text(json.dumps({"/srv/mine": "TRUST_PARENT", "/tmp/no": "DO_NOT_TRUST"}))
    plain = connect(AGENTS["gemini"], places, URL, KEY, hook=hook)
    assert connecting.GEMINI_TRUST_NOTE in plain
    lines = connect(AGENTS["gemini"], places, URL, KEY, hook=hook, trust=[project])
    assert f"Gemini CLI trusts {project.resolve()}" in lines
    assert json.loads(trusted.read_text()) == {"/srv/mine": "TRUST_PARENT",
                                               "/tmp/no": "DO_NOT_TRUST",
                                               str(project.resolve()): "TRUST_FOLDER"}
    assert stat.S_IMODE(trusted.stat().st_mode) == 0o600
    again = connect(AGENTS["gemini"], places, URL, KEY, hook=hook, trust=[project])
    assert again[0] == "Gemini CLI was already connected: nothing changed"
    with pytest.raises(ConnectError, match="not a folder"):
        connect(AGENTS["gemini"], places, URL, KEY, hook=hook, trust=[tmp_path / "missing"])
    with pytest.raises(ConnectError, match="Gemini CLI's step"):
        connect(AGENTS["qwen"], places, URL, KEY, hook=hook, trust=[project])
    assert str((tmp_path / "missing").resolve()) not in json.loads(trusted.read_text())
