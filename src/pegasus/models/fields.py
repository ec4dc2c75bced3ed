"""Constrained field types of what Pegasus stores and exports: ids, names, labels, entity
properties, confidences, instants. The export format (transfer/format.py) and the merge records
(merge/records.py) are typed with them, so a value a file may hold is one the graph may hold."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    Field,
    PlainSerializer,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    WithJsonSchema,
)

from pegasus.models.batch import (
    INT64_MAX,
    INT64_MIN,
    MAX_NAME_CHARS,
    MAX_PROPERTY_KEY_CHARS,
    MAX_PROPERTY_VALUE_CHARS,
    MAX_SNIPPET_CHARS,
    MAX_WORD_CHARS,
)
from pegasus.portable import INSTANT

MAX_ID_CHARS = 200  # every id: user, entity, memory, conversation, merge record
MAX_LIST = 10_000  # ids and instants an entity or a memory lists (conversations, sightings…)


def _iso(value: str) -> str:
    """An ISO 8601 instant kept as written (a sighting stores its text), but checked."""
    if not isinstance(value, str) or datetime.fromisoformat(value).tzinfo is None:
        raise ValueError("an ISO 8601 instant with its offset is expected")
    return value


def _real(value: Any) -> Any:
    # A property's integer past 64 bits must not pass as a float (its value would change).
    if not isinstance(value, float):
        raise ValueError("a floating-point number is expected")
    return value


def _instant(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {INSTANT}:
        return value[INSTANT]
    if isinstance(value, datetime):
        return value
    raise ValueError(f'an instant is written {{"{INSTANT}": ISO 8601}}')


Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Word = Annotated[str, StringConstraints(min_length=1, max_length=MAX_WORD_CHARS)]
Label = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+){0,3}$",
                                         max_length=MAX_NAME_CHARS)]
Words = Annotated[str, StringConstraints(max_length=MAX_SNIPPET_CHARS)]
Instant = AwareDatetime
IsoText = Annotated[str, AfterValidator(_iso)]
# An instant inside a merge record, where it is written {"$datetime": ISO 8601} (design §11).
Encoded = Annotated[
    AwareDatetime, BeforeValidator(_instant),
    PlainSerializer(lambda d: {INSTANT: d.isoformat()}, return_type=dict, when_used="json"),
    WithJsonSchema({"type": "object", "required": [INSTANT], "additionalProperties": False,
                    "properties": {INSTANT: {"type": "string", "format": "date-time"}}})]
Confidence = Annotated[float, Field(ge=0, le=1)]
Int64 = Annotated[StrictInt, Field(ge=INT64_MIN, le=INT64_MAX)]
Count = Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]
# An entity property as cleaning stores it (design §4): a scalar under a clean key; nested maps
# and lists were turned into text before they were stored, so a file never holds them.
PropertyKey = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$",
                                               max_length=MAX_PROPERTY_KEY_CHARS)]
PropertyValue = (StrictBool | Int64 | Annotated[StrictFloat, BeforeValidator(_real)]
                 | Annotated[str, StringConstraints(max_length=MAX_PROPERTY_VALUE_CHARS)])
Ids = Annotated[list[Id], Field(max_length=MAX_LIST)]
