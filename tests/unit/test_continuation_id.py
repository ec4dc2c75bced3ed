"""Continuation ids of a closed conversation (issue 40): `id.n` below the id limit, a digest
form at it, never past it, the same every time and distinct per id and n."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pegasus.serve.conversations import MAX_ID_CHARS, continuation_id


def test_a_short_id_continues_as_id_dot_n():
    assert continuation_id("chat-1", 2) == "chat-1.2"
    assert continuation_id("c" * 198, 2) == "c" * 198 + ".2"


def test_a_long_id_keeps_its_head_and_a_digest():
    long = "c" * 199
    second = continuation_id(long, 2)
    assert len(second) == MAX_ID_CHARS and second.startswith("c" * 150) and second.endswith(".2")
    assert "~" in second and continuation_id(long, 2) == second  # deterministic


@given(st.text(alphabet="abc.~-", min_size=1, max_size=MAX_ID_CHARS),
       st.integers(min_value=2, max_value=100))
def test_never_past_the_limit_and_distinct(base, n):
    made = continuation_id(base, n)
    assert len(made) <= MAX_ID_CHARS
    assert made != base and made != continuation_id(base, n + 1)
    if len(base) < MAX_ID_CHARS:  # another id of the same head continues elsewhere
        assert made != continuation_id(base + "x", n)
