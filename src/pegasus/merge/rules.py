"""Deterministic merge rules (design §5): exact → alias → nickname → fuzzy nominations.

Pure: compares a proposed entity with the stored entities of the same kind and user. Only the
first three rules can merge, and only on exactly one match; fuzzy resemblance and the
extractor's hint can only nominate candidates for review.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rapidfuzz.distance import Levenshtein

from pegasus.models import CleanEntity
from pegasus.text import fold, nickname_match


@dataclass
class StoredEntity:
    """An entity as merge sees it (a stored one, or one created earlier in this commit)."""

    id: str
    name: str
    kind: str
    aliases: list[str] = field(default_factory=list)
    is_self: bool = False
    confidence: float = 0.5
    provisional: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    conversations: list[str] = field(default_factory=list)

    def forms(self) -> list[str]:
        return [fold(self.name), *(fold(a) for a in self.aliases)]


@dataclass
class Match:
    """What the rules found for one proposed entity."""

    rule: Literal["exact", "provisional", "alias", "nickname"] | None
    matches: list[StoredEntity]
    nominations: list[StoredEntity]

    @property
    def merge_target(self) -> StoredEntity | None:
        return self.matches[0] if self.rule and len(self.matches) == 1 else None

    @property
    def review_candidates(self) -> list[StoredEntity]:
        if self.rule and len(self.matches) > 1:
            return self.matches
        return [] if self.rule else self.nominations


def similarity(a: str, b: str) -> float:
    """1 − normalised edit distance of the folded names."""
    return Levenshtein.normalized_similarity(fold(a), fold(b))


def resembles(a: str, b: str, threshold: float) -> bool:
    """Weak resemblance (rule 4): spelling, containment of words, or half the words shared."""
    if similarity(a, b) > threshold:
        return True
    wa, wb = set(fold(a).split()), set(fold(b).split())
    if not wa or not wb:
        return False
    if wa <= wb or wb <= wa:
        return True
    shared = len(wa & wb)
    return shared * 2 >= len(wa) and shared * 2 >= len(wb)


def match(proposed: CleanEntity, pool: list[StoredEntity], fuzzy_threshold: float) -> Match:
    """Run the rules in order against same-kind entities."""
    same_kind = [s for s in pool if s.kind == proposed.kind]
    name = fold(proposed.name)
    aliases = {fold(a) for a in proposed.aliases}

    exact = [s for s in same_kind if fold(s.name) == name]
    if exact:
        return Match("exact", exact, [])
    # A provisional node (kind OTHER, made for an unknown end of a relation) is the same
    # referent as a real entity that arrives later under its name: it is absorbed, and takes
    # the concrete kind (design §5).
    if proposed.kind != "OTHER":
        placeholder = [s for s in pool if s.provisional and s.kind == "OTHER"
                       and name in s.forms()]
        if len(placeholder) == 1:
            return Match("provisional", placeholder, [])
    by_alias = [s for s in same_kind if name in s.forms()[1:]]
    if by_alias:
        return Match("alias", by_alias, [])
    if proposed.kind == "PERSON":
        by_nickname = [
            s for s in same_kind
            if any(nickname_match(form, stored) for form in [proposed.name, *proposed.aliases]
                   for stored in [s.name, *s.aliases])
        ]
        if by_nickname:
            return Match("nickname", by_nickname, [])
    # A shared alias ("SK" on both sides) is evidence, not proof: it only nominates.
    nominated = [
        s for s in same_kind
        if aliases & set(s.forms()) or any(resembles(form, stored, fuzzy_threshold)
               for form in [proposed.name, *proposed.aliases] for stored in [s.name, *s.aliases])
    ]
    if proposed.same_as_hint:
        hint = fold(proposed.same_as_hint)
        nominated += [s for s in same_kind if hint in s.forms() and s not in nominated]
    return Match(None, [], nominated)


def band(confidence: float, silent: float, flagged: float) -> str:
    """The reviewer's confidence as a decision: merge, merge_flagged, or separate."""
    if confidence > silent:
        return "merge"
    if confidence >= flagged:
        return "merge_flagged"
    return "separate"
