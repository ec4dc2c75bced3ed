"""What the end-to-end tests of the real clients share: the user's key, and how to tell the
memory block in what a model was sent."""

from __future__ import annotations

import time
from pathlib import Path

from pegasus.hook import MEMORY_PREAMBLE

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


def wait_for(predicate, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()) and time.monotonic() < deadline:
        time.sleep(0.3)
    return value
