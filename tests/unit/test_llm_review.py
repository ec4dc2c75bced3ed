import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from pegasus.errors import ExtractionError
from pegasus.merge.llm_review import LLMReviewer
from pegasus.merge.review import CandidateContext
from pegasus.merge.rules import StoredEntity
from pegasus.models.batch import CleanEntity

PROPOSED = CleanEntity(name="Sarah Kim", kind="PERSON", aliases=[], properties={}, confidence=0.9)
CANDIDATES = [CandidateContext(StoredEntity("id-a", "Sarah", "PERSON"), ["Bill -[HAS_BOSS]-> Sarah"]),
              CandidateContext(StoredEntity("id-b", "Sara", "PERSON"))]


def reviewer(text):
    return LLMReviewer(GenericFakeChatModel(messages=iter([AIMessage(content=text)])))


def test_confidences_map_to_candidate_ids_and_bad_indices_are_ignored():
    answer = ('Here you go:\n```json\n{"candidates": [{"index": 0, "confidence": 0.93, '
              '"reason": "same boss"}, {"index": 1, "confidence": 0.2}, '
              '{"index": 7, "confidence": 1.0}]}\n```')
    assert reviewer(answer).review(PROPOSED, CANDIDATES, "my boss Sarah Kim") == {
        "id-a": 0.93, "id-b": 0.2}


@pytest.mark.parametrize("answer", ["I think they are the same person.",
                                    '{"candidates": [{"index": 0, "confidence": 1.7}]}',
                                    '{"candidates": "yes"}'])
def test_an_unusable_answer_is_a_clear_error(answer):
    with pytest.raises(ExtractionError, match="reviewer"):
        reviewer(answer).review(PROPOSED, CANDIDATES, "")
