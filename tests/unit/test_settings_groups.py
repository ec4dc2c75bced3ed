"""Settings in groups (docs/decisions.md, "Settings in groups"): each field is declared in
exactly one group, `Settings` is all of them, and every name that set a value before the groups
still sets it: `PEGASUS_<FIELD>` and the `NEO4J_*` aliases in the environment and in `.env`,
and the field's name as a keyword. Unknown names are ignored, as they always were."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any, Literal

import pydantic
import pytest
from pydantic import AliasChoices, SecretStr

from pegasus.settings import GROUPS, Group, Settings, secret_text
from pegasus.vocab import STABILITIES

FIELDS = sorted(Settings.model_fields)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    """No PEGASUS_* or NEO4J_* of the machine's, and no `.env` but the test's own."""
    import os

    for name in list(os.environ):
        if name.startswith(("PEGASUS_", "NEO4J_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def env_names(name: str) -> list[str]:
    """Every environment name of a field: its aliases when it has them, else PEGASUS_<NAME>."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    assert alias is None, name
    return [f"PEGASUS_{name.upper()}"]


def other_value(name: str) -> Any:
    """A value the field accepts that is not its default."""
    field = Settings.model_fields[name]
    default = field.get_default(call_default_factory=True)
    kind, args = field.annotation, typing.get_args(field.annotation)
    if kind is bool:
        return not default
    if kind is int:
        return default + 1
    if kind is float:
        return default + 0.5
    if typing.get_origin(kind) is Literal:
        return next(a for a in args if a != default)
    if kind is Path or Path in args:
        return Path("/tmp/pegasus-settings") / name
    if name == "decay_lambdas":
        return {s: 0.5 for s in STABILITIES}
    if name == "api_keys":
        return {SecretStr("key-of-alice"): "alice"}
    if SecretStr in args:
        return SecretStr(f"secret-{name}")
    if kind is str or str in args:
        return f"http://{name}.example/v1" if name.endswith("_url") else f"text-{name}"
    raise AssertionError(f"no test value for {name}: {kind}")  # a new type: teach the test


def as_text(value: Any) -> str:
    """How the value is written in the environment or a `.env` file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return json.dumps({secret_text(k): v for k, v in value.items()})
    return str(value)


def plain(value: Any) -> Any:
    """A value with its secrets as text, to compare."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {secret_text(k): v for k, v in value.items()}
    return value


def test_every_field_is_in_exactly_one_group():
    owners: dict[str, list[str]] = {}
    for group in GROUPS:
        for name in group.model_fields:
            owners.setdefault(name, []).append(group.__name__)
    assert {name: found for name, found in owners.items() if len(found) > 1} == {}
    assert sorted(owners) == FIELDS  # Settings declares no field outside a group
    assert len(FIELDS) == 133
    # each group is a base of Settings and a property of it
    assert [g for g in Settings.__mro__ if g in GROUPS] == list(GROUPS)
    views = {name: getattr(Settings(), name) for name, v in vars(Settings).items()
             if isinstance(v, property)}
    assert sorted(type(v).__name__ for v in views.values()) == sorted(g.__name__ for g in GROUPS)


def test_a_group_is_a_frozen_copy_of_its_fields_as_they_are_now():
    settings = Settings(budget_words=120, neo4j_uri="bolt://db:7687")
    recall = settings.recall
    assert (recall.budget_words, settings.neo4j.neo4j_uri) == (120, "bolt://db:7687")
    assert set(type(recall).model_fields) == set(type(recall).model_dump(recall))
    assert not hasattr(recall, "api_keys")  # a stage given recall's group sees recall only
    with pytest.raises(pydantic.ValidationError):
        recall.budget_words = 5  # type: ignore[misc]
    # a copy with other values (tests, benchmarks) shows them in its groups
    copied = settings.model_copy(update={"budget_words": 90, "rank_fusion": "rrf"})
    assert (copied.recall.budget_words, copied.recall.rank_fusion) == (90, "rrf")
    assert settings.recall.budget_words == 120
    # every group holds exactly the values of Settings' own fields
    for group in GROUPS:
        view = settings.group(group)
        assert {n: plain(getattr(view, n)) for n in group.model_fields} == {
            n: plain(getattr(settings, n)) for n in group.model_fields}


def test_the_defaults_are_those_of_the_design():
    """A few defaults the design names, read through their groups."""
    s = Settings()
    assert (s.recall.budget_words, s.recall.rank_keywords, s.recall.rank_together) == (300, 0.45, 0.4)
    assert (s.decay.decay_lambdas["stable"], s.write.reinforce_bump) == (0.005, 15.0)
    assert (s.neo4j.neo4j_user, s.serve.serve_port, s.limits.max_batch_relations) == (
        "neo4j", 8080, 20_000)


@pytest.mark.parametrize("name", FIELDS)
def test_every_environment_name_still_sets_its_field(name, monkeypatch):
    value = other_value(name)
    assert plain(value) != plain(Settings.model_fields[name].get_default(
        call_default_factory=True))
    for env in env_names(name):
        monkeypatch.setenv(env, as_text(value))
        settings = Settings()
        assert plain(getattr(settings, name)) == plain(value), env
        owner = next(g for g in GROUPS if name in g.model_fields)
        assert plain(getattr(settings.group(owner), name)) == plain(value), env
        monkeypatch.delenv(env)


def test_every_name_in_a_dot_env_file_still_sets_its_field(tmp_path):
    values = {name: other_value(name) for name in FIELDS}
    (tmp_path / ".env").write_text("".join(
        f"{env_names(name)[-1]}={as_text(value)}\n" for name, value in values.items()))
    settings = Settings()
    assert {n: plain(getattr(settings, n)) for n in FIELDS} == {
        n: plain(v) for n, v in values.items()}


def test_every_field_is_still_a_keyword():
    values = {name: other_value(name) for name in FIELDS}
    settings = Settings(**values)
    assert {n: plain(getattr(settings, n)) for n in FIELDS} == {
        n: plain(v) for n, v in values.items()}


def test_unknown_names_are_ignored_as_before(monkeypatch, tmp_path):
    monkeypatch.setenv("PEGASUS_NOT_A_SETTING", "1")
    # a group's name is no setting: its fields have their own names
    monkeypatch.setenv("PEGASUS_RECALL", json.dumps({"budget_words": 5}))
    monkeypatch.setenv("PEGASUS_RECALL__BUDGET_WORDS", "5")
    (tmp_path / ".env").write_text("PEGASUS_ALSO_NOT_ONE=2\nBUDGET_WORDS=7\n")
    settings = Settings(not_a_setting=3, recall={"budget_words": 9})
    assert settings.budget_words == 300
    assert not hasattr(settings, "not_a_setting")
    assert settings.model_dump() == Settings().model_dump()


@pytest.mark.parametrize(("env", "text", "field"), [
    ("PEGASUS_LLM_BASE_URL", "localhost:11434/v1", "llm_base_url"),
    ("PEGASUS_UPSTREAM_BASE_URL", "localhost:11434/v1", "upstream_base_url"),
    ("PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL", "api.anthropic.com", "anthropic_upstream_base_url"),
    ("PEGASUS_DECAY_LAMBDAS", '{"stable": 0.1}', "decay_lambdas"),
    ("PEGASUS_FANOUT", "0", "fanout"),
])
def test_a_value_refused_before_is_refused_still(env, text, field, monkeypatch):
    monkeypatch.setenv(env, text)
    with pytest.raises(pydantic.ValidationError, match=field):
        Settings()


def test_base_urls_are_still_stripped(monkeypatch):
    monkeypatch.setenv("PEGASUS_UPSTREAM_BASE_URL", "  http://localhost:11434/v1 ")
    monkeypatch.setenv("PEGASUS_LLM_BASE_URL", "https://api.example/v1 ")
    settings = Settings()
    assert (settings.upstream_base_url, settings.llm_base_url) == (
        "http://localhost:11434/v1", "https://api.example/v1")


def test_a_group_alone_validates_as_settings_do():
    from pegasus.settings import RecallSettings

    assert issubclass(RecallSettings, Group)
    assert RecallSettings(budget_words=200).budget_words == 200
    with pytest.raises(pydantic.ValidationError, match="seed_candidates"):
        RecallSettings(seed_candidates=0)


def test_the_local_servers_java_options_must_split_like_a_shell_line():
    from pydantic import ValidationError

    assert Settings(neo4j_java_options="-XX:TieredStopAtLevel=1 -Dx='a b'").local \
        .neo4j_java_options == "-XX:TieredStopAtLevel=1 -Dx='a b'"
    with pytest.raises(ValidationError, match="cannot be split like a shell line"):
        Settings(neo4j_java_options="-Dx='unclosed")
