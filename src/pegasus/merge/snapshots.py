"""What a process keeps of each partition between commits (design §5, "Snapshots").

Merge compares a batch with every entity of the user (the spelling rule looks at every
same-kind name), so reading and indexing the partition is the one cost of a commit that grows
with the user's graph. A process that committed to a partition keeps the indexed `Pool` it
planned against, with the partition's `(epoch, version)` token. The next commit reads the
token under the partition lock: if it is the one kept, the pool is used as it is; if anything
else wrote in between (another process, an undo here), the token differs and the partition is
read again. After a write, the batch's overlay is folded into the kept pool, so the next
commit starts from it without reading the partition.

A kept pool must equal what a fresh read would give, order included (the rules return
candidates in the read's order: oldest first, then by name and id). Folding a batch in keeps
that order only when its entities are newer than every kept one and no kept entity changed
its name; otherwise the pool is dropped and read again next time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from pegasus.merge.rules import Pool, StoredEntity

Token = tuple[str, int]  # (partition epoch, partition version)


@dataclass
class _Kept:
    token: Token | None = None
    pool: Pool | None = None
    newest: datetime | None = None  # the latest created_at among the pool's entities
    lock: threading.RLock = field(default_factory=threading.RLock)


@dataclass
class Advance:
    """What one written commit did to a partition, for `Snapshots.advance`."""

    user_id: str
    before: Token | None
    after: Token | None
    overlay: Pool
    at: datetime


class Snapshots:
    """Indexed partitions of up to `max_users` users (least recently used dropped first);
    `max_users=0` keeps nothing (every commit reads its partition)."""

    def __init__(self, max_users: int) -> None:
        self.max_users = max_users
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = 0  # partitions read from the graph (a measure for tests and benchmarks)

    def _entry(self, user_id: str) -> _Kept:
        with self._lock:
            kept = self._kept.get(user_id)
            if kept is None:
                kept = self._kept[user_id] = _Kept()
            self._kept.move_to_end(user_id)
            while len(self._kept) > self.max_users:
                self._kept.popitem(last=False)
            return kept

    @contextmanager
    def use(self, user_id: str, token: Token | None,
            load: Callable[[], tuple[list[StoredEntity], datetime | None]]) -> Iterator[Pool]:
        """The partition's pool at `token`, read with `load` unless kept. Planning runs inside
        the block: the pool is not folded into while it is in use."""
        kept = self._entry(user_id) if self.max_users and token and token[0] else _Kept()
        with kept.lock:
            if kept.pool is None or kept.token != token:
                entities, newest = load()
                self.reads += 1
                kept.pool, kept.token, kept.newest = Pool(entities), token, newest
            yield kept.pool

    def forget(self, user_id: str) -> None:
        """Drop what is kept of a user (their memory was erased)."""
        with self._lock:
            self._kept.pop(user_id, None)

    def advance(self, step: Advance) -> None:
        """After a commit was written: fold its overlay into the kept pool, or drop the pool
        when it cannot be kept equal to a fresh read."""
        if not self.max_users:
            return
        with self._lock:
            kept = self._kept.get(step.user_id)
        if kept is None:
            return
        with kept.lock:
            base = kept.pool
            foldable = (
                base is not None and kept.token == step.before and step.overlay.base is base
                and step.before is not None and step.after is not None
                and step.after[0] == step.before[0]
                and (kept.newest is None or step.at > kept.newest)
                and all((stored := base.get(i)) is None or stored.name == e.name
                        for i, e in step.overlay.by_id.items())
            )
            if not foldable or base is None:
                with self._lock:
                    self._kept.pop(step.user_id, None)
                return
            added = any(base.get(i) is None for i in step.overlay.by_id)
            # New entities go in as a fresh read orders them: by name, then id.
            base.apply(step.overlay, key=lambda e: (e.name, e.id))
            kept.token = step.after
            if added:
                kept.newest = step.at
