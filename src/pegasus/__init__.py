"""Pegasus: temporal, cross-conversation memory for LLM chat assistants, backed by Neo4j.

The public names load on first use (PEP 562), so a light module such as `pegasus.hook`, which
a coding agent starts for every prompt, does not pay for the Neo4j driver, LangChain and
pydantic models it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "ConfigError": "pegasus.errors",
    "ConversationConflictError": "pegasus.errors",
    "ExtractionError": "pegasus.errors",
    "InvalidBatchError": "pegasus.errors",
    "InvalidInputError": "pegasus.errors",
    "MigrationError": "pegasus.errors",
    "Neo4jUnavailableError": "pegasus.errors",
    "NotFoundError": "pegasus.errors",
    "PegasusError": "pegasus.errors",
    "Memory": "pegasus.memory",
    "CommitReport": "pegasus.models.reports",
    "DecayReport": "pegasus.models.reports",
    "ExtractionBatch": "pegasus.models.batch",
    "FiredNode": "pegasus.models.recall",
    "Recall": "pegasus.models.recall",
    "Turn": "pegasus.models.batch",
    "Settings": "pegasus.settings",
}
__all__ = [
    "CommitReport",
    "ConfigError",
    "ConversationConflictError",
    "DecayReport",
    "ExtractionBatch",
    "ExtractionError",
    "FiredNode",
    "InvalidBatchError",
    "InvalidInputError",
    "Memory",
    "MigrationError",
    "Neo4jUnavailableError",
    "NotFoundError",
    "PegasusError",
    "Recall",
    "Settings",
    "Turn",
]

if TYPE_CHECKING:
    from pegasus.errors import (
        ConfigError,
        ConversationConflictError,
        ExtractionError,
        InvalidBatchError,
        InvalidInputError,
        MigrationError,
        Neo4jUnavailableError,
        NotFoundError,
        PegasusError,
    )
    from pegasus.memory import Memory
    from pegasus.models.batch import ExtractionBatch, Turn
    from pegasus.models.recall import FiredNode, Recall
    from pegasus.models.reports import CommitReport, DecayReport
    from pegasus.settings import Settings


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pegasus' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
