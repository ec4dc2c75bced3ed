"""The facade: `Memory` wires settings, the store, the embedder and the pipeline stages."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from types import TracebackType
from typing import Any

import neo4j
from pydantic import ValidationError

from pegasus.clock import aware
from pegasus.commit import CommitJob, commit_in_tx
from pegasus.embed import Embedder
from pegasus.errors import InvalidBatchError, PegasusError
from pegasus.merge.review import Reviewer
from pegasus.lifecycle import close_in_tx, consolidate
from pegasus.models import CommitReport, DecayReport, ExtractionBatch, Recall
from pegasus.recall.engine import Explained, RecallEngine
from pegasus.settings import Settings
from pegasus.store import Store


def _check_id(kind: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise PegasusError(f"{kind} must be a non-empty string of at most 200 characters")
    return value


class Memory:
    """Long-term memory for one Neo4j database; every call names the user it acts for."""

    def __init__(
        self,
        settings: Settings | None = None,
        driver: neo4j.Driver | None = None,
        reviewer: Reviewer | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store = Store(self.settings, driver)
        self.reviewer = reviewer
        self._embedder = embedder

    @cached_property
    def embedder(self) -> Embedder:
        return self._embedder or Embedder(
            self.settings.embedding_model, self.settings.embedding_dimensions
        )

    @cached_property
    def recall_engine(self) -> RecallEngine:
        return RecallEngine(self.store, self.embedder, self.settings)

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    def migrate(self) -> list[str]:
        """Apply pending schema migrations; the file names applied."""
        return self.store.migrate()

    def commit(
        self,
        user_id: str,
        conversation_id: str,
        batch: ExtractionBatch | dict[str, Any],
        at: datetime | None = None,
        transcript: str | list | None = None,
    ) -> CommitReport:
        """Clean, merge and commit one conversation's batch in one transaction."""
        _check_id("user_id", user_id)
        _check_id("conversation_id", conversation_id)
        if not isinstance(batch, ExtractionBatch):
            try:
                batch = ExtractionBatch.model_validate(batch)
            except ValidationError as exc:
                raise InvalidBatchError(f"not an extraction batch: {exc}") from exc
        job = CommitJob(
            settings=self.settings, embedder=self.embedder, user_id=user_id,
            conversation_id=conversation_id, batch=batch, at=aware(at), transcript=transcript,
            reviewer=self.reviewer,
        )
        return self.store.write(lambda tx: commit_in_tx(tx, job))

    def recall(
        self,
        user_id: str,
        text: str,
        conversation_id: str | None = None,
        at: datetime | None = None,
    ) -> Recall:
        """What this message recalls; with a conversation id, the read is logged on it."""
        explained = self.explain(user_id, text, at)
        if conversation_id is not None:
            _check_id("conversation_id", conversation_id)
            self.recall_engine.log_read(user_id, conversation_id, explained, aware(at))
        return explained.recall

    def explain(self, user_id: str, text: str, at: datetime | None = None) -> Explained:
        """A recall with every intermediate value (seeds, activation, budget); logs nothing."""
        _check_id("user_id", user_id)
        if not isinstance(text, str):
            raise PegasusError("recall text must be a string")
        if len(text) > self.settings.max_transcript_chars:
            raise PegasusError(
                f"message too long ({len(text)} characters, limit "
                f"{self.settings.max_transcript_chars})")
        return self.recall_engine.explain(user_id, text, aware(at))

    def close_conversation(self, user_id: str, conversation_id: str,
                           at: datetime | None = None) -> int:
        """Apply the read reinforcement once per logged edge; the number of edges reinforced."""
        _check_id("user_id", user_id)
        _check_id("conversation_id", conversation_id)
        now = aware(at)
        return self.store.write(
            lambda tx: close_in_tx(tx, self.settings, user_id, conversation_id, now))

    def consolidate(self, at: datetime | None = None) -> DecayReport:
        """The daily decay pass over every user's edges."""
        return consolidate(self.store, self.settings, aware(at))
