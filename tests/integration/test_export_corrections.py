"""A memory corrected in place exports and imports with its history (design §10, §11), and
every property the product writes is either in the file or deliberately left out of it.

Found by the outside attack: correcting one memory wrote properties the export format did not
know, and from then on every export of that person failed (the CLI with an error, HTTP after
its header line): a person who corrected a memory could no longer take their memory out."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from pegasus import Memory
from pegasus.cli import app as cli
from pegasus.serve.app import create_app
from pegasus.transfer.export import CONVERSATION_FIELDS, CONVERSATION_LEFT_OUT, EDGE_FIELDS
from pegasus.transfer.format import MINOR, OWNER_PROPS
from tests.helpers import rel
from tests.integration.test_correct_memory import HOME, by_line
from tests.integration.test_remembered_at_once import TOLD, piet_model
from tests.integration.test_transfer import comparable

T1 = datetime(2026, 3, 1, 9, tzinfo=UTC)
T2 = datetime(2026, 3, 8, 9, tzinfo=UTC)
T3 = datetime(2026, 3, 15, 9, tzinfo=UTC)
T4 = datetime(2026, 3, 20, 9, tzinfo=UTC)
KEY, COPY_KEY = "key-export-corrections-1", "key-export-corrections-2"


def corrected(mem: Memory, user: str) -> dict[str, str]:
    """HOME committed, then corrected twice: where the person lives on the page (a new other
    end), Ines's work through the API (her words). The ids, by what they are."""
    mem.commit(user, "c1", HOME, at=T1)
    now = by_line(mem.memories(user))
    porto, nurse = now["User -[LIVES_IN]-> Porto"].id, now["Ines -[WORKS_AT]-> Santo António"].id
    lisbon = mem.correct_memory(user, porto, target="Lisbon", words="I live in Lisbon, in Alfama",
                                at=T2, via="page").memory_id
    doctor = mem.correct_memory(user, nurse, words="Ines is a doctor at Santo António", at=T2,
                                via="api").memory_id
    return {"porto": porto, "lisbon": lisbon, "nurse": nurse, "doctor": doctor}


def memories_of(records: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in records if r["type"] == "memory"}


def stored_corrections(driver, user: str) -> dict[str, dict]:
    """Each of the user's edges' correction properties, as stored."""
    rows, _, _ = driver.execute_query(
        "MATCH (:Entity {user_id: $u})-[r]->(:Entity) WHERE r.user_id = $u "
        "RETURN r.id AS id, r.corrects AS corrects, toString(r.corrected_at) AS corrected_at, "
        "r.corrected_by AS corrected_by, r.corrected_via AS corrected_via, "
        "r.superseded_by AS superseded_by", u=user)
    return {r["id"]: dict(r) for r in rows}


def parsed(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_corrected_memory_exports_everywhere_and_imports_with_its_history(
        settings, user_id, tmp_path, neo4j_env, raw_driver):
    copy = f"{user_id}-copy"
    configured = settings.model_copy(update={"api_keys": {KEY: user_id, COPY_KEY: copy}})
    with Memory(configured) as mem:
        ids = corrected(mem, user_id)
        stored = stored_corrections(raw_driver, user_id)
        assert stored[ids["porto"]]["corrected_by"] == user_id

        # The command line: the file is written whole, with its end line.
        out = tmp_path / "cli.jsonl"
        done = CliRunner().invoke(cli, ["export", "--user", user_id, "-o", str(out),
                                        "--at", T3.isoformat()], env=neo4j_env)
        assert done.exit_code == 0, done.output
        records = parsed(out.read_text())
        assert records[0]["minor"] == MINOR == 2 and records[-1]["type"] == "end"
        memories = memories_of(records)
        assert len(memories) == 4 and records[-1]["memories"] == 4
        old, new = memories[ids["porto"]], memories[ids["lisbon"]]
        assert (old["corrected_via"], old["superseded_by"]) == ("page", ids["lisbon"])
        assert old["corrected_at"].startswith("2026-03-08T09:00:00")
        assert (new["corrects"], new["corrected_via"]) == (ids["porto"], "page")
        assert "corrected_at" not in new
        assert (memories[ids["doctor"]]["corrects"], memories[ids["nurse"]]["corrected_via"]) \
            == (ids["nurse"], "api")
        # Who corrected it is the partition's owner: no user id in a memory record.
        assert not any("corrected_by" in m or "user_id" in m for m in memories.values())

        # HTTP and the memory page send the same records, whole.
        with TestClient(create_app(mem), base_url="http://testserver") as client:
            answer = client.get("/v1/memory/export", headers={"Authorization": f"Bearer {KEY}"})
            assert answer.status_code == 200
            over_http = parsed(answer.text)
            assert client.post("/sign-in", data={"key": KEY},
                               follow_redirects=False).status_code == 303
            page = client.get("/export")
            assert page.status_code == 200
            on_page = parsed(page.text)
        for other in (over_http, on_page):
            assert other[-1]["type"] == "end"
            assert comparable(other) == comparable(records)

        # Into the same user, replacing: the same memory, history and all.
        mem.import_memory(user_id, out, replace=True, at=T3)
        assert comparable(parsed("".join(mem.export(user_id, at=T3)))) == comparable(records)
        assert stored_corrections(raw_driver, user_id) == stored

        # Into another user (the first one's memory forgotten: ids are kept on import).
        mem.forget_everything(user_id)
        report = mem.import_memory(copy, out, at=T3)
        assert report.memories == 4
        assert comparable(parsed("".join(mem.export(copy, at=T3)))) == comparable(records)
        moved = stored_corrections(raw_driver, copy)
        assert moved[ids["porto"]] == {**stored[ids["porto"]], "corrected_by": copy}
        assert moved[ids["lisbon"]] == stored[ids["lisbon"]]
        history = mem.memory(copy, ids["porto"], at=T3)
        assert history.superseded_by == ids["lisbon"]
        assert (history.memory.corrected_via, history.memory.superseded) == ("page", True)
        assert mem.memory(copy, ids["lisbon"], at=T3).memory.corrects == ids["porto"]
        recalled = mem.recall(copy, "where do I live", at=T3).render()
        assert "I live in Lisbon, in Alfama" in recalled and "near the river" not in recalled

        # Undo still works after the round trip: the old version is current again.
        undone = mem.correct_memory(copy, ids["lisbon"], undo=True, at=T4)
        assert (undone.action, undone.memory_id) == ("correction undone", ids["porto"])
        now = by_line(mem.memories(copy, at=T4))
        assert "User -[LIVES_IN]-> Porto" in now and "User -[LIVES_IN]-> Lisbon" not in now
        back = stored_corrections(raw_driver, copy)[ids["porto"]]
        assert back == {"id": ids["porto"], "corrects": None, "corrected_at": None,
                        "corrected_by": None, "corrected_via": None, "superseded_by": None}
        assert "near the river" in mem.recall(copy, "where do I live", at=T4).render()
        # And the other correction, taken back over HTTP as it was made.
        with TestClient(create_app(mem)) as client:
            answer = client.post(f"/v1/memory/edges/{ids['doctor']}/undo-correction",
                                 headers={"Authorization": f"Bearer {COPY_KEY}"},
                                 json={"at": T4.isoformat()})
            assert answer.status_code == 200, answer.text
        assert "Ines -[WORKS_AT]-> Santo António" in by_line(mem.memories(copy, at=T4))
        assert mem.memory(copy, ids["nurse"], at=T4).memory.snippet == \
            "Ines works at Santo António as a nurse"


def every_write_path(mem: Memory, user: str) -> None:
    """A memory built through every way the product writes one: commits (supersession,
    sightings, reinforcement), recorded turns consolidated during the session and at close, a
    read log, a close requested and one failed, the backlog, decay, retraction and its undo,
    corrections (kept, undone, and one taken off by a hand merge), renames and aliases,
    merges by hand (one undone, one kept)."""
    mem.record_turns(user, "c1", [{"role": "user", "content": "my boss Sarah moved the deadline"},
                                  {"role": "assistant", "content": "noted"}], at=T1)
    mem.commit(user, "c1", {
        "entities": [{"name": "Bill", "kind": "PERSON", "is_user": True},
                     {"name": "Sarah", "kind": "PERSON", "properties": {"role": "manager"}},
                     {"name": "Acme", "kind": "ORG"}, {"name": "Maya", "kind": "PERSON"},
                     {"name": "Jonas", "kind": "PERSON"}, {"name": "Ruth", "kind": "PERSON"}],
        "relations": [
            rel("Bill", "HAS_BOSS", "Sarah", "my boss Sarah moved the deadline",
                cardinality="one_to_one", stability="mutable"),
            rel("Bill", "WORKS_AT", "Acme", "I work at Acme", cardinality="one_to_one"),
            rel("Bill", "HAS_PARTNER", "Maya", "my partner Maya", stability="stable"),
            rel("Jonas", "KNOWS", "Ruth", "Jonas knows Ruth from school"),
            rel("Maya", "WANTS_TO_VISIT", "Lisbon", "Maya wants to see Lisbon",
                stability="time_bound", expires_at="2026-12-31T00:00:00Z")],
        "conversation": {"summary": "work and home", "importance": 0.7, "tags": ["work"]}},
        at=T1)
    # Recorded turns of an open conversation (through the proxy: its model kept), part
    # consolidated during the session (an LLM extracts them), part not yet.
    mem.record_turns(user, "c2", [{"role": "user", "content": TOLD}], at=T2, model="gpt-test")
    with Memory(mem.settings, llm=piet_model()) as extracting:
        assert extracting.extract_turns(user, "c2", at=T2).outcome == "extracted"
    mem.record_turns(user, "c2", [{"role": "user", "content": "Sarah is still my boss"}], at=T2)
    mem.commit(user, "c8", {"entities": [{"name": "Northwind", "kind": "ORG"}],
                            "relations": [rel("Bill", "WORKS_AT", "Northwind",
                                              "I moved to Northwind", cardinality="one_to_one")]},
               at=T2)
    mem.recall(user, "my boss Sarah", conversation_id="c3", at=T2)
    mem.close_conversation(user, "c3", at=T2)
    mem.recall(user, "Northwind", conversation_id="c2", at=T2)  # a read log not yet applied
    # A close requested (the worker's part not run), one that failed, one awaiting an LLM.
    mem.record_turns(user, "c4", [{"role": "user", "content": "Tom plays the cello"}], at=T2)
    mem.request_close(user, "c4", at=T2)
    mem.record_turns(user, "c5", [{"role": "user", "content": "my sister visits in May"}], at=T2)
    mem.request_close(user, "c5", at=T2)
    mem.close_failed(user, "c5", "the model timed out", T2, max_attempts=1)
    mem.record_turns(user, "c6", [{"role": "user", "content": "Acme's party is on Friday"}],
                     at=T2)
    mem.request_close(user, "c6", at=T2)
    mem.await_extraction(user, "c6", "no LLM is configured", T2)
    mem.close_conversation(user, "c6", at=T2)
    now = by_line(mem.memories(user, at=T2))
    mem.retract(user, now["Bill -[HAS_PARTNER]-> Maya"].id, at=T2)
    mem.retract(user, now["Bill -[HAS_PARTNER]-> Maya"].id, at=T2, undo=True)
    mem.retract(user, now["Maya -[WANTS_TO_VISIT]-> Lisbon"].id, at=T2)
    kept = mem.correct_memory(user, now["Bill -[HAS_BOSS]-> Sarah"].id,
                              words="Sarah Kim is my boss", at=T2, via="cli")
    undone = mem.correct_memory(user, now["Bill -[WORKS_AT]-> Northwind"].id,
                                target="Initech", at=T2, via="mcp")
    mem.correct_memory(user, undone.memory_id, undo=True, at=T2)
    # A corrected memory between two entities a person then says are one: the merge record
    # keeps both versions, who corrected them among their properties.
    mem.correct_memory(user, now["Jonas -[KNOWS]-> Ruth"].id,
                       words="Jonas knows Ruth from work", at=T2, via="page")
    mem.merge_entities(user, "Jonas", "Ruth", at=T2)
    mem.rename_entity(user, "Sarah", "Sarah Kim", at=T2)
    mem.edit_aliases(user, "Sarah Kim", add=["SK"], at=T2)
    mem.commit(user, "c7", {"entities": [{"name": "Tom", "kind": "PERSON"},
                                         {"name": "Lena", "kind": "PERSON"}],
                            "relations": [rel("Tom", "PLAYS", "Cello", "Tom plays the cello")]},
               at=T2)
    merged = mem.merge_entities(user, "Tom", "Lena", at=T2)
    mem.undo_merge(user, merged.merge_record_id, at=T2)
    assert kept.memory_id
    mem.consolidate(at=T3, user_id=user)


def stored_keys(driver, user: str) -> dict[str, set[str]]:
    """Every property name stored on the user's memory edges and conversations."""
    found: dict[str, set[str]] = {}
    for kind, query in [
        ("memory", "MATCH (:Entity {user_id: $u})-[r]->(:Entity) WHERE r.user_id = $u "
                   "UNWIND keys(r) AS k RETURN DISTINCT k"),
        ("conversation", "MATCH (c:Conversation {user_id: $u}) UNWIND keys(c) AS k "
                         "RETURN DISTINCT k")]:
        rows, _, _ = driver.execute_query(query, u=user)
        found[kind] = {r["k"] for r in rows}
    return found


def owned_by(records: list[dict], user: str) -> list[dict]:
    """The records as imported for `user`: the owner properties a hand merge's taken-off
    memories hold (user_id, corrected_by) name that user."""
    out = []
    for record in records:
        between = record.get("record", {}).get("between") if record["type"] == "merge_record" \
            else None
        if between:
            edges = [json.loads(e) for e in between]
            for edge in edges:
                edge["props"].update({k: user for k in OWNER_PROPS if k in edge["props"]})
            record = {**record, "record": {**record["record"], "between": [
                json.dumps(e, separators=(",", ":"), ensure_ascii=False) for e in edges]}}
        out.append(record)
    return out


def test_a_memory_written_every_way_exports_and_round_trips(settings, user_id, tmp_path,
                                                            raw_driver):
    with Memory(settings) as mem:
        every_write_path(mem, user_id)
        # Every property the product wrote is a field of the format or left out on purpose.
        keys = stored_keys(raw_driver, user_id)
        assert keys["memory"] - EDGE_FIELDS - set(OWNER_PROPS) == set()
        assert keys["conversation"] - CONVERSATION_FIELDS - {"turns"} - CONVERSATION_LEFT_OUT \
            == set()
        assert {"corrects", "corrected_at", "corrected_by", "corrected_via", "reinforced_at",
                "retracted_at", "superseded_by"} <= keys["memory"]
        assert {"extracted_turns", "last_active_at", "last_read_at", "model", "turn_ids",
                "awaiting_extraction", "extraction_note", "close_error", "close_next_at",
                "turns_purged_at"} <= keys["conversation"]
        records = parsed("".join(mem.export(user_id, with_turns=True, at=T3)))
        conversations = {r["id"]: r for r in records if r["type"] == "conversation"}
        assert (conversations["c2"]["status"], conversations["c2"]["extracted_turns"]) == ("open", 1)
        assert len(conversations["c2"]["turns"]) == 2
        assert conversations["c6"]["awaiting_extraction"] is True
        [kept_merge] = [r for r in records if r["type"] == "merge_record"
                        and r["record"].get("between")]
        between = [json.loads(e)["props"] for e in kept_merge["record"]["between"]]
        assert sorted(p.get("corrected_via") for p in between) == ["page", "page"]

        path = tmp_path / "every.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        mem.import_memory(user_id, path, replace=True, at=T3)
        again = parsed("".join(mem.export(user_id, with_turns=True, at=T3)))
        assert comparable(again) == comparable(records)
        copy = f"{user_id}-copy"
        mem.forget_everything(user_id)
        mem.import_memory(copy, path, at=T3)
        # The same, but for the owner inside the hand merge's taken-off memories.
        assert comparable(parsed("".join(mem.export(copy, with_turns=True, at=T3)))) \
            == comparable(owned_by(records, copy))
        # What the import left out on purpose: a closing conversation is due to close here.
        assert mem.due_closes(copy, at=T3) == ["c4"]
        # The merge record's taken-off memories were corrected by the user imported into,
        # and undoing that merge puts them back so.
        mem.undo_merge(copy, kept_merge["id"], at=T4)
        backs = {r["corrected_by"] for r in stored_corrections(raw_driver, copy).values()
                 if r["corrected_at"] is not None}
        assert backs == {copy}
        assert "Jonas knows Ruth from work" in mem.recall(copy, "Jonas and Ruth",
                                                               at=T4).render()


@pytest.mark.parametrize("minor", [0, 1])
def test_a_file_from_before_corrections_still_imports(settings, user_id, tmp_path, minor):
    """A 1.0 or 1.1 file (no correction fields: a corrected memory could not be exported
    then) imports as it always did."""
    with Memory(settings) as mem:
        mem.commit(user_id, "c1", HOME, at=T1)
        records = parsed("".join(mem.export(user_id, at=T3)))
        old = [{k: v for k, v in records[0].items() if k != "minor"} if minor == 0
               else {**records[0], "minor": 1}, *records[1:(-1 if minor == 0 else None)]]
        path = Path(tmp_path / "old.jsonl")
        path.write_text("".join(json.dumps(r) + "\n" for r in old))
        report = mem.import_memory(user_id, path, replace=True, at=T3)
        assert report.memories == 2
        assert comparable(parsed("".join(mem.export(user_id, at=T3)))) == comparable(records)
        newer = tmp_path / "newer.jsonl"
        newer.write_text("".join(json.dumps(r) + "\n" for r in [
            {**records[0], "minor": MINOR + 1}, *records[1:]]))
        with pytest.raises(Exception, match=re.escape(
                f"line 1: minor: format 1.{MINOR + 1} is newer than this Pegasus reads")):
            mem.import_memory(user_id, newer, replace=True, at=T3)
