"""What the end-to-end tests of the real clients share: the user's key, and how to tell the
memory block in what a model was sent."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from pegasus.hook import MEMORY_PREAMBLE
from pegasus.operations.neo4j_local import free_port

ROOT = Path(__file__).resolve().parents[2]
KEY = "key-opencode-0001"
# What every client test commits first: the memory the first prompt must recall.
SARAH = {
    "entities": [{"name": "Sarah", "kind": "PERSON"}, {"name": "Oslo", "kind": "PLACE"}],
    "relations": [{"source": "User", "relation": "HAS_SISTER", "target": "Sarah",
                   "snippet": "my sister Sarah is moving again"},
                  {"source": "Sarah", "relation": "LIVES_IN", "target": "Oslo",
                   "snippet": "Sarah lives in Oslo now, in a flat by the fjord"}],
}


def memory_block(system: str, words: str = "") -> bool:
    """The plugin's, the hook's or the proxy's memory block, holding these words, is in this
    text (a system part, or a whole request body as JSON)."""
    return (MEMORY_PREAMBLE in system and ("[MEMORY]" in system or "[CONTEXT]" in system)
            and words in system)


def wait_for(predicate, timeout_s: float = 180.0):
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()) and time.monotonic() < deadline:
        time.sleep(0.3)
    return value


@contextlib.contextmanager
def serve_process(env: dict[str, str], log_path: Path
                  ) -> Iterator[tuple[subprocess.Popen, str]]:
    """`python -m pegasus serve` as a user runs it, with exactly this environment (and this
    clone's sources first): the process and its URL once it answers. Its output goes to
    `log_path`; it is stopped at the end if it still runs."""
    port = free_port()
    env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "pegasus", "serve", "--port",
                                    str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=ROOT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300  # loading torch and the model on a busy machine
        while True:
            try:
                if httpx.get(url + "/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, (
                log_path.read_text()[-3000:])
            time.sleep(0.3)
        try:
            yield process, url
        finally:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=60)


@contextlib.contextmanager
def pegasus_serve(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """`python -m pegasus serve` as a user runs it (serve_process); its URL once it answers."""
    with serve_process(env, log_path) as (_, url):
        yield url
