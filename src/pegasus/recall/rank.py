"""Which memories a recall shows (docs/design.md, "Recall"): relevance ranking and the word
budget. Pure: candidates come in with their scores' raw parts, the chosen lines go out.

Each candidate edge is scored by three signals, each scaled to [0, 1] within the recall:
- graph: the activation at its two ends (the self node counts 0: it is an end of nearly
  everything, so it says nothing about relevance);
- keywords: the full-text (BM25) score of its snippet for the message's words, times the share
  of the message's words the snippet holds (a snippet that shares one common word, "time", is
  not a keyword match of the whole question);
- meaning: the cosine of its snippet's embedding with the whole message's.
And a prior, not a signal of the message: a memory of the user's own life (the self node is one
of its ends, or a turn the user said) goes before another person's (`own`).
An edge said in other words in several conversations comes once per text, and is shown once,
with the words that score best.
The block never exceeds the word budget; a snippet another shown snippet contains is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from pegasus.models.recall import ShownSnippet
from pegasus.recall.render import RelationLine
from pegasus.settings import RecallSettings
from pegasus.text import content_words, fold


@dataclass
class Candidate:
    """A memory edge (or a passage of a recorded turn) that may be shown, with the raw parts of
    its relevance."""

    id: str
    source_id: str
    source: str
    label: str
    target_id: str
    target: str
    snippet: str
    said_at: datetime | None
    until: datetime | None = None  # the day it ended: superseded (history) or expired
    since: datetime | None = None  # first observed
    text_score: float = 0.0
    dense: float = 0.0
    graph: float = 0.0
    when: float = 0.0  # 1 when said on a day the message names
    own: float = 0.0  # 1 when the user's own life: the self node is an end, or the user said it
    score: float = 0.0
    # A passage of a recorded turn not consolidated yet (design §7.11): its conversation's id.
    pending: str | None = None

    def shown(self) -> ShownSnippet:
        if self.pending is not None:
            return ShownSnippet(text=self.snippet, edge_id="", passage_id=self.id,
                                conversation_id=self.pending, pending=True,
                                said_at=self.said_at, score=round(self.score, 6))
        return ShownSnippet(text=self.snippet, edge_id=self.id, said_at=self.said_at,
                            until=self.until, score=round(self.score, 6))

    @property
    def line(self) -> str:
        """The [CONTEXT] line: the date the words were said, then the words verbatim."""
        return self.shown().line

    @property
    def relation(self) -> str:
        """The [MEMORY] line of this edge, with the day it was first observed."""
        return RelationLine(self.source, self.label, self.target,
                            self.since.date() if self.since else None).render()


@dataclass(frozen=True, kw_only=True)
class Weights:
    """How much each signal counts (RecallSettings.rank_keywords, rank_meaning, rank_graph,
    rank_when), and how they combine (rank_fusion, rrf_k): "weighted" adds the scaled values,
    "rrf" adds each signal's weight over (k + its rank). By keyword only: nine numbers in a
    row are easily given in the wrong order."""

    keywords: float
    meaning: float
    graph: float
    fusion: str = "weighted"
    rrf_k: int = 10
    when: float = 0.0
    # The keyword signal times (share of the message's words the snippet holds) ** coverage;
    # 0 leaves it the BM25 score alone. `words` are the message's content words.
    coverage: float = 0.0
    words: tuple[str, ...] = ()
    # Added, times the best score of the other memories said at the same moment (the same
    # conversation's commit), to each memory: see `said_together`. 0 leaves scores alone.
    together: float = 0.0
    # Added to a memory of the user's own life (`Candidate.own`); 0 ranks them as any other.
    own: float = 0.0

    @classmethod
    def of(cls, recall: RecallSettings, words: tuple[str, ...] = ()) -> Weights:
        """The weights recall's settings give, for a message of these content words."""
        return cls(keywords=recall.rank_keywords, meaning=recall.rank_meaning,
                   graph=recall.rank_graph, fusion=recall.rank_fusion, rrf_k=recall.rrf_k,
                   when=recall.rank_when, coverage=recall.rank_coverage, words=words,
                   together=recall.rank_together, own=recall.rank_own)


def graph_scores(candidates: list[Candidate], activation: dict[str, float], self_id: str | None,
                 labels: dict[str, float] | None = None) -> None:
    """Each candidate's graph signal: the activation at its two ends (the self node counting
    0), plus its relation label's seed score when the message matched the label; and whether
    the self node is one of its ends (`own`)."""
    labels = labels or {}
    for c in candidates:
        c.graph = labels.get(c.label, 0.0) + sum(
            activation.get(end, 0.0) for end in (c.source_id, c.target_id) if end != self_id)
        c.own = float(self_id is not None and self_id in (c.source_id, c.target_id))


SCORE_DECIMALS = 6
# Words are compared by their first letters, a light stem ("married" and "marriage", "dances"
# and "dancing"): the full-text index stems them too, so a share counted on whole words would
# miss most of what it matched.
STEM = 5


def word_share(words: tuple[str, ...], snippet: str) -> float:
    """The share of `words` (the message's content words) that `snippet` holds."""
    asked = {w[:STEM] for w in words}
    if not asked:
        return 1.0
    return len(asked & {w[:STEM] for w in content_words(snippet)}) / len(asked)


def ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the positive ones, best 1, equal values sharing the better rank
    ("1224"), so the order rows arrive in never matters; 0 for values that are not positive."""
    out = np.zeros(len(values), dtype=np.int64)
    positive = values > 0
    ordered = np.sort(values[positive])[::-1]
    # the rank of v = 1 + how many positive values are strictly greater
    out[positive] = 1 + np.searchsorted(-ordered, -values[positive], side="left")
    return out


def reciprocal_rank_fusion(signals: list[tuple[float, np.ndarray]], k: int) -> np.ndarray:
    """Σ weight / (k + rank) over the signals in which a candidate has a positive value, scaled
    so that first in every signal scores 1: a candidate that one signal ranks high is not
    drowned by another's large raw values (decisions.md, "Rank fusion")."""
    best = sum(w for w, _ in signals) / (k + 1)
    total = np.zeros(len(signals[0][1]))
    for weight, values in signals:
        # Ranked at six decimals, like the scores: equal words embedded in different batches
        # differ in the last bits and must share a rank.
        r = ranks(np.round(values, SCORE_DECIMALS))
        total += np.where(r > 0, weight / (k + r), 0.0)
    return total / best if best > 0 else total


def said_together(candidates: list[Candidate], total: np.ndarray) -> np.ndarray:
    """For each candidate (each memory once), the best score among the other memories said at
    the same moment as it (0 when none): a message that finds part of one conversation is
    likely asking about that conversation, and the turn that answers it often shares no word
    with the message ("How does she feel about the launch?" is answered by "Honestly, I'm
    thrilled", said beside "the bakery launches on Friday")."""
    best: dict[float, list[float]] = {}
    moments = [c.said_at.timestamp() if c.said_at else None for c in candidates]
    for moment, value in zip(moments, total, strict=True):
        if moment is not None:
            top = best.setdefault(moment, [0.0, 0.0])  # the two best, so each sees the others'
            if value > top[0]:
                top[0], top[1] = float(value), top[0]
            elif value > top[1]:
                top[1] = float(value)
    out = np.zeros(len(candidates))
    for n, (moment, value) in enumerate(zip(moments, total, strict=True)):
        if moment is not None:
            first, second = best[moment]
            out[n] = second if value >= first else first
    return out


def score(candidates: list[Candidate], weights: Weights) -> list[Candidate]:
    """Combine the three signals: each scaled to [0, 1] by its best value and weighted, or
    (fusion "rrf") by their ranks; best first. An edge may come once per snippet (its own
    words and its other sightings'): each competes, and the edge is kept once, at its best."""
    if not candidates:
        return []

    def scaled(values: np.ndarray) -> np.ndarray:
        top = values.max(initial=0.0)
        return values / top if top > 0 else np.zeros_like(values)

    raw_text = np.array([max(c.text_score, 0.0) for c in candidates])
    share = (np.array([word_share(weights.words, c.snippet) for c in candidates])
             ** weights.coverage if weights.coverage > 0 else np.ones(len(candidates)))
    dense = np.clip(np.array([c.dense for c in candidates]), 0.0, 1.0)
    raw_graph = np.array([max(c.graph, 0.0) for c in candidates])
    when = np.array([c.when for c in candidates])
    own = np.array([c.own for c in candidates])
    if weights.fusion == "rrf":
        signals = [(weights.keywords, raw_text * share), (weights.meaning, dense),
                   (weights.graph, raw_graph)]
        if when.any():  # a message naming no day ranks as before
            signals.append((weights.when, when))
        total = reciprocal_rank_fusion(signals, weights.rrf_k) + weights.own * own
    else:
        total = (weights.keywords * scaled(raw_text) * share + weights.meaning * dense
                 + weights.graph * scaled(raw_graph) + weights.when * when + weights.own * own)
    for c, value in zip(candidates, total, strict=True):
        # Six decimals: the last bits of an embedding differ with the batch it was computed
        # in (a commit's, an import's), and must not reorder memories that score the same.
        c.score = round(float(value), SCORE_DECIMALS)
    best: dict[str, Candidate] = {}
    for c in in_order(candidates):
        best.setdefault(c.id, c)
    kept = list(best.values())
    if weights.together > 0:
        # Each memory once, at its best words: a memory is not lifted by its own other words.
        lift = said_together(kept, np.array([c.score for c in kept]))
        for c, value in zip(kept, lift, strict=True):
            c.score = round(c.score + weights.together * float(value), SCORE_DECIMALS)
        kept = in_order(kept)
    return kept


def in_order(candidates: list[Candidate]) -> list[Candidate]:
    """Best score first; ties: the more recently said first, then by their words, then by the
    relation (never a random id first, nor the order the database happens to return rows in)."""
    ranked = sorted(candidates, key=lambda c: (c.snippet, c.label, c.target, c.source, c.id))
    ranked.sort(key=lambda c: c.said_at.timestamp() if c.said_at else 0.0, reverse=True)
    ranked.sort(key=lambda c: c.score, reverse=True)
    return ranked


def word_count(text: str) -> int:
    return len(text.split())


def choose(ranked: list[Candidate], budget_words: int, floor: float,
           relation_ids: set[str] | None = None, max_relations: int = 0
           ) -> tuple[list[Candidate], list[Candidate]]:
    """The snippets to quote and the relation lines to add, together within `budget_words`.

    Snippets go in rank order while they fit, skipping any that a shown one contains; then
    relation lines between fired nodes (`relation_ids`) whose snippet was not quoted, while
    words are left. Candidates under `floor` × the best score are never shown."""
    if not ranked:
        return [], []
    cutoff = ranked[0].score * floor
    shown: list[Candidate] = []
    folded: list[str] = []
    used = 1  # the [CONTEXT] header
    for c in ranked:
        if c.score < cutoff or c.score <= 0:
            break
        words = word_count(c.line)
        text = fold(c.snippet)
        if used + words > budget_words or any(text in other for other in folded):
            continue
        shown.append(c)
        folded.append(text)
        used += words
    quoted = {c.id for c in shown}
    relations: list[Candidate] = []
    if relation_ids:
        used += 1  # the [MEMORY] header
        for c in ranked:
            if len(relations) >= max_relations:
                break
            if c.id in relation_ids and c.id not in quoted and c.until is None:
                words = word_count(c.relation)
                if used + words <= budget_words:
                    relations.append(c)
                    used += words
    return shown, relations
