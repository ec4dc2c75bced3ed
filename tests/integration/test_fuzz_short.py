"""The fuzz of import files and long messages (benchmarks/fuzz.py, #35), short and derandomized:
the same strategies and the same checks as the long run, a few examples each, on the real
Neo4j. What a long run finds is pinned here as an @example."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from benchmarks.fuzz import (
    PIECES,
    export_file,
    import_finding,
    long_text,
    mutated,
    recall_finding,
)
from pegasus import Memory
from tests.helpers import rel

SHORT = hypothesis_settings(max_examples=12, deadline=None, database=None,
                            suppress_health_check=list(HealthCheck))


def spoiled_mention(source: list[bytes]) -> list[bytes]:
    """The export with one conversation's mention cut short: it names no entity of the file
    (the long fuzz found such a file imported without the mention, so not exactly)."""
    lines = list(source)
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record["type"] == "conversation" and record["mentions"]:
            record["mentions"][0] = record["mentions"][0][:-1]
            lines[index] = json.dumps(record).encode() + b"\n"
            return lines
    raise AssertionError("the export has no conversation mentioning an entity")


def test_a_mutated_export_file_is_refused_cleanly_or_imported_exactly(settings, tmp_path):
    with Memory(settings) as mem:
        source = export_file(mem)
        path = tmp_path / "import.jsonl"

        @SHORT
        @given(lines=mutated(source), replace=st.booleans())
        @example(lines=source, replace=False)  # the file as exported: imported exactly
        @example(lines=[source[0], b'{"type": "entity"\xff}\n'], replace=True)
        @example(lines=[source[0], *source[1:] * 2], replace=False)  # every record twice
        @example(lines=spoiled_mention(source), replace=False)  # found by the long run
        def check(lines, replace):
            assert import_finding(mem, path, lines, replace) is None

        check()
        assert mem.store.read("transfer/stagings") == []


def test_a_long_message_recalls_and_its_block_parses_back(settings, user_id):
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", {"relations": [
            rel("User", "HAS_SISTER", "Sarah", snippet="my sister Sarah lives in Oslo")]})

        @hypothesis_settings(SHORT, max_examples=4)
        @given(pieces=PIECES, size=st.integers(1_000, 2_000_000), seed=st.integers(0, 2**32 - 1))
        # the cases: over 1,024 distinct words (Lucene's clause limit), 2 M characters
        @example(pieces=[f"w{n}" for n in range(2000)] + ["Sarah"], size=30_000, seed=1)
        @example(pieces=["Sarah", "Oslo", "x" * 40, "\x00", "AND", "OR", '"'], size=2_000_000,
                 seed=2)
        def check(pieces, size, seed):
            text = long_text(pieces, size, seed)
            assert len(text) == size
            assert recall_finding(mem, user_id, text) is None

        check()
        assert "Sarah" in mem.recall(user_id, long_text(["Sarah", "w"], 50_000, 3)).render()
