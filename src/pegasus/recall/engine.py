"""One recall: words → embed → seeds → activation (Cypher) → bonus → budget → render → log."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import numpy as np

from pegasus.embedding.centring import centre
from pegasus.embedding.centring import load as load_centre
from pegasus.embedding.embed import Embedder, query_vector, stored_vector, unpack_vector
from pegasus.models.recall import FiredNode, Recall
from pegasus.passages import conversation_key, family
from pegasus.recall.budget import Reached, fire
from pegasus.recall.history import Span, asks_about_past, dates_named, spans_named
from pegasus.recall.rank import Candidate, Weights, choose, graph_scores, score
from pegasus.recall.read_log import Read, ReadLogWriter, read_log_entry, write_reads
from pegasus.recall.seeds import KeySet, Seeds, select_seeds, strongest
from pegasus.settings import RecallSettings
from pegasus.snippets import keyword_query
from pegasus.store import Store, run_values
from pegasus.text import content_words, head_and_tail
from pegasus.vocab import Kind

# Runs one named read query: `Store.read` (its own transaction) or a recall's transaction.
Query = Callable[..., list[dict[str, Any]]]


def instant(epoch_seconds: int | None) -> datetime | None:
    """Epoch seconds as an aware UTC datetime (None stays None)."""
    return None if epoch_seconds is None else datetime.fromtimestamp(epoch_seconds, UTC)


def partition_of(rows: list[dict[str, Any]]) -> Partition:
    """The partition as read/partition_state or read/seed_keys return it (none: no keys)."""
    if not rows:
        return Partition(0, None, set())
    row = rows[0]
    names = [n for n in [row["self_name"], *(row["self_aliases"] or [])] if n]
    return Partition(row["key_count"] or 0, row["self_id"],
                     {w for name in names for w in content_words(name)})


def names_user(word: str, partition: Partition) -> bool:
    """Whether a content word is one of the user's own names: it resolves to the self node,
    which never competes for the budget; it would otherwise seed every entity named after the
    user (design §7.1)."""
    return word in partition.self_words or word.removesuffix("'s") in partition.self_words


def asked_words(words: list[str], reached: list[Reached]) -> list[str]:
    """The words a snippet's keyword share counts: the message's, less the names of the people
    it seeded. "How do Jon and Gina like to destress?" is not matched by "Have faith in
    yourself, Jon" for holding half its words: the name already seeds Jon, whose memories the
    graph signal finds (decisions.md, "Names are not keywords"). All of them when only names."""
    names = {w for n in reached if n.seed and n.kind == Kind.PERSON
             for w in content_words(n.name)}
    kept = [w for w in words if w.removesuffix("'s") not in names]
    return kept or words


def walk_shape(seeds: Seeds, self_id: str | None, text: str | None,
               message: np.ndarray | None, spans: list[Span] | None = None) -> dict[str, Any]:
    """What varies in size from one walk to the next, in one map parameter (`$walk`): Neo4j
    keys a cached plan on each list and string parameter's size rounded up to a power of ten,
    not on a map's contents, so every message shares one plan of read/recall_walk instead of
    planning again (1-2.5 s) for each new combination of sizes (decisions.md, "One plan")."""
    return {
        "seeds": [{"id": i, "act": a} for i, a in seeds.entity_scores.items()],
        "seed_labels": [{"label": lb, "act": a} for lb, a in seeds.labels.items()],
        "anchors": [*seeds.entity_scores, *([self_id] if self_id else [])],
        "self_id": self_id, "query": text,
        "meaning": query_vector(message) if message is not None and message.any() else None,
        "when": [{"start": s.start, "end": s.end} for s in spans] if spans else None,
    }


@dataclass
class Explained:
    """Everything a recall computed, for notebooks and debugging."""

    words: list[str]
    seeds: Seeds
    reached: list[Reached]
    fired: list[Reached]
    crossed: list[str]
    recall: Recall
    shown: list[dict[str, Any]] = field(default_factory=list)
    ranked: list[Candidate] = field(default_factory=list)  # every candidate, best first


@dataclass
class Partition:
    """What recall needs to know of a user's partition before it starts."""

    key_count: int
    self_id: str | None
    self_words: set[str]  # content words of the self node's names


@dataclass
class Asked:
    """A first seed search's answer (`RecallEngine.first_search`): the partition, the depth
    each word was asked at, and each word's keys (by its index in the words searched)."""

    partition: Partition
    depth: int
    rows: dict[int, list[dict[str, Any]]]
    passages: list[dict[str, Any]] = field(default_factory=list)


# A seed search that asks for no passages.
NO_PASSAGES: dict[str, Any] = {"passage_query": None, "meaning": None, "exclude": [],
                               "passage_limit": 0, "passage_scan": 0, "meaning_floor": 1.0}


def passage_candidates(rows: list[dict[str, Any]], spans: list[Span] | None) -> list[Candidate]:
    """The passages a seed search found as candidates: quoted like a memory's words, with no
    graph signal (no ends), marked pending (their turn is not consolidated yet), the user's
    own (they said it)."""
    found = []
    for r in rows:
        said = instant(r["said_at"])
        found.append(Candidate(
            id=r["id"], source_id="", source="", label="", target_id="", target="",
            snippet=r["text"], said_at=said, text_score=r["text_score"] or 0.0,
            dense=r["dense"] or 0.0, pending=r["conversation_id"], own=1.0,
            when=float(any(span.holds(said) for span in spans or []))))
    return found


# The words a recall searches before it knows the user's names: the `words` it keeps, and this
# many more at each end, so that dropping the user's own names (at most this many at an end)
# leaves no kept word unsearched; a word that is still missing is searched in the next round.
NAME_WORDS_SPARE = 4


@dataclass(kw_only=True)
class RecallParams:
    """The knobs of one walk; recall and the extractor's write-time context differ here."""

    seed_threshold: float
    fire_threshold: float
    total: int
    forward_slots: int
    reverse_slots: int
    budget_words: int
    expand_threshold: float
    chars: int  # what is read of a message: its first and last chars // 2 characters
    words: int  # the content words seeded on and searched for: the first and last words // 2
    # Whether the passages of recorded turns compete (a recall: yes; the extractor's write-time
    # context: no, it is told what is remembered, not what was said elsewhere).
    passages: bool = True

    @classmethod
    def for_recall(cls, s: RecallSettings) -> RecallParams:
        return cls(seed_threshold=s.seed_threshold, fire_threshold=s.fire_threshold,
                   total=s.budget_total, forward_slots=s.budget_forward,
                   reverse_slots=s.budget_reverse, budget_words=s.budget_words,
                   expand_threshold=s.expand_threshold, chars=s.recall_chars,
                   words=s.recall_words)

    @classmethod
    def for_write_context(cls, s: RecallSettings) -> RecallParams:
        forward = math.ceil(s.write_context_budget * 0.75)
        return cls(seed_threshold=s.write_context_seed_threshold,
                   fire_threshold=s.write_context_fire_threshold,
                   total=s.write_context_budget, forward_slots=forward,
                   reverse_slots=s.write_context_budget - forward,
                   budget_words=s.write_context_budget_words,
                   expand_threshold=s.write_context_fire_threshold,
                   chars=s.write_context_chars, words=s.write_context_words, passages=False)


@dataclass(frozen=True)
class Embedded:
    """What a recall embeds before its transaction: the message's content words, those the
    first seed search asks, their vectors, and the message's meaning (None: no passages)."""

    every: list[str]
    guess: list[str]
    guessed: np.ndarray
    meaning: np.ndarray | None


class RecallEngine:
    """Recall for one database and one embedder, configured by recall's settings alone."""

    def __init__(self, store: Store, embedder: Embedder, recall: RecallSettings) -> None:
        self.store = store
        self.embedder = embedder
        self.recall = recall
        # Per user, the search depth the last recall's words needed (design §7.3, "Starting
        # depth"): a big partition starts deep instead of paying a shallow round first.
        self._depth_needed: dict[str, int] = {}
        self.read_log = ReadLogWriter(store)

    def forget_user(self, user_id: str) -> None:
        """Drop what this engine remembers of a user (their memory was erased)."""
        self._depth_needed.pop(user_id, None)

    # --- keys ----------------------------------------------------------------------------

    def partition(self, user_id: str, query: Query | None = None) -> Partition:
        """Whether the user has keys, and their self node, read once per recall."""
        return partition_of((query or self.store.read)("read/partition_state", user_id=user_id))

    def search_keys(self, user_id: str, centred: np.ndarray, threshold: float,
                    query: Query | None = None, asked: Asked | None = None,
                    ) -> tuple[Partition, KeySet, np.ndarray]:
        """Each word's nearest keys of this user from the key_centred index, deep enough that
        no key scoring above `threshold` is left out (design §7.3, "Seeds from the index"),
        and the partition, read by the first search (design §7, "Round trips").

        A word's list is complete when the index returned fewer keys than asked (it holds no
        more of this user's), or its last key scores at most the threshold (everything after it
        scores less), or it holds `seeds_per_word` entity keys above it (no more entities can seed).
        Incomplete words are asked again with 4× the depth. The first depth is
        `seed_candidates`, or the depth this user's last recall needed if deeper. The score matrix has
        −1 where a key was not returned for a word: such a key scores below the threshold and
        below that word's top two, so select_seeds decides as on the full matrix.

        `asked`: what a first search (`first_search`) already returned for some of these words
        (by index), and its partition: those words are not asked again unless incomplete."""
        first, cap = self.recall.seed_candidates, self.recall.seeds_per_word
        query = query or self.store.read

        def complete(got: list[dict[str, Any]], asked: int) -> bool:
            entities = sum(r["score"] > threshold and r["kind"] == "entity" for r in got)
            return (len(got) < asked or min(r["score"] for r in got) <= threshold
                    or entities >= cap)

        depth = self._start_depth(user_id)
        found: dict[int, list[dict[str, Any]]] = dict(asked.rows) if asked else {}
        depth_of = dict.fromkeys(found, asked.depth if asked else depth)
        partition: Partition | None = asked.partition if asked else None
        while partition is None or partition.key_count:
            # A round: the words not asked yet at the first depth, each incomplete one 4×
            # deeper than it was asked: one statement per depth, so that each word is asked
            # at the depths the three-statement form asked it (a word's answer at a deeper
            # depth can hold more label keys above the threshold, so more seeds).
            asks: dict[int, list[int]] = {}
            for i in range(len(centred)):
                if i not in found:
                    asks.setdefault(depth, []).append(i)
                elif not complete(found[i], depth_of[i]):
                    asks.setdefault(4 * depth_of[i], []).append(i)
            if partition is None and not asks:
                asks[depth] = []  # no words: the statement still reads the partition
            if not asks:
                break
            for n, ask in sorted(asks.items()):
                answered, rows, _ = self._ask(user_id, centred, ask, n, query)
                partition = partition or answered
                found.update(rows)
                depth_of.update(dict.fromkeys(ask, n))
        needed = first
        for i, got in found.items():
            # The shallowest depth whose answer would have been complete too (the index
            # returns best first): where this user's next recall starts.
            shallow = first
            while shallow < depth_of[i] and not complete(got[:shallow], shallow):
                shallow *= 4
            needed = max(needed, shallow)
        kept = self.recall.depth_hints_kept
        if len(self._depth_needed) >= kept and user_id not in self._depth_needed:
            self._depth_needed.clear()  # a hint: forgetting it costs each user one shallow round
        self._depth_needed[user_id] = needed
        keys: dict[str, dict[str, Any]] = {}
        for i in sorted(found):  # the keys' columns in word order, however they were asked
            for row in found[i]:
                keys.setdefault(row["id"], row)
        ids = list(keys)
        column = {key_id: j for j, key_id in enumerate(ids)}
        scores = np.full((len(centred), len(ids)), -1.0)
        for i, got in found.items():
            for row in got:
                scores[i, column[row["id"]]] = row["score"]
        chosen = [keys[k] for k in ids]
        assert partition is not None  # the first statement reads it, words or none
        return partition, KeySet(ids=ids, kinds=[r["kind"] for r in chosen],
                      entity_ids=[r["entity_id"] for r in chosen],
                      labels=[r["label"] for r in chosen],
                      vectors=np.zeros((len(ids), 0))), scores

    def _start_depth(self, user_id: str) -> int:
        """`seed_candidates`, or the depth this user's last recall needed if deeper."""
        first = self.recall.seed_candidates
        return max(first, self._depth_needed.get(user_id, first))

    @staticmethod
    def _ask(user_id: str, centred: np.ndarray, ask: list[int], n: int, query: Query,
             passages: dict[str, Any] | None = None,
             ) -> tuple[Partition, dict[int, list[dict[str, Any]]], list[dict[str, Any]]]:
        """One read/seed_keys statement: the `n` nearest keys of each word in `ask` (indexes
        into `centred`), best first, the partition, and (`passages`: the search's words and
        meaning, else none) the passages of recorded turns they find."""
        answer = query("read/seed_keys", user_id=user_id, n=n,
                       search={"words": [{"word": i, "vector": query_vector(centred[i])}
                                         for i in ask], **(passages or NO_PASSAGES)})
        rows: dict[int, list[dict[str, Any]]] = {i: [] for i in ask}
        for row in answer[0]["keys"] if answer else []:
            rows[row["word"]].append(row)
        return partition_of(answer), rows, answer[0]["passages"] if answer else []

    def first_search(self, user_id: str, centred: np.ndarray, query: Query,
                     passages: dict[str, Any] | None = None) -> Asked:
        """The first round of `search_keys` alone, before the words are known for sure: the
        partition comes with it (read/seed_keys), and the passages `passages` asks for, so a
        recall reads in two statements."""
        depth = self._start_depth(user_id)
        partition, rows, found = self._ask(user_id, centred, list(range(len(centred))), depth,
                                           query, passages)
        return Asked(partition, depth, rows, found)

    def exact_keys(self, user_id: str) -> KeySet:
        """All of a user's keys with their raw embeddings: the oracle the index search is
        checked against (tests, benchmarks). Never on the recall path."""
        rows = self.store.read("read/partition_keys", user_id=user_id)
        vectors = [stored_vector(r) for r in rows]
        return KeySet(
            ids=[r["id"] for r in rows], kinds=[r["kind"] for r in rows],
            entity_ids=[r["entity_id"] for r in rows], labels=[r["label"] for r in rows],
            vectors=np.array(vectors, dtype=np.float64).reshape(
                len(rows), self.embedder.dimensions),
        )

    def seeds(self, user_id: str, words: list[str], seed_threshold: float,
              vectors: np.ndarray | None = None, exact: bool = False) -> Seeds:
        """Graded seeds of the words (design §7.2-7.4); the self node is never one.

        `exact=True` scores every key of the user in Python instead of asking the index: the
        oracle for tests and benchmarks."""
        if not words:
            return Seeds({}, {}, [])
        vectors = self.embedder.embed(words) if vectors is None else vectors
        mean, _ = load_centre(self.embedder.model_name, self.embedder.dimensions)
        if exact:
            partition = self.partition(user_id)
            keys = self.exact_keys(user_id)
            scores = centre(vectors, mean) @ centre(keys.vectors, mean).T
        else:
            partition, keys, scores = self.search_keys(user_id, centre(vectors, mean),
                                                       seed_threshold)
        return self.select(words, keys, scores, partition, seed_threshold)

    def select(self, words: list[str], keys: KeySet, scores: np.ndarray, partition: Partition,
               seed_threshold: float) -> Seeds:
        """The seeds the words' key scores give (design §7.4-7.5), the self node left out."""
        if not keys.ids:
            return Seeds({}, {}, [])
        seeds = select_seeds(words, scores, keys, seed_threshold, self.recall.margin_top,
                             self.recall.margin_gap, self.recall.seeds_per_word)
        seeds.entity_scores.pop(partition.self_id or "", None)
        return strongest(seeds, self.recall.max_seeds)

    # --- the walk ------------------------------------------------------------------------

    def walk(self, user_id: str, seeds: Seeds, now: datetime, self_id: str | None, *,
             message: np.ndarray | None = None, text: str | None = None,
             history: bool = False, expand_threshold: float | None = None,
             spans: list[Span] | None = None, query: Query | None = None,
             alone: bool = False) -> tuple[list[Reached], list[str], list[Candidate]]:
        """The activation from the seeds, the co-episode bonus, and the edges the hottest
        reached nodes (at least `expand_threshold` hot, else the setting's), the full-text
        `text`, the meaning index (nearest to `message`) and the days the message names
        (`spans`) offer, in one Cypher call (design §7, "Round trips"): (reached nodes, edges
        crossed, candidates scored against `message`, each marked when said in one of the
        spans). `alone`: the spreading activation only, no bonus and no edges offered."""
        s = self.recall
        expand_nodes, bonus = (0, 0.0) if alone else (s.expand_nodes, s.co_episode_bonus)
        rows = (query or self.store.read)(
            "read/recall_walk", user_id=user_id, now=now, spread=s.spread_factor,
            fanout=s.fanout, hub_edges=s.hub_edges, hop2_sources=s.hop2_sources,
            walk=walk_shape(seeds, self_id, text, message if s.meaning_candidates else None,
                            spans if s.when_candidates else None),
            co_episode_threshold=s.co_episode_threshold, co_episode_bonus=bonus,
            expand_threshold=(s.expand_threshold if expand_threshold is None
                              else expand_threshold),
            expand_nodes=expand_nodes, text_limit=s.keyword_candidates,
            meaning_limit=s.meaning_candidates, meaning_floor=s.meaning_floor,
            when_limit=s.when_candidates, when_scan=s.when_scan,
            history=history, faded=s.recall_faded, named_match=s.faded_named_match)
        if not rows:
            return [], [], []
        row = rows[0]
        reached = [
            Reached(id=n["id"], name=n["name"], kind=n["kind"], score=n["score"], hop=n["hop"],
                    seed=n["seed"], forward=n["forward"], reverse=n["reverse"],
                    conversations=list(n["conversations"]),
                    match_score=seeds.entity_scores.get(n["id"], 0.0))
            for n in row["nodes"]
        ]
        crossed = list(dict.fromkeys(e for edges in row["crossed"] for e in edges))
        found = [
            Candidate(
                id=r["id"], source_id=r["source_id"], source=r["source"], label=r["label"],
                target_id=r["target_id"], target=r["target"], snippet=r["snippet"] or "",
                said_at=instant(r["said_at"]), until=instant(r["until"]),
                since=instant(r["since"]), text_score=r["text_score"] or 0.0,
                dense=(float(unpack_vector(r["packed"]) @ message)
                       if r["packed"] is not None and message is not None else 0.0))
            for r in row["candidates"]
        ]
        for c in found:
            c.when = float(any(span.holds(c.said_at) for span in spans or []))
        return reached, crossed, found

    def activate(self, user_id: str, seeds: Seeds, now: datetime, self_id: str | None,
                 query: Query | None = None) -> tuple[list[Reached], list[str]]:
        """The spreading activation alone (no bonus, no candidates): tests and benchmarks."""
        reached, crossed, _ = self.walk(user_id, seeds, now, self_id, query=query, alone=True)
        return reached, crossed

    def message_vector(self, text: str, word_vectors: np.ndarray) -> np.ndarray:
        """What the message means, for ranking and the meaning index: its own sentence
        embedding, or (setting `meaning_from_words`) the normalised mean of its word vectors."""
        if self.recall.meaning_from_words:
            mean = word_vectors.mean(axis=0) if len(word_vectors) else np.zeros(
                self.embedder.dimensions)
            norm = np.linalg.norm(mean)
            return mean / norm if norm > 0 else mean
        return self.embedder.embed([text])[0]

    def explain(self, user_id: str, text: str, now: datetime,
                params: RecallParams | None = None, exclude: str | None = None) -> Explained:
        """The whole recall without the read log, its reads in one read transaction (one
        begin and commit instead of one per query; design §7, "Round trips"). `exclude`: the
        conversation asking, whose own recorded turns are never quoted back to it."""
        text, params, embedded = self.prepare(text, params)
        return self.store.read(lambda tx: self._explain(
            partial(run_values, tx), user_id, text, now, params, exclude, embedded))

    def prepare(self, text: str, params: RecallParams | None = None
                ) -> tuple[str, RecallParams, Embedded]:
        """The message as recall reads it, the parameters, and what it embeds, before any
        transaction: a retried transaction repeats no model call, and none holds a transaction
        open while the model runs (the later embeddings hit the word and text caches)."""
        s = self.recall
        params = params or RecallParams.for_recall(s)
        text = head_and_tail(text, params.chars)  # a huge message costs what its ends cost (#35)
        every = content_words(text)
        guess = head_and_tail(every, params.words + 2 * NAME_WORDS_SPARE)
        guessed = self.embedder.embed(guess)
        meaning = (self.message_vector(text, guessed)
                   if params.passages and s.passage_candidates else None)
        return text, params, Embedded(every, guess, guessed, meaning)

    def _passage_search(self, user_id: str, words: list[str], meaning: np.ndarray,
                        exclude: str | None) -> dict[str, Any]:
        """What the first seed search asks of the passages of recorded turns (design §7.11)."""
        s = self.recall
        # the asking conversation and those it continues: their words are in this chat already
        own = family(exclude) if exclude else []
        return {
            "passage_query": keyword_query(
                user_id, words, [conversation_key(user_id, c) for c in own]),
            "meaning": query_vector(meaning) if meaning.any() else None,
            "exclude": own, "passage_limit": s.passage_candidates,
            "passage_scan": 4 * s.passage_candidates, "meaning_floor": s.meaning_floor,
        }

    def _explain(self, query: Query, user_id: str, text: str, now: datetime,
                 params: RecallParams, exclude: str | None, embedded: Embedded) -> Explained:
        s = self.recall
        # The first seed search reads the partition too (decisions.md, "Recall in two
        # statements"): it searches the words the recall keeps and NAME_WORDS_SPARE more at
        # each end; the user's own names are dropped after, and the kept words are exactly
        # those a search after reading the partition would keep (dropping names before the cut
        # matters: 3 of 474 dev-set blocks moved when names were dropped after it). It finds
        # the passages of recorded turns too, by the same words and the message's meaning.
        every, guess, guessed = embedded.every, embedded.guess, embedded.guessed
        mean, _ = load_centre(self.embedder.model_name, self.embedder.dimensions)
        search = (self._passage_search(user_id, guess, embedded.meaning, exclude)
                  if embedded.meaning is not None else None)
        first = self.first_search(user_id, centre(guessed, mean), query, search)
        partition = first.partition
        words = head_and_tail([w for w in every if not names_user(w, partition)], params.words)
        if not partition.key_count and not first.passages:
            return Explained(words, Seeds({}, {}, []), [], [], [], Recall())
        named = dates_named(text, now)  # dateparser once, for the history and the days
        spans = spans_named(text, now, timedelta(days=s.when_told_within_days), named)
        pending = passage_candidates(first.passages, spans)
        vectors = self.embedder.embed(words)  # the word cache holds them (a copy each)
        self_id = partition.self_id
        seeds = Seeds({}, {}, [])
        if words and partition.key_count:  # a message of only the user's names searches nothing
            at = {w: i for i, w in reversed(list(enumerate(guess)))}
            asked = Asked(partition, first.depth,
                          {j: first.rows[at[w]] for j, w in enumerate(words) if w in at})
            _, keys, scores = self.search_keys(user_id, centre(vectors, mean),
                                               params.seed_threshold, query, asked)
            seeds = self.select(words, keys, scores, partition, params.seed_threshold)
        text_query = keyword_query(user_id, words) if partition.key_count else None
        if seeds.empty and text_query is None and not pending:
            return Explained(words, seeds, [], [], [], Recall())
        reached: list[Reached] = []
        crossed: list[str] = []
        found: list[Candidate] = []
        if not seeds.empty or text_query is not None:
            reached, crossed, found = self.walk(
                user_id, seeds, now, self_id, message=self.message_vector(text, vectors),
                text=text_query, history=asks_about_past(text, now, named),
                expand_threshold=params.expand_threshold, spans=spans, query=query)
        others = [n for n in reached if n.id != self_id]
        fired = fire(others, params.fire_threshold, params.total, params.forward_slots,
                     params.reverse_slots)
        graph_scores(found, {n.id: n.score for n in reached}, self_id, seeds.labels)
        ranked = score([*found, *pending], Weights.of(s, tuple(asked_words(words, reached))))
        ends = {n.id for n in fired} | ({self_id} if self_id else set())
        between = {c.id for c in ranked if not c.pending and c.source_id in ends
                   and c.target_id in ends and (c.source_id != self_id or c.target_id != self_id)}
        quoted, relations = choose(ranked, params.budget_words, s.rank_floor, between,
                                   s.max_memory_lines)
        used = [*relations, *quoted]
        recall = Recall(
            memory=[c.relation for c in relations],
            context=[c.snippet for c in quoted],
            snippets=[c.shown() for c in quoted],
            nodes=[FiredNode(entity_id=n.id, name=n.name, kind=n.kind, score=n.score,
                             direction=n.direction, hop=n.hop) for n in fired],
            edge_ids=[c.id for c in used if not c.pending],
        )
        # A passage is no memory edge: nothing of it is logged to be reinforced.
        shown = [{"id": c.id, "source_id": c.source_id, "target_id": c.target_id}
                 for c in used if not c.pending]
        return Explained(words, seeds, reached, fired, crossed, recall, shown, ranked)

    def log_read(self, user_id: str, conversation_id: str, explained: Explained,
                 now: datetime) -> None:
        """Log the edges this read used on the conversation (shown, or every edge crossed):
        queued for the background writer, or written at once (`read_log_background`)."""
        if self.recall.read_reinforce == "shown":
            entries = [read_log_entry(e["source_id"], e["id"], e["target_id"])
                       for e in explained.shown]
        else:
            entries = self._crossed_entries(user_id, explained.crossed)
        read = Read(user_id, conversation_id, entries, now)
        if self.recall.read_log_background:
            self.read_log.append(read)
        else:
            self.store.write(lambda tx: write_reads(tx, [read]))

    def _crossed_entries(self, user_id: str, edge_ids: list[str]) -> list[str]:
        if not edge_ids:
            return []
        rows = self.store.read("read/edge_sources", user_id=user_id, edge_ids=edge_ids)
        return [read_log_entry(r["source_id"], r["id"], r["target_id"]) for r in rows]
