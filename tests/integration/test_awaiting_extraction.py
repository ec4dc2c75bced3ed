"""Closes with no LLM wait for one (#36): kept awaiting extraction, their turns exempt from
retention; once an LLM is there, the backlog is extracted in the order it closed, each once."""

from __future__ import annotations

from datetime import timedelta

from langchain_core.messages import AIMessage

from pegasus import Memory
from pegasus.clock import parse_instant
from pegasus.serve.conversations import Conversations
from tests.helpers import call, scripted_model

T0 = parse_instant("2026-03-02T10:00:00Z")
SAID = "my sister Maya is training for the Oslo marathon in June"


def maya_then_nothing():
    """Two conversations in turn: the first teaches Maya, the second nothing."""
    return scripted_model(
        AIMessage(content="", tool_calls=[
            call("record_entity", 1, name="Maya", kind="PERSON", confidence=0.9),
            call("record_relation", 2, source="User", relation="HAS_SISTER", target="Maya",
                 confidence=0.9, stability="stable", cardinality="one_to_many", snippet=SAID),
            call("finish", 3)]),
        AIMessage(content="", tool_calls=[call("finish", 4)]))


def close_without_llm(settings, user_id: str, conversation: str, text: str, at) -> dict:
    with Memory(settings) as memory:
        assert not memory.has_llm
        memory.record_turns(user_id, conversation, [{"role": "user", "content": text}], at=at)
        conversations = Conversations(memory)
        try:
            assert conversations.close(user_id, conversation, at=at).result(timeout=60) == {
                "conversation_id": conversation, "remembered": None, "reinforced": 0,
                "awaiting_extraction": memory.extraction.why}
        finally:
            conversations.shutdown()
        return memory.conversation_state(user_id, conversation)


def test_retention_keeps_the_turns_of_a_close_awaiting_extraction(settings, user_id):
    state = close_without_llm(settings, user_id, "c1", f"Hi! {SAID}.", T0)
    assert (state["status"], state["awaiting_extraction"], state["committed"]) == (
        "closed", True, False)
    later = T0 + timedelta(days=settings.turn_retention_days + 30)
    with Memory(settings) as memory:
        assert memory.consolidate(at=later, user_id=user_id).turns_purged == 0
        assert len(memory.conversation_state(user_id, "c1")["turns"]) == 1
    # Extracted a month late: retention counts from the extraction, not from the close.
    with Memory(settings, llm=maya_then_nothing()) as memory:
        assert [r["outcome"] for r in memory.extract_pending(user_id, at=later)] == [
            "extracted"]
        assert memory.consolidate(at=later + timedelta(days=1), user_id=user_id
                                  ).turns_purged == 0
        assert memory.consolidate(at=later + timedelta(days=settings.turn_retention_days),
                                  user_id=user_id).turns_purged == 1


def test_the_backlog_is_extracted_in_order_each_once_and_only_the_users_own(
        settings, user_id):
    other = user_id + "-other"
    close_without_llm(settings, user_id, "first", f"Hi! {SAID}.", T0)
    close_without_llm(settings, user_id, "second", "Maya runs in the rain.",
                      T0 + timedelta(hours=1))
    close_without_llm(settings, other, "theirs", "Maya is my cousin.", T0)
    with Memory(settings, llm=maya_then_nothing()) as memory:
        done = memory.extract_pending(user_id)
        assert [(r["user_id"], r["conversation_id"], r["outcome"]) for r in done] == [
            (user_id, "first", "extracted"), (user_id, "second", "extracted")]
        assert [(e.source, e.relation, e.target, e.conversations)
                for e in memory.edges(user_id)] == [("User", "HAS_SISTER", "Maya", ["first"])]
        assert memory.extract_pending(user_id) == []  # once each
        # the other user's conversation is untouched: still waiting, nothing in its memory
        assert memory.conversation_state(other, "theirs")["awaiting_extraction"]
        assert memory.edges(other) == []


def test_a_conversation_with_no_known_model_waits_and_says_what_to_set(settings, user_id):
    through_upstream = settings.model_copy(update={"upstream_base_url": "http://127.0.0.1:9/v1"})
    # recorded by a hook: no model is named, and none is set
    state = close_without_llm(settings, user_id, "hooked", "Hello there.", T0)
    assert state["model"] is None
    with Memory(through_upstream) as memory:
        assert memory.has_llm
        [result] = memory.extract_pending(user_id)
        assert result["outcome"] == "awaiting_extraction"
        assert "set PEGASUS_LLM_MODEL" in result["why"]
        assert memory.conversation_state(user_id, "hooked")["awaiting_extraction"]
