"""The injected block (SPEC §7.9): relation lines between fired nodes, hot nodes' snippets."""

from __future__ import annotations

from typing import Any


def memory_lines(edges: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """`A -[REL]-> B`, strongest first; with the edges in the same order."""
    ordered = sorted(edges, key=lambda e: (-e["strength"], e["source"], e["label"], e["target"]))
    return [f"{e['source']} -[{e['label']}]-> {e['target']}" for e in ordered], ordered


def context_snippets(per_node: list[list[dict[str, Any]]], limit: int = 4) -> list[str]:
    """Up to `limit` snippets per hot node, in the hot nodes' order, verbatim, no repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for snippets in per_node:
        for item in snippets[:limit]:
            text = item.get("snippet")
            if text and text not in seen:
                seen.add(text)
                out.append(text)
    return out
