"""`pegasus doctor` against a healthy set-up and a broken one: the table says what is fine and,
per problem, the one thing to do; exit 0 / 1 (#36)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.e2e.running import ROOT, pegasus_serve
from tests.serve.extracting_upstream import ExtractingUpstream
from tests.serve.servers import serving

EVENTS = ("UserPromptSubmit", "Stop", "SessionEnd")


def doctor(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pegasus", "doctor"], cwd=ROOT,
                          env={**env, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "250"},
                          capture_output=True, text=True, timeout=300)


def rows(output: str) -> dict[str, tuple[str, str]]:
    """The table as {part: (mark, what it says)}."""
    found = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if len(cells) == 3 and cells[0] and cells[0] != "part":
            found[cells[0]] = (cells[1], cells[2])
    return found


def hooks(command: str) -> str:
    return json.dumps({"hooks": {event: [{"hooks": [{"type": "command",
                                                     "command": f"{command} {event}"}]}]
                                 for event in EVENTS}})


def test_doctor_on_a_healthy_and_a_broken_set_up(neo4j_env, settings, user_id, tmp_path):
    stub = ExtractingUpstream()
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(hooks("pegasus-hook"))
    (home / "codex").mkdir()
    (home / "codex" / "hooks.json").write_text(hooks(str(ROOT / "nowhere" / "pegasus-hook")))
    with serving(stub.app) as upstream:
        env = {**{k: v for k, v in neo4j_env.items() if not k.startswith("PEGASUS_LLM_")},
               "PEGASUS_API_KEYS": json.dumps({"key-doctor-0001": user_id}),
               "PEGASUS_UPSTREAM_BASE_URL": upstream + "/v1", "PEGASUS_LLM_MODEL": "gpt-4o-mini",
               "PEGASUS_HOME": str(tmp_path / "pegasus-home"), "HOME": str(home),
               "CODEX_HOME": str(home / "codex"), "PEGASUS_API_KEY": "key-doctor-0001",
               "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
        with pegasus_serve(env, tmp_path / "serve.log") as url:
            env["PEGASUS_URL"] = url
            (home / "codex" / "hooks.json").write_text(hooks("pegasus-hook"))
            healthy = doctor(env)
            assert healthy.returncode == 0, healthy.stdout + healthy.stderr
            table = rows(healthy.stdout)
            assert {part: mark for part, (mark, _) in table.items()} == {
                "Neo4j": "ok", "schema": "ok", "embedding model": "ok", "LLM (extraction)": "ok",
                "hook conversations": "ok", "upstream (OpenAI API)": "ok", "upstream (Anthropic API)": "–",
                "pegasus serve": "ok", "Claude Code hooks": "ok", "Codex hooks": "ok",
                "Opencode plugin": "–", "Gemini CLI hooks": "–", "Copilot CLI hooks": "–",
                "Qwen Code hooks": "–"}
            assert table["LLM (extraction)"][1].startswith(
                f"on: gpt-4o-mini via {upstream}/v1 (the proxy's upstream)")
            # a fixed model extracts hook conversations too, and doctor says so
            assert table["hook conversations"][1].startswith("on: gpt-4o-mini via ")
            assert stub.extractions == [] and len(stub.received) == 1  # one real call
            # langchain-openai names the limit max_completion_tokens in its newer versions
            sent = stub.received[0]
            assert sent.get("max_tokens", sent.get("max_completion_tokens")) == 1
            assert "everything is fine" in healthy.stdout

        # Broken: serve stopped, the upstream's key refused, a hook path that does not exist.
        (home / "codex" / "hooks.json").write_text(hooks(str(ROOT / "nowhere" / "pegasus-hook")))
        stub.fail_with = 401
        broken = doctor(env)
    assert broken.returncode == 1
    table = rows(broken.stdout)
    assert {part for part, (mark, _) in table.items() if mark == "fix"} == {
        "LLM (extraction)", "upstream (OpenAI API)", "pegasus serve", "Codex hooks"}
    assert table["LLM (extraction)"][1] == (f"the LLM at {upstream}/v1 rejected the API key: set "
                                            "PEGASUS_UPSTREAM_API_KEY to a key it accepts")
    assert "refused the key (401): set PEGASUS_UPSTREAM_API_KEY" in table[
        "upstream (OpenAI API)"][1]
    assert f"nothing answers at {url}" in table["pegasus serve"][1]
    assert "which is not on PATH" in table["Codex hooks"][1]
    assert "4 problem(s)" in broken.stdout
