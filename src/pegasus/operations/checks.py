"""One part of a set-up check (`pegasus doctor`, `pegasus connect`): fine, a problem with the one
thing to do, or not used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class Check:
    """One part: fine, a problem (with the one thing to do), or not used (skipped)."""

    part: str
    state: Literal["ok", "problem", "skipped"]
    detail: str


def ok(part: str, detail: str) -> Check:
    return Check(part, "ok", detail)


def problem(part: str, todo: str) -> Check:
    return Check(part, "problem", todo)


def skipped(part: str, why: str) -> Check:
    return Check(part, "skipped", why)
