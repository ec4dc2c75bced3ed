"""The [MEMORY]/[CONTEXT] block (design §7.9): the one place stored text enters the model's context.

This module is a trust boundary. Every stored text rendered into the block (a snippet, an entity
name, a relation label) goes through `escape`, and nothing else writes the block: so a stored
text can never end its quote early, start a line of its own, or carry a block tag, whatever it
holds (design §7, "Rendering"). The rule is backslash escaping, as in a JSON string: `\\`, `"`,
`[`, `]`, `(` and `)` get a backslash; tab, newline and carriage return become `\\t`, `\\n`,
`\\r`; every other invisible character (`invisible`: controls, line and paragraph separators,
format characters such as bidi controls, tags and the soft hyphen, variation selectors,
fillers, every other default-ignorable and every unassigned code point) becomes `\\uXXXX`, or
`\\UXXXXXXXX` past U+FFFF. `parse` reads a block back into the values it was built from
(tests/unit/test_render.py holds the attacks). The memory page shows the same characters as
visible marks (`visible`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from datetime import date

MEMORY_TAG = "[MEMORY]"
CONTEXT_TAG = "[CONTEXT]"
_NAMED = {"\\": "\\\\", '"': '\\"', "[": "\\[", "]": "\\]", "(": "\\(", ")": "\\)",
          "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNNAMED = {"t": "\t", "n": "\n", "r": "\r"}
# Every character but printable ASCII is looked at (`_escaped`); of ASCII, what structures a
# block.
_CANDIDATE = re.compile(r'[^\x20-\x7e]|[\\"\[\]()]')
_ESCAPE = re.compile(r"\\(u[0-9a-f]{4}|U[0-9a-f]{8}|.)", re.DOTALL)
# Invisible by category: controls (C0, DEL, C1: U+0085 is a line break to str.splitlines and to
# tokenizers), format characters (bidi embeddings, overrides, isolates and marks, zero-width
# space, word joiner, invisible operators, the soft hyphen, the BOM, interlinear annotations,
# the tag characters of "ASCII smuggling"), lone surrogates, unassigned code points (no glyph
# anyone can check; a later Unicode may make them format characters), line and paragraph
# separators. A stored text must not read one way to the person and another to the model.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})
# And Unicode's other Default_Ignorable_Code_Point characters (drawn as nothing: the combining
# grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and all other variation
# selectors), with the braille blank, which draws as a space but is no space to a tokenizer.
_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
              (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
              (0xE0000, 0xE0FFF))
# Kept where scripts and emoji need them: a zero-width (non-)joiner between two visible
# characters that are not ASCII (Persian words, Indic conjuncts, 👩‍💻), and one text or
# emoji presentation selector right after a visible character that is not ASCII (❤️), or in a
# keycap (1️⃣). A run of them, or one at an edge, beside a space or in ASCII text, hides
# something and is escaped.
_JOINERS = frozenset("\u200c\u200d")
_PRESENTATION = frozenset("\ufe0e\ufe0f")
_KEYCAP_BASES = frozenset("0123456789#*")


@functools.lru_cache(maxsize=4096)
def invisible(char: str) -> bool:
    """Whether a character draws as nothing or reorders text (in any context)."""
    if unicodedata.category(char) in _INVISIBLE_CATEGORIES:
        return True
    point = ord(char)
    return any(low <= point <= high for low, high in _IGNORABLE)


def _shown(text: str, at: int) -> bool:
    """Whether the character at `at` draws something: not invisible, not a space."""
    return 0 <= at < len(text) and not invisible(text[at]) and not text[at].isspace()


def _needed(text: str, at: int) -> bool:
    """Whether the invisible character at `at` is a joiner or selector its place needs."""
    char = text[at]
    if char in _PRESENTATION:
        keycap = text[at - 1:at] in _KEYCAP_BASES and text[at + 1:at + 2] == "\u20e3"
        return _shown(text, at - 1) and (not text[at - 1].isascii() or keycap)
    if char in _JOINERS:
        before = at - 2 if at >= 2 and text[at - 1] in _PRESENTATION and _needed(text, at - 1) \
            else at - 1
        return (_shown(text, before) and _shown(text, at + 1) and not text[before].isascii()
                and not text[at + 1].isascii())
    return False


def _escaped(m: re.Match[str]) -> str:
    char = m[0]
    if char in _NAMED:
        return _NAMED[char]
    if not invisible(char) or _needed(m.string, m.start()):
        return char
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def _marked(m: re.Match[str]) -> str:
    char = m[0]
    if char in "\t\n\r" or not invisible(char) or _needed(m.string, m.start()):
        return char
    return f"\u27e8U+{ord(char):04X}\u27e9"


_TEXT = r'(?:[^\\"]|\\.)*'  # an escaped text: no bare quote
_NAME = r"(?:[^\\\[\]()]|\\.)*"  # an escaped name or label: no bare bracket or parenthesis
_DAY = r"\d{4}-\d{2}-\d{2}"
_QUOTE_LINE = re.compile(rf'- (?:(?P<said>{_DAY})|undated)(?:, until (?P<until>{_DAY}))?: '
                         rf'"(?P<text>{_TEXT})"')
_RELATION_LINE = re.compile(rf"(?P<source>{_NAME}) -\[(?P<label>{_NAME})\]-> "
                            rf"(?P<target>{_NAME})(?: \(since (?P<since>{_DAY})\))?")


def escape(text: str) -> str:
    """A stored text as it may appear in the block: one line, no bare quote, bracket or tag,
    no invisible character."""
    return _CANDIDATE.sub(_escaped, text)


def visible(text: str) -> str:
    """A stored text as the memory page shows it: every character `escape` would escape as
    invisible drawn as a mark, ⟨U+E0041⟩ (tab and line breaks stay: HTML shows them as space)."""
    return _CANDIDATE.sub(_marked, text)


def unescape(text: str) -> str:
    """The stored text an escaped one came from (`escape`'s inverse)."""
    def one(m: re.Match[str]) -> str:
        code = m[1]
        if len(code) > 1:
            return chr(int(code[1:], 16))
        return _UNNAMED.get(code, code)
    return _ESCAPE.sub(one, text)


@dataclass(frozen=True)
class RelationLine:
    """A [MEMORY] line: an edge, with the day it was first observed."""

    source: str
    label: str
    target: str
    since: date | None = None

    def render(self) -> str:
        since = f" (since {self.since.isoformat()})" if self.since else ""
        return f"{escape(self.source)} -[{escape(self.label)}]-> {escape(self.target)}{since}"


@dataclass(frozen=True)
class QuoteLine:
    """A [CONTEXT] line: the user's words, the day they were said, and (history) the day the
    memory ended."""

    text: str
    said: date | None = None
    until: date | None = None

    def render(self) -> str:
        when = self.said.isoformat() if self.said else "undated"
        if self.until is not None:
            when += f", until {self.until.isoformat()}"
        return f'- {when}: "{escape(self.text)}"'


def render_block(memory: list[str], context: list[str]) -> str:
    """The rendered relation and quote lines under their tags; empty when there are none."""
    parts: list[str] = []
    if memory:
        parts.append("\n".join([MEMORY_TAG, *memory]))
    if context:
        parts.append("\n".join([CONTEXT_TAG, *context]))
    return "\n\n".join(parts)


def _day(value: str | None) -> date | None:
    return date.fromisoformat(value) if value else None


def parse_block(block: str) -> tuple[list[RelationLine], list[QuoteLine]]:
    """The values a block was rendered from; ValueError when it is not one `render_block` made."""
    memory: list[RelationLine] = []
    context: list[QuoteLine] = []
    if not block:
        return memory, context
    sections = block.split("\n\n")
    tags = [s.split("\n", 1)[0] for s in sections]
    if tags not in ([MEMORY_TAG], [CONTEXT_TAG], [MEMORY_TAG, CONTEXT_TAG]):
        raise ValueError(f"not a memory block: sections {tags}")
    for section in sections:
        tag, *lines = section.split("\n")
        if not lines:
            raise ValueError(f"{tag} without lines")
        for line in lines:
            if tag == MEMORY_TAG:
                found = _RELATION_LINE.fullmatch(line)
                if found is None:
                    raise ValueError(f"not a relation line: {line!r}")
                memory.append(RelationLine(unescape(found["source"]), unescape(found["label"]),
                                           unescape(found["target"]), _day(found["since"])))
            else:
                found = _QUOTE_LINE.fullmatch(line)
                if found is None:
                    raise ValueError(f"not a quote line: {line!r}")
                context.append(QuoteLine(unescape(found["text"]), _day(found["said"]),
                                         _day(found["until"])))
    return memory, context
