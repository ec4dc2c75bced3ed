"""A scripted extraction model that takes minutes to answer, loaded by a real `pegasus serve`
through PEGASUS_LLM_FACTORY=tests.e2e.slow_llm:slow: an LLM call under way when the server is
told to stop. It touches the file PEGASUS_TEST_LLM_STARTED names when it is called."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatResult

from tests.helpers import call


class SlowModel(GenericFakeChatModel):
    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        Path(os.environ["PEGASUS_TEST_LLM_STARTED"]).touch()
        time.sleep(600)
        return super()._generate(*args, **kwargs)


def slow(settings) -> SlowModel:
    return SlowModel(messages=iter([AIMessage(content="", tool_calls=[call("finish", 1)])]))
