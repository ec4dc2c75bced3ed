"""`pegasus doctor`: every part a user depends on, checked for real, with the one thing to do
about each problem: Neo4j and its schema, the embedding model, the LLM (a one-token call),
each upstream, `pegasus serve`, and each coding agent's Pegasus part (`pegasus connect`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from pegasus import cypher
from pegasus.operations.checks import Check, ok, problem, skipped
from pegasus.settings import Settings, secret_text


def checks(settings: Settings, serve_url: str, home: Path, codex_home: Path) -> Iterator[Check]:
    """Each check in turn; one that cannot run says why instead of stopping the others."""
    try:
        database, latest = _neo4j(settings)
    except Exception as exc:  # a check that fails is the problem it reports
        database, latest = [problem("Neo4j", _one_line(exc))], None
    yield from database
    yield _guarded("embedding model", lambda: _embedding(settings))
    yield _guarded("LLM (extraction)", lambda: _llm(settings, latest))
    yield _guarded("hook conversations", lambda: _hook_conversations(settings))
    yield from _upstreams(settings)
    yield _guarded("pegasus serve", lambda: _serve(serve_url))
    from pegasus.connect import AGENTS, Places, check

    places = Places.from_environment({**os.environ, "HOME": str(home),
                                      "CODEX_HOME": str(codex_home)})
    for agent in AGENTS.values():
        yield check(agent, places)


def _guarded(part: str, run: Callable[[], Check]) -> Check:
    try:
        return run()
    except Exception as exc:  # a check that fails is the problem it reports
        return problem(part, _one_line(exc))


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _neo4j(settings: Settings) -> tuple[list[Check], str | None]:
    """Neo4j answers, the schema is migrated; and the model the latest recorded conversation
    used (what the LLM check calls when no model is set)."""
    from pegasus.store import Store

    store = Store(settings)
    try:
        store.verify()
        applied = {r["version"]: r["checksum"] for r in store.read("read/applied_migrations")}
        pending = cypher.check_applied(applied, cypher.migrations())
        latest = store.read("read/latest_model")[0]["model"] if not pending else None
    finally:
        store.close()
    schema = (ok("schema", f"{len(applied)} migrations applied") if not pending else
              problem("schema", f"{len(pending)} migrations pending: run `pegasus migrate`"))
    return [ok("Neo4j", f"{store.uri} answers"), schema], latest


def _embedding(settings: Settings) -> Check:
    from pegasus.embedding.embed import Embedder

    vectors = Embedder(settings.embedding_model, settings.embedding_dimensions).embed(
        ["pegasus doctor"])
    return ok("embedding model", f"{settings.embedding_model} loads, {vectors.shape[1]}-d "
                                 "vectors")


def _llm(settings: Settings, latest: str | None) -> Check:
    """A real one-token call to the model that extracts; with no fixed model, the model the
    latest recorded conversation used."""
    from pegasus.llm import chat_model, extraction_source, llm_problem

    source = extraction_source(settings)
    if not source.on:
        return problem("LLM (extraction)", source.why)
    used = latest if source.model is None and source.via != "factory" else None
    if source.model is None and source.via != "factory" and used is None:
        return skipped("LLM (extraction)", f"{source.describe()}; no conversation has named "
                       "a model yet: set PEGASUS_LLM_MODEL to test one here")
    try:
        chat_model(settings, used).bind(max_tokens=1).invoke("Say OK.")
    except Exception as exc:
        return problem("LLM (extraction)", _one_line(llm_problem(exc, settings, used) or exc))
    return ok("LLM (extraction)", source.for_model(used).describe() + " (answered a call)")


def _hook_conversations(settings: Settings) -> Check:
    """What extracts conversations recorded without the proxy (hooks, plugins), as serve says
    it at start and in /readyz: with no fixed model, the upstream's first listed model."""
    from pegasus.llm import extraction_source, first_listed_model, hooks_extraction

    source = extraction_source(settings)
    default = None
    if source.on and not source.model and source.via in ("upstream", "anthropic"):
        openai = source.via == "upstream"
        base = settings.upstream_base_url if openai else settings.anthropic_upstream_base_url
        key = settings.upstream_api_key if openai else settings.anthropic_upstream_api_key
        headers = {"anthropic-version": "2023-06-01"}
        if key:
            headers.update({"Authorization": f"Bearer {secret_text(key)}"} if openai
                           else {"x-api-key": secret_text(key) or ""})
        url = (base or "").rstrip("/") + ("/models" if openai else "/v1/models")
        try:  # bounded: an upstream's list is read up to 1 MiB
            with httpx.stream("GET", url, headers=headers, timeout=10) as answer:
                body = b""
                for chunk in answer.iter_bytes():
                    body += chunk
                    if len(body) > 1 << 20:
                        raise ValueError("the model list is too long")
            default = first_listed_model(json.loads(body))
        except (httpx.HTTPError, ValueError):
            default = None
    said = hooks_extraction(source, default)
    return (ok if said.startswith("on") else problem)("hook conversations", said)


def _upstreams(settings: Settings) -> Iterator[Check]:
    if settings.upstream_base_url:
        headers = ({"Authorization": f"Bearer {secret_text(settings.upstream_api_key)}"}
                   if settings.upstream_api_key else {})
        yield _reach("upstream (OpenAI API)", settings.upstream_base_url.rstrip("/") + "/models",
                     headers, "PEGASUS_UPSTREAM_BASE_URL", "PEGASUS_UPSTREAM_API_KEY")
    else:
        yield skipped("upstream (OpenAI API)", "not set (PEGASUS_UPSTREAM_BASE_URL): "
                      "/v1/chat/completions and /v1/responses answer 503")
    if settings.anthropic_upstream_base_url:
        headers = {"anthropic-version": "2023-06-01"}
        if settings.anthropic_upstream_api_key:
            headers["x-api-key"] = secret_text(settings.anthropic_upstream_api_key) or ""
        yield _reach("upstream (Anthropic API)",
                     settings.anthropic_upstream_base_url.rstrip("/") + "/v1/models", headers,
                     "PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL",
                     "PEGASUS_ANTHROPIC_UPSTREAM_API_KEY")
    else:
        yield skipped("upstream (Anthropic API)", "not set (PEGASUS_ANTHROPIC_UPSTREAM_BASE_URL): "
                      "/v1/messages answers 503")


def _reach(part: str, url: str, headers: dict[str, str], url_setting: str,
           key_setting: str) -> Check:
    try:
        answer = httpx.get(url, headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        return problem(part, f"cannot reach {url} ({_one_line(exc)}): check {url_setting}")
    if answer.status_code in (401, 403):
        return problem(part, f"{url} refused the key ({answer.status_code}): set {key_setting}")
    if answer.status_code != 200:
        return problem(part, f"{url} answered {answer.status_code}: check {url_setting}")
    return ok(part, f"{url} answers")


def _serve(url: str) -> Check:
    try:
        answer = httpx.get(url.rstrip("/") + "/readyz", timeout=10)
        body = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        return problem("pegasus serve", f"nothing answers at {url} ({_one_line(exc)}): start "
                       "`pegasus serve`, or set PEGASUS_URL to where it runs")
    if answer.status_code != 200:
        wrong = {k: v for k, v in body.items() if k not in ("status", "extraction") and v != "ok"}
        return problem("pegasus serve", f"{url} is not ready: {json.dumps(wrong)}")
    return ok("pegasus serve", f"{url} is ready; extraction {body.get('extraction', '?')}")
