"""The memory page at `/`: a person signs in with their API key and sees, corrects, forgets,
exports and imports their memory (design §10, §11) in a browser.

Server-rendered (Jinja2, autoescape on: every stored text is shown as text), its assets in the
package, no inline script or style, so the Content-Security-Policy below holds. Every route
acts for the signed-in user only and calls the same `Memory` methods as the HTTP API and MCP;
an id of another user's memory or entity is not found (404). Every change is a POST with the
session's CSRF token, refused (403) without it or from another site.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Coroutine
from datetime import date, datetime, timedelta
from importlib.resources import files
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Depends, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile as StarletteUploadFile

from pegasus.errors import (
    AmbiguousEntityError,
    InvalidInputError,
    NotFoundError,
    PegasusError,
    http_status,
)
from pegasus.memory import Memory
from pegasus.models.views import MemoryEdge
from pegasus.page.picture import neighbourhood
from pegasus.serve.session import (
    COOKIE,
    Session,
    Sessions,
    clear_cookie,
    csrf_matches,
    same_origin,
    set_cookie,
)

PAGE_SIZE = 50
TIMELINE_SIZE = 200
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# The words a person reads for each stored state (the issue's: active, faded, …).
STATE_WORDS = {"current": "active", "dormant": "faded", "superseded": "superseded",
               "expired": "expired", "retracted": "retracted"}
STATIC = {"page.css": "text/css; charset=utf-8", "page.js": "text/javascript; charset=utf-8"}

_environment = jinja2.Environment(loader=jinja2.PackageLoader("pegasus.page", "templates"),
                                  autoescape=True, undefined=jinja2.StrictUndefined)
_environment.filters["day"] = lambda iso: (iso or "")[:10]
_environment.filters["strength"] = lambda s: "–" if s is None else f"{s:.0f}"
_environment.globals["state_words"] = STATE_WORDS
templates = Jinja2Templates(env=_environment)


class SignInNeeded(Exception):
    """No valid session cookie: the person is sent to the sign-in form."""


class Refused(Exception):
    """A change without this session's CSRF token, or sent by another site."""


def _status(exc: PegasusError) -> int:
    """The status the API answers the same error with (pegasus.errors.http_status)."""
    return http_status(exc)[0]


class PageRoute(APIRoute):
    """Every page response carries the security headers; errors come back as pages."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInNeeded:
                response = RedirectResponse("/", status_code=303)
            except Refused:
                response = _error(request, 403, "This change did not come from your memory "
                                  "page (its form token is missing or old). Reload the page "
                                  "and try again.")
            except PegasusError as exc:
                response = _error(request, _status(exc), str(exc), exc)
            except RequestValidationError:
                response = _error(request, 422, "That request is not one this page sends.")
            response.headers.update(SECURITY_HEADERS)
            return response

        return page_handler


router = APIRouter(route_class=PageRoute, include_in_schema=False)


def _sessions(request: Request) -> Sessions:
    state = request.app.state
    if getattr(state, "page_sessions", None) is None:
        state.page_sessions = Sessions(state.keys, state.memory.settings.page_session_h * 3600)
    return state.page_sessions


def _session(request: Request) -> Session:
    session = _sessions(request).check(request.cookies.get(COOKIE))
    if session is None:
        raise SignInNeeded
    return session


async def _change(request: Request, session: Annotated[Session, Depends(_session)],
                  csrf: Annotated[str, Form()] = "") -> Session:
    """The session of a change: sent from the page itself, with the session's token."""
    if not same_origin(request) or not csrf_matches(session, csrf):
        raise Refused
    return session


Signed = Annotated[Session, Depends(_session)]
Change = Annotated[Session, Depends(_change)]


def _memory(request: Request) -> Memory:
    return request.app.state.memory


def _render(request: Request, name: str, session: Session | None, code: int = 200,
            **context: Any) -> Response:
    return templates.TemplateResponse(request, name, {"session": session, **context},
                                      status_code=code)


def _error(request: Request, status: int, message: str, exc: Exception | None = None
           ) -> Response:
    session = _sessions(request).check(request.cookies.get(COOKIE))
    choices = exc.choices if isinstance(exc, AmbiguousEntityError) else []
    return _render(request, "error.html", session, status, status=status, message=message,
                   choices=choices)


def _result(request: Request, session: Session, title: str, report: Any,
            links: list[tuple[str, str]] | None = None, **extra: Any) -> Response:
    """What a change did, as the report its function returned."""
    shown = report.model_dump(exclude_defaults=True) if hasattr(report, "model_dump") else {}
    return _render(request, "result.html", session, title=title, report=shown,
                   links=links or [("/memories", "Back to your memories")], **extra)


# --- signing in and out ------------------------------------------------------------------


@router.get("/")
async def home(request: Request) -> Response:
    if _sessions(request).check(request.cookies.get(COOKIE)) is not None:
        return RedirectResponse("/memories", status_code=303)
    return _render(request, "sign_in.html", None, problem=None)


@router.post("/sign-in")
async def sign_in(request: Request, key: Annotated[str, Form(max_length=1000)] = "") -> Response:
    if not same_origin(request):
        raise Refused
    if request.app.state.keys.user_for(key) is None:
        return _render(request, "sign_in.html", None, 401,
                       problem="That key is not one this server knows.")
    sessions = _sessions(request)
    response = RedirectResponse("/memories", status_code=303)
    set_cookie(response, sessions.issue(key), request, sessions.lifetime_s)
    return response


@router.post("/sign-out")
async def sign_out(request: Request, session: Change) -> Response:
    response = RedirectResponse("/", status_code=303)
    clear_cookie(response, request)
    return response


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC:
        raise NotFoundError(f"no file {name!r}")
    body = (files("pegasus.page") / "static" / name).read_bytes()
    return Response(body, media_type=STATIC[name])


# --- seeing ---------------------------------------------------------------------------------


def _day(value: str, what: str) -> date | None:
    if not value.strip():
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError as exc:
        raise InvalidInputError(f"{what} must be a day like 2026-03-01, not {value!r}") from exc


def _instant(day: date | None) -> datetime | None:
    return None if day is None else datetime(day.year, day.month, day.day)


@router.get("/memories")
async def list_memories(request: Request, session: Signed, about: str = "", state: str = "all",
                        said_from: str = "", said_until: str = "", page: int = 1) -> Response:
    if state not in ("all", *STATE_WORDS) or not 1 <= page <= 10**6:
        raise InvalidInputError("not a filter this page offers")
    since, until = _day(said_from, "From"), _day(said_until, "Until")
    offset = (page - 1) * PAGE_SIZE
    found = await run_in_threadpool(
        _memory(request).memories, session.user, about.strip() or None, state, PAGE_SIZE + 1,
        offset, None, True, _instant(since),
        _instant(until + timedelta(days=1)) if until and until < date.max else None)
    filters = {"about": about, "state": state, "said_from": said_from, "said_until": said_until}
    return _render(request, "memories.html", session, memories=found[:PAGE_SIZE], page=page,
                   more=len(found) > PAGE_SIZE, filters=filters)


@router.get("/memories/{memory_id}")
async def one_memory(request: Request, session: Signed, memory_id: str) -> Response:
    story = await run_in_threadpool(_memory(request).memory, session.user, memory_id)
    return _render(request, "memory.html", session, story=story, edge=story.memory)


@router.get("/entities/{entity_id}")
async def entity(request: Request, session: Signed, entity_id: str) -> Response:
    memory = _memory(request)

    def look() -> tuple[Any, list[MemoryEdge], list[MemoryEdge]]:
        timeline = memory.memories(session.user, entity_id, "all", TIMELINE_SIZE,
                                   newest_first=True)
        drawn = memory.memories(session.user, entity_id, ["current", "dormant"], 1000)
        return memory.entity(session.user, entity_id), timeline, drawn

    view, timeline, drawn = await run_in_threadpool(look)
    return _render(request, "entity.html", session, entity=view, timeline=timeline,
                   picture=neighbourhood(view.id, view.name, drawn),
                   more=len(timeline) == TIMELINE_SIZE)


@router.post("/search")
async def search(request: Request, session: Change,
                 q: Annotated[str, Form(max_length=100_000)] = "") -> Response:
    block = None
    if q.strip():
        recall = await run_in_threadpool(_memory(request).recall, session.user, q)
        block = recall.render()
    return _render(request, "search.html", session, q=q, block=block)


@router.get("/search")
async def search_form(request: Request, session: Signed) -> Response:
    return _render(request, "search.html", session, q="", block=None)


@router.get("/merges")
async def merges(request: Request, session: Signed) -> Response:
    found = await run_in_threadpool(_memory(request).merges, session.user, False, True)
    return _render(request, "merges.html", session, merges=found)


@router.get("/data")
async def data(request: Request, session: Signed, conversation: str = "") -> Response:
    return _render(request, "data.html", session, conversation=conversation)


@router.get("/export")
async def export(request: Request, session: Signed, with_turns: bool = False) -> Response:
    lines = _memory(request).export(session.user, with_turns)
    return StreamingResponse(lines, media_type="application/x-ndjson", headers={
        "Content-Disposition": 'attachment; filename="pegasus-memory.jsonl"'})


# --- correcting -------------------------------------------------------------------------------


def _memory_links(memory_id: str) -> list[tuple[str, str]]:
    return [(f"/memories/{memory_id}", "Back to this memory"),
            ("/memories", "Back to your memories")]


def _entity_links(entity_id: str | None) -> list[tuple[str, str]]:
    return [*([(f"/entities/{entity_id}", "Back to this entity")] if entity_id else []),
            ("/memories", "Back to your memories")]


@router.post("/memories/{memory_id}/retract")
async def retract(request: Request, session: Change, memory_id: str,
                  undo: Annotated[bool, Form()] = False) -> Response:
    done = await run_in_threadpool(_memory(request).retract, session.user, memory_id, None,
                                   undo)
    title = "The memory is active again" if undo else "The memory is retracted"
    return _result(request, session, title, done, _memory_links(memory_id))


@router.post("/entities/{entity_id}/rename")
async def rename(request: Request, session: Change, entity_id: str,
                 name: Annotated[str, Form(max_length=1000)] = "") -> Response:
    done = await run_in_threadpool(_memory(request).rename_entity, session.user, entity_id,
                                   name)
    return _result(request, session, "Renamed", done, _entity_links(done.entity_id))


@router.post("/entities/{entity_id}/aliases")
async def aliases(request: Request, session: Change, entity_id: str,
                  add: Annotated[str, Form(max_length=1000)] = "",
                  remove: Annotated[str, Form(max_length=1000)] = "") -> Response:
    done = await run_in_threadpool(
        _memory(request).edit_aliases, session.user, entity_id,
        [add] if add.strip() else [], [remove] if remove.strip() else [])
    return _result(request, session, "Aliases changed", done, _entity_links(done.entity_id))


@router.post("/entities/{entity_id}/merge")
async def merge(request: Request, session: Change, entity_id: str,
                absorb: Annotated[str, Form(max_length=1000)] = "") -> Response:
    done = await run_in_threadpool(_memory(request).merge_entities, session.user, entity_id,
                                   absorb)
    return _result(request, session, "Merged", done, _entity_links(done.entity_id),
                   undo=done.merge_record_id)


@router.post("/merges/{record_id}/undo")
async def undo_merge(request: Request, session: Change, record_id: str) -> Response:
    done = await run_in_threadpool(_memory(request).undo_merge, session.user, record_id)
    return _result(request, session, "The merge is undone", done,
                   [*_entity_links(done.restored_id)[:1], ("/merges", "Back to the merges")])


# --- forgetting and importing -----------------------------------------------------------------


@router.post("/memories/{memory_id}/forget")
async def forget_memory(request: Request, session: Change, memory_id: str) -> Response:
    done = await run_in_threadpool(_memory(request).forget_memory, session.user, memory_id)
    return _result(request, session, "The memory is forgotten", done)


@router.post("/entities/{entity_id}/forget")
async def forget_entity(request: Request, session: Change, entity_id: str,
                        confirm: Annotated[str, Form()] = "") -> Response:
    if confirm != "yes":
        raise InvalidInputError("tick the box to confirm; nothing was forgotten")
    done = await run_in_threadpool(_memory(request).forget_entity, session.user, entity_id)
    return _result(request, session, "The entity is forgotten", done)


@router.post("/forget/conversation")
async def forget_conversation(request: Request, session: Change,
                              conversation: Annotated[str, Form(max_length=1000)] = ""
                              ) -> Response:
    done = await run_in_threadpool(_memory(request).forget_conversation, session.user,
                                   conversation.strip())
    return _result(request, session, "The conversation is forgotten", done)


@router.post("/forget/everything")
async def forget_everything(request: Request, session: Change,
                            confirm: Annotated[str, Form()] = "") -> Response:
    if confirm.strip() != "everything":
        raise InvalidInputError("type the word everything to confirm; nothing was forgotten")
    done = await run_in_threadpool(_memory(request).forget_everything, session.user)
    return _result(request, session, "Everything is forgotten", done)


@router.post("/import")
async def import_memory(request: Request, session: Signed) -> Response:
    # The session is checked from the cookie and the size from the header before the body is
    # read: an upload from nobody, or larger than an import may be, costs no disk (#37 attack).
    limit = request.app.state.memory.settings.max_upload_bytes
    size = request.headers.get("content-length", "")
    if not size.isdigit() or int(size) > limit:
        raise InvalidInputError(f"an upload may be at most {limit // 2**20} MiB (and must say its "
                                "size); nothing was imported")
    form = await request.form(max_files=1, max_fields=3)
    file, csrf = form.get("file"), form.get("csrf")
    if not same_origin(request) or not isinstance(csrf, str) or not csrf_matches(session, csrf):
        raise Refused
    if not isinstance(file, StarletteUploadFile):
        raise InvalidInputError("choose an export file to import; nothing was imported")
    replace = form.get("replace") in ("true", "on", "1")
    # The same function as POST /v1/memory/import, with its checks and messages.
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as spool:
        while chunk := await file.read(1 << 20):
            spool.write(chunk)
        spool.flush()
        done = await run_in_threadpool(_memory(request).import_memory, session.user,
                                       spool.name, replace)
    return _result(request, session, "Imported", done)
