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
from pegasus.models import CommitReport, ExtractionBatch
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
