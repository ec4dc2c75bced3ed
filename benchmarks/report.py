"""Writes one section of docs/benchmarks.md, replacing that section's previous result."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADER = ("# Benchmarks\n\nRun on demand (not part of the test suite); each section is rewritten "
          "by the command it names. Figures are medians from one run on a shared machine: compare "
          "the ratios, not the absolute times.\n")


def write_section(title: str, command: str, machine: str, lines: list[str]) -> None:
    text = DOC.read_text() if DOC.exists() else HEADER
    body = (f"## {title}\n\n`{command}` — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine}\n\n"
            + "\n".join(lines) + "\n")
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(body + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + body
    DOC.write_text(text)


def timed(action, *args):
    """(milliseconds, result) of one call."""
    began = time.perf_counter()
    result = action(*args)
    return (time.perf_counter() - began) * 1000, result


def p95(values: list[float]) -> float:
    """The 95th percentile by nearest rank (benchmarks.hooks, benchmarks.recall_quality)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
