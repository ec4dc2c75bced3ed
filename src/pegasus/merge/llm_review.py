"""The LLM merge reviewer (design §5): a confidence per candidate, as JSON, range-checked."""

from __future__ import annotations

import json
import re

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from pegasus.errors import ExtractionError
from pegasus.llm import prompt
from pegasus.merge.review import CandidateContext
from pegasus.models.batch import CleanEntity


class CandidateVerdict(BaseModel):
    index: int
    confidence: float = Field(ge=0.0, le=1.0)
    reason: str = ""


class ReviewResponse(BaseModel):
    """The reviewer's answer (prompts/review_v1.md)."""

    candidates: list[CandidateVerdict]


class LLMReviewer:
    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    def review(self, proposed: CleanEntity, candidates: list[CandidateContext],
               conversation: str) -> dict[str, float]:
        listing = "\n".join(
            f"[{i}] {c.entity.name} ({c.entity.kind}); aliases: "
            f"{', '.join(c.entity.aliases) or '-'}"
            + "".join(f"\n    {line}" for line in c.neighbourhood)
            for i, c in enumerate(candidates)
        )
        human = (f"NEW ENTITY: {proposed.name} ({proposed.kind}); aliases: "
                 f"{', '.join(proposed.aliases) or '-'}\n\nCONVERSATION (user's words)\n"
                 f"{conversation[:8000]}\n\nCANDIDATES\n{listing}")
        reply = self.model.invoke([SystemMessage(prompt("review_v1")), HumanMessage(human)])
        text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        found = re.search(r"\{.*\}", text, re.S)
        try:
            parsed = ReviewResponse.model_validate_json(found[0] if found else text)
        except ValidationError as exc:
            raise ExtractionError(f"the merge reviewer's answer is not valid: {exc}") from exc
        scores: dict[str, float] = {}
        for verdict in parsed.candidates:
            if 0 <= verdict.index < len(candidates):  # an index out of range is ignored
                entity_id = candidates[verdict.index].entity.id
                scores[entity_id] = max(scores.get(entity_id, 0.0), verdict.confidence)
        return scores
