"""Snippet nodes: each memory edge's verbatim words, indexed for keyword and meaning search.

Commit keeps one `:Snippet` per edge in step with the edge's words, and one more per distinct
text of its other sightings (`write_snippets`, `sync_sightings`): a memory said twice in other
words is found by either. Recall asks the full-text index with `keyword_query`, restricted to
one user by `user_key`, and shows each edge once, with the words that match best.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from functools import partial
from typing import Any

from neo4j import ManagedTransaction

from pegasus.embedding.embed import Embedder, pack_vector
from pegasus.portable import native
from pegasus.store import Store, run
from pegasus.text import head_and_tail

_TERM = re.compile(r"[a-z0-9]+")
# Lucene refuses a query of more than 1,024 clauses (maxClauseCount): a pasted document made
# every recall fail (#35). A query names at most this many terms, the message's first and last.
MAX_QUERY_TERMS = 512


def user_key(user_id: str) -> str:
    """The user id as one lower-case Lucene token (any id: it is hashed, never parsed)."""
    return "u" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def keyword_query(user_id: str, words: list[str], leave_out: list[str] | None = None
                  ) -> str | None:
    """A Lucene query for any of `words` in one user's snippets (or passages); None when no
    word is usable. `leave_out`: conversation tokens (passages.conversation_key) whose
    passages the query must not find.

    Words are reduced to [a-z0-9] terms, so no Lucene syntax can come from the message, and to
    at most MAX_QUERY_TERMS of them (`head_and_tail`), so no message is too long for Lucene.
    The tokens are hex digests: no syntax there either."""
    terms = head_and_tail(list(dict.fromkeys(t for w in words for t in _TERM.findall(w.lower())
                                    if len(t) > 1)), MAX_QUERY_TERMS)
    if not terms:
        return None
    without = "".join(f" -conversation_key:{token}" for token in leave_out or [])
    return f"+user_key:{user_key(user_id)}{without} +text:({' '.join(terms)})"


def write_snippets(tx: ManagedTransaction, embedder: Embedder, user_id: str,
                   conversation_id: str | None, now: datetime, edges: list[dict[str, str]]) -> None:
    """Refresh the :Snippet of each given edge ({source_id, target_id, edge_id}) whose words
    changed, then its sightings' snippets (`conversation_id` None: words the person corrected
    outside any conversation)."""
    if not edges:
        return
    state = run(tx, "read/snippet_state", user_id=user_id, rows=edges)
    changed = [r for r in state if r["snippet"] and r["snippet"] != r["stored"]]
    if changed:
        vectors = embedder.embed([r["snippet"] for r in changed])
        run(tx, "write/upsert_snippets", user_id=user_id, user_key=user_key(user_id), now=now,
            conversation_id=conversation_id, rows=[
                {"id": r["id"], "source_id": r["source_id"], "target_id": r["target_id"],
                 "text": r["snippet"], "packed": pack_vector(v), "vector": v.tolist()}
                for r, v in zip(changed, vectors, strict=True)])
    _sync_sightings(tx, embedder, user_id, state)


def sync_sightings(tx: ManagedTransaction, embedder: Embedder, user_id: str,
                   edges: list[dict[str, str]]) -> None:
    """Bring the sightings' snippets of the given edges ({source_id, target_id, edge_id}) in
    step with their sightings and the words each edge shows (after a forget or an import)."""
    if edges:
        _sync_sightings(tx, embedder, user_id,
                        run(tx, "read/snippet_state", user_id=user_id, rows=edges))


def sighting_id(edge_id: str, text: str) -> str:
    """The id of the snippet holding one text of an edge's sightings: the edge's id, then a
    digest of the words (equal words said in two conversations are one snippet)."""
    return f"{edge_id}/{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}"


def sighting_words(shown: str | None, sightings: list[str]) -> dict[str, dict[str, Any]]:
    """Each distinct text of an edge's sightings that the edge does not show, with its earliest
    sighting's date (ISO 8601) and conversation. Sightings logged without words are skipped."""
    words: dict[str, dict[str, Any]] = {}
    for raw in sightings:
        if not raw:
            continue
        sighting = json.loads(raw)
        text = sighting.get("snippet")
        if not text or text == shown:
            continue
        at = sighting.get("at") or ""
        kept = words.get(text)
        if kept is None or at < kept["at"]:
            words[text] = {"at": at, "conversation_id": sighting.get("conversation_id")}
    return words


def _sync_sightings(tx: ManagedTransaction, embedder: Embedder, user_id: str,
                    state: list[dict[str, Any]]) -> None:
    rows: list[dict[str, Any]] = []
    drop: list[str] = []
    for edge in state:
        stored = {e["id"]: e for e in edge["echoes"]}
        wanted = sighting_words(edge["snippet"], edge["sightings"])
        for text, said in wanted.items():
            sid = sighting_id(edge["id"], text)
            said_at = datetime.fromisoformat(said["at"]) if said["at"] else None
            have = stored.pop(sid, None)
            if have is not None and native(have["said_at"]) == said_at and \
                    have["conversation_id"] == said["conversation_id"] and have["text"] == text:
                continue
            rows.append({"id": sid, "edge_id": edge["id"], "source_id": edge["source_id"],
                         "target_id": edge["target_id"], "text": text, "said_at": said_at,
                         "conversation_id": said["conversation_id"],
                         "embed": have is None or have["text"] != text, "packed": None,
                         "vector": None})
        drop.extend(stored)
    if not rows and not drop:
        return
    fresh = [r for r in rows if r.pop("embed")]
    for row, vector in zip(fresh, embedder.embed([r["text"] for r in fresh]), strict=True):
        row["packed"], row["vector"] = pack_vector(vector), vector.tolist()
    run(tx, "write/sighting_snippets", user_id=user_id, user_key=user_key(user_id), rows=rows,
        drop=drop)


def backfill_sightings(store: Store, embedder: Embedder, batch: int = 500) -> int:
    """Write the sightings' snippets of the edges migration V0009 marked (stored before every
    sighting's words were searchable), a batch at a time; resumable. The count of marks done."""
    total = 0
    while marks := store.read("read/snippet_backfill", batch=batch):
        store.write(partial(_backfill, embedder=embedder, marks=marks))
        total += len(marks)
    return total


def _backfill(tx: ManagedTransaction, embedder: Embedder, marks: list[dict[str, str]]) -> None:
    users: dict[str, list[dict[str, str]]] = {}
    for mark in marks:
        users.setdefault(mark["user_id"], []).append(
            {k: mark[k] for k in ("edge_id", "source_id", "target_id")})
    for user_id, edges in users.items():
        sync_sightings(tx, embedder, user_id, edges)
    run(tx, "write/snippet_backfill_done", rows=[
        {"user_id": m["user_id"], "edge_id": m["edge_id"]} for m in marks])
