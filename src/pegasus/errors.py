"""The errors Pegasus raises; each message says what to do about it.

Each class carries what it means to a client: `status` (the HTTP status the API and the memory
page answer with) and `kind` (the API's `error.type`). `http_status` is the one mapping the
API, the page and MCP use, so they cannot disagree.
"""

from __future__ import annotations

from typing import ClassVar


class PegasusError(Exception):
    """Base class of every error Pegasus raises on purpose."""

    status: ClassVar[int] = 400
    kind: ClassVar[str] = "invalid_request_error"


class InvalidInputError(PegasusError):
    """An argument, id, filter or form field is not acceptable as given; nothing was changed."""


class SecretInIdError(InvalidInputError):
    """An id (a conversation's) holds what looks like a secret: an id is kept as given and
    cannot hold a marker, so it is refused (design §15); nothing was recorded."""

    status = 422


class ConfigError(PegasusError):
    """A setting is missing or wrong."""

    status = 503
    kind = "configuration_error"


class InvalidBatchError(PegasusError):
    """An extraction batch (or transcript) cannot be accepted as it is; nothing was written."""

    status = 422
    kind = "invalid_request_error"


class TooLargeError(InvalidBatchError):
    """A turn over max_turn_chars, or a transcript that would pass max_transcript_chars."""

    status = 413
    kind = "too_large_error"


class ConversationConflictError(PegasusError):
    """The conversation was already committed with different content."""

    status = 409
    kind = "conflict_error"


class MigrationError(PegasusError):
    """The schema migrations cannot be applied (for example, an applied file was edited)."""

    status = 503
    kind = "configuration_error"


class Neo4jUnavailableError(PegasusError):
    """The Neo4j server cannot be reached or started."""

    status = 503
    kind = "unavailable_error"


class PortInUseError(Neo4jUnavailableError):
    """A local Neo4j could not bind one of its ports: something else took it first."""


class ExtractionError(PegasusError):
    """The LLM extractor failed or returned something unusable; nothing was written."""

    status = 502
    kind = "extraction_error"


class NotFoundError(PegasusError):
    """A referenced entity, merge record or conversation does not exist for this user."""

    status = 404
    kind = "not_found_error"


class AmbiguousEntityError(PegasusError):
    """A name matches several entities: nothing was changed; `choices` lists them."""

    status = 409
    kind = "ambiguous_error"

    def __init__(self, message: str, choices: list[dict]) -> None:
        super().__init__(message)
        self.choices = choices


class ErasureInProgressError(PegasusError):
    """The user's whole memory is being forgotten; writes wait until that has finished."""

    status = 409
    kind = "conflict_error"


class ImportInProgressError(PegasusError):
    """A memory is being imported into the user's partition; writes wait until it has ended."""

    status = 409
    kind = "conflict_error"


class PartitionNotEmptyError(PegasusError):
    """An import into a partition that already holds memories (use replace to forget first)."""

    status = 409
    kind = "conflict_error"


class InvalidExportError(InvalidBatchError):
    """An export file of an unknown version, or one that breaks the format; nothing written."""


class InvalidInstantError(InvalidBatchError):
    """A client's `at` past the server's clock by more than max_clock_skew_s; nothing written."""


def http_status(exc: PegasusError) -> tuple[int, str]:
    """The HTTP status and kind an error answers with, wherever it is shown."""
    return exc.status, exc.kind


class InvalidHistoryError(InvalidBatchError):
    """A chat history export (ChatGPT's, Claude's) that is not one; nothing was written."""
