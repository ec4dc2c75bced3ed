"""`pegasus demo`: a local Neo4j, three sample conversations remembered, one message recalled."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from importlib import resources
from typing import Any

from pegasus.clock import parse_instant
from pegasus.memory import Memory
from pegasus.models.reports import CommitReport

DEMO_USER = "demo"
DEMO_MESSAGE = "Should I tell Sarah about the Northwind offer before our trip?"


def samples() -> list[dict[str, Any]]:
    """The bundled conversations: transcript, extraction batch, conversation id and time."""
    folder = resources.files("pegasus") / "data" / "samples"
    return [json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(folder.iterdir(), key=lambda p: p.name) if p.name.endswith(".json")]


def describe(report: CommitReport) -> str:
    if report.skipped:
        return "already remembered (committing again changes nothing)"
    parts = [f"{len(report.created)} new entities", f"{len(report.edges_created)} new memories"]
    known = [m.name for m in report.merged if m.name == m.into]
    merged = [f"{m.name}→{m.into} ({m.rule})" for m in report.merged if m.name != m.into]
    if known:
        parts.append("recognised " + ", ".join(known))
    if merged:
        parts.append("merged " + ", ".join(merged))
    if report.reinforced:
        parts.append(f"{len(report.reinforced)} reinforced")
    if report.dropped:
        parts.append("dropped " + "; ".join(f"{d.item}: {d.reason}" for d in report.dropped))
    return ", ".join(parts)


def run_demo(mem: Memory, echo: Callable[[str], None], use_llm: bool = False) -> str:
    """Remember the samples for the demo user, then recall DEMO_MESSAGE; the rendered block."""
    convs = samples()
    for conv in convs:
        at = parse_instant(conv["at"])
        if use_llm:
            report = mem.remember(DEMO_USER, conv["conversation_id"], conv["transcript"], at=at)
        else:
            report = mem.commit(DEMO_USER, conv["conversation_id"], conv["batch"], at=at,
                                transcript=conv["transcript"])
        echo(f"  {conv['conversation_id']:<11} {describe(report)}")
    at = parse_instant(convs[-1]["at"]) + timedelta(days=3)
    echo(f"\nnew message ({at.date()}): {DEMO_MESSAGE!r}")
    recall = mem.recall(DEMO_USER, DEMO_MESSAGE, at=at)
    echo("fired: " + ", ".join(f"{n.name} ({n.direction}, {n.score:.2f})" for n in recall.nodes))
    return recall.render()
