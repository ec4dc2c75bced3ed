"""Forgetting, which is erasure and not decay (design §10): one memory, one entity, one
conversation, or everything of a user, from every place the words live.

Memory, entity and conversation erasures run in one write transaction under the partition lock
(all of it or none of it). Everything runs in batches (`CALL … IN TRANSACTIONS`): the partition
is first marked as being erased, so commits are refused until it has finished. Every erasure is
idempotent: run again, it finds nothing and removes nothing.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from neo4j import ManagedTransaction

from pegasus.embedding.embed import Embedder, pack_vector
from pegasus.errors import InvalidInputError
from pegasus.extract.extractor import Staging
from pegasus.merge.records import MergeFields
from pegasus.merge.undo import revert_record
from pegasus.models.reports import ForgetReport
from pegasus.ownership.refs import one_edge, resolve_entity
from pegasus.recall.read_log import read_log_id
from pegasus.settings import Settings
from pegasus.snippets import sync_sightings
from pegasus.store import Store, run
from pegasus.write.keys import drop_stale_keys
from pegasus.write.partition import entity_row, lock_partition, stored_entities


@dataclass
class _Erasure:
    """What one erasure has removed so far inside its transaction."""

    tx: ManagedTransaction
    user_id: str
    now: datetime
    report: ForgetReport
    key_count: int
    edge_ids: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    ends: set[str] = field(default_factory=set)
    entity_ids: set[str] = field(default_factory=set)
    lost_forms: dict[str, list[str]] = field(default_factory=dict)

    def edges(self, rows: list[dict[str, Any]]) -> None:
        """Erase these memories and their snippets."""
        if not rows:
            return
        done = run(self.tx, "ownership/forget_edges", user_id=self.user_id, rows=rows)[0]
        self.report.memories += done["forgotten"]
        self.labels |= set(done["labels"])
        self.edge_ids |= {r["edge_id"] for r in rows}
        self.ends |= {r["source_id"] for r in rows} | {r["target_id"] for r in rows}

    def entities(self, entity_ids: list[str]) -> None:
        """Erase these entities (their memories already gone) and the keys of their names."""
        if not entity_ids:
            return
        done = run(self.tx, "ownership/forget_entities", user_id=self.user_id,
                   entity_ids=entity_ids)[0]
        self.report.entities += done["forgotten"]
        self.entity_ids |= set(entity_ids)

    def finish(self, conversation_ids: list[str]) -> ForgetReport:
        """Provisional ends left alone, merge records, stale keys, read logs, the partition."""
        tx, user_id = self.tx, self.user_id
        self.entities([r["id"] for r in run(
            tx, "ownership/orphans", user_id=user_id, provisional_only=True,
            entity_ids=sorted(self.ends - self.entity_ids))])
        self.report.merge_records += run(
            tx, "ownership/forget_merge_records", user_id=user_id,
            entity_ids=sorted(self.entity_ids), conversation_ids=conversation_ids)[0]["forgotten"]
        drop_stale_keys(tx, user_id, self.lost_forms, self.labels)
        if self.edge_ids:
            run(tx, "ownership/clean_read_logs", user_id=user_id,
                edge_ids=sorted(read_log_id(i) for i in self.edge_ids))
        after = run(tx, "write/partition_stats", user_id=user_id, now=self.now, self_id=None)
        self.report.keys = max(self.key_count - after[0]["key_count"], 0) if after else 0
        return self.report


def _begin(tx: ManagedTransaction, user_id: str, now: datetime, scope: str) -> _Erasure:
    state = lock_partition(tx, user_id, now)
    # The partition's own key count is kept by every write; this erasure's keys are the
    # difference (a count of the keys before, without reading them).
    before = state["key_count"] or 0
    return _Erasure(tx, user_id, now, ForgetReport(user_id=user_id, scope=scope), before)


def forget_memory(tx: ManagedTransaction, user_id: str, edge_id: str,
                  now: datetime) -> ForgetReport:
    """Erase one memory: the edge, its snippet, its label's key if nothing else uses it, a
    provisional end it alone held, its read-log entries."""
    erasure = _begin(tx, user_id, now, "memory")
    erasure.edges([one_edge(tx, user_id, edge_id)])
    return erasure.finish([])


def entity_forms(name: str, aliases: list[str]) -> list[str]:
    """An entity's names as erasure looks for them in text: lower case, distinct."""
    return sorted({f.lower() for f in [name, *aliases] if f.strip()})


def forget_entity(tx: ManagedTransaction, user_id: str, ref: str,
                  now: datetime) -> tuple[ForgetReport, list[str]]:
    """Erase one entity with all its memories; conversations lose what names it (a summary or
    tag holding its name, recorded turns saying it). Also the forms it had, for staging."""
    erasure = _begin(tx, user_id, now, "entity")
    choice = resolve_entity(tx, user_id, ref)
    if choice.is_self:
        raise InvalidInputError(f"{choice.name!r} is the user's own node: forgetting it is forgetting "
                                "everything (`forget --everything --yes`); nothing was changed")
    [entity] = stored_entities(tx, user_id, ids=[choice.id])
    erasure.edges(run(tx, "ownership/entity_edges", user_id=user_id, entity_id=entity.id))
    erasure.entities([entity.id])
    forms = entity_forms(entity.name, entity.aliases)
    erasure.report.conversations_scrubbed = run(
        tx, "ownership/scrub_conversations", user_id=user_id, forms=forms)[0]["scrubbed"]
    return erasure.finish([]), forms


def _sighting_words(kept: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The surest remaining sighting with words (the latest on ties), or None."""
    worded = [s for s in kept if s.get("snippet")]
    if not worded:
        return None
    return max(worded, key=lambda s: (s.get("confidence") or 0.0, s.get("at") or ""))


def forget_conversation(tx: ManagedTransaction, embedder: Embedder, user_id: str,
                        conversation_id: str, now: datetime) -> ForgetReport:
    """Erase one conversation: what only it taught goes; memories also seen elsewhere lose its
    sighting and, where its words were shown, show another sighting's; what it superseded or
    ended is current again; names and properties its merges added are taken back."""
    erasure = _begin(tx, user_id, now, "conversation")
    erase, change, revive = [], [], []
    for row in run(tx, "ownership/conversation_edges", user_id=user_id,
                   conversation_id=conversation_id):
        where = {k: row[k] for k in ("edge_id", "source_id", "target_id")}
        others = [c for c in row["conversations"] if c != conversation_id]
        if conversation_id not in row["conversations"]:  # only superseded or ended by it
            revive.append(where)
            continue
        if not others:
            erase.append(where)
            continue
        logged = [json.loads(s) for s in row["sightings"]]
        kept = [s for s in logged if s["conversation_id"] != conversation_id]
        theirs = row["said_in"] == conversation_id or any(
            s["conversation_id"] == conversation_id and s.get("snippet") == row["snippet"]
            for s in logged)
        words = None
        if theirs:
            best = _sighting_words(kept)
            if best is None:  # written before sightings were logged: no other words known
                erase.append(where)
                continue
            words = {"snippet": best["snippet"], "evidence": best.get("evidence") or "",
                     "confidence": best.get("confidence") or 0.0,
                     "said_at": datetime.fromisoformat(best["at"]) if best.get("at") else now,
                     "said_in": best["conversation_id"]}
        change.append({**where, "conversations": others,
                       "sightings": [json.dumps(s, ensure_ascii=False) for s in kept],
                       "words": words})
        if row["superseded_here"]:
            revive.append(where)
    erasure.edges(erase)
    worded = [c for c in change if c["words"] is not None]
    for item, vector in zip(worded, embedder.embed([c["words"]["snippet"] for c in worded]),
                            strict=True):
        item["words"]["packed"], item["words"]["vector"] = pack_vector(vector), vector.tolist()
    if change:
        run(tx, "ownership/edge_words", user_id=user_id, rows=change)
        # The erased sighting's words leave the index; the words an edge now shows are its own.
        sync_sightings(tx, embedder, user_id, [
            {k: c[k] for k in ("edge_id", "source_id", "target_id")} for c in change])
    erasure.report.memories_changed = len(change)
    revive = [r for r in revive if r["edge_id"] not in erasure.edge_ids]
    if revive:
        run(tx, "write/revive_edges", user_id=user_id, rows=revive)
    erasure.report.memories_revived = len(revive)
    _take_back_entities(erasure, conversation_id)
    erasure.report.conversations = run(tx, "ownership/forget_conversation", user_id=user_id,
                                       conversation_id=conversation_id)[0]["forgotten"]
    return erasure.finish([conversation_id])


def _take_back_entities(erasure: _Erasure, conversation_id: str) -> None:
    """The conversation's part of each entity: names and properties its merges added, its
    citation; an entity only it taught, left without memories, goes."""
    tx, user_id = erasure.tx, erasure.user_id
    found = run(tx, "ownership/conversation_entities", user_id=user_id,
                conversation_id=conversation_id)[0]
    entities = {e.id: e for e in stored_entities(tx, user_id, ids=found["ids"])}
    had = {i: e.forms() for i, e in entities.items()}
    touched: dict[str, set[str]] = {}
    for record in map(MergeFields.from_node, found["merges"]):
        survivor = entities.get(record.survivor_id)
        if survivor is not None:
            touched.setdefault(survivor.id, set()).update(revert_record(survivor, record))
    for entity in entities.values():
        entity.conversations = [c for c in entity.conversations if c != conversation_id]
    alone = {r["id"] for r in run(tx, "ownership/orphans", user_id=user_id,
                                  provisional_only=False, entity_ids=sorted(
                                      i for i, e in entities.items() if not e.conversations))}
    erasure.entities(sorted(alone))
    rows = []
    for entity in (e for i, e in entities.items() if i not in alone):
        row = entity_row(entity)
        for key in touched.get(entity.id, ()):
            row["props"].setdefault(f"p_{key}", None)  # a property its merge added goes
        rows.append(row)
        lost = [f for f in had[entity.id] if f not in entity.forms()]
        if lost:
            erasure.lost_forms[entity.id] = lost
    if rows:
        run(tx, "write/update_entities", user_id=user_id, now=erasure.now, rows=rows)
    erasure.report.entities_changed = sum(
        1 for e in rows if e["id"] in touched or e["id"] in erasure.lost_forms)


def forget_everything(store: Store, settings: Settings, user_id: str,
                      now: datetime) -> ForgetReport:
    """Erase every node and edge of the user, in batches; then their staging files."""
    counts = store.write("ownership/begin_erasure", user_id=user_id, now=now)[0]
    store.autocommit("ownership/erase_user_edges", user_id=user_id, batch=settings.erase_batch_size)
    store.autocommit("ownership/erase_user_nodes", user_id=user_id, batch=settings.erase_batch_size)
    store.write("ownership/end_erasure", user_id=user_id)
    files = drop_staging_files(settings.home, user_id)
    return ForgetReport(user_id=user_id, scope="everything", staging_files=files, **counts)


def drop_staging_files(home: Path, user_id: str) -> int:
    """Remove every staging file of the user; how many there were."""
    staged = Staging.user_dir(home, user_id)
    files = len(list(staged.glob("*.jsonl"))) if staged.is_dir() else 0
    shutil.rmtree(staged, ignore_errors=True)
    return files


def forget_staged(home: Path, user_id: str, conversation_id: str | None,
                  forms: list[str] | None = None) -> int:
    """Staging files of the user: one conversation's, or those holding one of `forms`."""
    if conversation_id is not None:
        path = Staging(home, user_id, conversation_id).path
        existed = path.exists()
        path.unlink(missing_ok=True)
        return int(existed)
    folder = Staging.user_dir(home, user_id)
    removed = 0
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        text = " ".join(_plain(line) for line in
                        path.read_text(encoding="utf-8", errors="replace").splitlines()).lower()
        if any(f in text for f in forms or []):
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def _plain(line: str) -> str:
    """A staged JSON line with its escapes undone (a name with accents is found as typed)."""
    try:
        return json.dumps(json.loads(line), ensure_ascii=False)
    except json.JSONDecodeError:
        return line
