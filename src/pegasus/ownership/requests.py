"""Forgetting asked for in conversation (design §10): a batch's `forget` requests, applied
inside the commit's own write transaction, before its own memories are written (what the
conversation says anew stays; a commit that fails forgets nothing)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from neo4j import ManagedTransaction

from pegasus.errors import AmbiguousEntityError, NotFoundError
from pegasus.extract.clean import clean_label
from pegasus.models.batch import ForgetIn
from pegasus.models.views import MemoryEdge
from pegasus.ownership.correct import retract
from pegasus.ownership.forget import forget_entity, forget_memory
from pegasus.ownership.see import memories
from pegasus.store import run
from pegasus.text import fold, is_placeholder


@dataclass
class Applied:
    """What the requests did, for the commit report; `forms`: the names of forgotten entities,
    whose staging files go once the transaction has committed."""

    forgotten: list[str] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    forms: list[str] = field(default_factory=list)


def line(edge: MemoryEdge) -> str:
    return f"{edge.source} -[{edge.relation}]-> {edge.target}"


def _aimed(tx: ManagedTransaction, user_id: str, about: str, request: ForgetIn,
           at: datetime) -> list[MemoryEdge]:
    """The memories a request with a relation aims at (current ones: what is recalled)."""
    label = clean_label(request.relation or "")
    edges = memories(tx, user_id, about, "current", at, None)
    if request.target is not None:
        wanted = request.target
        edges = [e for e in edges if {fold(e.source), fold(e.target)} & {fold(wanted)}
                 or is_placeholder(wanted)]
    return [e for e in edges if e.relation == label]


def apply_requests(tx: ManagedTransaction, user_id: str, requests: list[ForgetIn],
                   at: datetime) -> Applied:
    """Forget or retract what each request names, in the caller's transaction; a name that
    means no entity, or several, is left alone with a note (nothing is erased on a guess)."""
    done = Applied()
    for request in requests:
        about = request.about
        try:
            if is_placeholder(about):
                self_id = run(tx, "read/partition_state", user_id=user_id)
                about = self_id[0]["self_id"] if self_id and self_id[0]["self_id"] else about
            if request.relation is None:
                if request.action == "forget":
                    report, forms = forget_entity(tx, user_id, about, at)
                    done.forgotten.append(f"{request.about} ({report.memories} memories)")
                    done.forms += forms
                    continue
                edges = memories(tx, user_id, about, "current", at, None)
            else:
                edges = _aimed(tx, user_id, about, request, at)
            if not edges:
                done.notes.append(f"forget request about {request.about!r}: no such memory")
            act: Callable[[MemoryEdge], object]
            if request.action == "forget":
                def act(e: MemoryEdge) -> object:
                    return forget_memory(tx, user_id, e.id, at)
                target = done.forgotten
            else:
                def act(e: MemoryEdge) -> object:
                    return retract(tx, user_id, e.id, at)
                target = done.retracted
            for edge in edges:
                act(edge)
                target.append(line(edge))
        except (NotFoundError, AmbiguousEntityError) as exc:
            done.notes.append(f"forget request about {request.about!r} not applied: {exc}")
    return done
