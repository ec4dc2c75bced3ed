"""Recorded conversations, the one home of their states (design §9, "Recorded conversations and
closing" and "Consolidated during the session"): their turns recorded as they are said; a close
requested, claimed under a lease, renewed, failed, released, done with the read reinforcement;
the backlog of closes awaiting extraction; and `extract_and_commit`, the one way from a
recorded conversation's turns to the graph, which a close, the backlog and in-session
consolidation all take (`remember`, a transcript sent whole, takes its second half).

The facade checks the ids it is given and calls this; serve's close worker
(`serve/conversations.py`) runs it through the facade in its own thread."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from neo4j import ManagedTransaction

from pegasus.clock import aware
from pegasus.commit import CommitJob, commit
from pegasus.embedding.embed import Embedder
from pegasus.errors import NotFoundError, PegasusError, TooLargeError
from pegasus.llm import Extraction
from pegasus.merge.review import Reviewer
from pegasus.merge.snapshots import Snapshots
from pegasus.models.reports import CommitReport, Extracted, Recorded
from pegasus.passages import conversation_key, passages_of
from pegasus.portable import native
from pegasus.recall.engine import RecallEngine, RecallParams
from pegasus.recall.read_log import read_log_row
from pegasus.screen import check_id
from pegasus.settings import Settings
from pegasus.snippets import user_key
from pegasus.store import Store, run
from pegasus.write.reinforce import reinforce

log = logging.getLogger(__name__)

# Runs one named statement (`Store.write` of a name, or `run` inside a transaction).
Statement = Callable[..., list[dict[str, Any]]]


class Models(Protocol):
    """Which chat model extracts a conversation that used model `used` (the facade's choice:
    the one given to it, the settings, or the upstream's `default_model`)."""

    default_model: str | None

    def extraction_for(self, used: str | None) -> Extraction: ...

    def llm_for(self, used: str | None) -> BaseChatModel: ...


class Conversations:
    """One database's recorded conversations: recording, closing, leases, extraction."""

    def __init__(self, store: Store, settings: Settings, embedder: Embedder,
                 recall: RecallEngine, snapshots: Snapshots, reviewer: Reviewer | None,
                 models: Models) -> None:
        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.recall = recall
        self.snapshots = snapshots
        self.reviewer = reviewer
        self.models = models

    # --- recording ----------------------------------------------------------------------

    def state(self, user_id: str, conversation_id: str) -> dict[str, Any]:
        """{exists, status, turns (JSON strings), committed, close_attempts, close_error, …}."""
        return self.store.read("read/conversation_turns", user_id=user_id,
                               conversation_id=conversation_id)[0]

    def record(self, user_id: str, conversation_id: str, turns: list[dict[str, Any]],
               at: datetime | None, source: str, model: str | None) -> Recorded:
        """Append screened turns to the transcript in one write; their passages with it."""
        vectors = self.passage_vectors(turns)
        return self.store.write(lambda tx: self.record_in(
            partial(run, tx), user_id, conversation_id, turns, at, source, model, vectors))

    def passage_vectors(self, turns: list[dict[str, Any]]) -> dict[str, Any]:
        """The embedding of every passage the user turns among `turns` would give, by its text
        (computed before the write: no model runs inside a transaction)."""
        self.check_turn_sizes(turns)
        texts = list(dict.fromkeys(p.text for p in passages_of(list(enumerate(turns)))))
        return dict(zip(texts, self.embedder.embed(texts), strict=True)) if texts else {}

    def record_in(self, statement: Statement, user_id: str, conversation_id: str,
                  turns: list[dict[str, Any]], at: datetime | None, source: str,
                  model: str | None, vectors: dict[str, Any] | None = None) -> Recorded:
        """Record `turns` through `statement` (inside a write transaction, or a rehearsal)."""
        # `turns` come screened (`Memory.record`; `warm` sends a fixed text): screening a long
        # turn again here would double its cost on the proxy's memory budget.
        self.check_turn_sizes(turns)
        rows: list[dict[str, Any]] = [{"id": t.get("id"), "json": json.dumps(
                    {"role": t["role"], "content": t["content"]}, ensure_ascii=False)}
                for t in turns]
        limit = self.settings.max_transcript_chars
        if sum(len(r["json"]) for r in rows) > limit:
            raise TooLargeError(f"these turns pass the transcript limit ({limit} characters)")
        now = aware(at)
        row = statement("write/record_turns", user_id=user_id, conversation_id=conversation_id,
                        turns=rows, source=source, model=model, now=now, max_chars=limit)[0]
        if not row["fits"]:
            raise TooLargeError(
                f"conversation {conversation_id!r} would pass the transcript limit ({limit} "
                "characters recorded); nothing was recorded: close it, and go on in a new one")
        # The turns recorded now are the transcript's last ones, in the order sent.
        fresh, base = row["fresh"], row["turns"] - len(row["fresh"])
        placed: list[tuple[int, dict[str, Any]]] = []
        for sent, turn in zip(rows, turns, strict=True):
            if len(placed) < len(fresh) and sent["json"] == fresh[len(placed)]:
                placed.append((base + len(placed), turn))
        found = passages_of(placed)
        if vectors is None:
            vectors = self.passage_vectors([t for _, t in placed])
        if found:
            statement("write/upsert_passages", user_id=user_id, conversation_id=conversation_id,
                      now=now, user_key=user_key(user_id),
                      conversation_key=conversation_key(user_id, conversation_id),
                      rows=[{"id": p.id(conversation_id), "turn": p.turn, "text": p.text,
                             "vector": [float(x) for x in vectors[p.text]]} for p in found])
        return Recorded(turns=row["turns"], recorded=len(fresh), created=row["created"],
                        pending=row["pending_user"])

    def check_turn_sizes(self, turns: list[dict[str, Any]]) -> None:
        """TooLargeError, naming the turn, for one over max_turn_chars."""
        limit = self.settings.max_turn_chars
        for index, turn in enumerate(turns):
            size = len(turn["content"]) if isinstance(turn.get("content"), str) else 0
            if size > limit:
                raise TooLargeError(f"turn {index} is too long ({size} characters, limit "
                                    f"{limit}); nothing was recorded")

    def idle(self, user_id: str, before: datetime) -> list[str]:
        """Ids of the user's open recorded conversations last touched before `before`."""
        return [r["id"] for r in self.store.read("read/idle_conversations", user_id=user_id,
                                                 before=before)]

    def paused(self, user_id: str, quiet_since: datetime, except_id: str | None = None,
               limit: int = 50, small_quiet_since: datetime | None = None,
               min_chars: int = 0) -> list[str]:
        """Ids of the user's open conversations quiet since `quiet_since` whose user turns are
        not all consolidated, and hold at least `min_chars` characters of them unless quiet
        since `small_quiet_since` too: in-session extraction takes them (design §9)."""
        return [r["id"] for r in self.store.read(
            "read/paused_conversations", user_id=user_id, before=quiet_since,
            small_before=small_quiet_since or quiet_since, min_chars=min_chars,
            except_id=except_id, limit=limit)]

    def model_of(self, user_id: str, used: str | None) -> str | None:
        """The model that extracts a conversation which used model `used`: that one; for one
        recorded without the proxy (None), the model this user last used through the proxy,
        else the facade's `default_model` (serve sets it from the upstream's list)."""
        if used:
            return used
        found = self.store.read("read/user_latest_model", user_id=user_id)
        return (found[0]["model"] if found else None) or self.models.default_model

    # --- closing: requested, claimed under a lease, renewed, failed or released, done -------

    def request_close(self, user_id: str, conversation_id: str, at: datetime | None,
                      source: str) -> str:
        """Mark a conversation `closing` (durably: a worker closes it, now or after a restart);
        its status before ('open', 'closing', 'closed', 'failed' …). NotFoundError for a
        conversation never recorded."""
        rows = self.store.write("write/request_close", user_id=user_id,
                                conversation_id=conversation_id, source=source, now=aware(at))
        if not rows:
            raise NotFoundError(f"no conversation {conversation_id!r} was recorded")
        return rows[0]["was"] or "open"

    def due_closes(self, user_id: str, at: datetime | None) -> list[str]:
        """Ids of the user's conversations waiting to close whose next attempt is due."""
        return [r["id"] for r in self.store.read("read/due_closes", user_id=user_id,
                                                 now=aware(at), wall=aware(None))]

    def claim_close(self, user_id: str, conversation_id: str, holder: str) -> bool:
        """Take the lease on a conversation's close for `holder` (close_lease_s of real time);
        False when it is not closing, or another worker's lease still runs."""
        rows = self.store.write("write/claim_close", user_id=user_id,
                                conversation_id=conversation_id, holder=holder,
                                now=aware(None), lease_s=self.settings.close_lease_s)
        return bool(rows and rows[0]["claimed"])

    def renew_close(self, user_id: str, conversation_id: str, holder: str) -> bool:
        """Renew `holder`'s lease on a close it runs; False when it no longer holds it."""
        rows = self.store.write("write/renew_close", user_id=user_id,
                                conversation_id=conversation_id, holder=holder,
                                now=aware(None), lease_s=self.settings.close_lease_s)
        return bool(rows and rows[0]["renewed"])

    def release_close(self, user_id: str, conversation_id: str, holder: str) -> None:
        """Give up `holder`'s lease on a conversation's close, for another server to take."""
        self.store.write("write/release_close", user_id=user_id,
                         conversation_id=conversation_id, holder=holder)

    def close_failed(self, user_id: str, conversation_id: str, error: str,
                     next_at: datetime, max_attempts: int) -> tuple[str, int]:
        """Count a failed close attempt; (status, attempts): 'failed' once they run out."""
        rows = self.store.write("write/close_failed", user_id=user_id,
                                conversation_id=conversation_id, error=error[:2000],
                                next_at=next_at, max_attempts=max_attempts)
        return (rows[0]["status"], rows[0]["attempts"]) if rows else ("closed", 0)

    def close(self, user_id: str, conversation_id: str, at: datetime | None
              ) -> dict[str, Any]:
        """What a claimed close does: extract what in-session consolidation left (a retry
        after the commit landed finds nothing, and only reinforces), keep the conversation
        awaiting extraction when no model can extract it, then apply the read reinforcement.
        {remembered: the commit's report or None, awaiting_extraction: why (when so),
        reinforced: the edges reinforced}."""
        extracted = self.extract_and_commit(user_id, conversation_id, at)
        result: dict[str, Any] = {"remembered": remembered(extracted)}
        if extracted.outcome == "awaiting":
            result["awaiting_extraction"] = extracted.why
            if not self.state(user_id, conversation_id)["awaiting_extraction"]:
                # Marked before the close lands: a crash in between retries the close
                # (counted `awaiting` again, logged once).
                self.await_extraction(user_id, conversation_id, extracted.why, aware(at))
                # Not which one: ids may hold the user's words (privacy.md, "Logs").
                log.warning("closed a conversation without extracting it, kept awaiting "
                            "extraction: %s", extracted.why)
        result["reinforced"] = self.reinforce_reads(user_id, conversation_id, aware(at))
        return result

    def reinforce_reads(self, user_id: str, conversation_id: str, now: datetime) -> int:
        """Reinforce each edge the conversation's reads logged, once (design §7.10), and mark
        it closed; the number reinforced. The reads this process queued are written first."""
        self.recall.read_log.flush()
        return self.store.write(lambda tx: _reinforce_in(tx, self.settings, user_id,
                                                         conversation_id, now))

    # --- the backlog: closes no model could extract ------------------------------------------

    def await_extraction(self, user_id: str, conversation_id: str, why: str,
                         now: datetime) -> None:
        """Keep a conversation that no LLM could extract as awaiting extraction: its turns
        outlive retention, and `extract_pending` extracts it once an LLM is there."""
        self.store.write("write/await_extraction", user_id=user_id,
                         conversation_id=conversation_id, why=why, now=now)

    def awaiting_extraction(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """The backlog in the order it closed: [{user_id, id, model}] (every user's, or one's)."""
        return self.store.read("read/awaiting_extraction", user_id=user_id)

    def claim_extraction(self, user_id: str, conversation_id: str) -> bool:
        """Take one awaiting conversation's extraction for this worker (close_lease_s); False
        when it is no longer awaiting or another worker holds it."""
        rows = self.store.write("write/claim_extraction", user_id=user_id,
                                conversation_id=conversation_id, now=datetime.now(UTC),
                                lease_s=int(self.settings.close_lease_s))
        return bool(rows and rows[0]["claimed"])

    def extraction_done(self, user_id: str, conversation_id: str, now: datetime) -> None:
        """The conversation leaves the backlog; its turns' retention counts from `now`."""
        self.store.write("write/extracted", user_id=user_id, conversation_id=conversation_id,
                         now=now)

    def extract_pending(self, user_id: str | None = None, at: datetime | None = None
                        ) -> list[dict[str, Any]]:
        """Extract the conversations awaiting extraction (every user's, or one user's), in the
        order they closed, each once; one result per conversation: {user_id, conversation_id,
        outcome: extracted | awaiting_extraction | held | failed, and why or the report}."""
        results = []
        for row in self.awaiting_extraction(user_id):
            owner, conversation_id = row["user_id"], row["id"]
            result: dict[str, Any] = {"user_id": owner, "conversation_id": conversation_id}
            results.append(result)
            source = self.models.extraction_for(self.model_of(owner, row["model"]))
            if not source.on:
                result.update(outcome="awaiting_extraction", why=source.why)
                continue
            if not self.claim_extraction(owner, conversation_id):
                result.update(outcome="held", why="another worker is extracting it")
                continue
            try:
                extracted = self.extract_and_commit(owner, conversation_id, at)
            except Exception as exc:  # it stays in the backlog; its lease runs out
                # By kind: ids and the message may hold the user's words (privacy.md, "Logs").
                log.warning("extracting a conversation from the backlog failed: %s",
                            type(exc).__name__, exc_info=not isinstance(exc, PegasusError))
                result.update(outcome="failed", why=str(exc))
                continue
            if (done := remembered(extracted)) is not None:
                result["remembered"] = done
            self.extraction_done(owner, conversation_id, aware(at))
            result["outcome"] = "extracted"
        return results

    # --- from turns to the graph ---------------------------------------------------------

    def extract_and_commit(self, user_id: str, conversation_id: str,
                           at: datetime | None = None) -> Extracted:
        """Extract and commit a recorded conversation's turns not consolidated yet (design §9,
        "Consolidated during the session"): while it is open (in-session), when it closes (what
        is left), or from the backlog. The model sees the new turns, and the last of those
        already consolidated as context; the commit records how far the transcript is
        consolidated, and the new turns' passages leave recall (their memories take over).
        Done again from the conversation's state when another worker consolidated meanwhile."""
        for _ in range(3):
            state = self.state(user_id, conversation_id)
            if not state["exists"]:
                return Extracted(outcome="empty", why="no such conversation")
            turns = [json.loads(t) for t in state["turns"]]
            start = min(state["extracted_turns"], len(turns))
            new = turns[start:]
            if not any(t["role"] == "user" for t in new):
                return Extracted(outcome="empty", turns=start)
            model = self.model_of(user_id, state["model"])
            source = self.models.extraction_for(model)
            if not source.on:
                return Extracted(outcome="awaiting", why=source.why, turns=start)
            # Remembered when it was said: a conversation recorded with its own dates (an
            # imported history, a backlog) is dated by its last turn, not by this run.
            said = native(state.get("last_active_at"))
            when = at if at is not None or not isinstance(said, datetime) else min(
                aware(said), aware(None))
            report = self.commit_turns(user_id, conversation_id, new, when, model,
                                       turns[:start], (start, len(turns)))
            if not report.skipped:
                return Extracted(outcome="extracted", report=report, turns=len(turns))
        return Extracted(outcome="empty", why="consolidated by another worker meanwhile")

    def commit_turns(self, user_id: str, conversation_id: str, turns: list[dict[str, str]],
                     at: datetime | None, model: str | None,
                     earlier: list[dict[str, str]] | None = None,
                     segment: tuple[int, int] | None = None) -> CommitReport:
        """Turns to the graph: the write-time context, the staged extraction, the commit (of a
        recorded conversation's `segment`, after `earlier`; of a whole transcript without)."""
        from pegasus.extract.extractor import Extractor, Staging

        check_id("conversation_id", conversation_id)  # before the model is paid to extract
        staging = Staging(self.settings.home, user_id, conversation_id)
        user_words = "\n".join(t["content"] for t in turns if t["role"] == "user")
        context = self.recall.explain(
            user_id, user_words, aware(at), RecallParams.for_write_context(self.settings)
        ).recall.render()
        try:
            batch, notes = Extractor(self.models.llm_for(model), self.settings.llm_max_retries
                                     ).run(turns, staging, context,
                                           self.settings.extract_assistant_turns, earlier)
        except Exception as exc:
            from pegasus.llm import llm_problem

            problem = llm_problem(exc, self.settings, model)
            if problem is None:
                raise
            raise problem from exc
        job = CommitJob(
            settings=self.settings, embedder=self.embedder, user_id=user_id,
            conversation_id=conversation_id, batch=batch, at=aware(at), transcript=turns,
            reviewer=self.reviewer, segment=segment,
        )
        report = commit(self.store, job, self.snapshots)
        report.notes = notes + report.notes
        staging.clear()
        return report


def remembered(extracted: Extracted) -> dict[str, Any] | None:
    """An extraction's commit report as a close's or the backlog's result shows it."""
    if extracted.report is None:
        return None
    return extracted.report.model_dump(mode="json", exclude_defaults=True)


def _reinforce_in(tx: ManagedTransaction, settings: Settings, user_id: str,
                  conversation_id: str, now: datetime) -> int:
    log_row = run(tx, "read/read_log", user_id=user_id, conversation_id=conversation_id)[0]
    applied = set(log_row["applied"])
    entries = [e for e in dict.fromkeys(log_row["pending"]) if e not in applied]
    rows = [read_log_row(e) for e in entries]
    count = reinforce(tx, settings, user_id, rows, now) if rows else 0
    run(tx, "write/close_conversation", user_id=user_id, conversation_id=conversation_id,
        now=now, reinforced=count)
    return count
