"""A commit that carries forget requests is one transaction (issue 40): when the commit fails,
nothing it asked to forget is gone; when it succeeds, the forgotten memory is gone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pegasus import Memory
from pegasus.errors import InvalidBatchError, PegasusError
from tests.helpers import rel

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 3, 8, 9, tzinfo=UTC)

FIRST = {"entities": [{"name": "Tom", "kind": "PERSON"}, {"name": "Ann", "kind": "PERSON"}],
         "relations": [rel("User", "HAS_BROTHER", "Tom", "my brother Tom lives in Porto"),
                       rel("User", "HAS_SISTER", "Ann", "my sister Ann is a nurse")]}


def _asking(*extra_entities: str) -> dict:
    """A batch asking to forget Tom and retract the sister, with something new to write."""
    return {"forget": [{"about": "Tom", "action": "forget"},
                       {"about": "User", "relation": "HAS_SISTER", "target": "Ann",
                        "action": "retract"}],
            "entities": [{"name": n, "kind": "PERSON"} for n in ("Bea", *extra_entities)],
            "relations": [rel("User", "HAS_FRIEND", "Bea", "my friend Bea plays chess")]}


def _lines(mem: Memory, user_id: str, state: str = "current") -> list[str]:
    return sorted(f"{m.source} -[{m.relation}]-> {m.target}"
                  for m in mem.memories(user_id, state=state, at=T2))


def test_a_refused_commit_forgets_nothing(settings, user_id):
    with Memory(settings.model_copy(update={"max_batch_entities": 2})) as mem:
        mem.commit(user_id, "c1", FIRST, at=T1)
        before = _lines(mem, user_id)
        with pytest.raises(InvalidBatchError):
            mem.commit(user_id, "c2", _asking("Cleo", "Dan"), at=T2)  # three entities: refused
        assert _lines(mem, user_id) == before == [
            "User -[HAS_BROTHER]-> Tom", "User -[HAS_SISTER]-> Ann"]
        assert _lines(mem, user_id, "retracted") == []


def test_a_commit_failing_in_its_write_forgets_nothing(settings, user_id, monkeypatch):
    import pegasus.commit

    with Memory(settings) as mem:
        mem.commit(user_id, "c1", FIRST, at=T1)

        def broken(*args, **kwargs):
            raise PegasusError("the write failed")

        monkeypatch.setattr(pegasus.commit, "write_plan", broken)
        with pytest.raises(PegasusError, match="the write failed"):
            mem.commit(user_id, "c2", _asking(), at=T2)
        assert _lines(mem, user_id) == ["User -[HAS_BROTHER]-> Tom", "User -[HAS_SISTER]-> Ann"]
        assert not mem.conversation_state(user_id, "c2")["committed"]
        monkeypatch.undo()
        report = mem.commit(user_id, "c2", _asking(), at=T2)
        assert report.forgotten == ["Tom (1 memories)"]
        assert report.retracted == ["User -[HAS_SISTER]-> Ann"]
        assert _lines(mem, user_id) == ["User -[HAS_FRIEND]-> Bea"]
        assert _lines(mem, user_id, "retracted") == ["User -[HAS_SISTER]-> Ann"]
        # Repeated after it landed, the commit applies nothing again.
        assert mem.commit(user_id, "c2", _asking(), at=T2).skipped
