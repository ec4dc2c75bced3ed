"""The errors Pegasus raises; each message says what to do about it."""


class PegasusError(Exception):
    """Base class of every error Pegasus raises on purpose."""


class ConfigError(PegasusError):
    """A setting is missing or wrong."""


class InvalidBatchError(PegasusError):
    """An extraction batch (or transcript) cannot be accepted as it is; nothing was written."""


class TooLargeError(InvalidBatchError):
    """A turn over max_turn_chars, or a transcript that would pass max_transcript_chars."""


class ConversationConflictError(PegasusError):
    """The conversation was already committed with different content."""


class MigrationError(PegasusError):
    """The schema migrations cannot be applied (for example, an applied file was edited)."""


class Neo4jUnavailableError(PegasusError):
    """The Neo4j server cannot be reached or started."""


class PortInUseError(Neo4jUnavailableError):
    """A local Neo4j could not bind one of its ports: something else took it first."""


class ExtractionError(PegasusError):
    """The LLM extractor failed or returned something unusable; nothing was written."""


class NotFoundError(PegasusError):
    """A referenced entity, merge record or conversation does not exist for this user."""


class AmbiguousEntityError(PegasusError):
    """A name matches several entities: nothing was changed; `choices` lists them."""

    def __init__(self, message: str, choices: list[dict]) -> None:
        super().__init__(message)
        self.choices = choices


class ErasureInProgressError(PegasusError):
    """The user's whole memory is being forgotten; writes wait until that has finished."""


class ImportInProgressError(PegasusError):
    """A memory is being imported into the user's partition; writes wait until it has ended."""


class PartitionNotEmptyError(PegasusError):
    """An import into a partition that already holds memories (use replace to forget first)."""


class InvalidExportError(InvalidBatchError):
    """An export file of an unknown version, or one that breaks the format; nothing written."""


class InvalidHistoryError(InvalidBatchError):
    """A chat history export (ChatGPT's, Claude's) that is not one; nothing was written."""
