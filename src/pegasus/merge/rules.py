"""Deterministic merge rules (design §5): exact → alias → nickname → fuzzy nominations.

Pure: compares a proposed entity with the stored entities of the same kind and user. Only the
first three rules can merge, and only on exactly one match; fuzzy resemblance and the
extractor's hint can only nominate candidates for review.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from pegasus.models.batch import CleanEntity
from pegasus.text import fold, nickname_groups, nickname_match


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


class Pool:
    """The entities one commit compares with, indexed so that a rule looks at its candidates
    only: by folded form, by word, by nickname group of the first word, and per kind for the
    spelling rule (rapidfuzz over the forms). Results come back in the order entities were
    added, as a scan of the list would give them. `update` after changing an entity's name,
    aliases or kind.

    A pool made `over` a base pool is one batch's view of it: what it adds or `edit`s lives in
    the overlay (an edited entity is copied on first edit and keeps its place in the order), the
    base is never changed, and lookups merge both. So planning against a partition of 30,000
    entities costs the batch, not a copy of the partition. `Pool.apply` folds an overlay into
    its base once the batch is written."""

    def __init__(self, entities: Iterable[StoredEntity] = (), over: Pool | None = None) -> None:
        if over is not None and over.base is not None:
            raise ValueError("an overlay is made over a plain pool")
        self.base: Pool | None = over
        self.by_id: dict[str, StoredEntity] = {}  # this layer's entities
        self._order: dict[str, int] = {}
        self._forms: dict[str, tuple[str, list[str]]] = {}  # id → (kind, forms) as indexed
        self._by_form: dict[str, set[str]] = {}
        self._by_word: dict[str, set[str]] = {}
        self._by_group: dict[int, set[str]] = {}
        self._kind_forms: dict[str, dict[str, set[str]]] = {}
        for entity in entities:
            self.add(entity)

    def __iter__(self):
        """Every entity, in order (an overlay's own entities in their places)."""
        if self.base is None:
            return iter(self.by_id.values())
        ids = [*(i for i in self.base.by_id if i not in self.by_id), *self.by_id]
        return iter(self._ordered(ids))

    def __len__(self) -> int:
        base = self.base
        return len(self.by_id) + (0 if base is None else len(base.by_id) - sum(
            1 for i in self.by_id if i in base.by_id))

    def get(self, entity_id: str) -> StoredEntity | None:
        found = self.by_id.get(entity_id)
        if found is None and self.base is not None:
            return self.base.by_id.get(entity_id)
        return found

    def __getitem__(self, entity_id: str) -> StoredEntity:
        found = self.get(entity_id)
        if found is None:
            raise KeyError(entity_id)
        return found

    def add(self, entity: StoredEntity) -> None:
        offset = len(self.base._order) if self.base is not None else 0
        self._order.setdefault(entity.id, offset + len(self._order))
        self.by_id[entity.id] = entity
        self._index(entity)

    def edit(self, entity_id: str) -> StoredEntity:
        """The entity to change: in an overlay, a stored entity is copied into it first."""
        own = self.by_id.get(entity_id)
        if own is not None:
            return own
        if self.base is None:
            raise KeyError(entity_id)
        copy_ = copy.deepcopy(self.base.by_id[entity_id])
        self._order[entity_id] = self.base._order[entity_id]
        self.by_id[entity_id] = copy_
        self._index(copy_)
        return copy_

    def update(self, entity: StoredEntity) -> None:
        self._unindex(entity.id)
        self._index(entity)

    def apply(self, overlay: Pool, key: Callable[[StoredEntity], Any] | None = None) -> None:
        """Fold an overlay made over this pool into it (after its batch was written): edited
        entities replace theirs in place, new ones are added in overlay order or by `key`."""
        if overlay.base is not self:
            raise ValueError("not an overlay of this pool")
        entities = [copy.deepcopy(e) for e in overlay.by_id.values()]
        for entity in entities:
            if entity.id in self.by_id:
                self.by_id[entity.id] = entity
                self.update(entity)
        added = [e for e in entities if e.id not in self.by_id]
        added.sort(key=key or (lambda e: overlay._order[e.id]))
        for entity in added:
            self.add(entity)

    def _entries(self, forms: list[str]):
        groups = nickname_groups()
        for form in forms:
            words = form.split()
            yield self._by_form, form
            for word in words:
                yield self._by_word, word
            for group in groups.get(words[0], ()) if words else ():
                yield self._by_group, group

    def _index(self, entity: StoredEntity) -> None:
        forms = entity.forms()
        self._forms[entity.id] = (entity.kind, forms)
        for table, key in self._entries(forms):
            table.setdefault(key, set()).add(entity.id)
        per_kind = self._kind_forms.setdefault(entity.kind, {})
        for form in forms:
            per_kind.setdefault(form, set()).add(entity.id)

    def _unindex(self, entity_id: str) -> None:
        kind, forms = self._forms.pop(entity_id)
        for table, key in self._entries(forms):
            table.get(key, set()).discard(entity_id)
        per_kind = self._kind_forms.get(kind, {})
        for form in forms:
            ids = per_kind.get(form)
            if ids is not None:
                ids.discard(entity_id)
                if not ids:
                    del per_kind[form]

    def _rank(self, entity_id: str) -> int:
        own = self._order.get(entity_id)
        if own is not None:
            return own
        assert self.base is not None  # an id this layer does not order is its base's
        return self.base._order[entity_id]

    def _ordered(self, ids: Iterable[str]) -> list[StoredEntity]:
        return [self[i] for i in sorted(set(ids), key=self._rank)]

    def _look(self, table: str, key: Any) -> set[str]:
        """Ids under one index key, in both layers (a base entry this layer holds is its own)."""
        found = set(getattr(self, table).get(key, ()))
        if self.base is not None:
            found |= {i for i in getattr(self.base, table).get(key, ()) if i not in self.by_id}
        return found

    def with_form(self, folded: str) -> list[StoredEntity]:
        """Entities (any kind) whose name or an alias folds to this form."""
        return self._ordered(self._look("_by_form", folded))

    def sharing_words(self, forms: Iterable[str]) -> list[StoredEntity]:
        return self._ordered(i for f in forms for w in f.split()
                             for i in self._look("_by_word", w))

    def in_nickname_groups(self, forms: Iterable[str]) -> list[StoredEntity]:
        groups = nickname_groups()
        return self._ordered(i for f in forms if f.split()
                             for g in groups.get(f.split()[0], ())
                             for i in self._look("_by_group", g))

    def _spelled(self, forms: list[str], kind: str, threshold: float) -> set[str]:
        choices = self._kind_forms.get(kind, {})
        candidates = list(choices)
        found: set[str] = set()
        for form in forms:
            for choice, score, _ in process.extract(
                    form, candidates, scorer=Levenshtein.normalized_similarity,
                    score_cutoff=threshold, limit=None):
                if score > threshold:
                    found.update(choices[choice])
        return found

    def spelled_like(self, forms: Iterable[str], kind: str, threshold: float
                     ) -> list[StoredEntity]:
        """Same-kind entities with a form whose edit similarity is above the threshold."""
        forms = list(forms)
        found = self._spelled(forms, kind, threshold)
        if self.base is not None:
            found |= {i for i in self.base._spelled(forms, kind, threshold)
                      if i not in self.by_id}
        return self._ordered(found)


def match(proposed: CleanEntity, pool: Pool | Iterable[StoredEntity],
          fuzzy_threshold: float) -> Match:
    """Run the rules in order against same-kind entities (each rule sees only the candidates
    the pool's indexes give it, then checks them exactly as a scan would)."""
    if not isinstance(pool, Pool):
        pool = Pool(pool)
    kind = proposed.kind
    name = fold(proposed.name)
    aliases = {fold(a) for a in proposed.aliases}
    forms = [name, *(fold(a) for a in proposed.aliases)]
    named = pool.with_form(name)

    exact = [s for s in named if s.kind == kind and fold(s.name) == name]
    if exact:
        return Match("exact", exact, [])
    # A provisional node (kind OTHER, made for an unknown end of a relation) is the same
    # referent as a real entity that arrives later under its name: it is absorbed, and takes
    # the concrete kind (design §5).
    if kind != "OTHER":
        placeholder = [s for s in named if s.provisional and s.kind == "OTHER"]
        if len(placeholder) == 1:
            return Match("provisional", placeholder, [])
    by_alias = [s for s in named if s.kind == kind and name in s.forms()[1:]]
    if by_alias:
        return Match("alias", by_alias, [])
    if kind == "PERSON":
        by_nickname = [
            s for s in pool.in_nickname_groups(forms)
            if s.kind == kind
            and any(nickname_match(form, stored) for form in [proposed.name, *proposed.aliases]
                    for stored in [s.name, *s.aliases])
        ]
        if by_nickname:
            return Match("nickname", by_nickname, [])
    # A shared alias ("SK" on both sides) is evidence, not proof: it only nominates.
    shared = {s.id for a in aliases for s in pool.with_form(a)}
    spelled = {s.id for s in pool.spelled_like(forms, kind, fuzzy_threshold)}
    nominated = [
        s for s in pool._ordered(shared | spelled | {s.id for s in pool.sharing_words(forms)})
        if s.kind == kind and (s.id in shared or s.id in spelled or any(
            resembles(form, stored, fuzzy_threshold)
            for form in [proposed.name, *proposed.aliases] for stored in [s.name, *s.aliases]))
    ]
    if proposed.same_as_hint:
        hint = fold(proposed.same_as_hint)
        nominated += [s for s in pool.with_form(hint) if s.kind == kind and s not in nominated]
    return Match(None, [], nominated)


def band(confidence: float, silent: float, flagged: float) -> str:
    """The reviewer's confidence as a decision: merge, merge_flagged, or separate."""
    if confidence > silent:
        return "merge"
    if confidence >= flagged:
        return "merge_flagged"
    return "separate"
