"""Every configuration mistake is one line on stderr and exit 2, naming the setting and what to
do (docs/reliability.md, "Configuration"); never a traceback. A Neo4j older than 2025.01 is
tried in test_upgrade, which starts one."""

from __future__ import annotations

import json
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from pegasus.operations.neo4j_local import free_port
from tests.serve.servers import StubUpstream, serving


def pegasus(env, *args, stdin=None):
    return subprocess.run([sys.executable, "-m", "pegasus", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=180)


def one_line(done) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def server_env(neo4j_env, **changes):
    env = {**neo4j_env, **changes}
    return {k: v for k, v in env.items() if v is not None}


@pytest.mark.parametrize("changes, says", [
    ({"NEO4J_PASSWORD": "wrong-password"}, "refused user 'neo4j' and its password: set "
                                            "NEO4J_USER and NEO4J_PASSWORD"),
    ({"NEO4J_PASSWORD": None}, "needs a password: set NEO4J_PASSWORD"),
    ({"NEO4J_DATABASE": "nosuchdb"}, "NEO4J_DATABASE='nosuchdb': no such database"),
    ({"NEO4J_URI": "http://{host}"}, "is not a Neo4j address"),
    ({"NEO4J_URI": "neo4j+s://{host}"}, "the TLS connection failed; a server without TLS is "
                                        "reached with neo4j:// or bolt://"),
    ({"NEO4J_URI": "bolt://127.0.0.1:{free}"}, "cannot reach Neo4j at bolt://127.0.0.1:"),
    ({"PEGASUS_API_KEYS": "not json"}, "PEGASUS_API_KEYS cannot be read: it must be JSON"),
    ({"PEGASUS_SEED_THRESHOLD": "high"}, "PEGASUS_SEED_THRESHOLD: Input should be a valid number"),
], ids=["wrong-password", "no-password", "unknown-database", "not-bolt", "tls-mismatch",
        "unreachable", "bad-api-keys-json", "bad-number"])
def test_a_configuration_mistake_is_one_line(neo4j_env, changes, says):
    host = urlparse(neo4j_env["NEO4J_URI"]).netloc
    filled = {k: v.format(host=host, free=free_port()) if v else v for k, v in changes.items()}
    line = one_line(pegasus(server_env(neo4j_env, **filled), "memories", "--user", "u"))
    assert says in line


def test_serve_refuses_to_start_in_one_line(neo4j_env):
    line = one_line(pegasus(server_env(neo4j_env, NEO4J_PASSWORD="wrong-password"), "serve",
                            "--port", str(free_port())))
    assert "refused user 'neo4j'" in line
    keys = json.dumps({"short": "user-a"})
    line = one_line(pegasus(server_env(neo4j_env, PEGASUS_API_KEYS=keys), "serve", "--port",
                            str(free_port())))
    assert "every API key must be a string of at least 8 characters" in line


@pytest.fixture
def refusing_llm():
    """An OpenAI-compatible server that rejects every key."""
    upstream = StubUpstream()
    upstream.fail_with = 401
    with serving(upstream.app) as root:
        yield f"{root}/v1"


def test_an_llm_that_refuses_the_key_or_cannot_be_reached(neo4j_env, refusing_llm, tmp_path,
                                                          user_id):
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps([{"role": "user", "content": "my boss Sarah"}]))
    llm = {"PEGASUS_LLM_MODEL": "gpt-test", "PEGASUS_LLM_API_KEY": "sk-wrong",
           "PEGASUS_LLM_MAX_RETRIES": "1", "PEGASUS_HOME": str(tmp_path / "home")}
    args = ("remember", str(transcript), "--user", user_id, "--conversation", "c1")
    line = one_line(pegasus(server_env(neo4j_env, **llm, PEGASUS_LLM_BASE_URL=refusing_llm),
                            *args))
    assert line == (f"error: the LLM at {refusing_llm} rejected the API key: set "
                    "PEGASUS_LLM_API_KEY to a key it accepts")
    closed = f"http://127.0.0.1:{free_port()}/v1"
    line = one_line(pegasus(server_env(neo4j_env, **llm, PEGASUS_LLM_BASE_URL=closed), *args))
    assert line == (f"error: cannot reach the LLM at {closed}: check PEGASUS_LLM_BASE_URL and "
                    "that the server is running")


def test_an_unknown_model_an_unusable_home_or_a_taken_port_is_one_line(neo4j_env, tmp_path,
                                                                       user_id):
    import socket

    model = server_env(neo4j_env, PEGASUS_EMBEDDING_MODEL="no-such-model-x1",
                       PEGASUS_HOME=str(tmp_path / "home"))
    for args in (("recall", "hello", "--user", user_id), ("serve", "--port", str(free_port()))):
        line = one_line(pegasus(model, *args))
        assert line.startswith("error: PEGASUS_EMBEDDING_MODEL='no-such-model-x1': no such model")
    a_file = tmp_path / "home-file"
    a_file.write_text("not a folder")
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps([{"role": "user", "content": "my boss Sarah"}]))
    for home in (a_file, "/proc/pegasus-home"):
        env = server_env(neo4j_env, PEGASUS_HOME=str(home))
        for args in (("remember", str(transcript), "--user", user_id, "--conversation", "c1"),
                     ("serve", "--port", str(free_port()))):
            line = one_line(pegasus(env, *args))
            assert line.startswith(f"error: PEGASUS_HOME={home} cannot be used"), line
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = one_line(pegasus(server_env(neo4j_env, PEGASUS_HOME=str(tmp_path / "h")),
                                "serve", "--port", str(port)))
    assert line == (f"error: cannot listen on 127.0.0.1:{port} (Address already in use): "
                    "another program uses it; choose another port (--port, PEGASUS_SERVE_PORT)")
