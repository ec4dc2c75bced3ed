"""The batch contract's limits (docs/reliability.md): each refusal names the field."""

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from pegasus.models.batch import (
    INT64_MAX,
    INT64_MIN,
    MAX_NAME_CHARS,
    MAX_PROPERTIES,
    ExtractionBatch,
    describe_validation_error,
)


def refusal(batch: dict) -> str:
    with pytest.raises(ValidationError) as caught:
        ExtractionBatch.model_validate(batch)
    return describe_validation_error(caught.value)


def entity(**fields) -> dict:
    return {"name": "Sarah", "kind": "PERSON", **fields}


def relation(**fields) -> dict:
    return {"source": "User", "relation": "HAS_BOSS", "target": "Sarah", "snippet": "my boss",
            **fields}


@pytest.mark.parametrize("batch, expected", [
    ({"entities": [entity(properties={"n": -228402480720848961404928})]},
     "entities[0].properties: n: integer outside the signed 64-bit range"),
    ({"entities": [entity(properties={"deep": {"list": [1, 2**64]}})]},
     "entities[0].properties: deep.list[1]: integer outside the signed 64-bit range"),
    ({"entities": [entity(properties={"x": float("nan")})]},
     "entities[0].properties: x: NaN and infinities are not numbers a memory can hold"),
    ({"entities": [entity(confidence=float("inf"))]},
     "entities[0].confidence: Input should be a finite number"),
    ({"relations": [relation(confidence=float("-inf"))]},
     "relations[0].confidence: Input should be a finite number"),
    ({"entities": [entity(name="x" * 100_000)]},
     f"entities[0].name: String should have at most {MAX_NAME_CHARS} characters"),
    ({"entities": [entity(aliases=["ok", "y" * 201])]},
     "entities[0].aliases[1]: String should have at most 200 characters"),
    ({"relations": [relation(relation="R" * 101)]},
     "relations[0].relation: String should have at most 100 characters"),
    ({"relations": [relation(target="t" * 201)]},
     "relations[0].target: String should have at most 200 characters"),
    ({"relations": [relation(snippet="s" * 2001)]},
     "relations[0].snippet: String should have at most 2000 characters"),
    ({"entities": [entity(properties={f"p{i}": i for i in range(MAX_PROPERTIES + 1)})]},
     f"entities[0].properties: at most {MAX_PROPERTIES} properties (got 51)"),
    ({"entities": [entity(properties={"k" * 65: 1})]},
     "entities[0].properties: property key"),
    ({"entities": [entity(properties={"bio": "b" * 2001})]},
     "entities[0].properties: bio: text longer than 2000 characters"),
    ({"conversation": {"tags": ["t"] * 21}},
     "conversation.tags: List should have at most 20 items"),
])
def test_the_contract_refuses_what_neo4j_cannot_store_naming_the_field(batch, expected):
    assert refusal(batch).startswith(expected)


def test_the_edges_of_the_int64_range_are_accepted():
    batch = ExtractionBatch.model_validate(
        {"entities": [entity(properties={"lo": INT64_MIN, "hi": INT64_MAX})]})
    assert batch.entities[0].properties == {"lo": INT64_MIN, "hi": INT64_MAX}


@given(st.integers())
@example(-228402480720848961404928)  # found by the HTTP fuzz: OverflowError in the driver
@example(2**63)
def test_an_integer_property_is_stored_exactly_or_refused(value):
    try:
        batch = ExtractionBatch.model_validate({"entities": [entity(properties={"n": value})]})
    except ValidationError as exc:
        assert not INT64_MIN <= value <= INT64_MAX
        assert "64-bit" in describe_validation_error(exc)
    else:
        assert INT64_MIN <= value <= INT64_MAX
        assert batch.entities[0].properties["n"] == value
