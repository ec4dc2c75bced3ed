"""The extractor retries a transient LLM failure, and says so in its log."""

import logging

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from pegasus.extract.extractor import Extractor


class Flaky(GenericFakeChatModel):
    """A scripted chat model whose first call times out."""

    failures: int = 1

    def _generate(self, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise TimeoutError("the provider timed out")
        return super()._generate(*args, **kwargs)


def test_a_transient_failure_is_retried_and_logged(caplog, monkeypatch):
    monkeypatch.setattr("tenacity.nap.time.sleep", lambda _: None)
    model = Flaky(messages=iter([AIMessage(content="done")]))
    extractor = Extractor(model, max_retries=3)
    with caplog.at_level(logging.WARNING, logger="pegasus.extract.extractor"):
        answer = extractor._invoke([HumanMessage(content="hello")])
    assert answer.content == "done"
    assert model.failures == 0
    retried = [r for r in caplog.records if r.name == "pegasus.extract.extractor"]
    assert len(retried) == 1 and "TimeoutError" in retried[0].getMessage()
