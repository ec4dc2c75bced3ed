"""Extraction with langchain-core's scripted chat model emitting tool calls (design §8)."""

from datetime import UTC, datetime

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from pegasus import Memory
from pegasus.errors import ExtractionError
from pegasus.extract.extractor import Staging
from tests.helpers import call, edges, entities, scripted_model, snapshot

AT = datetime(2026, 7, 1, tzinfo=UTC)
TURNS = [
    {"role": "user", "content": "My boss Sarah moved the deadline again, honestly I'm exhausted."},
    {"role": "assistant", "content": "That sounds hard."},
    {"role": "user", "content": "At least Acme pays well. I've been there three years."},
]


CALLS = [
    call("record_entity", 1, name="Sarah", kind="PERSON", properties={"role": "manager"},
         confidence=0.9),
    call("record_relation", 2, source="User", relation="HAS_BOSS", target="Sarah",
         confidence=0.9, stability="mutable", cardinality="one_to_one",
         snippet="My boss Sarah moved the deadline again, honestly I'm exhausted.",
         evidence="My boss Sarah"),
    call("record_entity", 3, name="Acme", kind="ORG", confidence=0.9),
    call("record_relation", 4, source="User", relation="WORKS_AT", target="Acme",
         confidence=0.8, stability="mutable", cardinality="one_to_one",
         snippet="At least Acme pays well. I've been there three years.", evidence="Acme"),
    call("record_conversation", 5, summary="Deadline stress", importance=0.6, tags=["work"]),
]


scripted = scripted_model


def ai(*calls):
    return AIMessage(content="", tool_calls=list(calls))


FINISH = call("finish", 99)


def graph(driver, user_id):
    return ({(e["name"], e["kind"]) for e in entities(driver, user_id)},
            {(a, t, b, p["snippet"]) for a, t, b, p in edges(driver, user_id)})


def test_scripted_extraction_builds_the_expected_graph(settings, raw_driver, user_id):
    model = scripted(ai(*CALLS[:2]), ai(*CALLS[2:]), ai(FINISH))
    with Memory(settings, llm=model) as mem:
        report = mem.remember(user_id, "c1", TURNS, at=AT)
    assert graph(raw_driver, user_id) == (
        {("User", "PERSON"), ("Sarah", "PERSON"), ("Acme", "ORG")},
        {("User", "HAS_BOSS", "Sarah",
          "My boss Sarah moved the deadline again, honestly I'm exhausted."),
         ("User", "WORKS_AT", "Acme", "At least Acme pays well. I've been there three years.")},
    )
    assert report.edges_created == ["User -[HAS_BOSS]-> Sarah", "User -[WORKS_AT]-> Acme"]
    assert not Staging(settings.home, user_id, "c1").path.exists()


def test_cut_off_extraction_resumes_from_the_staged_batch(settings, raw_driver, user_id,
                                                          tmp_path):
    uninterrupted_user = user_id + "-ref"
    with Memory(settings, llm=scripted(ai(*CALLS), ai(FINISH))) as mem:
        mem.remember(uninterrupted_user, "c1", TURNS, at=AT)
    expected = graph(raw_driver, uninterrupted_user)

    before = snapshot(raw_driver)
    cut = scripted(ai(*CALLS[:3]), RuntimeError("connection dropped for good"))
    with Memory(settings, llm=cut) as mem, pytest.raises(RuntimeError):
        mem.remember(user_id, "c1", TURNS, at=AT)
    assert snapshot(raw_driver) == before  # nothing written
    staging = Staging(settings.home, user_id, "c1")
    assert [i["tool"] for i in staging.load()] == [c["name"] for c in CALLS[:3]]

    seen = []

    class Recorder(GenericFakeChatModel):
        def _generate(self, messages, *args, **kwargs):
            seen.append(messages[1].content)
            return super()._generate(messages, *args, **kwargs)

    def rest():
        yield ai(*CALLS[3:])
        yield ai(FINISH)

    with Memory(settings, llm=Recorder(messages=rest())) as mem:
        mem.remember(user_id, "c1", TURNS, at=AT)
    assert "ALREADY RECORDED" in seen[0] and '"Acme"' in seen[0]
    assert graph(raw_driver, user_id) == expected
    assert not staging.path.exists()


def test_transient_errors_are_retried(settings, raw_driver, user_id):
    model = scripted(TimeoutError("slow"), ai(*CALLS), ai(FINISH))
    with Memory(settings, llm=model) as mem:
        mem.remember(user_id, "c1", TURNS, at=AT)
    assert len(edges(raw_driver, user_id)) == 2


def test_malformed_tool_arguments_are_cleaned_or_dropped_with_notes(settings, raw_driver,
                                                                    user_id):
    model = scripted(ai(
        call("record_entity", 1, name="Sarah", kind="person"),           # recased
        call("record_entity", 2, name="Zorb", kind="gizmo"),             # → OTHER
        call("record_entity", 3, kind="PERSON"),                         # no name: refused
        call("record_relation", 4, source="User", relation="has boss", target="Sarah",
             snippet="My boss Sarah moved the deadline again"),          # label repaired
        call("record_relation", 5, source="User", relation="LIKES", target="Zorb",
             snippet="I adore zorbs"),                                   # not the user's words
        call("no_such_tool", 6, x=1),
    ), ai(FINISH))
    with Memory(settings, llm=model) as mem:
        report = mem.remember(user_id, "c1", TURNS, at=AT)
    assert {(e["name"], e["kind"]) for e in entities(raw_driver, user_id)} == {
        ("User", "PERSON"), ("Sarah", "PERSON"), ("Zorb", "OTHER")}
    assert [(a, t, b) for a, t, b, _ in edges(raw_driver, user_id)] == [
        ("User", "HAS_BOSS", "Sarah")]
    assert any("record_entity refused" in n for n in report.notes)
    assert any("no_such_tool" in n for n in report.notes)
    assert any("unknown kind 'gizmo'" in n for n in report.notes)
    assert [d.reason for d in report.dropped] == ["snippet not found in the user's turns"]


def test_garbage_is_a_clear_error_and_writes_nothing(settings, raw_driver, user_id):
    before = snapshot(raw_driver)
    garbage = scripted(AIMessage(content="Sure! Here is a summary..."))
    with Memory(settings, llm=garbage) as mem, pytest.raises(ExtractionError, match="recorded nothing"):
        mem.remember(user_id, "c1", TURNS, at=AT)
    assert snapshot(raw_driver) == before


def test_an_empty_extraction_is_valid_when_the_model_finishes(settings, raw_driver, user_id):
    with Memory(settings, llm=scripted(ai(FINISH))) as mem:
        report = mem.remember(user_id, "c1", [{"role": "user", "content": "hi"}], at=AT)
    assert report.edges_created == [] and entities(raw_driver, user_id) == []
