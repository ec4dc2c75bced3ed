"""Instants: every time Pegasus stores is timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def parse_instant(value: str) -> datetime:
    """An ISO-8601 instant; a value without an offset is taken as UTC."""
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def aware(value: datetime | None) -> datetime:
    """`value` as aware UTC; None means now."""
    if value is None:
        return now()
    try:
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    except OverflowError as exc:  # year 1 with a positive offset has no UTC instant
        from pegasus.errors import InvalidInputError

        raise InvalidInputError(f"{value.isoformat()} is outside the instants UTC can hold") from exc
