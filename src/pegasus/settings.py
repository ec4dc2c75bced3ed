"""Settings: connection, models, and every constant of the design (docs/design.md) with its default.

The fields are declared in groups, one per concern (`RecallSettings`, `DecaySettings`, ...);
`Settings` is all of them at once, read from the environment: each field is `PEGASUS_<NAME>`
whatever its group (docs/decisions.md, "Settings in groups"). A stage is given the group it
needs (`settings.recall`), a frozen copy of those fields only."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal, TypeVar, cast

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from pegasus.models.batch import MAX_TURN_CHARS
from pegasus.vocab import STABILITIES


def default_home() -> Path:
    """Where Pegasus keeps its venv, the Neo4j jars, the local server and the embedding
    model's built graph (PEGASUS_HOME)."""
    return Path.home() / ".cache" / "pegasus"


def secret_text(value: SecretStr | str | None) -> str | None:
    """The text of a secret setting, None when unset. Secrets are `SecretStr`, so no repr, log
    or dump of the settings shows them; a plain string passes too, because
    `model_copy(update=…)` does not validate what it is given."""
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def url_with_a_scheme(value: str | None) -> str | None:
    """A base URL setting, stripped; "localhost:11434/v1" starts fine and fails every chat
    with a 502, so it is refused at start."""
    if value is not None and value.strip() and not value.strip().lower().startswith(
            ("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL, e.g. http://localhost:11434/v1")
    return value.strip() if value is not None else None


class Group(BaseModel):
    """The settings of one concern. Its fields are fields of `Settings` too (so each is read
    from `PEGASUS_<NAME>`); `Settings.<group>` gives a frozen copy of them."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)


class LocalSettings(Group):
    """What lives on this machine: the home directory and the Neo4j server that
    `pegasus neo4j start` runs."""

    home: Path = Field(default_factory=default_home)
    neo4j_version: str = "2026.08.1"
    neo4j_browser_version: str = "5.24.0"
    neo4j_bolt_port: int = 7687
    neo4j_http_port: int = 7474
    neo4j_heap: str = "2g"
    neo4j_pagecache: str = "2g"
    # More options for the local server's JVM, split like a shell line and put after
    # Pegasus's own: "-XX:TieredStopAtLevel=1" makes a short-lived server (a test suite's,
    # a throwaway) start in half the time and CPU, as the JVM compiles less of itself.
    neo4j_java_options: str = ""

    @field_validator("neo4j_java_options")
    @classmethod
    def _java_options_split(cls, value: str) -> str:
        try:
            shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"cannot be split like a shell line: {exc}") from None
        return value


class Neo4jSettings(Group):
    """The connection to Neo4j: where, as whom, and how long to wait and retry."""

    # None means: the local server that `pegasus neo4j start` manages (its URI and password
    # are read from its state file under `home`).
    neo4j_uri: str | None = Field(
        default=None, validation_alias=AliasChoices("PEGASUS_NEO4J_URI", "NEO4J_URI")
    )
    neo4j_user: str = Field(
        default="neo4j", validation_alias=AliasChoices("PEGASUS_NEO4J_USER", "NEO4J_USER")
    )
    neo4j_password: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("PEGASUS_NEO4J_PASSWORD", "NEO4J_PASSWORD"),
    )
    neo4j_database: str = Field(
        default="neo4j",
        validation_alias=AliasChoices("PEGASUS_NEO4J_DATABASE", "NEO4J_DATABASE"),
    )
    # The one retry policy (docs/reliability.md, "Retries"): the driver retries a unit of work
    # on a lost connection or a transient error for at most this long, never past the
    # deadline of the HTTP request it serves (request_deadline_s).
    neo4j_retry_time_s: float = Field(default=15.0, ge=0)
    # Connecting to Neo4j, and waiting for a pooled connection, each give up after this long.
    neo4j_connect_timeout_s: float = Field(default=3.0, gt=0)


class EmbeddingSettings(Group):
    """The embedding model and its runtime."""

    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_dimensions: int = 384
    # The embedder keeps the vectors of this many recently embedded texts (words repeat).
    embed_cache_texts: int = Field(default=20_000, ge=1)
    # "onnx" (the default install) or "sentence-transformers" (the reference, the `reference`
    # extra); both give the same vectors (tests/unit/test_encoder.py).
    embedding_runtime: Literal["onnx", "sentence-transformers"] = "onnx"
    # > 0: concurrent callers wait this long to share one model call (docs/decisions.md).
    embed_batch_window_ms: float = Field(default=0.0, ge=0, le=50)


class ExtractionSettings(Group):
    """The LLM that extracts memories from conversations and reviews ambiguous merges."""

    # With none of these set, extraction goes through the proxy's upstream (the OpenAI-
    # compatible one, else the Anthropic one) with the model each conversation used, and
    # llm_model, when set, names the model instead (pegasus.llm.extraction_source).
    llm_model: str | None = None
    # "package.module:function": a function of Settings returning any langchain chat model,
    # used instead of ChatOpenAI (another provider, a local model, a scripted one in tests).
    llm_factory: str | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = 600.0
    # The longest answer asked of the Anthropic API (it requires one); a conversation's tool
    # calls fit easily, and a longer conversation is extracted over several calls anyway.
    llm_max_tokens: int = Field(default=8192, ge=1)
    llm_max_retries: int = 4
    extract_assistant_turns: bool = False

    @field_validator("llm_base_url")
    @classmethod
    def _llm_url_with_a_scheme(cls, value: str | None) -> str | None:
        return url_with_a_scheme(value)


class WriteSettings(Group):
    """The write path (design §4–§5): strengths, confidence and the merge thresholds."""

    initial_strength: float = 100.0
    max_strength: float = 100.0
    reinforce_bump: float = 15.0
    provisional_confidence: float = 0.3
    fuzzy_similarity: float = 0.80
    # A process keeps the indexed entities of this many recently committed users, so a commit
    # does not read the whole partition again (design §5, "Snapshots"); 0 keeps none.
    snapshot_users: int = Field(default=16, ge=0)
    review_merge_silent: float = 0.90
    review_merge_flagged: float = 0.70


class DecaySettings(Group):
    """Decay and the daily pass (design §6)."""

    dormant_below: float = 2.0
    decay_lambdas: dict[str, float] = Field(
        default_factory=lambda: {
            "immutable": 0.000,
            "stable": 0.005,
            "mutable": 0.020,
            "time_bound": 0.050,
            "ephemeral": 0.200,
        }
    )
    decay_batch_size: int = 10_000
    # `pegasus serve` runs the daily pass itself: at start-up when the last one is older than
    # decay_interval_h, and every day at decay_hour_utc (design §6); decay_in_serve=false
    # leaves it to cron (`pegasus consolidate`).
    decay_hour_utc: int = Field(default=3, ge=0, le=23)
    decay_interval_h: float = 23.0
    decay_in_serve: bool = True

    @field_validator("decay_lambdas")
    @classmethod
    def _every_stability_has_a_rate(cls, value: dict[str, float]) -> dict[str, float]:
        missing = [s for s in STABILITIES if s not in value]
        if missing:
            raise ValueError(f"decay_lambdas lacks a rate for: {', '.join(missing)}")
        if any(v < 0 for v in value.values()):
            raise ValueError("decay rates must be >= 0")
        return value


class PrivacySettings(Group):
    """The person's control (design §10): how forgetting runs and how long recorded
    turns are kept."""

    # Forgetting a whole user deletes this many edges or nodes per transaction.
    erase_batch_size: int = Field(default=5_000, ge=1)
    # Recorded turns (proxy, plugins) are deleted this many days after their conversation was
    # remembered (committed or closed); 0 deletes them at the next daily pass. Read logs are
    # cleared as soon as they have been reinforced, at close.
    turn_retention_days: float = Field(default=7.0, ge=0)


class RecallSettings(Group):
    """Recall (design §7): the walk, the ranking, the word budget and the read log; and
    the write-time context, the recall the extractor is given (design §7, last paragraph)."""

    seed_threshold: float = 0.30
    margin_top: float = 0.15
    margin_gap: float = 0.15
    spread_factor: float = 0.6
    # A node spreads along its `fanout` strongest current edges only (the degree in the
    # denominator still counts them all); a label seed seeds its `fanout` strongest edges' ends.
    fanout: int = Field(default=32, ge=1)
    # A node with more relationships than this spreads nothing (design, "Hubs"): each of its
    # shares is negligible, and finding its strongest edges reads all of them.
    hub_edges: int = Field(default=1000, ge=1)
    # The walk starts from at most this many entity seeds, the hottest (design, "Seeds per
    # message"): in a big graph every word of a message matches dozens of names.
    max_seeds: int = Field(default=32, ge=1)
    # Hop 2 spreads from this many of the hottest hop-1 nodes only (design, "Second hop"):
    # the walk's work is then bounded by seeds and fan-out, not by the graph's size.
    hop2_sources: int = Field(default=32, ge=1)
    co_episode_bonus: float = 0.15
    co_episode_threshold: float = 0.30
    fire_threshold: float = 0.30
    budget_total: int = 8
    budget_forward: int = 6
    budget_reverse: int = 2
    read_reinforce: Literal["shown", "crossed"] = "shown"
    # The read log is written by a background thread, off the request path (design §7.10);
    # False writes it before recall returns.
    read_log_background: bool = True
    # Relevance ranking and the word budget (design §7.6-7.8).
    budget_words: int = 300  # the whole injected block, per user, never exceeds this
    expand_threshold: float = 0.30  # reached nodes at least this hot offer their edges
    expand_nodes: int = 8
    keyword_candidates: int = 50  # snippets asked of the full-text index per recall
    # Snippets asked of the meaning (vector) index per recall, nearest to the message's
    # meaning; 0 asks none (decisions.md, "Recall that generalises").
    meaning_candidates: int = Field(default=40, ge=0)
    # ... and only those whose cosine with the message reaches this: "thanks!" or "the and of"
    # are near nothing, and must bring nothing.
    meaning_floor: float = 0.25
    # Passages of recorded turns not consolidated yet asked per recall, by the message's words
    # and again by its meaning (design §7.11); 0 asks none (a turn is then recalled once it is
    # extracted).
    passage_candidates: int = Field(default=12, ge=0)
    # Snippets said on each day, week or month the message names ("on December 4, 2023", "in
    # May 2023", "yesterday"), nearest to its meaning first; 0 asks none (decisions.md,
    # "Memories said when the message says").
    when_candidates: int = Field(default=20, ge=0)
    # ... or in this many days after it: what happens on a day is often told later ("yesterday
    # I…", "last weekend we…").
    when_told_within_days: int = Field(default=7, ge=0)
    # ... of at most this many snippets said in the span (the first said): a month of a huge
    # partition is compared with the message no slower than a busy day.
    when_scan: int = Field(default=1000, ge=1)
    # Faded memories (dormant, expired) are never walked, but the message's own words may bring
    # them back, quoted with their date (design §7.6); False hides them from recall entirely.
    recall_faded: bool = True
    # ... and so does naming one of their entities: a seed whose name a word of the message
    # matched at least this well offers its faded memories (above 1: never; decisions.md,
    # "A named entity's faded memories").
    faded_named_match: float = 0.5
    rank_keywords: float = 0.45
    rank_meaning: float = 0.35
    rank_graph: float = 0.20
    # Added to a memory said on a day the message names (0: such memories are candidates,
    # ranked by the three signals alone).
    rank_when: float = 0.0
    # The keyword signal is the BM25 score times (the share of the message's content words the
    # snippet holds) ** rank_coverage: one common word of a question ("time") no longer makes a
    # snippet its best keyword match. 0 turns it off (decisions.md, "Keywords, counted").
    rank_coverage: float = Field(default=1.0, ge=0.0)
    # Added to each memory: this times the best score of the other memories said at the same
    # moment (one conversation's commit), so the turn beside the best match comes with it
    # (decisions.md, "Memories said together": chosen leave-one-conversation-out on the five dev
    # conversations, the same value on every fold). 0 ranks each memory alone.
    rank_together: float = Field(default=0.4, ge=0.0)
    # Added to a memory of the user's own life (the self node is one of its ends, or a turn the
    # user said) over another person's: in a large memory the lives of the people the user
    # talks about outnumber the user's own and meet the message's words as often
    # (decisions.md, "The user's own life first"). 0 ranks them alike.
    rank_own: float = Field(default=0.1, ge=0.0)
    # How the three signals combine (design §7.8): "weighted" adds the weights times the values
    # scaled to the best; "rrf" adds weight / (rrf_k + rank) per signal (measured no better on
    # the dev set, decisions.md "Rank fusion": kept to measure other conversations with).
    rank_fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: int = Field(default=10, ge=1)
    # A memory under this share of the best one's score is not shown. 0.25, not 0.30: it keeps
    # a memory said on the day a message names (one more conv-49 question answered) and
    # changes no conv-30 block's hit (decisions.md, "Memories said when the message says").
    rank_floor: float = 0.25
    max_memory_lines: int = 6
    # design §7.8: the message's meaning is its own sentence embedding; True takes the mean of
    # its word vectors instead (free, but it finds no snippet by meaning: decisions.md,
    # "Recall that generalises").
    meaning_from_words: bool = False
    # Seed matching in the key_centred vector index: keys asked per word at first, deepened
    # 4x until no key above the threshold can be missing (design §7.3).
    seed_candidates: int = Field(default=16, ge=1)  # 0 would ask the index for no key
    # How many users' starting search depths one engine remembers before it starts over
    # (design §7.3, "Starting depth"); forgetting one costs that user a shallow round.
    depth_hints_kept: int = Field(default=100_000, ge=1)
    # A word seeds at most its `seeds_per_word` best entity keys above the threshold (§7.4).
    seeds_per_word: int = Field(default=32, ge=1)

    # What recall reads of a message (design §7.1, "Long messages"): its first and last
    # recall_chars / 2 characters, and of their content words the first and last
    # recall_words / 2; a pasted document costs what a paragraph does (#35).
    recall_chars: int = Field(default=20_000, ge=2)
    recall_words: int = Field(default=64, ge=2)

    # --- write-time context for the extractor (design §7, last paragraph) -------------------
    write_context_seed_threshold: float = 0.20
    write_context_fire_threshold: float = 0.10
    write_context_budget: int = 40
    write_context_budget_words: int = 1500
    write_context_chars: int = Field(default=200_000, ge=2)  # of the transcript's user words
    write_context_words: int = Field(default=512, ge=2)


class ConversationSettings(Group):
    """Recorded conversations (design §9): when one closes, when it is consolidated
    during the session, and how a failed close is tried again."""

    idle_close_s: float = 1800.0  # a recorded conversation closes after this long unused
    idle_sweep_s: float = Field(default=15.0, gt=0)
    # In-session consolidation (design §9, "Consolidated during the session"): a recorded
    # conversation's new user turns are extracted once it has been quiet this long, or once
    # this many user turns are waiting, while it stays open; 0 turns the trigger off.
    consolidate_after_s: float = Field(default=75.0, ge=0)
    consolidate_every_turns: int = Field(default=12, ge=0)
    # ... when its waiting user turns hold at least consolidate_min_chars characters; a smaller
    # part waits until the conversation is quiet for consolidate_small_after_s (or its close, or
    # the user's next chat): each extraction costs a call's fixed part (the prompt and the tool
    # schemas, ~2,000 tokens), and the part is recallable as it was said meanwhile.
    consolidate_min_chars: int = Field(default=600, ge=0)
    consolidate_small_after_s: float = Field(default=900.0, ge=0)
    # A close that fails (the LLM away, a timeout) is tried again after close_retry_s, then
    # twice as long each time; after close_max_attempts the conversation is marked `failed`.
    close_retry_s: float = 30.0
    close_max_attempts: int = 6
    # A worker holds a close for this long (real time): servers sharing a database never run
    # one close twice, and one that crashed mid-close is taken over by another's sweep after.
    close_lease_s: float = Field(default=600.0, gt=0)


class ServeSettings(Group):
    """`pegasus serve`: the HTTP API, the proxy and its upstreams, the memory page, the
    server itself."""

    # API key → user id. PEGASUS_API_KEYS as a JSON object, and/or a JSON file of that shape.
    api_keys: dict[SecretStr, str] = Field(default_factory=dict)
    api_key_file: Path | None = None
    # A sign-in on the memory page (GET /) lasts this long; signing out ends it sooner.
    page_session_h: float = Field(default=12.0, gt=0, le=24 * 30)
    upstream_base_url: str | None = None  # e.g. https://api.openai.com/v1 or Ollama's /v1
    upstream_api_key: SecretStr | None = None
    upstream_timeout_s: float = 300.0
    # The Anthropic Messages API's upstream (/v1/messages), e.g. https://api.anthropic.com
    anthropic_upstream_base_url: str | None = None
    anthropic_upstream_api_key: SecretStr | None = None
    # The proxy waits at most this long for memory (recording the turn, recalling on it);
    # past it, or when memory fails, the request goes on without memory (X-Pegasus-Memory).
    proxy_memory_budget_s: float = Field(default=1.5, gt=0)
    # What `pegasus serve` logs (Pegasus's and uvicorn's loggers; other libraries stay at
    # WARNING: the Neo4j driver's and httpx's DEBUG lines print query parameters and bodies).
    # No level logs the user's words (docs/privacy.md, "Logs").
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    serve_host: str = "127.0.0.1"
    serve_port: int = 8080
    # Every request's work against Neo4j, retries included, ends by this deadline (then 503):
    # a request never holds a worker thread for long (docs/reliability.md, "Retries").
    request_deadline_s: float = Field(default=20.0, gt=0)
    # /readyz and /metrics answer from what a background probe last saw of Neo4j; a probe
    # gets health_timeout_s, and runs every health_interval_s (docs/reliability.md, "Outages").
    health_timeout_s: float = Field(default=1.5, gt=0)
    health_interval_s: float = Field(default=2.0, gt=0)
    # An export reads in one transaction under the user's partition lock (their writes wait
    # for it); Neo4j ends it after this long, so a download that stalls cannot hold the lock
    # for ever: the transfer then breaks, without its end line (design §11).
    export_timeout_s: float = Field(default=600.0, gt=0)
    # SIGTERM: open requests and the running close get this long, then the server exits; a
    # close not finished by then is released for another replica or the next start.
    shutdown_grace_s: float = Field(default=8.0, gt=0, le=600)

    @field_validator("upstream_base_url", "anthropic_upstream_base_url")
    @classmethod
    def _upstream_url_with_a_scheme(cls, value: str | None) -> str | None:
        return url_with_a_scheme(value)


class PeerSettings(Group):
    """Serve against hostile peers (docs/reliability.md, "Hostile peers"): bounds on
    what an upstream sends and how slowly a client may talk."""

    # A non-streamed upstream answer (an error's body too) is read up to this many bytes; one
    # over it is refused (502). A streamed reply is relayed as it comes, its recorded text
    # capped at max_turn_chars: serve's memory stays flat whatever the upstream sends.
    upstream_max_bytes: int = Field(default=8 * 2**20, ge=1024)
    # A reply, streamed or not, ends this long after it was asked for (upstream_timeout_s only
    # bounds a silence): a model that never stops is cut there (502, or a broken stream).
    upstream_reply_s: float = Field(default=1800.0, gt=0)
    # A client's `at` on the HTTP API and MCP may lie at most this far past the server's clock
    # (422 beyond): a client cannot date memories or turns in the future (design §6, "Clocks").
    max_clock_skew_s: float = Field(default=300.0, ge=0)
    # Slow clients: a request's headers must arrive within header_timeout_s of its first byte
    # (of the connection opening, for the first); its body within body_timeout_s of the
    # headers plus one second per body_min_rate bytes received (408 then, connection closed).
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=30.0, gt=0)
    body_min_rate: int = Field(default=32 * 1024, ge=1)
    # ... and an export's reader must take each part of it within send_timeout_s: an export
    # holds its snapshot's lock until it ends, so a client that stops reading is cut off (a
    # broken transfer) rather than holding the person's other writes.
    send_timeout_s: float = Field(default=30.0, gt=0)


class LimitSettings(Group):
    """Limits on input (design §9, "Limits")."""

    max_transcript_chars: int = 2_000_000
    # One turn, wherever it is recorded (design §9, "Limits"): 413 above it; the proxy records
    # the first max_turn_chars characters and still forwards the whole message.
    max_turn_chars: int = Field(default=MAX_TURN_CHARS, ge=1)
    max_batch_entities: int = 5_000
    # An export file imported (POST /v1/memory/import, the memory page's upload): refused
    # above this, from its declared size before it is read, else as it is read (413).
    max_upload_bytes: int = Field(default=256 * 2**20, ge=1)
    # Every other request body (the memory API, the proxy), the same way. Above what the
    # providers themselves take (Anthropic 32 MB, OpenAI 50 MB with images), so nothing they
    # would answer is refused; a whole 2 M-character transcript is at most 12 MB of JSON.
    max_request_bytes: int = Field(default=64 * 2**20, ge=1)
    max_batch_relations: int = 20_000


G = TypeVar("G", bound=Group)


class Settings(BaseSettings, LocalSettings, Neo4jSettings, EmbeddingSettings, ExtractionSettings,
               WriteSettings, DecaySettings, PrivacySettings, RecallSettings,
               ConversationSettings, ServeSettings, PeerSettings, LimitSettings):
    """All knobs, read from the environment (prefix PEGASUS_) and from a `.env` file: every
    group's fields, by their own names (`PEGASUS_BUDGET_WORDS`, `settings.budget_words`), and
    each group as a whole (`settings.recall`). It declares no field of its own."""

    model_config = SettingsConfigDict(
        env_prefix="PEGASUS_", env_file=".env", extra="ignore", populate_by_name=True,
        # A group's copy is frozen; Settings is not: tests and benchmarks set a field on theirs
        # before they build a Memory with it.
        frozen=False,
    )

    def group(self, kind: type[G]) -> G:
        """A frozen copy of one group's fields as they are now (a copy made with
        `model_copy(update=…)` shows its own values); not validated again: they were."""
        fields = {name: getattr(self, name) for name in kind.model_fields}
        # `model_construct` returns the class it is called on; mypy's pydantic plugin types it
        # as the bound, Group.
        return cast(G, kind.model_construct(**fields))

    @property
    def local(self) -> LocalSettings:
        return self.group(LocalSettings)

    @property
    def neo4j(self) -> Neo4jSettings:
        return self.group(Neo4jSettings)

    @property
    def embedding(self) -> EmbeddingSettings:
        return self.group(EmbeddingSettings)

    @property
    def extraction(self) -> ExtractionSettings:
        return self.group(ExtractionSettings)

    @property
    def write(self) -> WriteSettings:
        return self.group(WriteSettings)

    @property
    def decay(self) -> DecaySettings:
        return self.group(DecaySettings)

    @property
    def privacy(self) -> PrivacySettings:
        return self.group(PrivacySettings)

    @property
    def recall(self) -> RecallSettings:
        return self.group(RecallSettings)

    @property
    def conversations(self) -> ConversationSettings:
        return self.group(ConversationSettings)

    @property
    def serve(self) -> ServeSettings:
        return self.group(ServeSettings)

    @property
    def peers(self) -> PeerSettings:
        return self.group(PeerSettings)

    @property
    def limits(self) -> LimitSettings:
        return self.group(LimitSettings)


# Every group, in the order the source declares them (tests check each field is in one).
GROUPS: tuple[type[Group], ...] = (
    LocalSettings, Neo4jSettings, EmbeddingSettings, ExtractionSettings, WriteSettings,
    DecaySettings, PrivacySettings, RecallSettings, ConversationSettings, ServeSettings,
    PeerSettings, LimitSettings)
