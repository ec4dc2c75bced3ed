"""The facade: `Memory` wires settings, the store, the embedder and the pipeline stages."""

from __future__ import annotations

from types import TracebackType

import neo4j

from pegasus.settings import Settings
from pegasus.store import Store


class Memory:
    """Long-term memory for one Neo4j database; every call names the user it acts for."""

    def __init__(self, settings: Settings | None = None, driver: neo4j.Driver | None = None) -> None:
        self.settings = settings or Settings()
        self.store = Store(self.settings, driver)

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
