"""Remembered within seconds (design §7.11, §9 "Consolidated during the session"): a recorded
user turn is recallable from the user's other conversations at once, with or without an LLM;
while its conversation stays open its new turns are consolidated into graph memories, which
then take over with no duplicate; every forget verb removes the pending words; another user
never sees them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from langchain_core.messages import AIMessage

from pegasus import Memory
from pegasus.clock import parse_instant
from pegasus.errors import NotFoundError
from tests.helpers import call, rel, scripted_model

T0 = parse_instant("2026-12-07T10:00:00Z")
TOLD = "my brother Piet teaches chemistry in Ghent"
ASKED = "what does my brother teach?"


def said(memory: Memory, user_id: str, conversation: str, text: str, at=T0) -> None:
    memory.record_turns(user_id, conversation, [{"role": "user", "content": text}], at=at)


def quoted(memory: Memory, user_id: str, text: str, conversation: str | None = None,
           at=T0) -> list[tuple[str, bool]]:
    recall = memory.recall(user_id, text, conversation_id=conversation, at=at)
    return [(s.text, s.pending) for s in recall.snippets]


def piet_model(*more: AIMessage):
    """A model that records Piet from a transcript, then finishes; then `more`."""
    return scripted_model(
        AIMessage(content="", tool_calls=[
            call("record_entity", 1, name="Piet", kind="PERSON", confidence=0.9),
            call("record_entity", 2, name="Ghent", kind="PLACE", confidence=0.9),
            call("record_relation", 3, source="User", relation="HAS_BROTHER", target="Piet",
                 confidence=0.9, stability="stable", cardinality="one_to_many", snippet=TOLD),
            call("record_relation", 4, source="Piet", relation="WORKS_IN", target="Ghent",
                 confidence=0.9, stability="mutable", cardinality="one_to_one", snippet=TOLD),
            call("finish", 5)]),
        *more)


def test_a_turn_is_recalled_in_another_conversation_at_once_without_any_llm(
        settings, user_id):
    with Memory(settings) as memory:
        assert not memory.has_llm
        said(memory, user_id, "chat-a", f"Hello! {TOLD}. He loves it.")
        found = quoted(memory, user_id, ASKED, "chat-b", at=T0 + timedelta(seconds=3))
        assert (f"Hello! {TOLD}. He loves it.", True) in found
        recall = memory.recall(user_id, ASKED, "chat-b", at=T0 + timedelta(seconds=3))
        shown = next(s for s in recall.snippets if s.pending)
        assert (shown.conversation_id, shown.edge_id, shown.said_at) == ("chat-a", "", T0)
        assert f'- 2026-12-07: "Hello! {TOLD}. He loves it."' in recall.render()
        assert recall.edge_ids == []  # a passage is no memory edge: nothing to reinforce
        # never quoted back to the conversation that said it: it is in that chat already
        assert quoted(memory, user_id, ASKED, "chat-a") == []
        # found by meaning too, in other words than the turn's
        assert any(p for _, p in quoted(memory, user_id, "is anyone in my family a teacher?",
                                        "chat-c"))
        # the assistant's words are not the person's: never a passage
        memory.record_turns(user_id, "chat-a", [
            {"role": "assistant", "content": "Chemistry teachers in Ghent earn a lot."}])
        assert all("earn" not in t for t, _ in quoted(memory, user_id, "earn a lot", "chat-b"))


def test_another_user_never_sees_the_turns(settings, user_id):
    other = user_id + "-other"
    with Memory(settings) as memory:
        said(memory, user_id, "chat-a", TOLD)
        said(memory, other, "chat-z", "my cat sleeps all day")
        assert quoted(memory, other, ASKED, "chat-b") == []
        assert quoted(memory, other, "brother Piet chemistry Ghent teaches") == []
        # the same conversation id under another user is another conversation
        assert quoted(memory, other, ASKED, "chat-a") == []
        assert [t for t, _ in quoted(memory, user_id, "does my cat sleep?")] == []


def test_consolidated_during_the_session_then_no_duplicate(settings, user_id):
    later = T0 + timedelta(minutes=2)
    with Memory(settings, llm=piet_model(
            AIMessage(content="", tool_calls=[call("finish", 9)]))) as memory:
        said(memory, user_id, "chat-a", f"Hi. {TOLD}.")
        extracted = memory.extract_turns(user_id, "chat-a", at=later)
        assert (extracted.outcome, extracted.turns) == ("extracted", 1)
        state = memory.conversation_state(user_id, "chat-a")
        assert (state["status"], state["extracted_turns"]) == ("open", 1)  # it goes on
        assert {(e.source, e.relation, e.target) for e in memory.edges(user_id)} == {
            ("User", "HAS_BROTHER", "Piet"), ("Piet", "WORKS_IN", "Ghent")}
        found = quoted(memory, user_id, ASKED, "chat-b", at=later)
        assert (TOLD, False) in found  # the graph's memory took over ...
        assert not any(p for _, p in found)  # ... and the pending turn left: no duplicate
        assert memory.conversation_state(user_id, "chat-a")["turns"]  # the transcript stays
        # The conversation goes on: a new turn is pending again, the old one is not.
        said(memory, user_id, "chat-a", "Piet also plays the cello on Sundays", at=later)
        assert ("Piet also plays the cello on Sundays", True) in quoted(
            memory, user_id, "does Piet play an instrument?", "chat-b", at=later)
        # Nothing left to extract once every user turn is consolidated.
        assert memory.extract_turns(user_id, "chat-a", at=later).outcome == "extracted"
        assert memory.extract_turns(user_id, "chat-a", at=later).outcome == "empty"
        assert memory.conversation_state(user_id, "chat-a")["extracted_turns"] == 2


def test_a_segment_extracted_by_another_worker_meanwhile_is_not_written_twice(
        settings, user_id):
    from pegasus.commit import CommitJob, commit
    from pegasus.models.batch import ExtractionBatch

    with Memory(settings) as memory:
        said(memory, user_id, "chat-a", TOLD)
        batch = ExtractionBatch.model_validate({"entities": [{"name": "Piet",
                                                              "kind": "PERSON"}],
                                                "relations": [rel("User", "HAS_BROTHER",
                                                                  "Piet", TOLD)]})
        job = dict(settings=memory.settings, embedder=memory.embedder, user_id=user_id,
                   conversation_id="chat-a", batch=batch, at=T0,
                   transcript=[{"role": "user", "content": TOLD}], segment=(0, 1))
        first = commit(memory.store, CommitJob(**job), memory.snapshots)
        assert not first.skipped and len(first.edges_created) == 1
        # the same turns again (a second server that extracted them too): nothing written
        again = commit(memory.store, CommitJob(**job), memory.snapshots)
        assert again.skipped
        assert len(memory.edges(user_id)) == 1


def test_every_forget_verb_removes_pending_turns(settings, user_id):
    with Memory(settings) as memory:
        said(memory, user_id, "chat-a", TOLD)
        said(memory, user_id, "chat-c", "my neighbour Ines grows tomatoes in Porto")
        memory.forget_conversation(user_id, "chat-a")
        assert quoted(memory, user_id, ASKED, "chat-b") == []
        # forgetting an entity removes the pending words that name it
        memory.commit(user_id, "chat-d", {"entities": [{"name": "Ines", "kind": "PERSON"}],
                                          "relations": [rel("User", "HAS_NEIGHBOUR", "Ines",
                                                            "my neighbour is Ines")]})
        assert any(p for _, p in quoted(memory, user_id, "what does Ines grow?", "chat-b"))
        memory.forget_entity(user_id, "Ines")
        assert quoted(memory, user_id, "what does Ines grow in Porto?", "chat-b") == []
        # forgetting a memory removes pending turns that say its words
        said(memory, user_id, "chat-e", "I keep bees on the roof")
        memory.commit(user_id, "chat-f", {"entities": [{"name": "bees", "kind": "THING"}],
                                          "relations": [rel("User", "KEEPS", "bees",
                                                            "I keep bees on the roof")]})
        [edge] = [e for e in memory.edges(user_id) if e.target == "bees"]
        memory.forget_memory(user_id, edge.id)
        assert quoted(memory, user_id, "do I keep bees?", "chat-b") == []
        said(memory, user_id, "chat-g", TOLD)
        memory.forget_everything(user_id)
        assert quoted(memory, user_id, ASKED, "chat-b") == []


def test_pending_turns_leave_with_the_transcript_retention(settings, user_id):
    with Memory(settings, llm=piet_model()) as memory:
        said(memory, user_id, "chat-a", TOLD)
        memory.request_close(user_id, "chat-a", at=T0)
        memory.extract_turns(user_id, "chat-a", at=T0)
        memory.close_conversation(user_id, "chat-a", at=T0)
        assert not any(p for _, p in quoted(memory, user_id, ASKED, "chat-b"))


def test_closing_an_unknown_conversation_is_not_found(settings, user_id):
    with Memory(settings) as memory:
        with pytest.raises(NotFoundError):
            memory.request_close(user_id, "never-recorded", at=T0)
        assert not memory.conversation_state(user_id, "never-recorded")["exists"]


def test_a_small_part_waits_for_a_longer_quiet_a_large_one_does_not(settings, user_id):
    with Memory(settings) as memory:
        said(memory, user_id, "small", "I bought a kettle.")
        said(memory, user_id, "large", "Long story. " + "We walked along the river. " * 40)
        said(memory, user_id, "answered", "Just the reply is new.")
        memory.record_turns(user_id, "answered", [{"role": "assistant", "content": "Nice."}],
                            at=T0)
        memory.commit(user_id, "answered", {"entities": [], "relations": []}, at=T0)
        quiet = T0 + timedelta(seconds=90)

        def paused(small_quiet_since):
            return sorted(memory.paused_conversations(
                user_id, quiet, small_quiet_since=small_quiet_since, min_chars=600))

        assert paused(T0 - timedelta(minutes=15)) == ["large"]  # 90 s: the large part only
        assert paused(quiet) == ["large", "small"]  # 15 min later: the small one too
        # a new chat takes every paused one, whatever its size (min_chars 0)
        assert sorted(memory.paused_conversations(user_id, quiet)) == ["large", "small"]
        assert memory.paused_conversations(user_id, T0 - timedelta(seconds=1)) == []
