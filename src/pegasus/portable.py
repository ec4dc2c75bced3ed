"""Stored property values as JSON and back, exactly: instants keep their type.

Neo4j properties are scalars, instants and lists of them. JSON has no instant, so one is
written as {"$datetime": ISO 8601}; everything else is JSON as it is. Used where stored state
must round-trip through text: a hand merge's record of the memories it took off (design §10).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

INSTANT = "$datetime"
MAX_TEXT_DEPTH = 32  # nesting a JSON text part may have (the format's own need a few levels)


class RepeatedKeyError(ValueError):
    """A JSON object names one key twice."""

    def __init__(self, key: str) -> None:
        super().__init__("a key appears twice in one object (which one counts would be a "
                         "guess)")
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook that refuses a key named twice (RepeatedKeyError)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        raise RepeatedKeyError(next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1))
    return data


def strict_json(text: str, max_depth: int = MAX_TEXT_DEPTH) -> Any:
    """JSON text read as a file of the format must be: an object naming a key twice (Python
    keeps the last, another reader the first) or nesting past `max_depth` (a RecursionError
    somewhere later) is a ValueError with one line to say, like any text that is not JSON."""
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return data


def one_line(text: str, limit: int = 300) -> str:
    """A message that may quote a file's or a request's text, safe to print: what is not
    printable (line breaks, escapes, bidi controls) as \\uXXXX, and at most `limit`
    characters."""
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)
    return shown if len(shown) <= limit else shown[:limit] + "…"


def native(value: Any) -> Any:
    """A value as the driver returns it, as plain Python (instants as datetimes, lists element
    by element)."""
    if hasattr(value, "to_native"):  # neo4j.time's DateTime, Date, Time
        return value.to_native()
    if isinstance(value, list):
        return [native(v) for v in value]
    return value


def encode_value(value: Any) -> Any:
    """One property value as JSON-able data."""
    value = native(value)
    if isinstance(value, datetime):
        return {INSTANT: value.isoformat()}
    if isinstance(value, list | tuple):
        return [encode_value(v) for v in value]
    if isinstance(value, bytes | bytearray):
        raise TypeError("byte arrays are derived data and are not written out")
    return value


def decode_value(value: Any) -> Any:
    """The inverse of `encode_value`."""
    if isinstance(value, dict) and set(value) == {INSTANT}:
        return datetime.fromisoformat(value[INSTANT])
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value


def encode_props(props: dict[str, Any]) -> dict[str, Any]:
    return {k: encode_value(v) for k, v in props.items()}


def decode_props(props: dict[str, Any]) -> dict[str, Any]:
    return {k: decode_value(v) for k, v in props.items()}
