"""Every error Pegasus raises on purpose answers with one status, whoever shows it: the HTTP
API, the memory page and MCP take it from the error's class (pegasus.errors.http_status)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

import pegasus
from pegasus.errors import InvalidInputError, PegasusError, http_status
from pegasus.serve.auth import KeyRing
from pegasus.serve.http import EXCEPTION_HANDLERS
from pegasus.serve.page import PageRoute
from pegasus.settings import Settings

SRC = Path(pegasus.__file__).parent


def _every_error_class() -> list[type[PegasusError]]:
    """PegasusError and every subclass defined anywhere in the package."""
    for path in sorted(SRC.rglob("*.py")):
        if re.search(r"^class \w+\(\w*Error\)", path.read_text(), re.M):
            module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
            importlib.import_module(module)
    found, todo = [], [PegasusError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: c.__name__)


ERRORS = _every_error_class()


def _instance(cls: type[PegasusError]) -> PegasusError:
    try:
        return cls("what went wrong")
    except TypeError:  # AmbiguousEntityError carries its choices
        return cls("what went wrong", [])  # type: ignore[call-arg]


def _app() -> FastAPI:
    app = FastAPI(exception_handlers=EXCEPTION_HANDLERS)
    by_name = {cls.__name__: cls for cls in ERRORS}

    @app.get("/api/{name}")
    def api(name: str) -> None:
        raise _instance(by_name[name])

    page = APIRouter(route_class=PageRoute)

    @page.get("/page/{name}")
    def shown(name: str) -> None:
        raise _instance(by_name[name])

    app.include_router(page)
    app.state.keys = KeyRing({})
    app.state.memory = SimpleNamespace(settings=Settings())
    return app


def test_the_known_classes_are_found():
    names = {cls.__name__ for cls in ERRORS}
    assert {"PegasusError", "InvalidInputError", "TooLargeError", "NotFoundError",
            "CompactionError", "Neo4jUnavailableError", "PortInUseError"} <= names


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_the_api_and_the_page_answer_each_error_with_its_own_status(cls):
    with TestClient(_app()) as client:
        api = client.get(f"/api/{cls.__name__}")
        page = client.get(f"/page/{cls.__name__}")
    assert api.status_code == page.status_code == cls.status
    assert api.json() == {"error": {"message": "what went wrong", "type": cls.kind}}
    # the page words its own message where it has one a person can act on (an import into a
    # memory that is not empty says how to replace it); every other error shows the message,
    # as a sentence (its first letter capital)
    assert ("What went wrong" in page.text or cls.__name__ == "PartitionNotEmptyError")
    assert page.headers["content-type"].startswith("text/html")
    assert http_status(_instance(cls)) == (cls.status, cls.kind)


@pytest.mark.parametrize(("name", "status", "kind"), [
    ("InvalidInputError", 400, "invalid_request_error"),
    ("InvalidBatchError", 422, "invalid_request_error"),
    ("InvalidExportError", 422, "invalid_request_error"),
    ("TooLargeError", 413, "too_large_error"),
    ("NotFoundError", 404, "not_found_error"),
    ("ConversationConflictError", 409, "conflict_error"),
    ("AmbiguousEntityError", 409, "ambiguous_error"),
    ("PartitionNotEmptyError", 409, "conflict_error"),
    ("ErasureInProgressError", 409, "conflict_error"),
    ("ImportInProgressError", 409, "conflict_error"),
    ("ExtractionError", 502, "extraction_error"),
    ("Neo4jUnavailableError", 503, "unavailable_error"),
    ("PortInUseError", 503, "unavailable_error"),
    ("ConfigError", 503, "configuration_error"),
    ("MigrationError", 503, "configuration_error"),
])
def test_each_class_says_what_it_means(name, status, kind):
    cls = next(c for c in ERRORS if c.__name__ == name)
    assert (cls.status, cls.kind) == (status, kind)


def test_mcp_leads_the_message_with_the_same_kind():
    from mcp.server.mcpserver.exceptions import ToolError

    from pegasus.errors import Neo4jUnavailableError
    from pegasus.mcp_server import _tool_errors

    def down() -> None:
        raise Neo4jUnavailableError("cannot reach Neo4j")

    def bad() -> None:
        raise InvalidInputError("limit must be between 1 and 200")

    with pytest.raises(ToolError, match="^unavailable_error: cannot reach Neo4j$"):
        _tool_errors(down)()
    with pytest.raises(ToolError, match="^invalid_request_error: limit must be"):
        _tool_errors(bad)()
