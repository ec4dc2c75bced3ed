from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from neo4j.time import DateTime

from pegasus.portable import decode_props, encode_props

instants = st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]))
values = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                   st.floats(allow_nan=False, allow_infinity=False), st.text(), instants)


@given(st.dictionaries(st.text(min_size=1), st.one_of(values, st.lists(values, max_size=5))))
def test_properties_round_trip_through_json_with_their_types(props):
    import json

    assert decode_props(json.loads(json.dumps(encode_props(props)))) == props


def test_a_driver_instant_is_written_as_the_native_one():
    at = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    assert encode_props({"t": DateTime.from_native(at)}) == {"t": {"$datetime": at.isoformat()}}


def test_byte_arrays_are_not_written_out():
    with pytest.raises(TypeError, match="derived data"):
        encode_props({"embedding_f32": b"\x00\x01"})
