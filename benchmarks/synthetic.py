"""Synthetic users for benchmarks and notebooks: a hub (the user) plus preferential attachment."""

from __future__ import annotations

import random
from collections.abc import Iterator

FIRST = ["Sarah", "Bill", "Maya", "Priya", "Tom", "Lena", "Omar", "Kenji", "Ana", "Luca", "Zoe",
         "Ivan", "Noor", "Eli", "Rosa", "Finn", "Ada", "Hugo", "Iris", "Jon"]
LAST = ["Kim", "Smith", "Okafor", "Silva", "Berg", "Rossi", "Novak", "Haddad", "Tanaka", "Lopez"]
PLACES = ["Lisbon", "Tokyo", "Berlin", "Nairobi", "Lima", "Oslo", "Austin", "Hanoi", "Quito", "Perth"]
ORGS = ["Acme", "Globex", "Initech", "Northwind", "Umbrella", "Hooli", "Vandelay", "Stark Labs"]
TOPICS = ["cello", "marathon", "sourdough", "chess", "climbing", "jazz", "gardening", "poetry",
          "photography", "sailing", "pottery", "astronomy"]
LABELS = ["KNOWS", "WORKS_AT", "LIVES_IN", "LIKES", "VISITED", "HAS_BOSS", "HAS_PARTNER",
          "WORKS_WITH", "PLAYS", "STUDIES", "MET_AT", "WANTS_TO_VISIT", "OWNS", "HELPS",
          "WORRIES_ABOUT", "RECOMMENDED"]
STABILITIES = ["stable", "stable", "mutable", "mutable", "time_bound", "ephemeral", "immutable"]


def persona(rng: random.Random, n_entities: int = 60) -> list[dict]:
    out = [{"name": "User", "kind": "PERSON", "is_user": True}]
    seen = set()
    while len(out) < n_entities:
        pick = rng.random()
        if pick < 0.5:
            name, kind = f"{rng.choice(FIRST)} {rng.choice(LAST)}", "PERSON"
        elif pick < 0.65:
            name, kind = rng.choice(PLACES), "PLACE"
        elif pick < 0.8:
            name, kind = rng.choice(ORGS), "ORG"
        else:
            name, kind = rng.choice(TOPICS), "TOPIC"
        if name not in seen:
            seen.add(name)
            out.append({"name": name, "kind": kind})
    return out


def conversations(rng: random.Random, edges: int = 200, per_conversation: int = 100
                  ) -> Iterator[dict]:
    """Batches for one user: ~40% of edges on the user hub, the rest preferential."""
    people = persona(rng)
    names = [e["name"] for e in people]
    degree = {n: 1 for n in names}
    made = set()
    relations: list[dict[str, str]] = []
    while len(relations) < edges:
        a = "User" if rng.random() < 0.4 else rng.choices(names, weights=[degree[n] for n in names])[0]
        b = rng.choices(names, weights=[degree[n] for n in names])[0]
        label = rng.choice(LABELS)
        if a == b or (a, label, b) in made:
            continue
        made.add((a, label, b))
        degree[a] += 1
        degree[b] += 1
        relations.append({"source": a, "relation": label, "target": b,
                          "stability": rng.choice(STABILITIES),
                          "snippet": f"{a} {label.lower().replace('_', ' ')} {b}, I said"})
    for start in range(0, edges, per_conversation):
        chunk = relations[start:start + per_conversation]
        used = {r["source"] for r in chunk} | {r["target"] for r in chunk}
        yield {"entities": [e for e in people if e["name"] in used], "relations": chunk}


def message(rng: random.Random, names: list[str]) -> str:
    """A message that mentions one or two of the user's entities."""
    picked = rng.sample(names, k=min(2, len(names)))
    return f"I was thinking about {' and '.join(picked)} again today"
