"""Pegasus: temporal, cross-conversation memory for LLM chat assistants, backed by Neo4j."""

from pegasus.errors import (
    ConfigError,
    ConversationConflictError,
    ExtractionError,
    InvalidBatchError,
    MigrationError,
    Neo4jUnavailableError,
    NotFoundError,
    PegasusError,
)
from pegasus.memory import Memory
from pegasus.models import CommitReport, DecayReport, ExtractionBatch, FiredNode, Recall, Turn
from pegasus.settings import Settings

__all__ = [
    "CommitReport",
    "ConfigError",
    "ConversationConflictError",
    "DecayReport",
    "ExtractionBatch",
    "ExtractionError",
    "FiredNode",
    "InvalidBatchError",
    "Memory",
    "MigrationError",
    "Neo4jUnavailableError",
    "NotFoundError",
    "PegasusError",
    "Recall",
    "Settings",
    "Turn",
]
