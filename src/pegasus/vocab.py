"""Every closed vocabulary of the design (docs/design.md §2-§3), in one place.

Cleaning maps what an LLM writes onto these; the store, the graph labels and the HTTP schema
use the values as strings (StrEnum members are strings).
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """What an entity is; each has a node label of its own (`:Person`, …) for Browser/Bloom."""

    PERSON = "PERSON"
    ORG = "ORG"
    PLACE = "PLACE"
    EVENT = "EVENT"
    THING = "THING"
    TOPIC = "TOPIC"
    PREFERENCE = "PREFERENCE"
    OTHER = "OTHER"

    @property
    def label(self) -> str:
        """The node label of this kind: PERSON → Person."""
        return self.value.capitalize()


class Stability(StrEnum):
    """How fast a memory edge fades (each has its decay rate λ in Settings.decay_lambdas)."""

    IMMUTABLE = "immutable"
    STABLE = "stable"
    MUTABLE = "mutable"
    TIME_BOUND = "time_bound"
    EPHEMERAL = "ephemeral"


class Cardinality(StrEnum):
    """one_to_one: a newer edge of the same label from the same source supersedes the older."""

    ONE_TO_ONE = "one_to_one"
    ONE_TO_MANY = "one_to_many"


class Surface(StrEnum):
    """Where a person corrected a memory in place (design §10), kept on both of its versions
    (`corrected_via`)."""

    PAGE = "page"
    API = "api"
    CLI = "cli"
    MCP = "mcp"
    PYTHON = "python"


class RelationStatus(StrEnum):
    """A proposed relation is still true (`current`), or stopped being true (`ended`)."""

    CURRENT = "current"
    ENDED = "ended"


KINDS: tuple[str, ...] = tuple(Kind)
KIND_LABELS: dict[str, str] = {k.value: k.label for k in Kind}
STABILITIES: tuple[str, ...] = tuple(Stability)
CARDINALITIES: tuple[str, ...] = tuple(Cardinality)
STATUSES: tuple[str, ...] = tuple(RelationStatus)
SURFACES: tuple[str, ...] = tuple(Surface)
