"""Passages: a recorded user turn cut into a few sentences at a time (docs/design.md §7.11,
"Remembered at once").

A turn is recallable from the user's other conversations as soon as it is recorded, before an
LLM extracts anything from it: its passages are indexed by their words and their meaning, and
recall quotes the best of them, dated, like a memory's words. A passage is short enough to be
quoted within the word budget; a long turn (a pasted document) gives its first and last
passages only, so recording it costs what a short one costs. Pure: no database here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from pegasus.text import head_and_tail

# What one passage holds at most, in words: a quote that leaves room for others in the
# 300-word budget.
PASSAGE_WORDS = 40
# Passages kept of one turn: the first and last half of this many.
PASSAGES_PER_TURN = 8
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


@dataclass(frozen=True)
class Passage:
    """One passage of a recorded user turn: its words and where it comes from."""

    turn: int  # the turn's index in its conversation's transcript
    place: int  # the passage's place in the turn
    text: str

    def id(self, conversation_id: str) -> str:
        """Unique in the user's partition: the conversation and the words (digested), the
        turn, the place. The words are in it because a turn's index is not stable: forgetting
        an entity removes turns and moves the later ones (and their passages) up, so a turn
        recorded afterwards takes an index a kept passage was made under; by index alone it
        would overwrite that passage (its words no longer recallable, never consolidated)."""
        both = f"{conversation_id}\x00{self.text}".encode()
        return f"{hashlib.sha256(both).hexdigest()[:24]}:{self.turn}:{self.place}"


def conversation_key(user_id: str, conversation_id: str) -> str:
    """A conversation as one Lucene token, so a full-text query can leave it out."""
    both = f"{user_id}\x00{conversation_id}".encode()
    return "c" + hashlib.sha256(both).hexdigest()[:32]


# A continuation of a closed conversation is `base.n` (serve.conversations.continuation_id).
_CONTINUATION = re.compile(r"^(?P<base>.+)\.(?P<n>[0-9]{1,3})$")


def family(conversation_id: str) -> list[str]:
    """The conversation and the ones it continues (`chat.3`: `chat`, `chat.2`): a chat's own
    earlier turns are in that chat already, so recall never quotes them back to it."""
    found = _CONTINUATION.match(conversation_id)
    if found is None or not 2 <= int(found["n"]) <= 100:
        return [conversation_id]
    base = found["base"]
    return [conversation_id, base, *(f"{base}.{k}" for k in range(2, int(found["n"])))]


def split(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """`text` as passages of whole sentences up to `words` words each (a longer sentence is cut
    at `words`), in order; blank text gives none."""
    out: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        tokens = sentence.split()
        while len(tokens) > words:  # a sentence longer than a passage: cut it
            if current:
                out.append(" ".join(current))
                current = []
            out.append(" ".join(tokens[:words]))
            tokens = tokens[words:]
        if current and len(current) + len(tokens) > words:
            out.append(" ".join(current))
            current = []
        current.extend(tokens)
    if current:
        out.append(" ".join(current))
    return out


def passages_of(turns: list[tuple[int, dict]], per_turn: int = PASSAGES_PER_TURN
                ) -> list[Passage]:
    """The passages of the user turns among `turns` ([(index in the transcript, {role,
    content})]): at most `per_turn` of each, its first and last."""
    found: list[Passage] = []
    for index, turn in turns:
        content = turn.get("content")
        if turn.get("role") != "user" or not isinstance(content, str):
            continue
        pieces = list(enumerate(split(content)))
        found += [Passage(index, place, text) for place, text in head_and_tail(pieces, per_turn)]
    return found
