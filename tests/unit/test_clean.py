from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pegasus.errors import InvalidBatchError
from pegasus.extract.clean import LABEL_PATTERN, clean_batch
from pegasus.models.batch import ExtractionBatch


def batch(entities=(), relations=()):
    return ExtractionBatch.model_validate({"entities": list(entities), "relations": list(relations)})


def rel(source="User", relation="HAS_BOSS", target="Sarah", **extra):
    return {"source": source, "relation": relation, "target": target,
            "snippet": extra.pop("snippet", "my boss Sarah"), **extra}


def test_kinds_and_labels_are_recased_and_synonyms_mapped():
    out = clean_batch(batch(
        [{"name": "Acme", "kind": "organization"}, {"name": "Paris", "kind": "Location"},
         {"name": "Zorb", "kind": "gizmo"}],
        [rel(relation="works at", target="Acme"), rel(relation="lives-in", target="Paris")],
    ))
    assert [(e.name, e.kind) for e in out.entities] == [
        ("Acme", "ORG"), ("Paris", "PLACE"), ("Zorb", "OTHER")]
    assert any("unknown kind 'gizmo'" in n for n in out.notes)
    assert [r.label for r in out.relations] == ["WORKS_AT", "LIVES_IN"]


def test_unknown_stability_and_cardinality_fall_back():
    out = clean_batch(batch([{"name": "Sarah", "kind": "PERSON"}],
                            [rel(stability="forever-ish", cardinality="several")]))
    assert out.relations[0].stability == "stable"
    assert out.relations[0].cardinality == "one_to_many"


def test_expiry_removed_from_permanent_relations_and_kept_on_temporary():
    when = datetime(2027, 1, 1, tzinfo=UTC)
    out = clean_batch(batch([{"name": "Sarah", "kind": "PERSON"}], [
        rel(stability="mutable", expires_at=when.isoformat()),
        rel(relation="MEETS", stability="time_bound", expires_at=when.isoformat()),
    ]))
    assert out.relations[0].expires_at is None
    assert out.relations[1].expires_at == when
    assert any("expiry removed" in n for n in out.notes)


def test_confidences_are_clamped():
    out = clean_batch(batch([{"name": "Sarah", "kind": "PERSON", "confidence": 7}],
                            [rel(confidence=-3)]))
    assert out.entities[0].confidence == 1.0 and out.relations[0].confidence == 0.0


@pytest.mark.parametrize("bad, reason", [
    (rel(target="User"), "points to itself"),
    (rel(source="Sarah", target="sarah "), "points to itself"),
    (rel(relation="HAS BOSS AND ALSO MORE"), "malformed"),
    (rel(relation="123_BAD"), "malformed"),
    (rel(relation="a]->(b) DETACH DELETE n //"), "malformed"),
    (rel(snippet="   "), "no snippet"),
    (rel(source="Nobody", target="Nothing"), "neither end is known"),
])
def test_unrepairable_relations_are_dropped_with_a_reason(bad, reason):
    out = clean_batch(batch([{"name": "Sarah", "kind": "PERSON"}], [bad]))
    assert out.relations == []
    assert len(out.dropped) == 1 and reason in out.dropped[0].reason


def test_entity_with_empty_name_is_dropped():
    out = clean_batch(batch([{"name": "  ", "kind": "PERSON"}, {"name": "Sarah"}]))
    assert [e.name for e in out.entities] == ["Sarah"]
    assert out.dropped[0].reason == "empty name"


def test_one_unknown_end_gets_a_provisional_low_confidence_node():
    out = clean_batch(batch([{"name": "Sarah", "kind": "PERSON"}],
                            [rel(source="Sarah", relation="WORKS_AT", target="Initech")]))
    provisional = [e for e in out.entities if e.name == "Initech"]
    assert provisional and provisional[0].kind == "OTHER" and provisional[0].confidence == 0.3


def test_an_end_known_on_the_graph_counts_as_known():
    out = clean_batch(batch([], [rel(source="Sarah", relation="WORKS_AT", target="Initech")]),
                      known=lambda name: name == "Initech")
    assert [e.name for e in out.entities] == ["Sarah"]  # only the unknown end is provisional


def test_snippet_must_be_the_users_words():
    transcript = [
        {"role": "user", "content": "Honestly my boss Sarah moved the deadline AGAIN."},
        {"role": "assistant", "content": "I love hiking in the Alps with my boss Sarah."},
        {"role": "user", "content": "I started learning the cello last week."},
    ]
    out = clean_batch(batch([{"name": "Sarah", "kind": "PERSON"}, {"name": "Cello"}], [
        rel(snippet="my  boss sarah moved the deadline again"),  # verbatim up to case/space
        rel(relation="PLAYS", target="Cello", snippet="I have started learning the cello"),
        rel(relation="HIKES_WITH", snippet="I love hiking in the Alps with my boss Sarah"),
    ]), transcript=transcript)
    assert [r.label for r in out.relations] == ["HAS_BOSS", "PLAYS"]
    assert out.relations[0].snippet == "my boss sarah moved the deadline again"
    assert out.relations[1].snippet == "I started learning the cello last week."
    assert out.dropped[0].reason == "snippet not found in the user's turns"


def test_batch_limits_raise_the_documented_error():
    with pytest.raises(InvalidBatchError, match="too large"):
        clean_batch(batch([{"name": f"e{i}"} for i in range(11)]), max_entities=10)


def test_an_empty_batch_is_valid():
    out = clean_batch(batch())
    assert out.entities == [] and out.relations == [] and out.dropped == []


names = st.one_of(
    st.sampled_from(["User", "me", "I", "Sarah", "sarah", "Acme", "", "  ", "Bill",
                     "a]->(b) DETACH DELETE n //", "x`) MATCH (n) DELETE n", "Ω\x00\x1f"]),
    st.text(max_size=12),
)
labels = st.one_of(
    st.sampled_from(["HAS_BOSS", "has boss", "works-at", "", "A_B_C_D_E", "1ABC",
                     "X]->() DETACH DELETE n //", "LIKES"]),
    st.text(max_size=15),
)


@settings(max_examples=300, deadline=None)
@given(
    entities=st.lists(st.fixed_dictionaries({
        "name": names, "kind": st.sampled_from(["person", "ORG", "weird", "", "Location"]),
        "confidence": st.floats(allow_nan=False, allow_infinity=False),
    }), max_size=6),
    relations=st.lists(st.fixed_dictionaries({
        "source": names, "relation": labels, "target": names,
        "snippet": st.one_of(st.none(), st.text(max_size=20)),
        "stability": st.sampled_from(["stable", "STABLE", "nope", "ephemeral"]),
        "confidence": st.floats(allow_nan=False, allow_infinity=False),
    }), max_size=8),
)
def test_cleaning_never_emits_self_loops_malformed_labels_or_snippetless_edges(entities, relations):
    out = clean_batch(ExtractionBatch.model_validate({"entities": entities, "relations": relations}))
    from pegasus.text import fold, is_placeholder
    for r in out.relations:
        assert LABEL_PATTERN.match(r.label)
        assert fold(r.source) != fold(r.target)
        assert not (is_placeholder(r.source) and is_placeholder(r.target))
        assert r.snippet.strip()
        assert 0.0 <= r.confidence <= 1.0
    for e in out.entities:
        assert e.name.strip() and 0.0 <= e.confidence <= 1.0
        assert "\x00" not in e.name


def test_nesting_depth_counts_without_recursion():
    from pegasus.models.batch import nesting_depth

    deep: object = 1
    for _ in range(100_000):
        deep = [deep]
    assert nesting_depth(deep, 32) == 33  # stops counting past the limit
    assert nesting_depth({"a": [1, {"b": 2}]}, 32) == 3
    assert nesting_depth("scalar", 32) == 0
