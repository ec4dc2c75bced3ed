"""An entity's neighbourhood as a picture, and its memories as a timeline.

Pure layout (no database, no markup): the page's templates draw the result as SVG and lists,
with every name and word escaped like any other stored text. Two layouts of one picture: a
wide one (the entity in the middle, its neighbours in two columns bowed round it) and a narrow one
for phones (the entity on top, its neighbours in a column), so the words stay readable at any
width. Each neighbour's label sits on the far side of its circle from the line that reaches
it, so no line crosses a label; the relation is said in words ("you work at", "knows you"),
never as an arrow or a code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pegasus.models.views import MemoryEdge
from pegasus.page.words import phrase

MAX_NEIGHBOURS = 12
MAX_NAME = 20
MAX_WORDS = 26
WIDE = 940  # the wide picture's width; its height follows the neighbours
NARROW = 360  # the narrow picture's width (a phone's, at one unit a pixel)
NODE_R, CENTRE_R = 16, 26
ROW = 58  # the narrow picture's row height
GAP = 50  # the wide picture's row height: a label's two lines (36) and room between
RX, RX_MIN = 185, 110  # how far a column's middle rows and its outermost ones sit from the centre


@dataclass
class Node:
    x: float
    y: float
    name: str  # the entity's name, shortened to fit
    words: str  # what links it to the centre, in words ("you work at"); "" for the centre
    entity_id: str
    centre: bool = False
    anchor: str = "middle"  # text-anchor of its label
    name_y: float = 0.0  # the label's two baselines
    words_y: float = 0.0
    text_x: float = 0.0
    faded: bool = False  # every memory drawn to it is dormant
    full: str = ""  # its name and words uncut, for the tooltip (<title>)


@dataclass
class Link:
    x1: float
    y1: float
    x2: float
    y2: float
    faded: bool


@dataclass
class Layout:
    width: int
    height: int
    nodes: list[Node] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


@dataclass
class Picture:
    wide: Layout
    narrow: Layout
    left_out: int = 0  # neighbours not drawn (the weakest)
    any_faded: bool = False  # a legend line for dashed links only when one is drawn
    count: int = 0  # neighbours drawn


def short(text: str, limit: int = MAX_NAME) -> str:
    """A label that fits the picture: cut with an ellipsis."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def link_words(edge: MemoryEdge, neighbour_is_target: bool) -> str:
    """What links the neighbour to the centre, without the neighbour's name: "you work at"
    (the centre says it of the neighbour), "knows you" (the neighbour says it of the centre)."""
    sentence = phrase(edge.source, edge.relation, edge.target, edge.source_is_self,
                      edge.target_is_self)
    if edge.target_is_self if neighbour_is_target else edge.source_is_self:
        return sentence  # the neighbour is "you": the whole sentence reads best beside it
    name = edge.target if neighbour_is_target else edge.source
    if neighbour_is_target and sentence.endswith(name):
        words = sentence[:-len(name)].rstrip(" :—")
        return words[:1].lower() + words[1:] if words.startswith(("You", "Your")) else words
    if not neighbour_is_target and sentence.startswith(name + " "):
        return sentence[len(name):].strip(" —")
    return sentence


# A neighbour as drawn: its id, name and words (cut to fit), faded, and both uncut.
Shown = tuple[str, str, str, bool, str]


def _neighbours(entity_id: str, edges: list[MemoryEdge]) -> tuple[list[Shown], int]:
    """The strongest neighbours and how many were left out."""
    by: dict[str, list[tuple[MemoryEdge, bool]]] = {}
    names: dict[str, str] = {}
    for edge in edges:
        if edge.source_id == entity_id and edge.target_id != entity_id:
            other, outward = edge.target_id, True
            name = "You" if edge.target_is_self else edge.target
        elif edge.target_id == entity_id and edge.source_id != entity_id:
            other, outward = edge.source_id, False
            name = "You" if edge.source_is_self else edge.source
        else:
            continue
        by.setdefault(other, []).append((edge, outward))
        names[other] = name
    ranked = sorted(by, key=lambda n: (-max(e.strength_now or e.strength or 0.0
                                            for e, _ in by[n]), names[n], n))
    shown = []
    for other in ranked[:MAX_NEIGHBOURS]:
        first, outward = sorted(by[other], key=lambda p: (p[0].relation, p[0].id))[0]
        said = link_words(first, outward)
        more = f" (+{len(by[other]) - 1})" if len(by[other]) > 1 else ""
        faded = all(e.state == "dormant" for e, _ in by[other])
        shown.append((other, short(names[other]), short(said, MAX_WORDS) + more, faded,
                      f"{names[other]}: {said}{more}"))
    return shown, len(ranked) - len(shown)


def _wide(entity_id: str, name: str, shown: list[Shown]) -> Layout:
    """The entity in the middle, its neighbours in two columns bowed round it (the first
    half on the right, top to bottom, the rest on the left), each label beside its circle
    and away from the centre: rows GAP apart never put one label on another, and the
    lines, which reach each column from the middle, pass below or above the other rows'
    labels (tests/unit/test_page_parts.py measures both). A name or words cut to fit are
    whole in the node's tooltip."""
    n = len(shown)
    right = (n + 1) // 2
    rows = max(right, 1)
    span = (rows - 1) / 2 * GAP + GAP  # the bow's half height, past the outermost row
    cx, cy = WIDE / 2, span + GAP
    layout = Layout(WIDE, int(2 * cy))
    for i, (other, label, words, faded, full) in enumerate(shown):
        side, row, k = (1, i, right) if i < right else (-1, i - right, n - right)
        y = cy + (row - (k - 1) / 2) * GAP
        bow = math.sqrt(max(0.0, 1 - ((y - cy) / span) ** 2))
        x = cx + side * (RX_MIN + (RX - RX_MIN) * bow)
        x, y = round(x, 1), round(y, 1)
        length = math.hypot(x - cx, y - cy) or 1.0
        ux, uy = (x - cx) / length, (y - cy) / length
        layout.links.append(Link(round(cx + CENTRE_R * ux, 1), round(cy + CENTRE_R * uy, 1),
                                 round(x - NODE_R * ux, 1), round(y - NODE_R * uy, 1), faded))
        layout.nodes.append(Node(x, y, label, words, other, faded=faded, full=full,
                                 anchor="start" if side > 0 else "end",
                                 text_x=round(x + side * (NODE_R + 8), 1), name_y=y - 2,
                                 words_y=y + 16))
    layout.nodes.append(Node(cx, cy, short(name), "", entity_id, centre=True, text_x=cx,
                             name_y=cy + CENTRE_R + 20, full=name))
    return _cropped(layout)


def _cropped(layout: Layout, margin: float = 20.0) -> Layout:
    """The layout moved up and cut to what it draws (circles and labels), so a few
    neighbours leave no empty band above or below."""
    tops = [min(n.y - (CENTRE_R if n.centre else NODE_R), n.name_y - 16,
                (n.words_y - 14) if n.words else n.name_y - 16) for n in layout.nodes]
    bottoms = [max(n.y + (CENTRE_R if n.centre else NODE_R), n.name_y + 5,
                   (n.words_y + 5) if n.words else 0.0) for n in layout.nodes]
    shift = min(tops) - margin
    for node in layout.nodes:
        node.y, node.name_y = round(node.y - shift, 1), round(node.name_y - shift, 1)
        node.words_y = round(node.words_y - shift, 1) if node.words else node.words_y
    for link in layout.links:
        link.y1, link.y2 = round(link.y1 - shift, 1), round(link.y2 - shift, 1)
    layout.height = int(math.ceil(max(bottoms) - shift + margin))
    return layout


def _narrow(entity_id: str, name: str, shown: list[Shown]) -> Layout:
    top = 40
    layout = Layout(NARROW, top + 30 + ROW * len(shown) + 10)
    trunk = 30
    for i, (other, label, words, faded, full) in enumerate(shown):
        y = top + 30 + ROW * i + ROW / 2
        x = trunk + 40
        layout.links.append(Link(trunk, y, x - NODE_R, y, faded))
        layout.nodes.append(Node(x, y, label, words, other, faded=faded, full=full,
                                 anchor="start",
                                 text_x=x + NODE_R + 10, name_y=y - 3, words_y=y + 15))
    if shown:
        last = layout.links[-1].y1
        layout.links.insert(0, Link(trunk, top + CENTRE_R - 6, trunk, last, False))
    layout.nodes.append(Node(trunk, top, short(name), "", entity_id, centre=True, full=name,
                             anchor="start",
                             text_x=trunk + CENTRE_R + 10, name_y=top + 6))
    return layout


def neighbourhood(entity_id: str, name: str, edges: list[MemoryEdge]) -> Picture:
    """The picture of `entity_id` and the strongest of its neighbours through `edges` (its
    current and dormant memories); each neighbour once, with what links it in words."""
    shown, left_out = _neighbours(entity_id, edges)
    return Picture(wide=_wide(entity_id, name, shown), narrow=_narrow(entity_id, name, shown),
                   left_out=left_out, any_faded=any(s[3] for s in shown), count=len(shown))


@dataclass
class Moment:
    """One memory on an entity's timeline: when it began, and how it ended if it did."""

    day: str  # ISO date it began (the memory's first date)
    edge: MemoryEdge
    ended: str | None = None  # ISO date it was replaced, corrected, marked wrong or ended
    how_ended: str | None = None


def timeline_rows(edges: list[MemoryEdge]) -> list[Moment]:
    """An entity's memories by the date each began, oldest first, each with how and when it
    stopped being current (replaced, corrected, marked wrong, ended)."""
    rows = []
    for edge in edges:
        began = (edge.created_at or edge.said_at or "")[:10]
        if edge.retracted_at:
            ended, how = edge.retracted_at, "marked wrong"
        elif edge.corrected_at:
            ended, how = edge.corrected_at, "corrected by you"
        elif edge.superseded_at:
            ended, how = edge.superseded_at, "replaced by a newer memory"
        elif edge.state == "expired" and edge.expires_at:
            ended, how = edge.expires_at, "ended"
        else:
            ended, how = None, None
        rows.append(Moment(began, edge, ended[:10] if ended else None, how))
    return sorted(rows, key=lambda m: (m.day, m.edge.said_at or "", m.edge.id))
