"""Pure text helpers: name folding, placeholders, nickname groups, content words."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from importlib import resources
from typing import TypeVar

# Self placeholders the extractor emits before it knows the user's name (design §5).
SELF_PLACEHOLDERS = frozenset(
    {"user", "the user", "me", "i", "myself", "self", "the speaker", "speaker", "you",
     "user (me)", "the user (me)", "my self", "mine"}
)

Seq = TypeVar("Seq", str, list)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


def fold(text: str) -> str:
    """Case- and whitespace-folded form used for every name comparison."""
    normal = unicodedata.normalize("NFKC", text)
    return " ".join(normal.casefold().split())


def is_placeholder(name: str) -> bool:
    return fold(name) in SELF_PLACEHOLDERS


def words(text: str) -> list[str]:
    """Lower-case word tokens."""
    return [w.replace("’", "'") for w in _WORD.findall(fold(text))]


def _data_lines(name: str) -> list[str]:
    raw = (resources.files("pegasus") / "data" / name).read_text(encoding="utf-8")
    return [line for line in raw.splitlines() if line.strip() and not line.startswith("#")]


@cache
def function_words() -> frozenset[str]:
    return frozenset(w for line in _data_lines("function_words.txt") for w in line.split())


@cache
def nickname_groups() -> dict[str, frozenset[int]]:
    """Each given name → the indexes of the groups it belongs to (a name may be in two)."""
    groups: dict[str, set[int]] = {}
    for index, line in enumerate(_data_lines("nicknames.txt")):
        for name in line.split():
            groups.setdefault(name, set()).add(index)
    return {name: frozenset(ids) for name, ids in groups.items()}


def same_given_name(a: str, b: str) -> bool:
    """True when two given names are equal or share a nickname group."""
    a, b = fold(a), fold(b)
    if a == b:
        return True
    groups = nickname_groups()
    return bool(groups.get(a, frozenset()) & groups.get(b, frozenset()))


def nickname_match(proposed: str, stored: str) -> bool:
    """'Bill' ~ 'William Smith', 'Bill Smith' ~ 'William Smith', not 'Bill Jones' ~ 'William Smith'.

    The first given names must be equal or nicknames of each other, and what follows them must
    be equal or absent on one side (design §5 rule 3). Equal names are rule 1, not this one.
    """
    p, s = fold(proposed).split(), fold(stored).split()
    if not p or not s or p == s or p[0] == s[0]:
        return False
    if not same_given_name(p[0], s[0]):
        return False
    return p[1:] == s[1:] or not p[1:] or not s[1:]


def content_words(text: str) -> list[str]:
    """Content words of a message: lower case, no function words or single letters, no repeats."""
    seen: dict[str, None] = {}
    stop = function_words()
    for word in words(text):
        if len(word) > 1 and word not in stop:
            seen.setdefault(word, None)
    return list(seen)


def head_and_tail(items: Seq, n: int) -> Seq:
    """The first and last `n` // 2 items (of a list, or characters of a text) when there are
    more than `n`: what recall reads of a huge message (a pasted document comes with its
    question before or after it), so its cost never grows with the message (#35)."""
    if len(items) <= n:
        return items
    return items[:n - n // 2] + items[len(items) - n // 2:]


def label_phrase(label: str) -> str:
    """A relation label as the phrase that is embedded: HAS_PARTNER → 'has partner'."""
    return label.replace("_", " ").lower()


def sentences(text: str) -> list[str]:
    """Rough sentence split, for finding the user's sentence that best carries a snippet."""
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if p.strip()]
