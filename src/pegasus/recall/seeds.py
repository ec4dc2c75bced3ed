"""Seed selection (design §7.2–7.5): centred scores of content words against a user's keys."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class KeySet:
    """A user's keys as a matrix, with what each row points at."""

    ids: list[str]
    kinds: list[str]
    entity_ids: list[str | None]
    labels: list[str | None]
    vectors: np.ndarray  # (n, d) raw unit embeddings (exact oracle); (n, 0) from the index


@dataclass
class Seeds:
    entity_scores: dict[str, float]  # entity id → best match score
    labels: dict[str, float]  # relation label → best match score
    matches: list[tuple[str, str, float]]  # (word, key id, score), for explanations

    @property
    def empty(self) -> bool:
        return not self.entity_scores and not self.labels


def select_seeds(
    words: list[str],
    scores: np.ndarray,
    keys: KeySet,
    threshold: float,
    margin_top: float,
    margin_gap: float,
    per_word_cap: int,
) -> Seeds:
    """A word's keys above the threshold seed: all its label keys, and its `per_word_cap` best
    entity keys (ties by key order); a clear winner by margin seeds too (design §7.4, "Seeds
    per word").

    A seed's activation is graded (docs/design.md, "Graded seeds"): each distinct word it
    matched contributes its best centred score s, combined as 1 − Π(1 − s), so a key matching
    several of the message's words beats one matching one, and no seed exceeds 1."""
    per_word: list[tuple[dict[str, float], dict[str, float]]] = []
    matches: list[tuple[str, str, float]] = []
    for i, word in enumerate(words):
        row = scores[i]
        if row.size == 0:
            continue
        order = np.argsort(-row, kind="stable")
        above = [int(j) for j in order if row[j] > threshold]
        entity_keys = [j for j in above if keys.kinds[j] == "entity"][:per_word_cap]
        accepted = set(entity_keys) | {j for j in above if keys.kinds[j] != "entity"}
        top = int(order[0])
        runner_up = float(row[order[1]]) if row.size > 1 else -1.0
        if row[top] > margin_top and row[top] - runner_up >= margin_gap:
            accepted.add(top)
        entities: dict[str, float] = {}
        labels: dict[str, float] = {}
        for j in sorted(accepted):
            score = float(row[j])
            matches.append((word, keys.ids[j], score))
            eid, label = keys.entity_ids[j], keys.labels[j]
            if keys.kinds[j] == "entity" and eid:
                entities[eid] = max(entities.get(eid, 0.0), score)
            elif label:
                labels[label] = max(labels.get(label, 0.0), score)
        per_word.append((entities, labels))
    return Seeds(combine([e for e, _ in per_word]), combine([lb for _, lb in per_word]), matches)


def strongest(seeds: Seeds, cap: int) -> Seeds:
    """The `cap` hottest entity seeds (ties by entity id); labels and matches of those kept
    stay (design, "Seeds per message")."""
    if len(seeds.entity_scores) <= cap:
        return seeds
    kept = dict(sorted(seeds.entity_scores.items(), key=lambda kv: (-kv[1], kv[0]))[:cap])
    return Seeds(kept, seeds.labels, seeds.matches)


def combine(per_word: list[dict[str, float]]) -> dict[str, float]:
    """Noisy-or over words: 1 − Π(1 − s) of each word's best score for that seed."""
    miss: dict[str, float] = {}
    for scores in per_word:
        for seed, score in scores.items():
            miss[seed] = miss.get(seed, 1.0) * (1.0 - min(max(score, 0.0), 1.0))
    return {seed: 1.0 - m for seed, m in miss.items()}
