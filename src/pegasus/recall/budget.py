"""The firing budget (design §7.8; the co-episode bonus of §7.7 is in read/recall_walk). Pure."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Reached:
    """A node the activation reached."""

    id: str
    name: str
    kind: str
    score: float
    hop: int
    seed: bool
    forward: float = 0.0
    reverse: float = 0.0
    conversations: list[str] = field(default_factory=list)
    match_score: float = 0.0  # a seed's best key match, for ranking ties

    @property
    def direction(self) -> str:
        if self.seed:
            return "seed"
        return "forward" if self.forward >= self.reverse else "reverse"


def fire(
    nodes: list[Reached], threshold: float, total: int, forward_slots: int, reverse_slots: int,
) -> list[Reached]:
    """Nodes at or above the threshold, at most `total`: seed-or-forward and reverse slots,
    each ranked by score; slots one side leaves unused go to the other."""
    def rank(items: list[Reached]) -> list[Reached]:
        return sorted(items, key=lambda n: (-n.score, -n.match_score, n.name, n.id))

    eligible = [n for n in nodes if n.score >= threshold]
    front = rank([n for n in eligible if n.direction != "reverse"])
    back = rank([n for n in eligible if n.direction == "reverse"])
    take_front = min(len(front), forward_slots)
    take_back = min(len(back), reverse_slots)
    spare = total - take_front - take_back
    extra_front = min(len(front) - take_front, spare)
    take_front += extra_front
    take_back += min(len(back) - take_back, spare - extra_front)
    return rank(front[:take_front] + back[:take_back])
