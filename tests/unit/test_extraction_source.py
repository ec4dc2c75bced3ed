"""Which model extracts which conversation (design §3, "Which model extracts"), from settings."""

from __future__ import annotations

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI

from pegasus.errors import ConfigError
from pegasus.llm import NO_MODEL, WHAT_TO_SET, chat_model, extraction_source
from pegasus.settings import Settings

UP = {"upstream_base_url": "http://up.test/v1", "upstream_api_key": "sk-up"}
ANT = {"anthropic_upstream_base_url": "http://ant.test", "anthropic_upstream_api_key": "sk-ant"}


def settings(**values) -> Settings:
    blank = {f: None for f in ("llm_model", "llm_factory", "llm_base_url", "llm_api_key",
                               "upstream_base_url", "upstream_api_key",
                               "anthropic_upstream_base_url", "anthropic_upstream_api_key")}
    return Settings.model_construct(**{**Settings().model_dump(), **blank, **values})


@pytest.mark.parametrize("values, said", [
    ({}, f"off: no LLM to extract memories with: {WHAT_TO_SET}"),
    (UP, "on: the model each conversation used via http://up.test/v1 (the proxy's upstream)"),
    ({**UP, "llm_model": "gpt-x"}, "on: gpt-x via http://up.test/v1 (the proxy's upstream)"),
    (ANT, "on: the model each conversation used via http://ant.test (the proxy's Anthropic "
          "upstream)"),
    ({**UP, **ANT}, "on: the model each conversation used via http://up.test/v1 (the proxy's "
                    "upstream)"),
    ({**UP, "llm_model": "m", "llm_base_url": "http://llm.test/v1"}, "on: m via http://llm.test/v1"),
    ({"llm_model": "gpt-x"}, "on: gpt-x via the OpenAI API"),
    ({"llm_factory": "a.b:c"}, "on: the model each conversation used via "
                               "PEGASUS_LLM_FACTORY=a.b:c"),
])
def test_the_source_says_what_extracts(values, said):
    assert extraction_source(settings(**values)).describe() == said


def test_each_conversation_is_extracted_by_its_own_model_unless_one_is_set():
    through_upstream = settings(**UP)
    model = chat_model(through_upstream, "gpt-4o-mini")
    assert isinstance(model, ChatOpenAI)
    assert (model.model_name, model.openai_api_base, model.openai_api_key.get_secret_value()) == (
        "gpt-4o-mini", "http://up.test/v1", "sk-up")
    assert chat_model(settings(**UP, llm_model="gpt-x"), "gpt-4o-mini").model_name == "gpt-x"
    claude = chat_model(settings(**ANT), "claude-sonnet-4-5")
    assert isinstance(claude, ChatAnthropic)
    assert (claude.model, claude.anthropic_api_url, claude.anthropic_api_key.get_secret_value()
            ) == ("claude-sonnet-4-5", "http://ant.test", "sk-ant")
    # a conversation recorded by a hook names no model: it waits, and says what to set
    assert extraction_source(through_upstream).for_model(None).describe() == f"off: {NO_MODEL}"
    with pytest.raises(ConfigError, match="set PEGASUS_LLM_MODEL"):
        chat_model(through_upstream, None)
