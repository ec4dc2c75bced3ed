"""The chat model behind extraction and review: langchain's ChatOpenAI from settings."""

from __future__ import annotations

import importlib
from importlib import resources

from langchain_core.language_models import BaseChatModel

from pegasus.errors import ConfigError
from pegasus.settings import Settings, secret_text


def chat_model(settings: Settings) -> BaseChatModel:
    """ChatOpenAI for any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM …), or what the
    PEGASUS_LLM_FACTORY function returns."""
    if settings.llm_factory:
        return _from_factory(settings)
    if not settings.llm_model:
        raise ConfigError(
            "no LLM configured: set PEGASUS_LLM_MODEL (and PEGASUS_LLM_BASE_URL / "
            "PEGASUS_LLM_API_KEY for an OpenAI-compatible server), or commit extraction "
            "batches directly with `pegasus commit`"
        )
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.llm_model, base_url=settings.llm_base_url,
        api_key=secret_text(settings.llm_api_key) or "not-needed", timeout=settings.llm_timeout_s,
        max_retries=0,  # tenacity retries the whole call (pegasus.extract.extractor)
    )


def llm_problem(exc: Exception, settings: Settings) -> ConfigError | None:
    """An LLM client error that means a setting is wrong, as one line naming it; else None.
    Told apart by the OpenAI client's exception names, so no vendor SDK is imported here."""
    where = settings.llm_base_url or "the OpenAI API"
    chain, seen = [], exc
    while seen is not None and len(chain) < 8:  # langchain wraps the SDK's errors
        chain.append(type(seen).__name__)
        seen = seen.__cause__
    kind = next((k.removeprefix("OpenAI") for k in chain if k.removeprefix("OpenAI") in {
        "AuthenticationError", "PermissionDeniedError", "APIConnectionError", "APITimeoutError",
        "NotFoundError"}), "")
    if kind in {"AuthenticationError", "PermissionDeniedError"}:
        return ConfigError(f"the LLM at {where} rejected the API key: set PEGASUS_LLM_API_KEY "
                           "to a key it accepts")
    if kind in {"APIConnectionError", "APITimeoutError"}:
        return ConfigError(f"cannot reach the LLM at {where}: check PEGASUS_LLM_BASE_URL and "
                           "that the server is running")
    if kind == "NotFoundError":
        return ConfigError(f"the LLM at {where} has no model {settings.llm_model!r} (or no "
                           "chat endpoint there): check PEGASUS_LLM_MODEL and PEGASUS_LLM_BASE_URL")
    return None


def _from_factory(settings: Settings) -> BaseChatModel:
    module_name, _, attribute = (settings.llm_factory or "").partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"PEGASUS_LLM_FACTORY={settings.llm_factory!r} cannot be loaded "
                          f"(expected 'package.module:function'): {exc}") from exc
    model = factory(settings)
    if not isinstance(model, BaseChatModel):
        raise ConfigError(f"PEGASUS_LLM_FACTORY={settings.llm_factory!r} returned "
                          f"{type(model).__name__}, not a langchain chat model")
    return model


def prompt(name: str) -> str:
    """A versioned prompt file, e.g. prompt("extract_v2")."""
    return (resources.files("pegasus") / "extract" / "prompts" / f"{name}.md").read_text("utf-8")
