"""Merge records (design §5, §10): what a merge (by the rules, by review, by hand) or a pair
left for review keeps, so it can be listed, undone, exported and imported.

One typed model, written and read the same way everywhere: `MergeFields.props` are the stored
node's properties and `MergeFields.from_node` reads them back; an export line holds the same
fields (instants as {"$datetime": …}, transfer/format.py). The nested parts (what was absorbed,
the survivor before, the memories a merge by hand took off) are stored as JSON text, as a node
property cannot hold a map. Records written before V0011 came in two shapes; `upgrade` turns
either into this one (the migration's rewrite, and import files written before it).
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    model_validator,
)

from pegasus.merge.rules import StoredEntity
from pegasus.models.batch import MAX_PROPERTY_VALUE_CHARS
from pegasus.models.fields import (
    MAX_LIST,
    Confidence,
    Encoded,
    Id,
    Ids,
    Label,
    Name,
    PropertyKey,
    PropertyValue,
    Word,
)
from pegasus.portable import native, strict_json
from pegasus.vocab import Kind

# One nested part, as JSON text. It bounds the lists inside too: a survivor may hold more
# aliases and properties than one batch may give (merges add up), never more than this.
MAX_TEXT_CHARS = 64 * MAX_PROPERTY_VALUE_CHARS
# Set by the queries, never by a writer's fields: when it was made, when and into what undone.
INSTANTS = {"created_at", "undone_at", "restored_id"}


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AbsorbedEntity(_Part):
    """What a merge absorbed, whole, so undo restores it: the batch's entity (a merge by the
    rules or by review: a fresh id, the conversation it came from) or a stored one (by hand)."""

    id: Id
    name: Name
    kind: Kind
    aliases: list[Name] = Field(max_length=MAX_LIST)
    properties: dict[PropertyKey, PropertyValue] = Field(max_length=MAX_LIST)
    confidence: Confidence
    provisional: bool
    conversations: Ids


class EntityBefore(_Part):
    """The survivor of a merge as it was before, so undo gives it back."""

    id: Id
    name: Name
    kind: Kind
    aliases: list[Name] = Field(max_length=MAX_LIST)
    is_self: bool
    confidence: Confidence
    provisional: bool
    properties: dict[PropertyKey, PropertyValue] = Field(max_length=MAX_LIST)
    conversations: Ids

    @classmethod
    def of(cls, entity: StoredEntity) -> EntityBefore:
        return cls.model_validate(entity.__dict__)


class EdgeBetween(_Part):
    """A memory a merge by hand took off (it ran between the two), kept to be put back: the
    edge's stored properties encoded as `portable.encode_props` writes them."""

    label: Label
    props: dict[str, Any]
    from_survivor: bool
    said_in: Id | None = None


def stored_as_text(model: type[BaseModel]) -> Any:
    """A nested part, stored and exported as JSON text, held as its model."""
    def parse(value: Any) -> Any:
        if isinstance(value, str):
            if len(value) > MAX_TEXT_CHARS:
                raise ValueError(f"longer than {MAX_TEXT_CHARS} characters")
            return model.model_validate(strict_json(value))
        return value

    return Annotated[model, BeforeValidator(parse),
                     PlainSerializer(lambda part: part.model_dump_json(), return_type=str),
                     WithJsonSchema({"type": "string", "maxLength": MAX_TEXT_CHARS})]


if TYPE_CHECKING:  # to the type checker, a part stored as text is its model
    AbsorbedText = AbsorbedEntity
    BeforeText = EntityBefore
    BetweenText = EdgeBetween
else:
    AbsorbedText = stored_as_text(AbsorbedEntity)
    BeforeText = stored_as_text(EntityBefore)
    BetweenText = stored_as_text(EdgeBetween)


class MergeFields(_Part):
    """A merge record's fields, exactly those a merge, a pending pair or an undo writes."""

    status: Literal["merged", "flagged", "pending", "undone"]
    rule: Word
    confidence: Confidence | None = None
    kind: Kind
    absorbed_name: Name
    survivor_id: Id
    survivor_name: Name | None = None
    absorbed: AbsorbedText | None = None
    before: BeforeText | None = None
    conversation_id: Id | None = None
    edge_ids: Ids = Field(default_factory=list)
    candidate_ids: Ids | None = None
    candidate_names: list[Name] | None = None
    between: list[BetweenText] = Field(default_factory=list, max_length=MAX_LIST)
    created_at: Encoded | None = None
    undone_at: Encoded | None = None
    restored_id: Id | None = None

    @model_validator(mode="after")
    def _complete(self) -> MergeFields:
        # What undo and review read must be there (a record without it crashed them).
        if self.status == "pending":
            if not self.candidate_ids or self.candidate_names is None:
                raise ValueError("a pending pair names its candidates (candidate_ids, "
                                 "candidate_names)")
        elif self.absorbed is None or self.before is None or self.survivor_name is None:
            raise ValueError(f"a {self.status} merge keeps what it absorbed and the survivor "
                             "before (absorbed, before, survivor_name)")
        if self.status == "flagged" and self.confidence is None:
            raise ValueError("a flagged merge has its confidence")
        if self.status == "undone" and (self.undone_at is None or self.restored_id is None):
            raise ValueError("an undone merge has undone_at and restored_id")
        return self

    @classmethod
    def from_node(cls, props: dict[str, Any]) -> MergeFields:
        """A stored record's fields, from its node's properties (`properties(m)`)."""
        return cls.model_validate({k: native(v) for k, v in props.items()
                                   if k not in ("user_id", "id")})

    def props(self) -> dict[str, Any]:
        """The node's properties as a writer sets them (`write/merge_records`)."""
        return self.model_dump(mode="json", exclude=INSTANTS)


def upgrade(fields: dict[str, Any]) -> dict[str, Any]:
    """A record's fields as written before V0011, in this shape; one already in it unchanged.

    A merge by the rules or by review kept the batch's cleaned entity (no id, no
    conversations, its extraction flags): it gets a fresh id (undo gave it one anyway) and
    the record's conversation. The parts' optional fields take the defaults they had (export
    files written before may leave them out). What is no record at all is left for the model
    to refuse."""
    fields = dict(fields)
    absorbed, before = _parsed(fields.get("absorbed")), _parsed(fields.get("before"))
    if isinstance(absorbed, dict):
        fields["absorbed"] = json.dumps({
            "id": absorbed.get("id") or str(uuid.uuid4()), "name": absorbed.get("name"),
            "kind": absorbed.get("kind"), "aliases": absorbed.get("aliases"),
            "properties": absorbed.get("properties"),
            "confidence": absorbed.get("confidence") or 0.0,
            "provisional": absorbed.get("provisional", False),
            # A stored entity's own list (empty for one no conversation cited: an imported
            # one merged by hand); a batch's entity had none, and takes the record's.
            "conversations": (absorbed["conversations"]
                              if isinstance(absorbed.get("conversations"), list)
                              else [c for c in [fields.get("conversation_id")] if c])})
    if isinstance(before, dict):
        fields["before"] = json.dumps({
            **before, "is_self": before.get("is_self", False),
            "provisional": before.get("provisional", False),
            "confidence": before.get("confidence") or 0.0})
    if fields.get("between") is None:
        fields.pop("between", None)
    return fields


def _parsed(text: Any) -> Any:
    """A part's text as data, None when it is none (the model then says what is wrong)."""
    try:
        return strict_json(text) if isinstance(text, str) else None
    except ValueError:
        return None
