"""Fixtures of the end-to-end tests of real clients: a stub upstream model that records every
request (OpenAI Chat Completions and Responses, Anthropic Messages), and `pegasus serve` run
as a user runs it, in front of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from pegasus.neo4j_local import free_port
from tests.e2e.running import KEY, ROOT
from tests.serve.servers import StubUpstream, serving


@pytest.fixture
def stub():
    upstream = StubUpstream()
    upstream.CHUNK_DELAY_S = 0.0
    with serving(upstream.app) as url:
        upstream.url = url
        yield upstream


@pytest.fixture
def serve(neo4j_env, user_id, stub, tmp_path):
    """`pegasus serve` in a subprocess, with a scripted extraction model; its URL."""
    port = free_port()
    env = {**neo4j_env, "PEGASUS_API_KEYS": json.dumps({KEY: user_id}),
           "PEGASUS_UPSTREAM_BASE_URL": stub.url + "/v1",
           "PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL": stub.url,
           "PEGASUS_LLM_FACTORY": "tests.e2e.opencode_llm:extractor",
           "PEGASUS_IDLE_CLOSE_S": "600", "PEGASUS_IDLE_SWEEP_S": "0.5",
           "PEGASUS_HOME": str(tmp_path / "pegasus-home"),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen([sys.executable, "-m", "pegasus", "serve", "--port", str(port)],
                               env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(url + "/openapi.json", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, (
            (tmp_path / "serve.log").read_text()[-3000:])
        time.sleep(0.3)
    yield url
    process.terminate()
    process.wait(timeout=60)
    log.close()
