"""The chat model behind extraction and review, and where it comes from (design §3,
"Which model extracts"): PEGASUS_LLM_*, else the proxy's OpenAI-compatible upstream, else its
Anthropic upstream; the model is PEGASUS_LLM_MODEL, else the one the conversation used."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from importlib import resources
from typing import Literal

from langchain_core.language_models import BaseChatModel

from pegasus.errors import ConfigError
from pegasus.settings import Settings, secret_text

# What a close that finds no LLM says, and what the person can set (one wording everywhere:
# serve's start line, /readyz, the log, the hook's notice).
WHAT_TO_SET = ("set PEGASUS_UPSTREAM_BASE_URL (and PEGASUS_UPSTREAM_API_KEY) or "
               "PEGASUS_LLM_MODEL (and PEGASUS_LLM_BASE_URL / PEGASUS_LLM_API_KEY); closed "
               "conversations wait for it and are extracted then")
# (Read after "pegasus serve has" in the hook's notice, so it is a noun phrase too.)
NO_MODEL = ("no model for conversations recorded without the proxy (hooks, plugins, "
            "/v1/memory/turns): set PEGASUS_LLM_MODEL; they wait for it and are extracted then")
# How the proxy records the model of a conversation held over /v1/messages: that model is
# Anthropic's, so with both upstreams set it is extracted through the Anthropic one.
MESSAGES_API = "anthropic:"


@dataclass(frozen=True)
class Extraction:
    """Which model extracts a conversation and through what, or why nothing can."""

    via: Literal["factory", "llm", "upstream", "anthropic", "off"]
    where: str = ""
    model: str | None = None  # None: each conversation's own model
    why: str = ""  # what is missing, when `via` is "off" or no model is known
    # With both upstreams and no fixed model: what extracts conversations held over
    # /v1/messages (their model is Anthropic's, which the OpenAI-compatible upstream lacks).
    messages: Extraction | None = None

    @property
    def on(self) -> bool:
        return self.via != "off"

    def describe(self) -> str:
        """"on: <model> via <where>" or "off: <why and what to set>"."""
        if not self.on:
            return f"off: {self.why}"
        model = self.model or "the model each conversation used"
        said = f"on: {model} via {self.where}"
        if self.messages is not None:
            said += f"; conversations held over /v1/messages via {self.messages.where}"
        return said

    def for_model(self, used: str | None) -> Extraction:
        """This source for one conversation, which used model `used` (None: not known;
        `anthropic:<model>` when held over /v1/messages)."""
        if used and used.startswith(MESSAGES_API):
            used = used.removeprefix(MESSAGES_API)
            if self.messages is not None:
                return self.messages.for_model(used)
        if not self.on or self.model or self.via == "factory":
            return replace(self, messages=None)
        if used:
            return replace(self, model=used, messages=None)
        return Extraction("off", why=NO_MODEL)


def hooks_extraction(source: Extraction, default_model: str | None) -> str:
    """What extracts conversations recorded without the proxy (hooks, plugins,
    /v1/memory/turns), in the words the start line, /readyz and `pegasus doctor` share:
    "on: …" or "off: <why>" (design §8, "Which model extracts")."""
    if not source.on:
        return f"off: {source.why}"
    if source.model or source.via == "factory":
        return source.describe()
    if default_model:
        return (f"on: the model each user last used through the proxy, else {default_model} "
                f"(the upstream's first listed model) via {source.where}")
    return ("on for users who used the proxy (the model they last used), off for the others: "
            "the upstream lists no model; set PEGASUS_LLM_MODEL")


def first_listed_model(answer: dict) -> str | None:
    """The first model id of an OpenAI- or Anthropic-shaped `GET …/models` answer."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if isinstance(data, list):
        for item in data:
            if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip():
                return item["id"].strip()[:200]
    return None


def extraction_source(settings: Settings) -> Extraction:
    """Where extraction runs with these settings (design §3, "Which model extracts")."""
    if settings.llm_factory:
        return Extraction("factory", f"PEGASUS_LLM_FACTORY={settings.llm_factory}",
                          settings.llm_model)
    if settings.llm_base_url or settings.llm_api_key:
        return Extraction("llm", settings.llm_base_url or "the OpenAI API", settings.llm_model)
    anthropic = (Extraction("anthropic", f"{settings.anthropic_upstream_base_url} (the proxy's "
                            "Anthropic upstream)", settings.llm_model)
                 if settings.anthropic_upstream_base_url else None)
    if settings.upstream_base_url:
        return Extraction("upstream", f"{settings.upstream_base_url} (the proxy's upstream)",
                          settings.llm_model,
                          messages=anthropic if not settings.llm_model else None)
    if anthropic is not None:
        return anthropic
    if settings.llm_model:
        return Extraction("llm", "the OpenAI API", settings.llm_model)
    return Extraction("off", why=f"no LLM to extract memories with: {WHAT_TO_SET}")


def chat_model(settings: Settings, used: str | None = None) -> BaseChatModel:
    """The chat model that extracts a conversation which used model `used`: ChatOpenAI for
    an OpenAI-compatible endpoint (OpenAI, Ollama, vLLM …), ChatAnthropic for the Anthropic
    upstream, or what the PEGASUS_LLM_FACTORY function returns."""
    source = extraction_source(settings).for_model(used)
    if source.via == "factory":
        return _from_factory(settings)
    if not source.on:
        raise ConfigError(f"no LLM configured: {source.why}")
    if source.via == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(
            model=source.model, base_url=settings.anthropic_upstream_base_url,
            api_key=secret_text(settings.anthropic_upstream_api_key) or "not-needed",
            timeout=settings.llm_timeout_s, max_tokens=settings.llm_max_tokens,
            max_retries=0)  # tenacity retries the whole call (pegasus.extract.extractor)
    from langchain_openai import ChatOpenAI

    base_url, api_key = ((settings.upstream_base_url, settings.upstream_api_key)
                         if source.via == "upstream"
                         else (settings.llm_base_url, settings.llm_api_key))
    return ChatOpenAI(
        model=source.model, base_url=base_url, api_key=secret_text(api_key) or "not-needed",
        timeout=settings.llm_timeout_s,
        max_retries=0,  # tenacity retries the whole call (pegasus.extract.extractor)
    )


def llm_problem(exc: Exception, settings: Settings, used: str | None = None
                ) -> ConfigError | None:
    """An LLM client error that means a setting is wrong, as one line naming it; else None.
    Told apart by the OpenAI and Anthropic clients' exception names (the same), so no vendor
    SDK is imported here."""
    source = extraction_source(settings).for_model(used)
    where = source.where.split(" (")[0] or "the OpenAI API"
    url, key, model_setting = {
        "upstream": ("PEGASUS_UPSTREAM_BASE_URL", "PEGASUS_UPSTREAM_API_KEY",
                     "PEGASUS_LLM_MODEL (else the conversation's model)"),
        "anthropic": ("PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL",
                      "PEGASUS_ANTHROPIC_UPSTREAM_API_KEY",
                      "PEGASUS_LLM_MODEL (else the conversation's model)"),
    }.get(source.via, ("PEGASUS_LLM_BASE_URL", "PEGASUS_LLM_API_KEY", "PEGASUS_LLM_MODEL"))
    chain: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 8:  # langchain wraps the SDK's errors
        chain.append(type(seen).__name__)
        seen = seen.__cause__
    kind = next((k.removeprefix("OpenAI") for k in chain if k.removeprefix("OpenAI") in {
        "AuthenticationError", "PermissionDeniedError", "APIConnectionError", "APITimeoutError",
        "NotFoundError"}), "")
    if kind in {"AuthenticationError", "PermissionDeniedError"}:
        return ConfigError(f"the LLM at {where} rejected the API key: set {key} "
                           "to a key it accepts")
    if kind in {"APIConnectionError", "APITimeoutError"}:
        return ConfigError(f"cannot reach the LLM at {where}: check {url} and "
                           "that the server is running")
    if kind == "NotFoundError":
        return ConfigError(f"the LLM at {where} has no model {source.model!r} (or no "
                           f"chat endpoint there): check {model_setting} and {url}")
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
