"""The facade: `Memory` wires settings, the store, the embedder and the pipeline stages."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import cached_property, partial
from pathlib import Path
from types import TracebackType
from typing import Any

import neo4j
from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from pegasus.clock import aware
from pegasus.commit import CommitJob, commit
from pegasus.conversations import Conversations
from pegasus.embedding.embed import Embedder
from pegasus.errors import (
    InvalidBatchError,
    InvalidInputError,
    NotFoundError,
    TooLargeError,
)
from pegasus.lifecycle import consolidate, scheduled_consolidate
from pegasus.llm import Extraction, extraction_source
from pegasus.merge.review import Reviewer
from pegasus.merge.snapshots import Snapshots
from pegasus.migrations import migrate
from pegasus.models.batch import ExtractionBatch, Turn, describe_validation_error
from pegasus.models.recall import Recall
from pegasus.models.reports import (
    CommitReport,
    Correction,
    DecayReport,
    Extracted,
    ForgetReport,
    ImportReport,
    Recorded,
    UndoResult,
)
from pegasus.models.views import EntityView, MemoryEdge, MemoryHistory, MergeRecord, Overview
from pegasus.ownership.forget import forget_staged
from pegasus.recall.engine import Explained, RecallEngine
from pegasus.recall.warm import rehearse as rehearse_recall
from pegasus.screen import check_id, screen_turns
from pegasus.settings import Settings
from pegasus.store import Store, run
from pegasus.write.merge_records import merge_records


class Memory:
    """Long-term memory for one Neo4j database; every call names the user it acts for."""

    def __init__(
        self,
        settings: Settings | None = None,
        driver: neo4j.Driver | None = None,
        reviewer: Reviewer | None = None,
        embedder: Embedder | None = None,
        llm: BaseChatModel | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store = Store(self.settings, driver)
        self.snapshots = Snapshots(self.settings.snapshot_users)
        self._llm = llm
        self._models: dict[tuple[str, str | None], BaseChatModel] = {}
        if reviewer is None and (llm is not None or self.settings.llm_model):
            from pegasus.merge.llm_review import LLMReviewer

            reviewer = LLMReviewer(self.llm)
        self.reviewer = reviewer
        self._embedder = embedder
        # What extracts a conversation recorded without the proxy when the user never used
        # the proxy and PEGASUS_LLM_MODEL is not set: serve takes it from the upstream's list.
        self.default_model: str | None = None

    @property
    def has_llm(self) -> bool:
        """Whether extraction can run: a chat model was passed in or one is configured."""
        return self.extraction.on

    @cached_property
    def extraction(self) -> Extraction:
        """Which model extracts and through what, or why nothing can (pegasus.llm)."""
        if self._llm is not None:
            return Extraction("factory", "the chat model given to Memory",
                              type(self._llm).__name__)
        return extraction_source(self.settings)

    def extraction_for(self, used: str | None) -> Extraction:
        """What extracts a conversation that used model `used` (None: not known)."""
        return self.extraction.for_model(used)

    @cached_property
    def llm(self) -> BaseChatModel:
        """The chat model for extraction and review (settings, unless one was passed in)."""
        return self.llm_for(None)

    def llm_for(self, used: str | None) -> BaseChatModel:
        """The chat model that extracts a conversation which used model `used`."""
        if self._llm is not None:
            return self._llm
        from pegasus.llm import chat_model

        source = self.extraction_for(used)
        key = (source.via, source.model)  # one model name may be served by both upstreams
        if key not in self._models:
            self._models[key] = chat_model(self.settings, used)
        return self._models[key]

    @cached_property
    def embedder(self) -> Embedder:
        return self._embedder or Embedder(
            self.settings.embedding_model, self.settings.embedding_dimensions,
            self.settings.embed_cache_texts, self.settings.embedding_runtime,
            self.settings.embed_batch_window_ms, self.settings.home / "models")

    @cached_property
    def recall_engine(self) -> RecallEngine:
        return RecallEngine(self.store, self.embedder, self.settings.recall)

    @cached_property
    def conversations(self) -> Conversations:
        """Recorded conversations: recording, closing, leases, extraction (the stage)."""
        return Conversations(self.store, self.settings, self.embedder, self.recall_engine,
                             self.snapshots, self.reviewer, self)

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if "recall_engine" in self.__dict__:
            self.recall_engine.read_log.close()
        self.store.close()

    def settle_reads(self) -> None:
        """Wait until every read log this process queued is written (design §7.10): what
        reads or changes a conversation's log (a close, forgetting, an export) calls it first."""
        if "recall_engine" in self.__dict__:
            self.recall_engine.read_log.flush()

    def migrate(self) -> list[str]:
        """Bring the database up to this version (`pegasus.migrations`: the schema files, then
        the data steps, in order); the schema file names applied."""
        return migrate(self.store, self.embedder)

    def commit(
        self,
        user_id: str,
        conversation_id: str,
        batch: ExtractionBatch | dict[str, Any],
        at: datetime | None = None,
        transcript: str | list | None = None,
    ) -> CommitReport:
        """Clean, merge and commit one conversation's batch in one transaction."""
        check_id("user_id", user_id)
        check_id("conversation_id", conversation_id)
        if not isinstance(batch, ExtractionBatch):
            try:
                batch = ExtractionBatch.model_validate(batch)
            except ValidationError as exc:
                raise InvalidBatchError(
                    f"not an extraction batch: {describe_validation_error(exc)}") from exc
        if transcript is not None:  # snippets are looked for in it: its size is work
            size = len(transcript) if isinstance(transcript, str) else sum(
                len(str(t.get("content", "")) if isinstance(t, dict) else str(t))
                for t in transcript)
            if size > self.settings.max_transcript_chars:
                raise TooLargeError(f"transcript too long ({size} characters, limit "
                                    f"{self.settings.max_transcript_chars}); split the "
                                    "conversation")
        job = CommitJob(
            settings=self.settings, embedder=self.embedder, user_id=user_id,
            conversation_id=conversation_id, batch=batch, at=aware(at), transcript=transcript,
            reviewer=self.reviewer,
        )
        return commit(self.store, job, self.snapshots)

    def recall(
        self,
        user_id: str,
        text: str,
        conversation_id: str | None = None,
        at: datetime | None = None,
    ) -> Recall:
        """What this message recalls; with a conversation id, the read is logged on it (and
        that conversation's own recorded turns are not quoted back to it)."""
        explained = self.explain(user_id, text, at, conversation_id)
        if conversation_id is not None:
            self.log_read(user_id, conversation_id, explained, at)
        return explained.recall

    def log_read(self, user_id: str, conversation_id: str, explained: Explained,
                 at: datetime | None = None) -> None:
        """Log what a recall showed on the conversation (reinforced once at its close)."""
        check_id("conversation_id", conversation_id)
        self.recall_engine.log_read(user_id, conversation_id, explained, aware(at))

    def explain(self, user_id: str, text: str, at: datetime | None = None,
                conversation_id: str | None = None) -> Explained:
        """A recall with every intermediate value (seeds, activation, budget); logs nothing.
        `conversation_id`: the conversation asking, whose own turns are not quoted to it."""
        check_id("user_id", user_id)
        if not isinstance(text, str):
            raise InvalidInputError("recall text must be a string")
        if len(text) > self.settings.max_transcript_chars:
            raise InvalidInputError(
                f"message too long ({len(text)} characters, limit "
                f"{self.settings.max_transcript_chars})")
        return self.recall_engine.explain(user_id, text, aware(at), exclude=conversation_id)

    def close_conversation(self, user_id: str, conversation_id: str,
                           at: datetime | None = None) -> int:
        """Apply the read reinforcement once per logged edge; the number of edges reinforced."""
        check_id("user_id", user_id)
        check_id("conversation_id", conversation_id)
        return self.conversations.reinforce_reads(user_id, conversation_id, aware(at))

    def consolidate(self, at: datetime | None = None, user_id: str | None = None) -> DecayReport:
        """The daily decay pass over every user's edges, or over one user's partition only."""
        if user_id is not None:
            check_id("user_id", user_id)
        return consolidate(self.store, self.settings, aware(at), user_id)

    def consolidate_if_due(self, at: datetime | None = None) -> DecayReport | None:
        """The daily pass unless one ran within `decay_interval_h` or is running elsewhere
        (servers sharing a database never run it twice); None when it was not due."""
        return scheduled_consolidate(self.store, self.settings, aware(at))

    def verify(self) -> None:
        """Fail with a clear error when Neo4j cannot be reached or refuses the credentials."""
        self.store.verify()

    # --- conversations recorded turn by turn (the proxy, the Opencode plugin) --------------

    def warm(self, user_ids: Iterable[str] = ("user",)) -> None:
        """Run every query a proxied turn runs (its conversation found, its turn recorded, its
        recall) for partitions no user can hold, keeping nothing: planned now, they do not cost
        the first request its memory budget (#36). Neo4j plans apart for each size of an id
        (rounded up to a power of ten): `user_ids` are the users expected, one blank id (which
        check_id refuses) of each of their sizes is rehearsed."""
        now = aware(None)
        turn = [{"role": "user", "content": "warm up"}]
        blanks = {" " * 10 ** math.ceil(math.log10(max(len(u), 1))) for u in user_ids}

        def turns_of_nobody(tx: neo4j.ManagedTransaction) -> None:
            query = partial(run, tx)
            for nobody in sorted(blanks):
                conversation = " " * 25  # a derived conversation id's size
                query("read/conversation_turns", user_id=nobody, conversation_id=conversation)
                # model names of both usual sizes, and none (the reply's recording names none)
                for model in ("gpt-4o", "gpt-4o-mini", None):
                    self.conversations.record_in(query, nobody, conversation, turn, now,
                                                 "proxy", model)
                rehearse_recall(self.recall_engine, query, nobody, now)

        self.store.write(turns_of_nobody, rollback=True)

    def conversation_state(self, user_id: str, conversation_id: str) -> dict[str, Any]:
        """{exists, status, turns (JSON strings), committed, close_attempts, close_error}."""
        return self.conversations.state(user_id, conversation_id)

    def record_turns(self, user_id: str, conversation_id: str, turns: list[dict[str, Any]],
                     at: datetime | None = None, source: str = "proxy",
                     model: str | None = None) -> int:
        """Append turns ({role, content} and an optional client `id`) to a conversation's
        transcript; a turn whose id is already recorded is skipped. How many it holds.
        `model`: the model the client talks to (the proxy knows it), kept for extraction.
        TooLargeError, with nothing recorded, for a turn over max_turn_chars or a transcript
        that would pass max_transcript_chars (counted as recorded, JSON text)."""
        return self.record(user_id, conversation_id, turns, at, source, model).turns

    def record(self, user_id: str, conversation_id: str, turns: list[dict[str, Any]],
               at: datetime | None = None, source: str = "proxy", model: str | None = None
               ) -> Recorded:
        """`record_turns`, telling also whether the conversation is new and how many of its
        turns are recorded but not consolidated yet. The user turns recorded are recallable
        from the user's other conversations at once, as passages (design §7.11)."""
        check_id("user_id", user_id)
        check_id("conversation_id", conversation_id)
        turns = screen_turns(turns)  # no secret is recorded, nor embedded (design §15)
        return self.conversations.record(user_id, conversation_id, turns, at, source, model)

    def idle_conversations(self, user_id: str, before: datetime) -> list[str]:
        """Ids of the user's open recorded conversations last touched before `before`."""
        return self.conversations.idle(user_id, before)

    def request_close(self, user_id: str, conversation_id: str, at: datetime | None = None,
                      source: str = "proxy") -> str:
        """Mark a conversation `closing` (durably: a worker closes it, now or after a restart);
        its status before the request ('open', 'closing', 'closed', 'failed' …).
        NotFoundError for a conversation that was never recorded."""
        return self.conversations.request_close(user_id, conversation_id, at, source)

    def paused_conversations(self, user_id: str, quiet_since: datetime,
                             except_id: str | None = None, limit: int = 50,
                             small_quiet_since: datetime | None = None,
                             min_chars: int = 0) -> list[str]:
        """Ids of the user's open conversations quiet since `quiet_since` whose user turns are
        not all consolidated, and hold at least `min_chars` characters of them unless quiet
        since `small_quiet_since` too: in-session extraction takes them (design §9)."""
        return self.conversations.paused(user_id, quiet_since, except_id, limit,
                                         small_quiet_since, min_chars)

    def hooks_extraction(self) -> str:
        """What extracts conversations recorded without the proxy: "on: …" or "off: <why>"."""
        from pegasus.llm import hooks_extraction

        return hooks_extraction(self.extraction, self.default_model)

    def model_of(self, user_id: str, used: str | None) -> str | None:
        """The model that extracts a conversation which used model `used`: that one; for one
        recorded without the proxy (None), the model this user last used through the proxy,
        else `default_model` (serve sets it from the upstream's own list) (design §8)."""
        return self.conversations.model_of(user_id, used)

    def due_closes(self, user_id: str, at: datetime | None = None) -> list[str]:
        """Ids of the user's conversations waiting to close whose next attempt is due."""
        return self.conversations.due_closes(user_id, at)

    def claim_close(self, user_id: str, conversation_id: str, holder: str) -> bool:
        """Take the lease on a conversation's close for this worker (close_lease_s of real
        time); False when it is not closing, or another worker's lease still runs."""
        return self.conversations.claim_close(user_id, conversation_id, holder)

    def renew_close(self, user_id: str, conversation_id: str, holder: str) -> bool:
        """Renew this worker's lease on a close it runs; False when it no longer holds it."""
        return self.conversations.renew_close(user_id, conversation_id, holder)

    def release_close(self, user_id: str, conversation_id: str, holder: str) -> None:
        """Give up `holder`'s lease on a conversation's close, for another server to take."""
        self.conversations.release_close(user_id, conversation_id, holder)

    def close_failed(self, user_id: str, conversation_id: str, error: str,
                     next_at: datetime, max_attempts: int) -> tuple[str, int]:
        """Count a failed close attempt; (status, attempts): 'failed' once they run out."""
        return self.conversations.close_failed(user_id, conversation_id, error, next_at,
                                               max_attempts)

    def finish_close(self, user_id: str, conversation_id: str, at: datetime | None = None
                     ) -> dict[str, Any]:
        """Run a close this worker claimed: extract what is left, keep it awaiting extraction
        when no model can, apply the read reinforcement. {remembered, awaiting_extraction
        (when so), reinforced}."""
        return self.conversations.close(user_id, conversation_id, at)

    def await_extraction(self, user_id: str, conversation_id: str, why: str,
                         at: datetime | None = None) -> None:
        """Keep a closing conversation that nothing can extract as awaiting extraction: its
        turns outlive retention, and `extract_pending` extracts it once an LLM is there."""
        self.conversations.await_extraction(user_id, conversation_id, why, aware(at))

    def extract_pending(self, user_id: str | None = None, at: datetime | None = None
                        ) -> list[dict[str, Any]]:
        """Extract the conversations awaiting extraction (every user's, or one user's), in the
        order they closed, each once; one result per conversation: {user_id, conversation_id,
        outcome: extracted | awaiting_extraction | held | failed, and why or the report}."""
        return self.conversations.extract_pending(user_id, at)

    def extract_turns(self, user_id: str, conversation_id: str, at: datetime | None = None
                      ) -> Extracted:
        """Extract and commit a recorded conversation's turns not consolidated yet: while it
        is open, when it closes, or from the backlog (`Conversations.extract_and_commit`)."""
        return self.conversations.extract_and_commit(user_id, conversation_id, at)

    def edges(self, user_id: str) -> list[MemoryEdge]:
        """Every memory edge of a user, in any state, with its strength (notebooks)."""
        return self.memories(user_id, state="all")

    def entities(self, user_id: str, name: str, limit: int = 25, at: datetime | None = None
                 ) -> list[EntityView]:
        """Entities named `name` (or with it as an alias; case and spaces folded), each with
        its strongest edges current at `at` (now); NotFoundError when there is none."""
        from pegasus.text import fold

        check_id("user_id", user_id)
        if not isinstance(name, str) or not name.strip() or len(name) > 500:
            raise InvalidInputError("entity name must be a non-empty string of at most 500 characters")
        rows = self.store.read("read/entity_by_name", user_id=user_id, folded=fold(name),
                                limit=limit, now=aware(at))
        if not rows:
            raise NotFoundError(f"no entity named {name!r} in {user_id}'s memory")
        return [EntityView(**{**row, "properties": dict(row["properties"])}) for row in rows]

    def entity(self, user_id: str, ref: str, at: datetime | None = None) -> EntityView:
        """The one entity `ref` names (its id, else its name or an alias), with its strongest
        current edges; NotFoundError when none, AmbiguousEntityError when several."""
        from pegasus.ownership.refs import resolve_entity

        check_id("user_id", user_id)
        choice = self.store.read(lambda tx: resolve_entity(tx, user_id, ref))
        found = next((v for v in self.entities(user_id, choice.name, at=at)
                      if v.id == choice.id), None)
        if found is None:  # its name has no key (never so after a commit): say so, not crash
            raise NotFoundError(f"no entity {ref!r} in {user_id}'s memory")
        return found

    def remember(
        self,
        user_id: str,
        conversation_id: str,
        turns: list[dict[str, str]] | list[Turn],
        at: datetime | None = None,
        model: str | None = None,
    ) -> CommitReport:
        """Extract the conversation with the LLM (staged, resumable), then commit it; `model`
        is the one the conversation used, which extracts it unless PEGASUS_LLM_MODEL is set."""
        check_id("user_id", user_id)
        check_id("conversation_id", conversation_id)
        try:
            checked = [Turn.model_validate(t).model_dump() for t in turns]
        except ValidationError as exc:
            raise InvalidBatchError("not a transcript (a list of {role, content}): "
                                    f"{describe_validation_error(exc)}") from exc
        except TypeError as exc:
            raise InvalidBatchError(f"not a transcript (a list of {{role, content}}): {exc}"
                                    ) from exc
        checked = screen_turns(checked)  # extraction never sees a secret (design §15)
        self.conversations.check_turn_sizes(checked)
        size = sum(len(t["content"]) for t in checked)
        if size > self.settings.max_transcript_chars:
            raise InvalidBatchError(
                f"transcript too long ({size} characters, limit "
                f"{self.settings.max_transcript_chars}); split the conversation")
        return self.conversations.commit_turns(user_id, conversation_id, checked, at, model)

    def merges(self, user_id: str, include_pending: bool = False, include_merged: bool = False
               ) -> list[MergeRecord]:
        """Flagged merges to inspect (and pending review candidates, and merges made without
        a flag, when asked), newest first."""
        check_id("user_id", user_id)
        statuses = ["flagged", *(["pending"] if include_pending else []),
                    *(["merged"] if include_merged else [])]
        return [MergeRecord(id=record_id, **fields.model_dump(include=set(MergeRecord.model_fields)))
                for record_id, fields in merge_records(self.store, user_id, statuses)]

    # --- the person's control over their memory (design §10) ---------------------------------

    def memories(self, user_id: str, about: str | None = None,
                 state: str | list[str] = "current", limit: int | None = None, offset: int = 0,
                 at: datetime | None = None, newest_first: bool = False,
                 said_from: datetime | None = None, said_until: datetime | None = None,
                 kind: str | None = None) -> list[MemoryEdge]:
        """A user's memories in a state (current, superseded, dormant, expired, retracted or
        all), about one entity (its name, an alias or its id) when given, with an entity of
        `kind` (PERSON, PLACE, …, the person's own node aside) when given, their words said in
        [said_from, said_until) when given; one page of `limit` from `offset` (ordered by
        source, relation, target, or most recently said first)."""
        from pegasus.ownership.see import memories

        check_id("user_id", user_id)
        now = aware(at)
        since = aware(said_from) if said_from is not None else None
        until = aware(said_until) if said_until is not None else None
        return self.store.read(lambda tx: memories(tx, user_id, about, state, now, limit, offset,
                                                   newest_first, since, until,
                                                   self.settings.decay_lambdas, kind))

    def overview(self, user_id: str, at: datetime | None = None) -> Overview:
        """The user's memory at a glance: current memories, entities by kind, open
        conversations, the last activity."""
        from pegasus.ownership.see import overview

        check_id("user_id", user_id)
        now = aware(at)
        return self.store.read(lambda tx: overview(tx, user_id, now))

    def memory(self, user_id: str, memory_id: str, at: datetime | None = None) -> MemoryHistory:
        """One memory with its history: every sighting, reinforcements, its strength at `at`
        (now), and what superseded it. NotFoundError for an id the user has no memory by."""
        from pegasus.ownership.see import history

        check_id("user_id", user_id)
        now = aware(at)
        return self.store.read(lambda tx: history(tx, self.settings, user_id, memory_id, now))

    def retract(self, user_id: str, memory_id: str, at: datetime | None = None,
                undo: bool = False) -> Correction:
        """Mark a memory wrong: never recalled again, not even as history; kept, with the date.
        `undo=True` takes the retraction back."""
        from pegasus.ownership.correct import retract

        check_id("user_id", user_id)
        now = aware(at)
        return self.store.write(lambda tx: retract(tx, user_id, memory_id, now, undo))

    def correct_memory(self, user_id: str, memory_id: str, target: str | None = None,
                       words: str | None = None, since: datetime | None = None,
                       until: datetime | None = None, no_end: bool = False,
                       at: datetime | None = None, via: str = "python", undo: bool = False
                       ) -> Correction:
        """Change what a memory says in place: its other end (`target`, an entity's id, name or
        alias, made when none has it), its `words`, when it began (`since`) or ends (`until`,
        `no_end`). The old version stays as history, superseded by the correction and never
        recalled; recall finds the correction at once. `undo=True` with the correction's id
        takes it back. `via` names the surface (page, api, cli, mcp, python) for the history."""
        from pegasus.ownership.correct import correct_memory, undo_correction

        check_id("user_id", user_id)
        now = aware(at)
        if undo:
            return self.store.write(lambda tx: undo_correction(tx, user_id, memory_id, now))
        return self.store.write(lambda tx: correct_memory(
            tx, self.embedder, user_id, memory_id, now, self.settings.initial_strength,
            target=target, words=words, since=aware(since) if since is not None else None,
            until=aware(until) if until is not None else None, no_end=no_end, via=via))

    def rename_entity(self, user_id: str, entity: str, new_name: str,
                      at: datetime | None = None) -> Correction:
        """Rename an entity (named by its name, an alias or its id); its keys are re-embedded."""
        from pegasus.ownership.correct import rename

        check_id("user_id", user_id)
        now = aware(at)
        return self.store.write(
            lambda tx: rename(tx, self.embedder, user_id, entity, new_name, now))

    def edit_aliases(self, user_id: str, entity: str, add: list[str] | None = None,
                     remove: list[str] | None = None, at: datetime | None = None) -> Correction:
        """Add or remove aliases of an entity; the keys follow."""
        from pegasus.ownership.correct import edit_aliases

        check_id("user_id", user_id)
        now = aware(at)
        return self.store.write(lambda tx: edit_aliases(
            tx, self.embedder, user_id, entity, list(add or []), list(remove or []), now))

    def correct_entity(self, user_id: str, entity: str, new_name: str | None = None,
                       add: list[str] | None = None, remove: list[str] | None = None,
                       at: datetime | None = None) -> Correction:
        """Rename an entity and/or edit its aliases (the HTTP PATCH and MCP `correct` shape)."""
        result = None
        if new_name is not None:
            result = self.rename_entity(user_id, entity, new_name, at)
            entity = result.entity_id or entity
        if add or remove or result is None:
            result = self.edit_aliases(user_id, entity, add, remove, at)
        return result

    def merge_entities(self, user_id: str, keep: str, absorb: str,
                       at: datetime | None = None) -> Correction:
        """Merge two entities the person says are one; recorded, so `undo_merge` splits them."""
        from pegasus.ownership.correct import merge

        check_id("user_id", user_id)
        now = aware(at)
        return self.store.write(lambda tx: merge(tx, self.embedder, user_id, keep, absorb, now))

    def forget_memory(self, user_id: str, memory_id: str, at: datetime | None = None
                      ) -> ForgetReport:
        """Erase one memory, everywhere its words live (design §10)."""
        from pegasus.ownership.forget import forget_memory

        check_id("user_id", user_id)
        now = aware(at)
        self.settle_reads()
        return self.store.write(lambda tx: forget_memory(tx, user_id, memory_id, now))

    def forget_entity(self, user_id: str, entity: str, at: datetime | None = None
                      ) -> ForgetReport:
        """Erase one entity and all its memories; conversations lose what names it."""
        from pegasus.ownership.forget import forget_entity

        check_id("user_id", user_id)
        now = aware(at)
        self.settle_reads()
        report, forms = self.store.write(lambda tx: forget_entity(tx, user_id, entity, now))
        report.staging_files = forget_staged(self.settings.home, user_id, None, forms)
        return report

    def forget_conversation(self, user_id: str, conversation_id: str,
                            at: datetime | None = None) -> ForgetReport:
        """Erase one conversation: what only it taught, its sightings, its record and turns."""
        from pegasus.ownership.forget import forget_conversation

        check_id("user_id", user_id)
        check_id("conversation_id", conversation_id)
        now = aware(at)
        self.settle_reads()
        report = self.store.write(lambda tx: forget_conversation(
            tx, self.embedder, user_id, conversation_id, now))
        report.staging_files = forget_staged(self.settings.home, user_id, conversation_id)
        return report

    def forget_everything(self, user_id: str, at: datetime | None = None) -> ForgetReport:
        """Erase every memory, entity, conversation and file of the user, in batches."""
        from pegasus.ownership.forget import forget_everything

        check_id("user_id", user_id)
        self.settle_reads()
        report = forget_everything(self.store, self.settings, user_id, aware(at))
        self.snapshots.forget(user_id)
        self.recall_engine.forget_user(user_id)
        return report

    # --- taking it along: export and import (design §11) -----------------------------------

    def export(self, user_id: str, with_turns: bool = False, at: datetime | None = None
               ) -> Iterator[str]:
        """The user's memory as JSON Lines (format v1), produced page by page in one
        transaction; nothing touches Neo4j before the first line is asked for."""
        from pegasus.transfer.export import export_lines

        check_id("user_id", user_id)

        def lines() -> Iterator[str]:
            self.settle_reads()
            yield from export_lines(self.store, user_id, aware(at), with_turns,
                                    self.settings.export_timeout_s)

        return lines()

    def import_memory(self, user_id: str, path: str | Path, replace: bool = False,
                      at: datetime | None = None) -> ImportReport:
        """Import an export file as `user_id`'s memory: refused (nothing written) for a file of
        another version or one that breaks the format, and for a partition that holds
        memories unless `replace` (which replaces them in the same transaction that brings
        the import in: on any failure the memory stays as it was)."""
        from pegasus.ownership.forget import drop_staging_files, forget_everything
        from pegasus.transfer.importer import import_file

        check_id("user_id", user_id)
        self.settle_reads()
        now = aware(at)
        report = import_file(
            self.store, self.embedder,
            lambda staging: forget_everything(self.store, self.settings, staging, now),
            user_id, Path(path), now, replace)
        if replace:  # what the swap replaced goes from the caches and the staging files too
            drop_staging_files(self.settings.home, user_id)
            self.recall_engine.forget_user(user_id)
        self.snapshots.forget(user_id)
        return report

    def undo_merge(self, user_id: str, record_id: str, at: datetime | None = None
                   ) -> UndoResult:
        """Split a merge again: the survivor as it was, the absorbed entity and its edges back."""
        from pegasus.merge.undo import undo_in_tx

        check_id("user_id", user_id)
        now = aware(at)
        return UndoResult(**self.store.write(
            lambda tx: undo_in_tx(tx, self.embedder, user_id, record_id, now)))

    # --- what the server asks of the database, through the facade (serve never holds the store)

    @property
    def neo4j_address(self) -> str:
        """The Neo4j server this memory talks to, as messages name it (no credentials)."""
        return self.store.uri

    def applied_migrations(self) -> dict[int, str]:
        """The schema migrations applied to the database: version → checksum."""
        return {r["version"]: r["checksum"] for r in self.store.read("read/applied_migrations")}

    def service_state(self) -> dict[str, Any] | None:
        """The database-wide gauges /metrics shows (read/service_state's row), None when empty."""
        rows = self.store.read("read/service_state")
        return rows[0] if rows else None
