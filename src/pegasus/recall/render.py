"""The [MEMORY]/[CONTEXT] block (design §7.9): the one place stored text enters the model's context.

This module is a trust boundary. Every stored text rendered into the block (a snippet, an entity
name, a relation label) goes through `escape`, and nothing else writes the block: so a stored
text can never end its quote early, start a line of its own, or carry a block tag, whatever it
holds (design §7, "Rendering"). The rule is backslash escaping, as in a JSON string: `\\`, `"`,
`[`, `]`, `(` and `)` get a backslash; tab, newline and carriage return become `\\t`, `\\n`,
`\\r`; every other control character, line or paragraph separator, and every invisible
character that reorders or hides text (bidi controls, zero-width space, BOM) becomes
`\\uXXXX`. `parse` reads a block back into the values it was built from
(tests/unit/test_render.py holds the attacks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

MEMORY_TAG = "[MEMORY]"
CONTEXT_TAG = "[CONTEXT]"
_NAMED = {"\\": "\\\\", '"': '\\"', "[": "\\[", "]": "\\]", "(": "\\(", ")": "\\)",
          "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNNAMED = {"t": "\t", "n": "\n", "r": "\r"}
# Controls (C0, DEL, C1: U+0085 is a line break to str.splitlines and to tokenizers), the
# Unicode line and paragraph separators, lone surrogates, and the invisible characters that
# reorder or hide text (bidi embeddings, overrides, isolates and marks, zero-width space,
# word joiner and invisible operators, the BOM, interlinear annotations): a stored text must
# not read one way to the person and another to the model. Zero-width (non-)joiners stay:
# scripts and emoji need them.
_UNSAFE = re.compile(r'[\\"\[\]()\x00-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f'
                     r'\u202a-\u202e\u2028\u2029\u2060-\u206f\ufeff\ufff9-\ufffb'
                     r'\ud800-\udfff]')
_ESCAPE = re.compile(r"\\(u[0-9a-f]{4}|.)", re.DOTALL)
_TEXT = r'(?:[^\\"]|\\.)*'  # an escaped text: no bare quote
_NAME = r"(?:[^\\\[\]()]|\\.)*"  # an escaped name or label: no bare bracket or parenthesis
_DAY = r"\d{4}-\d{2}-\d{2}"
_QUOTE_LINE = re.compile(rf'- (?:(?P<said>{_DAY})|undated)(?:, until (?P<until>{_DAY}))?: '
                         rf'"(?P<text>{_TEXT})"')
_RELATION_LINE = re.compile(rf"(?P<source>{_NAME}) -\[(?P<label>{_NAME})\]-> "
                            rf"(?P<target>{_NAME})(?: \(since (?P<since>{_DAY})\))?")


def escape(text: str) -> str:
    """A stored text as it may appear in the block: one line, no bare quote, bracket or tag."""
    return _UNSAFE.sub(lambda m: _NAMED.get(m[0]) or f"\\u{ord(m[0]):04x}", text)


def unescape(text: str) -> str:
    """The stored text an escaped one came from (`escape`'s inverse)."""
    def one(m: re.Match[str]) -> str:
        code = m[1]
        if len(code) == 5:
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
