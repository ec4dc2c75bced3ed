"""Instants: every time Pegasus stores is timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


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


def client_instant(value: datetime | None, skew_s: float) -> datetime | None:
    """A client's `at` (the HTTP API, MCP): aware UTC, None for the server's clock; refused
    when it lies more than `skew_s` past the server's clock (design §6, "Who sets the clock").
    Library and CLI callers set `at` freely (replays, notebooks) and never come here."""
    if value is None:
        return None
    instant = aware(value)
    if instant > now() + timedelta(seconds=skew_s):
        from pegasus.errors import InvalidInstantError

        raise InvalidInstantError(
            f"at: {instant.isoformat()} lies in the future; this server takes an `at` at most "
            f"{skew_s:g} s past its own clock (max_clock_skew_s). Send no `at` to use the "
            "server's clock.")
    return instant
