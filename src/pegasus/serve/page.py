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
from datetime import UTC, date, datetime, timedelta
from importlib.resources import files
from typing import Annotated, Any
from urllib.parse import quote

import jinja2
from fastapi import APIRouter, Depends, Form, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from starlette.datastructures import UploadFile as StarletteUploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from pegasus.errors import (
    AmbiguousEntityError,
    InvalidInputError,
    NotFoundError,
    PartitionNotEmptyError,
    PegasusError,
    http_status,
)
from pegasus.memory import Memory
from pegasus.models.views import MemoryEdge
from pegasus.page.picture import neighbourhood, timeline_rows
from pegasus.page.words import FORGET_YOU, count, for_page, forgotten, phrase, state_words
from pegasus.recall.render import visible
from pegasus.serve.http import in_thread, refuse_while_down, streamed_export
from pegasus.serve.ownership_api import history_import
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
# The states a person can filter by, in their words.
STATE_WORDS = {"current": "active", "dormant": "dormant", "superseded": "replaced or corrected",
               "expired": "ended", "retracted": "marked wrong"}
# The kinds a person can filter by (the other end's, the person's own node aside).
KIND_WORDS = {"PERSON": "people", "PLACE": "places", "ORG": "organisations",
              "TOPIC": "topics", "EVENT": "events", "THING": "things",
              "PREFERENCE": "likes and dislikes", "OTHER": "other"}
KIND_ONE = {"PERSON": "a person", "PLACE": "a place", "ORG": "an organisation",
            "TOPIC": "a topic", "EVENT": "an event", "THING": "a thing",
            "PREFERENCE": "a like or dislike", "OTHER": "something else"}
STATIC = {"page.css": "text/css; charset=utf-8", "page.js": "text/javascript; charset=utf-8",
          "icon.svg": "image/svg+xml"}

class Exact(str):
    """A value a form sends back as it is (an alias to remove, a name to edit): not marked."""


def path(value: Any) -> str:
    """An id as one path segment of a link: every character but letters, digits and `-._~`
    percent-encoded ("/" too, so the id stays one segment)."""
    return quote(str(value), safe="")


def _shown(value: Any) -> Any:
    """What `{{ … }}` prints: a stored text with its invisible characters drawn as marks."""
    if isinstance(value, str) and not isinstance(value, Exact | Markup):
        return visible(value)
    return value


_environment = jinja2.Environment(loader=jinja2.PackageLoader("pegasus.page", "templates"),
                                  autoescape=True, undefined=jinja2.StrictUndefined,
                                  finalize=_shown)
_environment.filters["path"] = path
_environment.filters["exact"] = Exact
_environment.filters["day"] = lambda iso: (iso or "")[:10]
_environment.filters["strength"] = lambda s: "–" if s is None else f"{s:.0f}"
_environment.globals["state_words"] = STATE_WORDS
_environment.globals["kind_words"] = KIND_WORDS
_environment.globals["kind_one"] = KIND_ONE
_environment.globals["count"] = count


def say(edge: MemoryEdge) -> str:
    """A memory as a sentence, the person as "you" (page/words.py)."""
    return phrase(edge.source, edge.relation, edge.target, edge.source_is_self,
                  edge.target_is_self)


def how(edge: MemoryEdge, dormant_below: float) -> str:
    """A memory's state and strength in words."""
    return state_words(edge.state, edge.strength_now, bool(edge.corrected_at), dormant_below)


_environment.globals["say"] = say
_environment.globals["how"] = how
templates = Jinja2Templates(env=_environment)


class SignInNeeded(Exception):
    """No valid session cookie: the person is sent to the sign-in form."""


class Refused(Exception):
    """A change without this session's CSRF token, or sent by another site."""


VIA_WORDS = {"page": "on this page", "api": "through the API", "cli": "on the command line",
             "mcp": "through an assistant's tool", "python": "from a program"}
_environment.globals["via_words"] = VIA_WORDS


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
            except PartitionNotEmptyError as exc:
                response = _error(request, 409, "Your memory is not empty. To replace what it "
                                  "holds with the file, tick “Replace what is in my memory "
                                  "now” and import again; nothing was imported.", exc)
            except PegasusError as exc:
                response = _error(request, _status(exc), for_page(str(exc)), exc)
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
    dormant_below = request.app.state.memory.settings.dormant_below
    return templates.TemplateResponse(
        request, name, {"session": session, "dormant_below": dormant_below, **context},
        status_code=code)


def _error(request: Request, status: int, message: str, exc: Exception | None = None
           ) -> Response:
    session = _sessions(request).check(request.cookies.get(COOKIE))
    choices = exc.choices if isinstance(exc, AmbiguousEntityError) else []
    message = message[:1].upper() + message[1:]  # the library's messages start lower-case
    return _render(request, "error.html", session, status, status=status, message=message,
                   choices=choices)


def _result(request: Request, session: Session, title: str, said: list[str],
            links: list[tuple[str, str]] | None = None,
            undo: tuple[str, dict[str, str], str] | None = None,
            erased: tuple[list[MemoryEdge], int] | None = None) -> Response:
    """What a change did, in sentences, with its undo (action, hidden fields, button words)
    where one exists, and the first few memories it erased (with how many more)."""
    return _render(request, "result.html", session, title=title, said=said, undo=undo,
                   links=links or [("/memories", "Back to your memories")],
                   erased=erased or ([], 0))


# How many erased memories a result names (the rest are counted), and how many memories
# a conversation's erasure looks through to name them.
SHOWN_ERASED = 5
MAX_ERASED_LOOKUP = 1000


def _erased(edges: list[MemoryEdge], total: int) -> tuple[list[MemoryEdge], int]:
    """The first erased memories to name, and how many more went."""
    shown = edges[:SHOWN_ERASED] if total else []
    return shown, max(total - len(shown), 0)


# The first path segments that are not the page: the API, the proxy, probes and the schema
# keep their JSON errors; every other address is the page's, and answers as a page.
NOT_PAGE = frozenset({"v1", "healthz", "readyz", "metrics", "openapi.json"})
NO_PAGE_WORDS = {
    404: "There is no page at this address. It may have been mistyped, or what it showed "
         "was forgotten.",
    405: "This address only takes a form sent from your memory page; there is nothing to "
         "show here.",
}


async def no_such_page(request: Request, exc: StarletteHTTPException) -> Response:
    """An address no route answers (404), or a form's address opened in the browser (405):
    on the page, an error page in words with its status; elsewhere FastAPI's JSON error."""
    first = request.url.path.lstrip("/").split("/", 1)[0]
    if exc.status_code not in NO_PAGE_WORDS or first in NOT_PAGE:
        return await http_exception_handler(request, exc)
    response = _error(request, exc.status_code, NO_PAGE_WORDS[exc.status_code])
    response.headers.update({**SECURITY_HEADERS, **(exc.headers or {})})
    return response


# --- signing in and out ------------------------------------------------------------------


@router.get("/")
async def home(request: Request) -> Response:
    if _sessions(request).check(request.cookies.get(COOKIE)) is not None:
        return RedirectResponse("/memories", status_code=303)
    return _render(request, "sign_in.html", None, problem=None)


@router.get("/sign-in")
async def sign_in_form() -> Response:
    """The sign-in form's address opened in the browser (a bookmark, a reload): the form."""
    return RedirectResponse("/", status_code=303)


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


@router.get("/favicon.ico")
async def favicon() -> Response:
    """Browsers ask for it on every page; the page's icon (SVG, which they all draw)."""
    body = (files("pegasus.page") / "static" / "icon.svg").read_bytes()
    return Response(body, media_type="image/svg+xml")


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
                        kind: str = "", said_from: str = "", said_until: str = "",
                        page: int = 1) -> Response:
    if state not in ("all", *STATE_WORDS) or kind not in ("", *KIND_WORDS) \
            or not 1 <= page <= 10**6:
        raise InvalidInputError("not a filter this page offers")
    since, until = _day(said_from, "From"), _day(said_until, "Until")
    offset = (page - 1) * PAGE_SIZE
    memory = _memory(request)

    def look() -> tuple[Any, list[MemoryEdge], int]:
        found = memory.memories(
            session.user, about.strip() or None, state, PAGE_SIZE + 1, offset, None, True,
            _instant(since), _instant(until + timedelta(days=1)) if until and until < date.max
            else None, kind=kind or None)
        week = memory.memories(session.user, state="all", limit=PAGE_SIZE + 1,
                               newest_first=True,
                               said_from=datetime.now(UTC) - timedelta(days=7))
        return memory.overview(session.user), found, len(week)

    glance, found, this_week = await in_thread(request, look)
    filters = {"about": about, "state": state, "kind": kind, "said_from": said_from,
               "said_until": said_until}
    filtered = any(v and v != "all" for v in filters.values())
    return _render(request, "memories.html", session, memories=found[:PAGE_SIZE], page=page,
                   more=len(found) > PAGE_SIZE, filters=filters, filtered=filtered,
                   glance=glance, this_week=this_week, week_more=this_week > PAGE_SIZE)


@router.get("/memories/{memory_id:path}/forget")
async def confirm_forget_memory(request: Request, session: Signed, memory_id: str) -> Response:
    story = await in_thread(request, _memory(request).memory, session.user, memory_id)
    return _render(request, "confirm.html", session, edge=story.memory)


@router.get("/memories/{memory_id:path}")
async def one_memory(request: Request, session: Signed, memory_id: str) -> Response:
    story = await in_thread(request, _memory(request).memory, session.user, memory_id)
    return _render(request, "memory.html", session, story=story, edge=story.memory)


@router.get("/entities/{entity_id:path}")
async def entity(request: Request, session: Signed, entity_id: str) -> Response:
    memory = _memory(request)

    def look() -> tuple[Any, list[MemoryEdge], list[MemoryEdge]]:
        timeline = memory.memories(session.user, entity_id, "all", TIMELINE_SIZE,
                                   newest_first=True)
        drawn = memory.memories(session.user, entity_id, ["current", "dormant"], 1000)
        return memory.entity(session.user, entity_id), timeline, drawn

    view, timeline, drawn = await in_thread(request, look)
    return _render(request, "entity.html", session, entity=view,
                   timeline=timeline_rows(timeline),
                   picture=neighbourhood(view.id, "You" if view.is_self else view.name, drawn),
                   more=len(timeline) == TIMELINE_SIZE)


@router.post("/search")
async def search(request: Request, session: Change,
                 q: Annotated[str, Form(max_length=100_000)] = "") -> Response:
    if not q.strip():
        return _render(request, "search.html", session, q=q, block=None)
    memory = _memory(request)

    def look() -> tuple[Any, list[MemoryEdge]]:
        recall = memory.recall(session.user, q)
        # Its [MEMORY] lines are the first of its edges, in order: each as the list says it.
        lines = recall.edge_ids[:len(recall.memory)]
        return recall, [memory.memory(session.user, i).memory for i in lines]

    recall, edges = await in_thread(request, look)
    return _render(request, "search.html", session, q=q, block=recall.render(), edges=edges,
                   quotes=recall.snippets)


@router.get("/search")
async def search_form(request: Request, session: Signed) -> Response:
    return _render(request, "search.html", session, q="", block=None)


@router.get("/merges")
async def merges(request: Request, session: Signed) -> Response:
    found = await in_thread(request, _memory(request).merges, session.user, False, True)
    return _render(request, "merges.html", session, merges=found)


@router.get("/data")
async def data(request: Request, session: Signed, conversation: str = "") -> Response:
    return _render(request, "data.html", session, conversation=conversation)


@router.get("/export")
async def export(request: Request, session: Signed, with_turns: bool = False) -> Response:
    return await streamed_export(request, session.user, with_turns)


# --- correcting -------------------------------------------------------------------------------


def _memory_links(memory_id: str) -> list[tuple[str, str]]:
    return [(f"/memories/{path(memory_id)}", "Back to this memory"),
            ("/memories", "Back to your memories")]


def _entity_links(entity_id: str | None) -> list[tuple[str, str]]:
    return [*([(f"/entities/{path(entity_id)}", "Back to this entity")] if entity_id else []),
            ("/memories", "Back to your memories")]


def _quote(edge: MemoryEdge) -> str:
    return f"“{say(edge)}”"


@router.post("/memories/{memory_id:path}/retract")
async def retract(request: Request, session: Change, memory_id: str,
                  undo: Annotated[bool, Form()] = False) -> Response:
    memory = _memory(request)

    def change() -> MemoryEdge:
        memory.retract(session.user, memory_id, None, undo)
        return memory.memory(session.user, memory_id).memory

    edge = await in_thread(request, change)
    if undo:
        return _result(request, session, "The memory is active again", [
            f"{_quote(edge)} is active again: it can be recalled in your conversations."],
            _memory_links(memory_id),
            (f"/memories/{path(memory_id)}/retract", {}, "Undo: mark it wrong again"))
    return _result(request, session, "The memory is marked wrong", [
        f"{_quote(edge)} is marked wrong: it will never be recalled again, not even as "
        "history.", "It is kept, with today's date, in case you change your mind."],
        _memory_links(memory_id),
        (f"/memories/{path(memory_id)}/retract", {"undo": "true"}, "Undo: it was right"))


def _when(before: MemoryEdge, after: MemoryEdge) -> str:
    """What a correction changed of a memory's dates, in words ("true until 2026-12-31")."""
    began = (after.created_at or "")[:10]
    began = began if began != (before.created_at or "")[:10] else ""
    ends = (after.expires_at or "")[:10]
    ends_changed = ends != (before.expires_at or "")[:10]
    if ends_changed and not ends:
        return f"true since {began}, with no end date" if began else "true with no end date"
    if began and ends_changed:
        return f"true from {began} until {ends}"
    return f"true since {began}" if began else f"true until {ends}" if ends_changed else ""


@router.post("/memories/{memory_id:path}/correct")
async def correct(request: Request, session: Change, memory_id: str,
                  other_end: Annotated[str, Form(max_length=1000)] = "",
                  words: Annotated[str, Form(max_length=4000)] = "",
                  since: Annotated[str, Form(max_length=40)] = "",
                  until: Annotated[str, Form(max_length=40)] = "",
                  no_end: Annotated[bool, Form()] = False) -> Response:
    memory = _memory(request)
    began, ends = _day(since, "Since"), _day(until, "Until")

    def change() -> tuple[MemoryEdge, MemoryEdge]:
        # The form shows what the memory says now: only what the person changed is changed.
        before = memory.memory(session.user, memory_id).memory
        new_words = words.strip() if words.strip() != (before.snippet or "").strip() else None
        new_since = began if began and began.isoformat() != (before.created_at or "")[:10] \
            else None
        new_until = ends if ends and ends.isoformat() != (before.expires_at or "")[:10] \
            else None
        done = memory.correct_memory(
            session.user, memory_id, other_end.strip() or None, new_words,
            _instant(new_since), _instant(new_until),
            no_end and before.expires_at is not None, via="page")
        return before, memory.memory(session.user, done.memory_id or "").memory

    before, after = await in_thread(request, change)
    said = [f"{_quote(before)} now reads {_quote(after)}."] if say(after) != say(before) else []
    if after.snippet and after.snippet != before.snippet:
        said.append(f"In your words: “{after.snippet}”.")
    if when := _when(before, after):
        said.append(f"{_quote(after)} is now {when}.")
    said.append("Your conversations recall the correction from now on; the old version stays "
                "in its history and is never recalled.")
    return _result(request, session, "The memory is corrected", said,
                   _memory_links(after.id),
                   (f"/memories/{path(after.id)}/correct/undo", {}, "Undo the correction"))


@router.post("/memories/{memory_id:path}/correct/undo")
async def undo_correction(request: Request, session: Change, memory_id: str) -> Response:
    memory = _memory(request)

    def change() -> MemoryEdge:
        done = memory.correct_memory(session.user, memory_id, undo=True, via="page")
        return memory.memory(session.user, done.memory_id or "").memory

    edge = await in_thread(request, change)
    return _result(request, session, "The correction is undone", [
        f"{_quote(edge)} is back as it was, and is recalled again."], _memory_links(edge.id))


@router.post("/entities/{entity_id:path}/rename")
async def rename(request: Request, session: Change, entity_id: str,
                 name: Annotated[str, Form(max_length=1000)] = "") -> Response:
    if not name.strip():
        raise InvalidInputError("type its right name first; nothing was changed")
    memory = _memory(request)

    def change() -> tuple[str, Any]:
        old = memory.entity(session.user, entity_id).name
        return old, memory.rename_entity(session.user, entity_id, name)

    old, done = await in_thread(request, change)
    return _result(request, session, "Renamed", [f"{old} is called {done.name} now."],
                   _entity_links(done.entity_id),
                   (f"/entities/{path(done.entity_id)}/rename", {"name": old},
                    f"Undo: call it {old} again"))


@router.post("/entities/{entity_id:path}/aliases")
async def aliases(request: Request, session: Change, entity_id: str,
                  add: Annotated[str, Form(max_length=1000)] = "",
                  remove: Annotated[str, Form(max_length=1000)] = "") -> Response:
    if not add.strip() and not remove.strip():
        raise InvalidInputError("type the other name first; nothing was changed")
    done = await in_thread(
        request, _memory(request).edit_aliases, session.user, entity_id,
        [add] if add.strip() else [], [remove] if remove.strip() else [])
    also = ", ".join(done.aliases) if done.aliases else "nothing else"
    said = [f"{done.name} is also called: {also}.", *(n[:1].upper() + n[1:] + "."
                                                       for n in done.notes)]
    undo = ((f"/entities/{path(done.entity_id)}/aliases", {"remove": add.strip()},
             f"Undo: {add.strip()} is not another name for it") if add.strip()
            and add.strip() in done.aliases else
            (f"/entities/{path(done.entity_id)}/aliases", {"add": remove.strip()},
             f"Undo: {remove.strip()} is another name for it") if remove.strip() else None)
    return _result(request, session, "Other names changed", said,
                   _entity_links(done.entity_id), undo)


@router.post("/entities/{entity_id:path}/merge")
async def merge(request: Request, session: Change, entity_id: str,
                absorb: Annotated[str, Form(max_length=1000)] = "") -> Response:
    if not absorb.strip():
        raise InvalidInputError("type the name of the one it is the same as first; nothing "
                                "was changed")
    done = await in_thread(request, _memory(request).merge_entities, session.user, entity_id,
                                   absorb)
    said = [f"{absorb.strip()} and {done.name} are one now: {done.name} keeps both names "
            f"and {count(done.edges_moved, 'memory', 'memories')} moved to it."]
    if any("taken off" in n for n in done.notes):
        said.append("Memories between the two were put aside; undoing the merge puts them "
                    "back.")
    return _result(request, session, "Merged", said, _entity_links(done.entity_id),
                   (f"/merges/{path(done.merge_record_id)}/undo", {}, "Undo this merge"))


@router.post("/merges/{record_id:path}/undo")
async def undo_merge(request: Request, session: Change, record_id: str) -> Response:
    done = await in_thread(request, _memory(request).undo_merge, session.user, record_id)
    return _result(request, session, "The merge is undone", [
        f"{done.restored} and {done.survivor} are separate again, each with its own "
        "memories."], [*_entity_links(done.restored_id)[:1], ("/merges", "Back to the merges")])


# --- forgetting and importing -----------------------------------------------------------------


@router.post("/memories/{memory_id:path}/forget")
async def forget_memory(request: Request, session: Change, memory_id: str,
                        confirm: Annotated[str, Form()] = "") -> Response:
    memory = _memory(request)
    if confirm != "yes":  # one click never erases: ask first (the same page as the link's)
        story = await in_thread(request, memory.memory, session.user, memory_id)
        return _render(request, "confirm.html", session, edge=story.memory)

    def change() -> tuple[MemoryEdge, Any]:
        edge = memory.memory(session.user, memory_id).memory
        return edge, memory.forget_memory(session.user, memory_id)

    edge, done = await in_thread(request, change)
    said = forgotten("memory", done.memories, done.entities, done.conversations)
    if done.memories:
        said[0] = f"{_quote(edge)} is erased, with your words, everywhere they were stored."
    return _result(request, session, "The memory is forgotten", said)


@router.post("/entities/{entity_id:path}/forget")
async def forget_entity(request: Request, session: Change, entity_id: str,
                        confirm: Annotated[str, Form()] = "") -> Response:
    if confirm != "yes":
        raise InvalidInputError("tick the box to confirm; nothing was forgotten")
    memory = _memory(request)

    def change() -> tuple[str, list[MemoryEdge], Any]:
        view = memory.entity(session.user, entity_id)
        if view.is_self:
            raise InvalidInputError(FORGET_YOU)
        about = memory.memories(session.user, view.id, "all", SHOWN_ERASED + 1)
        return view.name, about, memory.forget_entity(session.user, view.id)

    name, about, done = await in_thread(request, change)
    return _result(request, session, f"{name} is forgotten", forgotten(
        "entity", done.memories, done.entities, done.conversations, done.memories_changed,
        done.memories_revived), erased=_erased(about, done.memories))


@router.post("/forget/conversation")
async def forget_conversation(request: Request, session: Change,
                              conversation: Annotated[str, Form(max_length=1000)] = ""
                              ) -> Response:
    if not conversation.strip():
        raise InvalidInputError("type the conversation's name first (each memory's history "
                                "shows it); nothing was forgotten")
    memory = _memory(request)

    def change() -> tuple[list[MemoryEdge], Any]:
        # What only it taught is what it erases (a memory others said too is kept).
        held = memory.memories(session.user, state="all", limit=MAX_ERASED_LOOKUP)
        taught = [m for m in held if m.conversations == [conversation.strip()]]
        return taught, memory.forget_conversation(session.user, conversation.strip())

    taught, done = await in_thread(request, change)
    if not (done.conversations or done.memories or done.memories_changed):
        return _result(request, session, "Nothing to forget", [
            "No conversation by that name is in your memory (each memory's history shows the "
            "conversation it was said in); nothing was erased."],
            [("/data", "Back to export, import, forget"), ("/memories", "Back to your memories")])
    return _result(request, session, "The conversation is forgotten", forgotten(
        "conversation", done.memories, done.entities, done.conversations,
        done.memories_changed, done.memories_revived), erased=_erased(taught, done.memories))


@router.post("/forget/everything")
async def forget_everything(request: Request, session: Change,
                            confirm: Annotated[str, Form()] = "") -> Response:
    if confirm.strip() != "everything":
        raise InvalidInputError("type the word everything to confirm; nothing was forgotten")
    done = await in_thread(request, _memory(request).forget_everything, session.user,
                           bounded=False)
    return _result(request, session, "Everything is forgotten", forgotten(
        "everything", done.memories, done.entities, done.conversations))


async def _upload(request: Request, session: Session, choose: str
                  ) -> tuple[Any, StarletteUploadFile]:
    """An upload's form and file. The session is checked from the cookie and the size from the
    header before the body is read: an upload from nobody, or larger than an import may be,
    costs no disk (#37 attack); and none is spooled while Neo4j is away."""
    refuse_while_down(request)
    limit = request.app.state.memory.settings.max_upload_bytes
    size = request.headers.get("content-length", "")
    if not size.isdigit() or int(size) > limit:
        raise InvalidInputError(f"an upload may be at most {limit // 2**20} MiB (and must say "
                                "its size); nothing was imported")
    form = await request.form(max_files=1, max_fields=3)
    file, csrf = form.get("file"), form.get("csrf")
    if not same_origin(request) or not isinstance(csrf, str) or not csrf_matches(session, csrf):
        raise Refused
    if not isinstance(file, StarletteUploadFile):
        raise InvalidInputError(f"choose {choose}; nothing was imported")
    return form, file


@router.post("/import")
async def import_memory(request: Request, session: Signed) -> Response:
    form, file = await _upload(request, session, "an export file to import")
    replace = form.get("replace") in ("true", "on", "1")
    # The same function as POST /v1/memory/import, with its checks and messages.
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as spool:
        while chunk := await file.read(1 << 20):
            spool.write(chunk)
        spool.flush()
        done = await in_thread(request, _memory(request).import_memory, session.user,
                               spool.name, replace, bounded=False)
    said = [f"Imported {count(done.memories, 'memory', 'memories')}, "
            f"{count(done.entities, 'person, place or thing', 'people, places and things')} "
            f"and {count(done.conversations, 'conversation')} from the file."]
    if done.replaced:
        said.append("What your memory held before was forgotten first.")
    return _result(request, session, "Imported", said)


@router.post("/import-history")
async def import_history(request: Request, session: Signed) -> Response:
    """ChatGPT's or Claude's export, as POST /v1/memory/import-history takes it."""
    form, file = await _upload(request, session, "ChatGPT's or Claude's conversations.json (or "
                                                 "the export's zip)")
    done = await history_import(request, session.user, await file.read(),
                                form.get("dry_run") in ("true", "on", "1"))
    said = [f"Found {count(done.conversations, 'conversation')} with your words in the file: "
            f"{done.recorded} new, {done.already} brought in before."]
    if done.extraction:
        said.append(done.extraction)
    return _result(request, session, "Your past conversations", said)
