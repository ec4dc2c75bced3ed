"""An entity's neighbourhood as a picture: the entity in the middle, its neighbours around it.

Pure layout (no database, no markup): the page's template draws the result as SVG, with every
name and relation escaped like any other stored text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pegasus.models.views import MemoryEdge

WIDTH, HEIGHT = 640, 440
RADIUS = 160
MAX_NEIGHBOURS = 16
MAX_LABEL = 22
MAX_RELATIONS = 3


@dataclass
class Node:
    x: float
    y: float
    name: str
    entity_id: str
    centre: bool = False


@dataclass
class Link:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str  # `→ HAS_BOSS`: from the centre; `← KNOWS`: towards it
    faded: bool  # every memory drawn on this line has faded (dormant)


@dataclass
class Picture:
    width: int
    height: int
    nodes: list[Node] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    left_out: int = 0  # neighbours not drawn (the weakest)


def short(text: str, limit: int = MAX_LABEL) -> str:
    """A label that fits the picture: cut with an ellipsis."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def neighbourhood(entity_id: str, name: str, edges: list[MemoryEdge]) -> Picture:
    """The picture of `entity_id` and the strongest of its neighbours through `edges` (its
    current and faded memories); each neighbour once, its relations on one line."""
    by_neighbour: dict[str, list[MemoryEdge]] = {}
    names: dict[str, str] = {}
    for edge in edges:
        if edge.source_id == entity_id:
            other, other_name = edge.target_id, edge.target
        elif edge.target_id == entity_id:
            other, other_name = edge.source_id, edge.source
        else:
            continue
        by_neighbour.setdefault(other, []).append(edge)
        names[other] = other_name
    ranked = sorted(by_neighbour, key=lambda n: (-max(e.strength or 0.0 for e in by_neighbour[n]),
                                                 names[n], n))
    shown = ranked[:MAX_NEIGHBOURS]
    cx, cy = WIDTH / 2, HEIGHT / 2
    picture = Picture(WIDTH, HEIGHT, left_out=len(ranked) - len(shown))
    for i, other in enumerate(shown):
        angle = -math.pi / 2 + 2 * math.pi * i / max(len(shown), 1)
        x, y = round(cx + RADIUS * 1.6 * math.cos(angle), 1), round(cy + RADIUS * math.sin(angle), 1)
        lines = sorted({("→ " if e.source_id == entity_id else "← ") + e.relation
                        for e in by_neighbour[other]})
        label = ", ".join(lines[:MAX_RELATIONS]) + (" …" if len(lines) > MAX_RELATIONS else "")
        picture.links.append(Link(cx, cy, x, y, short(label, 34),
                                  all(e.state == "dormant" for e in by_neighbour[other])))
        picture.nodes.append(Node(x, y, short(names[other]), other))
    picture.nodes.append(Node(cx, cy, short(name), entity_id, centre=True))
    return picture
