"""A kept partition is used only at its token and stays equal to a fresh read."""

from datetime import UTC, datetime, timedelta

from pegasus.merge.rules import Pool, StoredEntity
from pegasus.merge.snapshots import Advance, Snapshots

AT = datetime(2026, 3, 1, tzinfo=UTC)


def _read(entities, newest=AT):
    calls = []

    def load():
        calls.append(1)
        return [StoredEntity(e.id, e.name, e.kind, list(e.aliases)) for e in entities], newest
    return load, calls


STORED = [StoredEntity("a", "Zed", "PERSON"), StoredEntity("b", "Amy", "PERSON")]


def _commit(kept: Snapshots, token, after, at, rename=False):
    with kept.use("u", token, _read(STORED)[0]) as pool:
        overlay = Pool(over=pool)
        overlay.add(StoredEntity("n2", "Yan", "PERSON"))
        overlay.add(StoredEntity("n1", "Bea", "PERSON"))
        zed = overlay.edit("a")
        zed.aliases.append("Z")
        if rename:
            zed.name = "Zedd"
        overlay.update(zed)
    kept.advance(Advance("u", token, after, overlay, at))


def test_the_same_token_reads_once_and_another_token_reads_again():
    kept = Snapshots(4)
    load, calls = _read(STORED)
    for _ in range(3):
        with kept.use("u", ("e1", 3), load) as pool:
            assert [e.name for e in pool] == ["Zed", "Amy"]
    assert len(calls) == 1
    with kept.use("u", ("e1", 4), load):
        pass
    with kept.use("u", ("e2", 4), load):  # the partition was made again
        pass
    assert len(calls) == 3
    with Snapshots(0).use("u", ("e1", 3), load):  # nothing kept
        pass
    assert len(calls) == 4


def test_a_written_batch_is_folded_in_as_a_fresh_read_orders_it():
    kept = Snapshots(4)
    _commit(kept, ("e1", 1), ("e1", 2), AT + timedelta(hours=1))
    load, calls = _read([])
    with kept.use("u", ("e1", 2), load) as pool:
        # a fresh read: oldest first, then by name and id
        assert [(e.id, e.aliases) for e in pool] == [
            ("a", ["Z"]), ("b", []), ("n1", []), ("n2", [])]
        assert [e.id for e in pool.with_form("z")] == ["a"]
    assert calls == [], "the kept pool was used"


def test_a_batch_that_cannot_keep_the_order_drops_the_kept_pool():
    for at, rename in [(AT, False), (AT - timedelta(days=1), False),
                       (AT + timedelta(hours=1), True)]:
        kept = Snapshots(4)
        _commit(kept, ("e1", 1), ("e1", 2), at, rename=rename)
        load, calls = _read(STORED)
        with kept.use("u", ("e1", 2), load):
            pass
        assert calls == [1], (at, rename)


def test_only_the_most_recent_users_are_kept():
    kept = Snapshots(2)
    for user in ["u1", "u2", "u3"]:
        with kept.use(user, ("e", 1), _read(STORED)[0]):
            pass
    load, calls = _read(STORED)
    with kept.use("u1", ("e", 1), load):
        pass
    assert calls == [1]
