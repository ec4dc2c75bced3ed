"""The scripted extraction model behind the real `pegasus serve` of the Opencode e2e test,
loaded by the server through PEGASUS_LLM_FACTORY=tests.e2e.opencode_llm:extractor."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from tests.helpers import call, scripted_model

SAID = "my sister Maya is training for the Oslo marathon in June"


def extractor(settings):
    """Extracts the first Opencode conversation: User -[HAS_SISTER]-> Maya."""
    return scripted_model(
        AIMessage(content="", tool_calls=[
            call("record_entity", 1, name="Maya", kind="PERSON", confidence=0.9),
            call("record_relation", 2, source="User", relation="HAS_SISTER", target="Maya",
                 confidence=0.9, stability="stable", cardinality="one_to_many", snippet=SAID)]),
        AIMessage(content="", tool_calls=[call("finish", 3)]),
    )
