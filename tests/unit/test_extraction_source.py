"""Which model extracts which conversation (design §3, "Which model extracts"), from settings."""

from __future__ import annotations

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI

from pegasus.errors import ConfigError
from pegasus.hook import extraction_notice
from pegasus.llm import MESSAGES_API, NO_MODEL, WHAT_TO_SET, chat_model, extraction_source
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
                    "upstream); conversations held over /v1/messages via http://ant.test (the "
                    "proxy's Anthropic upstream)"),
    ({**UP, **ANT, "llm_model": "gpt-x"}, "on: gpt-x via http://up.test/v1 (the proxy's "
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
    # ... which the hook's notice says as a sentence
    assert extraction_notice(f"off: {NO_MODEL}").startswith(
        "memories are not being formed: pegasus serve has no model for conversations recorded "
        "without the proxy (hooks, plugins, /v1/memory/turns): set PEGASUS_LLM_MODEL;")
    with pytest.raises(ConfigError, match="set PEGASUS_LLM_MODEL"):
        chat_model(through_upstream, None)


def test_with_both_upstreams_each_conversation_goes_to_the_api_it_was_held_over():
    """The README's serve block sets both upstreams: a conversation held over /v1/messages
    names a Claude model, which the OpenAI-compatible upstream does not serve."""
    both = settings(**UP, **ANT)
    claude = chat_model(both, MESSAGES_API + "claude-sonnet-4-5")
    assert isinstance(claude, ChatAnthropic)
    assert (claude.model, claude.anthropic_api_url) == ("claude-sonnet-4-5", "http://ant.test")
    gpt = chat_model(both, "gpt-4o-mini")
    assert isinstance(gpt, ChatOpenAI)
    assert (gpt.model_name, gpt.openai_api_base) == ("gpt-4o-mini", "http://up.test/v1")
    # only the Anthropic upstream: the same, without the mark
    assert chat_model(settings(**ANT), MESSAGES_API + "claude-x").model == "claude-x"
    # one model named for every conversation: it extracts them all, where the settings say
    fixed = chat_model(settings(**UP, **ANT, llm_model="gpt-x"), MESSAGES_API + "claude-x")
    assert isinstance(fixed, ChatOpenAI) and fixed.model_name == "gpt-x"
    assert extraction_source(both).for_model(MESSAGES_API + "claude-x").describe() == (
        "on: claude-x via http://ant.test (the proxy's Anthropic upstream)")
