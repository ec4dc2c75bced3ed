"""The store's doors, named by intent (ARCHITECTURE.md, "Only the store holds a driver"): read and
write take a transaction function or a statement's name; a rehearsal keeps nothing; stream hands
on a statement's rows, or what a generator yields from one transaction, and rolls it back."""

import pytest

from pegasus import Memory
from pegasus.clock import aware
from pegasus.store import rows, run


def _conversation(raw_driver, user_id: str) -> dict:
    found = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'c'}) RETURN c.status AS status, "
        "size(c.turns) AS turns", u=user_id).records
    return found[0].data() if found else {}


def test_write_by_name_commits_and_read_by_name_sees_it(settings, user_id, raw_driver):
    turn = [{"id": "t1", "json": '{"role": "user", "content": "hello"}'}]
    with Memory(settings) as mem:
        row = mem.store.write("write/record_turns", user_id=user_id, conversation_id="c",
                              turns=turn, source="proxy", model=None,
                              now=aware(None),
                              max_chars=10_000)[0]
        assert (row["turns"], row["created"]) == (1, True)
        state = mem.store.read("read/conversation_turns", user_id=user_id,
                               conversation_id="c")[0]
        assert (state["exists"], state["status"], len(state["turns"])) == (True, "open", 1)
        assert mem.store.read(lambda tx: run(tx, "read/conversation_turns", user_id=user_id,
                                             conversation_id="c")[0]["turns"]) == state["turns"]
    assert _conversation(raw_driver, user_id) == {"status": "open", "turns": 1}


def test_a_rehearsal_returns_what_it_did_and_keeps_nothing(settings, user_id, raw_driver):
    turn = [{"id": "t1", "json": '{"role": "user", "content": "hello"}'}]
    with Memory(settings) as mem:
        row = mem.store.write(lambda tx: run(
            tx, "write/record_turns", user_id=user_id, conversation_id="c", turns=turn,
            source="proxy", model=None, now=aware(None), max_chars=10_000)[0], rollback=True)
        assert (row["turns"], row["created"]) == (1, True)
        assert not mem.store.read("read/conversation_turns", user_id=user_id,
                                  conversation_id="c")[0]["exists"]
    assert _conversation(raw_driver, user_id) == {}


def test_a_function_takes_no_statement_parameters(settings, user_id):
    with Memory(settings) as mem:
        with pytest.raises(TypeError, match="statement's name"):
            mem.store.read(lambda tx: [], user_id=user_id)
        with pytest.raises(TypeError, match="statement's name"):
            list(mem.store.stream(lambda tx: iter([]), user_id=user_id))


def test_stream_hands_on_rows_and_a_generators_items_from_one_transaction(settings, user_id):
    with Memory(settings) as mem:
        mem.record_turns(user_id, "c", [{"role": "user", "content": "hello there"}])
        named = list(mem.store.stream("read/conversation_turns", user_id=user_id,
                                      conversation_id="c"))
        assert [(r["exists"], len(r["turns"])) for r in named] == [(True, 1)]

        def statuses(tx):
            for name in ("read/conversation_turns", "read/conversation_turns"):
                yield from (r["status"] for r in rows(tx, name, user_id=user_id,
                                                      conversation_id="c"))

        assert list(mem.store.stream(statuses, timeout_s=30)) == ["open", "open"]
