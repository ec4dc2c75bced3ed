"""The indexed pool gives every merge rule the same answer as a scan of all entities.

The oracle below is the rule set written as a plain scan over the list (how match() worked
before the pool had indexes); hypothesis draws pools and proposals from a small vocabulary full
of nicknames, shared words, near spellings, aliases and provisional nodes, so every rule fires.
"""

from hypothesis import example, given
from hypothesis import strategies as st

from pegasus.merge.rules import Match, Pool, StoredEntity, match, resembles
from pegasus.models.batch import CleanEntity
from pegasus.settings import Settings
from pegasus.text import fold, nickname_match

S = Settings()
WORDS = ["Bill", "William", "Will", "Liz", "Elizabeth", "Elisabeth", "Beth", "Smith", "Jones",
         "Macdonald", "Mcdonald", "Smyth",
         "Acme", "Acne", "Corp", "the", "Lab", "Labs", "SK", "Sarah", "Sara"]
KINDS = ["PERSON", "ORG", "OTHER"]


def scan(proposed: CleanEntity, pool: list[StoredEntity], threshold: float) -> Match:
    same_kind = [s for s in pool if s.kind == proposed.kind]
    name = fold(proposed.name)
    aliases = {fold(a) for a in proposed.aliases}
    exact = [s for s in same_kind if fold(s.name) == name]
    if exact:
        return Match("exact", exact, [])
    if proposed.kind != "OTHER":
        placeholder = [s for s in pool if s.provisional and s.kind == "OTHER"
                       and name in s.forms()]
        if len(placeholder) == 1:
            return Match("provisional", placeholder, [])
    by_alias = [s for s in same_kind if name in s.forms()[1:]]
    if by_alias:
        return Match("alias", by_alias, [])
    if proposed.kind == "PERSON":
        by_nickname = [s for s in same_kind
                       if any(nickname_match(f, g) for f in [proposed.name, *proposed.aliases]
                              for g in [s.name, *s.aliases])]
        if by_nickname:
            return Match("nickname", by_nickname, [])
    nominated = [s for s in same_kind
                 if aliases & set(s.forms()) or any(
                     resembles(f, g, threshold) for f in [proposed.name, *proposed.aliases]
                     for g in [s.name, *s.aliases])]
    if proposed.same_as_hint:
        hint = fold(proposed.same_as_hint)
        nominated += [s for s in same_kind if hint in s.forms() and s not in nominated]
    return Match(None, [], nominated)


names = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
stored = st.builds(
    lambda i, name, kind, aliases, provisional: StoredEntity(
        id=f"e{i}", name=name, kind=kind, aliases=aliases, provisional=provisional),
    st.integers(), names, st.sampled_from(KINDS), st.lists(names, max_size=2), st.booleans())
proposals = st.builds(
    lambda name, kind, aliases, hint: CleanEntity(name=name, kind=kind, aliases=aliases,
                                                  properties={}, confidence=0.9,
                                                  same_as_hint=hint),
    names, st.sampled_from(KINDS), st.lists(names, max_size=2), st.none() | names)


def ids(m: Match) -> tuple:
    return m.rule, [s.id for s in m.matches], [s.id for s in m.nominations]


@given(st.lists(stored, max_size=12, unique_by=lambda e: e.id), proposals)
@example([StoredEntity("m", "Macdonald Lab", "ORG")],  # spelling only, no shared word
         CleanEntity(name="Mcdonald Labs", kind="ORG", aliases=[], properties={},
                     confidence=0.9))
def test_indexed_match_equals_the_scan(pool, proposed):
    assert ids(match(proposed, Pool(pool), S.fuzzy_similarity)) == ids(
        scan(proposed, pool, S.fuzzy_similarity))


@given(st.lists(stored, min_size=1, max_size=8, unique_by=lambda e: e.id), proposals, names,
       st.sampled_from(KINDS))
def test_an_updated_entity_is_found_under_its_new_forms_only(pool, proposed, new_alias, kind):
    indexed = Pool(pool)
    changed = pool[0]
    changed.aliases.append(new_alias)
    changed.kind = kind
    changed.name = new_alias
    indexed.update(changed)
    assert ids(match(proposed, indexed, S.fuzzy_similarity)) == ids(
        scan(proposed, pool, S.fuzzy_similarity))
    assert changed in indexed.with_form(fold(new_alias))


def test_a_new_entity_is_found_in_the_order_it_was_added():
    pool = Pool([StoredEntity("b", "Sarah Jones", "PERSON")])
    pool.add(StoredEntity("a", "Sarah Jones", "PERSON"))
    found = match(CleanEntity(name="Sarah Jones", kind="PERSON", aliases=[],
                                  properties={}, confidence=0.9), pool, S.fuzzy_similarity)
    assert found.rule == "exact"
    assert [s.id for s in found.matches] == ["b", "a"]


def _batch_edits(layer: Pool) -> None:
    """The same changes a resolution makes: an alias, a kind, a rename, a new entity."""
    sarah = layer.edit("s")
    sarah.aliases.append("SK")
    layer.update(sarah)
    acme = layer.edit("a")
    acme.kind, acme.name = "ORG", "Acme Labs"
    layer.update(acme)
    layer.add(StoredEntity("n", "Sara Kim", "PERSON"))


def _stored() -> list[StoredEntity]:
    return [StoredEntity("s", "Sarah Kim", "PERSON", aliases=["Sarah"]),
            StoredEntity("a", "Acme", "OTHER", provisional=True),
            StoredEntity("b", "Bill Smith", "PERSON"), StoredEntity("m", "Sarah Kin", "PERSON")]


@given(proposals)
@example(CleanEntity(name="SK", kind="PERSON", aliases=[], properties={}, confidence=0.9))
def test_an_overlay_answers_as_a_pool_of_the_changed_entities_and_leaves_its_base(proposed):
    base = Pool(_stored())
    overlay = Pool(over=base)
    _batch_edits(overlay)
    flat = Pool(_stored())
    _batch_edits(flat)
    for name in ["Sarah Kim", "SK", "Sara Kim", "Acme Labs", "Acme", "Bill", proposed.name]:
        probe = proposed.model_copy(update={"name": name})
        assert ids(match(probe, overlay, S.fuzzy_similarity)) == ids(
            match(probe, flat, S.fuzzy_similarity)), name
    assert [(e.id, e.name) for e in overlay] == [(e.id, e.name) for e in flat]
    assert [(e.id, e.name, e.aliases, e.kind) for e in base] == [
        (e.id, e.name, e.aliases, e.kind) for e in _stored()], "the base is never changed"


def test_applying_an_overlay_makes_its_base_equal_to_the_flat_pool():
    base = Pool(_stored())
    overlay = Pool(over=base)
    _batch_edits(overlay)
    base.apply(overlay)
    flat = Pool(_stored())
    _batch_edits(flat)
    assert [(e.id, e.name, e.aliases, e.kind) for e in base] == [
        (e.id, e.name, e.aliases, e.kind) for e in flat]
    probe = CleanEntity(name="SK", kind="PERSON", aliases=[], properties={}, confidence=0.9)
    assert ids(match(probe, base, S.fuzzy_similarity)) == ("alias", ["s"], [])
    assert base.get("n") is not overlay.get("n"), "the base holds its own copies"
