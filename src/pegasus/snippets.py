"""Snippet nodes: each memory edge's verbatim words, indexed for keyword and meaning search.

Commit keeps one `:Snippet` per edge in step with the edge's words (`write_snippets`); recall
asks the full-text index with `keyword_query`, restricted to one user by `user_key`.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from neo4j import ManagedTransaction

from pegasus.embed import Embedder, pack_vector
from pegasus.store import run

_TERM = re.compile(r"[a-z0-9]+")


def user_key(user_id: str) -> str:
    """The user id as one lower-case Lucene token (any id: it is hashed, never parsed)."""
    return "u" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def keyword_query(user_id: str, words: list[str]) -> str | None:
    """A Lucene query for any of `words` in one user's snippets; None when no word is usable.

    Words are reduced to [a-z0-9] terms, so no Lucene syntax can come from the message."""
    terms = list(dict.fromkeys(t for w in words for t in _TERM.findall(w.lower()) if len(t) > 1))
    if not terms:
        return None
    return f"+user_key:{user_key(user_id)} +text:({' '.join(terms)})"


def write_snippets(tx: ManagedTransaction, embedder: Embedder, user_id: str,
                   conversation_id: str, now: datetime, edges: list[dict[str, str]]) -> None:
    """Refresh the :Snippet of each given edge ({source_id, target_id, edge_id}) whose words
    changed."""
    if not edges:
        return
    state = run(tx, "read/snippet_state", user_id=user_id, rows=edges)
    changed = [r for r in state if r["snippet"] and r["snippet"] != r["stored"]]
    if not changed:
        return
    vectors = embedder.embed([r["snippet"] for r in changed])
    run(tx, "write/upsert_snippets", user_id=user_id, user_key=user_key(user_id), now=now,
        conversation_id=conversation_id, rows=[
            {"id": r["id"], "source_id": r["source_id"], "target_id": r["target_id"],
             "text": r["snippet"],
             "packed": pack_vector(v)} for r, v in zip(changed, vectors, strict=True)])
