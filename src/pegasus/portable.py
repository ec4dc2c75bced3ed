"""Stored property values as JSON and back, exactly: instants keep their type.

Neo4j properties are scalars, instants and lists of them. JSON has no instant, so one is
written as {"$datetime": ISO 8601}; everything else is JSON as it is. Used where stored state
must round-trip through text: a hand merge's record of the memories it took off (design §10).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

INSTANT = "$datetime"


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
