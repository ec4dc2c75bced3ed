"""Fixtures of the end-to-end tests of real clients: a stub upstream model that records every
request (OpenAI Chat Completions and Responses, Anthropic Messages), and `pegasus serve` run
as a user runs it, in front of it."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.running import KEY, pegasus_serve
from tests.serve.extracting_upstream import ExtractingUpstream
from tests.serve.servers import StubUpstream, serving


@pytest.fixture
def stub():
    yield from stub_running(StubUpstream())


@pytest.fixture
def extracting_stub():
    """A stub upstream that also answers extraction's tool calls (tests/serve)."""
    yield from stub_running(ExtractingUpstream())


def stub_running(upstream: StubUpstream):
    """The stub on a loopback port, answering at once; `upstream.url` is its address."""
    upstream.CHUNK_DELAY_S = 0.0
    with serving(upstream.app) as url:
        upstream.url = url
        yield upstream


@pytest.fixture
def serve(neo4j_env, user_id, stub, tmp_path):
    """`pegasus serve` in a subprocess, with a scripted extraction model; its URL."""
    env = {**neo4j_env, "PEGASUS_API_KEYS": json.dumps({KEY: user_id}),
           "PEGASUS_UPSTREAM_BASE_URL": stub.url + "/v1",
           "PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL": stub.url,
           "PEGASUS_LLM_FACTORY": "tests.e2e.opencode_llm:extractor",
           "PEGASUS_IDLE_CLOSE_S": "600", "PEGASUS_IDLE_SWEEP_S": "0.5",
           "PEGASUS_HOME": str(tmp_path / "pegasus-home")}
    with pegasus_serve(env, tmp_path / "serve.log") as url:
        yield url


# The flags this machine's Chromium needs: no sandbox as root, no calls to the outside.
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                  "--window-size=1400,1000"]


@pytest.fixture
def chromium(tmp_path):
    """Headless Chromium driven by selenium; downloads go to tmp_path/downloads."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, ("Chromium not found: apt-get install chromium chromium-driver "
                               "(./run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    browser = webdriver.Chrome(service=Service(driver), options=options)
    browser.downloads = downloads
    try:
        yield browser
    finally:
        browser.quit()
