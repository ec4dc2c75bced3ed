"""The review hook (design §5): something that scores how likely a candidate is the same entity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pegasus.merge.rules import StoredEntity
from pegasus.models.batch import CleanEntity


@dataclass
class CandidateContext:
    """A stored candidate with its neighbourhood on the graph, as lines `A -[REL]-> B`."""

    entity: StoredEntity
    neighbourhood: list[str] = field(default_factory=list)


class Reviewer(Protocol):
    """Returns a confidence in [0, 1] per candidate id; missing ids count as 0."""

    def review(
        self, proposed: CleanEntity, candidates: list[CandidateContext], conversation: str
    ) -> dict[str, float]: ...
