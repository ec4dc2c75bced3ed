"""Two writers at once on one node (issue 40): the second starts while the first holds its
transaction open, and the first commits only once the second is seen waiting for its lock. A
query that read the node before locking it would decide on what it read before the first
committed (a lost turn, two winners); the lock-first queries decide on the first's outcome."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from pegasus import cypher

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)


def _blocked(driver) -> bool:
    rows = driver.execute_query(
        "SHOW TRANSACTIONS YIELD status WHERE status STARTS WITH 'Blocked' RETURN count(*) AS n"
    ).records
    return rows[0]["n"] > 0


def interleaved(driver, name: str, first: dict[str, Any], second: dict[str, Any]
                ) -> tuple[list[dict], list[dict]]:
    """Run query `name` with `first` in an open transaction, then with `second` in another
    one, and commit the first once the second waits for it. Both results."""
    text = cypher.load(name)
    done: dict[str, Any] = {}

    def run_second() -> None:
        with driver.session() as session:
            done["rows"] = session.execute_write(lambda tx: tx.run(text, second).data())

    with driver.session() as session:
        tx = session.begin_transaction()
        rows = tx.run(text, first).data()
        thread = threading.Thread(target=run_second)
        thread.start()
        deadline = time.monotonic() + 30
        while not _blocked(driver):
            assert time.monotonic() < deadline, "the second writer never waited for the first"
            time.sleep(0.05)
        tx.commit()
    thread.join(timeout=60)
    assert not thread.is_alive()
    return rows, done["rows"]


def _turns(user_id: str, turn_id: str, text: str) -> dict[str, Any]:
    return {"user_id": user_id, "conversation_id": "c1", "source": "proxy", "now": NOW,
            "model": None, "max_chars": 2_000_000,
            "turns": [{"id": turn_id, "json": f'{{"role": "user", "content": "{text}"}}'}]}


def test_two_turns_recorded_at_once_are_both_kept(settings, raw_driver, user_id):
    """A streamed reply's background record racing the client's next turn."""
    raw_driver.execute_query(cypher.load("write/record_turns"), _turns(user_id, "t0", "hello"))
    interleaved(raw_driver, "write/record_turns", _turns(user_id, "t1", "the reply"),
                _turns(user_id, "t2", "next turn"))
    row = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'c1'}) RETURN c.turns AS t, c.turn_ids AS i",
        u=user_id).records[0]
    assert row["i"] == ["t0", "t1", "t2"]
    assert len(row["t"]) == 3 and "next turn" in row["t"][2]


def _decay(holder: str) -> dict[str, Any]:
    return {"holder": holder, "now": NOW, "due_before": NOW - timedelta(hours=20),
            "lease_s": 600}


def test_two_servers_claiming_the_decay_pass_one_wins(settings, raw_driver):
    raw_driver.execute_query("CREATE (:PegasusMaintenance {name: 'decay'})")
    first, second = interleaved(raw_driver, "write/claim_decay", _decay("a"), _decay("b"))
    assert [first[0]["claimed"], second[0]["claimed"]] == [True, False]
    holder = raw_driver.execute_query(
        "MATCH (m:PegasusMaintenance {name: 'decay'}) RETURN m.holder AS h").records[0]["h"]
    assert holder == "a"


def test_two_migrations_taking_the_schema_lock_one_wins(settings, raw_driver):
    raw_driver.execute_query("MERGE (l:PegasusMigrationLock {name: 'schema'}) "
                             "SET l.holder = null, l.expires_at = null")
    try:
        first, second = interleaved(raw_driver, "write/migration_lock",
                                    {"holder": "a", "lease_s": 600},
                                    {"holder": "b", "lease_s": 600})
        assert [first[0]["taken"], second[0]["taken"]] == [True, False]
        assert second[0]["holder"] == "a"
    finally:
        raw_driver.execute_query("MATCH (l:PegasusMigrationLock {name: 'schema'}) "
                                 "SET l.holder = null, l.expires_at = null")


def _all_blocked(driver, count: int) -> bool:
    rows = driver.execute_query(
        "SHOW TRANSACTIONS YIELD status WHERE status STARTS WITH 'Blocked' RETURN count(*) AS n"
    ).records
    return rows[0]["n"] >= count


def test_two_undos_of_one_merge_at_once_split_it_once(settings, raw_driver, user_id):
    """Two people (the page and an agent) undoing the same merge at the same moment: both wait
    on the partition's lock, one splits the merge, the other is told it is undone already."""
    from pegasus import Memory
    from pegasus.errors import PegasusError
    from tests.helpers import rel

    with Memory(settings) as memory:
        memory.commit(user_id, "c1", {
            "entities": [{"name": "Oslo", "kind": "PLACE"}, {"name": "Oslo City", "kind": "PLACE"}],
            "relations": [rel("User", "LIVES_IN", "Oslo", "I live in Oslo by the fjord"),
                          rel("User", "VISITED", "Oslo City", "we visited Oslo City in May")]})
        record = memory.merge_entities(user_id, "Oslo", "Oslo City").merge_record_id
        outcomes: list[object] = []

        def undo() -> None:
            try:
                outcomes.append(memory.undo_merge(user_id, record))
            except PegasusError as exc:
                outcomes.append(exc)

        with raw_driver.session() as session:  # holds the partition while both undos start
            tx = session.begin_transaction()
            tx.run(cypher.load("write/lock_partition"), user_id=user_id, now=NOW).consume()
            threads = [threading.Thread(target=undo) for _ in range(2)]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 30
            while not _all_blocked(raw_driver, 2):
                assert time.monotonic() < deadline, "the undos never waited for the lock"
                time.sleep(0.05)
            tx.commit()
        for thread in threads:
            thread.join(timeout=60)
        done = [o for o in outcomes if not isinstance(o, Exception)]
        refused = [o for o in outcomes if isinstance(o, Exception)]
        assert len(done) == 1 and len(refused) == 1
        assert done[0].restored == "Oslo City"
        assert "is undone; nothing to undo" in str(refused[0])
        names = raw_driver.execute_query(
            "MATCH (e:Entity {user_id: $u}) WHERE e.name STARTS WITH 'Oslo' "
            "RETURN e.name AS name ORDER BY name", u=user_id).records
        assert [r["name"] for r in names] == ["Oslo", "Oslo City"]  # split once, no twin
        assert sorted((m.relation, m.target) for m in memory.memories(user_id)) == [
            ("LIVES_IN", "Oslo"), ("VISITED", "Oslo City")]
