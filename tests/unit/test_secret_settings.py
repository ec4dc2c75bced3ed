"""Secrets in Settings are SecretStr (issue 40): no repr, str or dump of the settings shows one,
and every use reads the real value."""

from __future__ import annotations

import json

from pegasus.serve.auth import load_keys
from pegasus.settings import Settings, secret_text
from pegasus.store import resolve_connection

SECRETS = {"neo4j_password": "pw-neo4j-4f1c", "llm_api_key": "sk-llm-9d2e",
           "upstream_api_key": "sk-up-77aa", "anthropic_upstream_api_key": "sk-ant-31bc"}
API_KEY = "key-alice-5e8f0001"


def _settings(monkeypatch) -> Settings:
    for name, value in SECRETS.items():
        monkeypatch.setenv(f"PEGASUS_{name.upper()}", value)
    monkeypatch.setenv("PEGASUS_API_KEYS", json.dumps({API_KEY: "alice"}))
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:7687")
    return Settings()


def test_no_view_of_the_settings_shows_a_secret(monkeypatch):
    settings = _settings(monkeypatch)
    views = [repr(settings), str(settings), settings.model_dump_json(),
             json.dumps(settings.model_dump(mode="json"))]
    for view in views:
        for secret in [*SECRETS.values(), API_KEY]:
            assert secret not in view
    assert "**********" in repr(settings)


def test_every_use_reads_the_real_secret(monkeypatch):
    settings = _settings(monkeypatch)
    assert {n: secret_text(getattr(settings, n)) for n in SECRETS} == SECRETS
    assert resolve_connection(settings) == ("bolt://127.0.0.1:7687", ("neo4j", "pw-neo4j-4f1c"))
    assert load_keys(settings) == {API_KEY: "alice"}
    # A copy given a plain value (model_copy does not validate) still works.
    copied = settings.model_copy(update={"api_keys": {"key-bruno-0002": "bruno"}})
    assert load_keys(copied) == {"key-bruno-0002": "bruno"}
    assert secret_text(None) is None


def test_the_llm_client_gets_the_key(monkeypatch):
    from pegasus.llm import chat_model

    settings = _settings(monkeypatch).model_copy(update={"llm_model": "gpt-test"})
    model = chat_model(settings)
    assert model.openai_api_key.get_secret_value() == "sk-llm-9d2e"


def test_a_seed_search_asks_for_at_least_one_key_per_word():
    """seed_candidates=0 asked the index for no key per word (a recall then failed on an
    empty answer): refused where the setting is read, with its name."""
    import pydantic
    import pytest

    with pytest.raises(pydantic.ValidationError, match="seed_candidates"):
        Settings(seed_candidates=0)
