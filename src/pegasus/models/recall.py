"""What a message recalls: the fired nodes, the quoted snippets, the rendered block."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from pegasus.recall.render import QuoteLine, render_block


class FiredNode(BaseModel):
    """A node that fired in a recall, with how it was reached."""

    entity_id: str
    name: str
    kind: str
    score: float
    direction: Literal["seed", "forward", "reverse"]
    hop: int


class ShownSnippet(BaseModel):
    """A quoted memory: the user's words, when they were said, and (history) when it ended; or
    the words of a recorded turn not consolidated yet (`pending`: no memory edge holds them
    yet, design §7.11), with its passage's and its conversation's ids."""

    text: str
    edge_id: str
    said_at: datetime | None = None
    until: datetime | None = None
    score: float = 0.0
    pending: bool = False
    passage_id: str | None = None
    conversation_id: str | None = None

    @property
    def line(self) -> str:
        """The [CONTEXT] line (recall/render.py escapes the words)."""
        return QuoteLine(self.text, self.said_at.date() if self.said_at else None,
                         self.until.date() if self.until else None).render()


class Recall(BaseModel):
    """The block injected into the model's context for one turn."""

    memory: list[str] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)  # the quoted words, verbatim
    snippets: list[ShownSnippet] = Field(default_factory=list)  # the same, with their dates
    nodes: list[FiredNode] = Field(default_factory=list)
    edge_ids: list[str] = Field(default_factory=list)

    def render(self) -> str:
        """`[MEMORY]` and `[CONTEXT]` blocks as text; empty when nothing is relevant."""
        return render_block(self.memory, [s.line for s in self.snippets])

    def as_json(self) -> dict[str, Any]:
        """The `recall --json` shape (design §9, plus each snippet's dates)."""
        return {
            "memory": self.memory,
            "context": self.context,
            "snippets": [s.model_dump(mode="json") for s in self.snippets],
            "nodes": [
                {"name": n.name, "kind": n.kind, "score": round(n.score, 6),
                 "direction": n.direction, "hop": n.hop}
                for n in self.nodes
            ],
            "text": self.render(),
        }


