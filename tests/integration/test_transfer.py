"""Export and import (design §11): round trips, refusals, and the schema file."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from pegasus import Memory, Settings
from pegasus.errors import InvalidExportError, PartitionNotEmptyError
from pegasus.transfer.format import ADDED, MINOR, REGENERATED, SCHEMA_FILE, json_schema
from tests.helpers import rel, snapshot

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 3, 8, 9, tzinfo=UTC)
T3 = datetime(2026, 3, 20, 9, tzinfo=UTC)
QUESTIONS = ["who is my boss now", "where did I work before", "what about Lisbon and Maya",
             "Tom the cellist", "the deadline again"]


def teach(mem: Memory, user: str) -> None:
    """A memory with every kind of state: merges, supersession, a retraction, sightings,
    reinforcements, recorded turns, a read log, decay."""
    mem.record_turns(user, "c1", [{"role": "user", "content": "my boss Sarah moved the deadline"}],
                     at=T1)
    mem.commit(user, "c1", {
        "entities": [{"name": "Bill", "kind": "PERSON", "is_user": True},
                     {"name": "Sarah", "kind": "PERSON", "aliases": ["Sarah K"],
                      "properties": {"role": "manager", "since": 2021}},
                     {"name": "Acme", "kind": "ORG"}, {"name": "Maya", "kind": "PERSON"}],
        "relations": [
            rel("Bill", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline",
                cardinality="one_to_one", stability="mutable"),
            rel("Bill", "WORKS_AT", "Acme", "I work at Acme", cardinality="one_to_one"),
            rel("Bill", "HAS_PARTNER", "Maya", "my partner Maya", stability="stable"),
            rel("Maya", "WANTS_TO_VISIT", "Lisbon", "Maya wants to see Lisbon",
                stability="time_bound", expires_at="2026-12-31T00:00:00Z")],
        "conversation": {"summary": "work and home", "importance": 0.7, "tags": ["work"]}},
        at=T1)
    mem.recall(user, "my boss Sarah", conversation_id="c2", at=T2)
    mem.close_conversation(user, "c2", at=T2)
    mem.commit(user, "c3", {
        "entities": [{"name": "Sarah", "kind": "PERSON", "aliases": ["SK"]},
                     {"name": "Tom", "kind": "PERSON", "properties": {"plays": "cello"}},
                     {"name": "Northwind", "kind": "ORG"}],
        "relations": [rel("Bill", "WORKS_AT", "Northwind", "I moved to Northwind",
                          cardinality="one_to_one"),
                      rel("Bill", "HAS_BOSS", "Sarah", "Sarah is still my boss", confidence=0.9),
                      rel("Tom", "PLAYS", "Cello", "Tom plays the cello beautifully")]}, at=T2)
    [tom] = mem.memories(user, about="Tom")
    mem.retract(user, tom.id, at=T2)
    mem.recall(user, "Northwind", conversation_id="c4", at=T2)  # a read log not yet applied
    mem.record_turns(user, "c4", [{"role": "user", "content": "how is Northwind going"}], at=T2)
    mem.consolidate(at=T3, user_id=user)


def lines(mem: Memory, user: str, with_turns: bool = True) -> list[dict]:
    return [json.loads(line) for line in mem.export(user, with_turns, at=T3)]


def comparable(records: list[dict]) -> list[str]:
    """Sorted lines with the fields the format says are regenerated left out."""
    out = []
    for record in records:
        drop = REGENERATED.get(record["type"], [])
        out.append(json.dumps({k: v for k, v in record.items() if k not in drop},
                              sort_keys=True))
    return sorted(out)


def recalls(mem: Memory, user: str) -> list[str]:
    return [mem.recall(user, q, at=T3).render() for q in QUESTIONS]


def test_the_schema_file_is_the_formats(tmp_path):
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


def test_round_trip_under_another_user_on_a_fresh_server(settings, user_id, tmp_path,
                                                         private_server, raw_driver):
    copy = user_id + "-copy"
    with Memory(settings) as mem:
        teach(mem, user_id)
        first = lines(mem, user_id)
        kinds = [r["type"] for r in first]
        assert kinds[0] == "header" and kinds.count("entity") == 8
        assert kinds.count("memory") == 6 and kinds.count("conversation") == 4
        assert kinds.count("merge_record") >= 1
        assert not any("embedding" in json.dumps(r) for r in first)
        path = tmp_path / "memory.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in first))
        expected = recalls(mem, user_id)
        # Ids are kept, and one server holds an id in one partition only (design §11): a copy
        # under another user id on the same server is refused by line, nothing written.
        before = snapshot(raw_driver)
        with pytest.raises(InvalidExportError, match=r"^line 2 \(entity\): id: another user's"):
            mem.import_memory(copy, path, at=T3)
        assert snapshot(raw_driver) == before
    state = private_server.start()
    fresh = Settings(neo4j_uri=state.bolt_uri, home=tmp_path / "fresh", decay_in_serve=False)
    with Memory(fresh) as other:
        other.migrate()
        report = other.import_memory(copy, path, at=T3)
        assert (report.entities, report.memories, report.conversations) == (8, 6, 4)
        assert report.source_user_id == user_id and report.user_id == copy
        assert comparable(lines(other, copy)) == comparable(first)
        assert recalls(other, copy) == expected
        # Nothing of the staging partition is left, and the memory is the user's alone.
        assert other.store.read("transfer/stagings") == []
        # The imported memory goes on living: a new conversation merges into it.
        report = other.commit(copy, "c9", {"relations": [
            rel("Bill", "HAS_BOSS", "Sarah", "Sarah, my boss, again")]}, at=T3)
        assert report.reinforced == ["Bill -[HAS_BOSS]-> Sarah"]


def test_refusals_write_nothing(settings, user_id, tmp_path, raw_driver):
    with Memory(settings) as mem:
        teach(mem, user_id)
        good = [json.dumps(r) for r in lines(mem, user_id)]
        target = user_id + "-new"
        cases = {
            "version": ([json.dumps({**json.loads(good[0]), "version": 2}), *good[1:]],
                        "line 1: version: format version 2 is unknown"),
            "field": ([good[0], json.dumps({**json.loads(good[1]), "kind": "ROBOT"}), *good[2:]],
                      "line 2 (entity): kind: Input should be"),
            "order": ([g for g in good[:-1] if '"type": "memory"' not in g]
                      + [g for g in good if '"type": "memory"' in g] + good[-1:],
                      "(memory): out of order"),
            "dangling": ([good[0], *[g for g in good[1:] if '"type": "memory"' in g]],
                         "is no entity of the file"),
            "not json": ([good[0], "{oops"], "line 2: not JSON"),
            "no header": (good[1:], "line 1: not a pegasus-memory-export file"),
        }
        before = snapshot(raw_driver)
        for name, (content, message) in cases.items():
            path = tmp_path / f"{name}.jsonl"
            path.write_text("\n".join(content) + "\n")
            with pytest.raises(InvalidExportError, match=re.escape(message)):
                mem.import_memory(target, path)
            assert snapshot(raw_driver) == before, name
        path = tmp_path / "good.jsonl"
        path.write_text("\n".join(good) + "\n")
        with pytest.raises(PartitionNotEmptyError, match="already has memories"):
            mem.import_memory(user_id, path)
        assert snapshot(raw_driver) == before
        report = mem.import_memory(user_id, path, replace=True, at=T3)
        assert report.replaced and report.memories == 6
        assert comparable(lines(mem, user_id)) == comparable([json.loads(g) for g in good])


def test_an_export_ends_with_its_end_line_and_a_file_from_before_it_still_imports(
        settings, user_id, tmp_path):
    # Format 1.1 (#47): the header says minor 1 and the last line counts the records; a 1.0
    # file (no minor, no end line: exported before) imports exactly as before.
    with Memory(settings) as mem:
        teach(mem, user_id)
        records = lines(mem, user_id)
        assert records[0]["minor"] == MINOR
        kinds = [r["type"] for r in records]
        assert records[-1] == {"type": "end", "entities": kinds.count("entity"),
                               "memories": kinds.count("memory"),
                               "conversations": kinds.count("conversation"),
                               "merge_records": kinds.count("merge_record")}
        assert kinds.count("memory") > 0 and kinds.count("end") == 1
        # As 1.0 wrote it: no minor, no end line, none of the fields later minors added.
        added = {kind: set(fields) for kind, fields in ADDED[2].items()}
        before = [{k: v for k, v in r.items() if k not in added.get(r["type"], ())}
                  for r in records]
        old = [{k: v for k, v in before[0].items() if k != "minor"}, *before[1:-1]]
        path = tmp_path / "format-1.0.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in old))
        mem.forget_everything(user_id)
        report = mem.import_memory(user_id, path, at=T3)
        assert report.memories == kinds.count("memory")
        assert comparable(lines(mem, user_id)) == comparable(before)
        fresh = lines(mem, user_id + "-nobody")
        assert fresh[1:] == [{"type": "end", "entities": 0, "memories": 0, "conversations": 0,
                              "merge_records": 0}]


def test_export_without_turns_leaves_them_out(settings, user_id):
    with Memory(settings) as mem:
        teach(mem, user_id)
        without = [r for r in lines(mem, user_id, with_turns=False) if r["type"] == "conversation"]
        assert all("turns" not in r for r in without)
        withturns = {r["id"]: r for r in lines(mem, user_id) if r["type"] == "conversation"}
        assert withturns["c4"]["turns"] == [{"role": "user", "content": "how is Northwind going"}]
        assert withturns["c1"]["turns"] == []  # remembered over 7 days ago: past retention


def test_an_entity_merged_past_one_batchs_limits_exports_and_stops_at_its_own(
        settings, user_id, monkeypatch):
    # Found by the fuzz: each commit may add 50 aliases and merges add them up, while the
    # export refused an entity with more than 50, so that user could not export at all.
    from pegasus.merge import planner
    monkeypatch.setattr(planner, "MAX_ENTITY_ALIASES", 120)
    monkeypatch.setattr(planner, "MAX_ENTITY_PROPERTIES", 70)
    with Memory(settings) as mem:
        for round_ in range(3):
            report = mem.commit(user_id, f"c{round_}", {"entities": [{
                "name": "Sarah", "kind": "PERSON",
                "aliases": [f"Sarah {round_}-{i}" for i in range(50)],
                "properties": {f"p{round_}_{i}": i for i in range(30)}}]}, at=T1)
        assert report.notes == ["'Sarah' holds its 120 aliases and 70 properties at most: "
                                "50 more not added"]
        [sarah] = [r for r in lines(mem, user_id) if r["type"] == "entity"]
        assert len(sarah["aliases"]) == 120 and sarah["aliases"][-1] == "Sarah 2-19"
        assert len(sarah["properties"]) == 70 and "p2_9" in sarah["properties"]
        assert "p2_10" not in sarah["properties"]


def test_an_export_holding_a_hand_merge_of_uncited_entities_imports_again(
        settings, user_id, tmp_path):
    # Found by the outside attack: merging two entities no conversation cited (imported ones)
    # wrote a record whose absorbed entity listed a conversation of None, and the export of
    # that memory was refused by the import (backup and restore broken).
    header = {"type": "header", "format": "pegasus-memory-export", "version": 1,
              "user_id": "someone", "exported_at": "2026-03-01T09:00:00+00:00"}
    path = tmp_path / "uncited.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        header, {"type": "entity", "id": f"{user_id}-e0", "name": "Zorblax", "kind": "PERSON"},
        {"type": "entity", "id": f"{user_id}-e1", "name": "Mallory", "kind": "PERSON"}]))
    with Memory(settings) as mem:
        mem.import_memory(user_id, path, at=T1)
        mem.merge_entities(user_id, "Zorblax", "Mallory", at=T2)
        exported = lines(mem, user_id)
        [record] = [r for r in exported if r["type"] == "merge_record"]
        assert json.loads(record["record"]["absorbed"])["conversations"] == []
        path.write_text("".join(json.dumps(r) + "\n" for r in exported))
        report = mem.import_memory(user_id, path, replace=True, at=T3)
        assert (report.entities, report.merge_records) == (1, 1)
        assert comparable(lines(mem, user_id)) == comparable(exported)


def test_ids_inside_a_merge_record_held_by_another_user_are_refused(settings, user_id,
                                                                   raw_driver, tmp_path):
    """Found by the outside attack (session 3): a merge record's absorbed entity and its
    taken-off memories carry ids that undo writes back; another user's ids there went in, and
    the undo made a second node and edge with the victim's ids. Refused by line, nothing
    written."""
    from tests.unit.test_import_check import ABSORBED, EDGE, good, write

    victim, attacker = f"{user_id}-victim", f"{user_id}-attacker"
    with Memory(settings) as memory:
        memory.commit(victim, "cv", {"entities": [{"name": "Acme", "kind": "ORG"}],
                                     "relations": [rel("User", "WORKS_AT", "Acme")]}, at=T1)
        [held] = memory.memories(victim)
        for field, record in [
            ("record.absorbed.id", {"absorbed": json.dumps({**ABSORBED, "id": held.target_id})}),
            ("record.between[0].props.id", {"between": [json.dumps(
                {"label": "KNOWS", "props": {**EDGE, "id": held.id}, "from_survivor": True})]}),
        ]:
            records = good()
            records[5]["record"].update(record)
            before = snapshot(raw_driver)
            with pytest.raises(InvalidExportError, match=re.escape(
                    f"line 6 (merge_record): {field}: another user's memory holds this id")):
                memory.import_memory(attacker, write(tmp_path / "f.jsonl", records), at=T1)
            assert snapshot(raw_driver) == before
