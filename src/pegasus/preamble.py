"""The words that introduce a recalled block to the model, one wording for every client path
(the hooks and the three proxies).

Standard library only: the hook program, which a coding agent starts for every prompt,
imports it without loading the server's stack.
"""

from __future__ import annotations

MEMORY_PREAMBLE = ("Long-term memory of this user, recalled from earlier conversations "
                   "(relations, then their own words). Use it when it helps; do not recite it.")


def memory_note(block: str) -> str:
    """The recalled block as every client path hands it to the model (hooks and proxy)."""
    return f"{MEMORY_PREAMBLE}\n\n{block}"
