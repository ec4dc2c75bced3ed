"""Retrieval quality on a LoCoMo conversation: does recall show the turn that answers a question?

    python -m benchmarks.recall_quality --data DIR [--no-write]

The data is a LoCoMo conversation kept outside this repository (its licence is
non-commercial), in the layout qa.json, sessions/*.json, batches/: `--data DIR`, or the folder
PEGASUS_LOCOMO_DIR names.
Each speaker's extraction batches are committed as that speaker's own user, in session order,
with the session's time as the clock, a decay pass of that user before each session, and the
transcript passed so snippets are checked. A day after the last session every question of
categories 1-4 is recalled against both users. A question is a hit when one of its evidence
turns reaches the model: quoted in [CONTEXT], or the snippet behind a [MEMORY] line.

Baselines over the raw turns of the conversation, at the same budget as each recall:
BM25 and dense (the project's embedding model) top-k with k = the distinct turns the recall
showed, and BM25 filled up to the same number of words the recall showed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks._server import machine, memory
from benchmarks.report import write_section
from pegasus import Memory
from pegasus.text import fold, function_words, words

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int


@dataclass
class Conversation:
    name: str
    speakers: list[str]
    sessions: list[dict]
    turns: list[Turn]
    questions: list[dict]
    batches: Path


@dataclass
class Outcome:
    """One question's result for Pegasus and the baselines at its budget."""

    category: str
    pegasus: bool
    turns_shown: int
    words_shown: dict[str, int]
    bm25_k: bool = False
    dense_k: bool = False
    bm25_words: bool = False
    missing: list[str] = field(default_factory=list)


def session_time(text: str) -> datetime:
    """LoCoMo's "4:04 pm on 20 January, 2023" as an aware instant (UTC)."""
    from datetime import UTC

    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_conversation(root: Path) -> Conversation:
    if not (root / "qa.json").exists():
        sys.exit(f"no LoCoMo development set at {root} (qa.json missing): pass --data DIR or set "
                 "PEGASUS_LOCOMO_DIR; the set is not part of this repository (CC BY-NC 4.0)")
    sessions = [json.loads(p.read_text()) for p in sorted((root / "sessions").glob("*.json"))]
    turns = [Turn(t["dia_id"], t["speaker"], t["text"], i + 1)
             for i, s in enumerate(sessions) for t in s["turns"]]
    questions = [q for q in json.loads((root / "qa.json").read_text())["qa"]
                 if q.get("category") in CATEGORIES]
    speakers = [sessions[0]["speaker_a"], sessions[0]["speaker_b"]]
    return Conversation(root.name, speakers, sessions, turns, questions, root / "batches")


def user_of(conv: Conversation, speaker: str) -> str:
    return f"locomo-{conv.name}-{speaker.lower()}"


def commit_all(mem: Memory, conv: Conversation) -> dict[str, int]:
    """Every session's batch for each speaker, in order; returns edges committed per user."""
    counts: dict[str, int] = {}
    for speaker in conv.speakers:
        user = user_of(conv, speaker)
        for number, session in enumerate(conv.sessions, start=1):
            path = conv.batches / f"s{number:02d}_{speaker.lower()}.json"
            if not path.exists():
                print(f"  no batch {path.name}: its questions count as misses", file=sys.stderr)
                continue
            at = session_time(session["date_time"])
            mem.consolidate(at=at, user_id=user)
            transcript = [{"role": "user" if t["speaker"] == speaker else "assistant",
                           "content": t["text"]} for t in session["turns"]]
            mem.commit(user, f"{conv.name}-s{number:02d}", json.loads(path.read_text()), at=at,
                       transcript=transcript)
        counts[user] = len(mem.edges(user))
    return counts


def tokens(text: str) -> list[str]:
    stop = function_words()
    return [w for w in words(text) if len(w) > 1 and w not in stop]


class TurnIndex:
    """Maps shown snippets back to the turns they were said in, and ranks turns for baselines."""

    def __init__(self, conv: Conversation, embed) -> None:
        self.turns = conv.turns
        self.folded = [(t.speaker, fold(t.text)) for t in conv.turns]
        self.bm25 = BM25Okapi([tokens(t.text) or ["_"] for t in conv.turns])
        self.vectors = embed([t.text for t in conv.turns])
        self.words = [len(t.text.split()) for t in conv.turns]

    def turns_of(self, speaker: str, snippet: str) -> set[str]:
        needle = fold(snippet)
        return {t.dia_id for t, (who, text) in zip(self.turns, self.folded, strict=True)
                if who == speaker and needle and needle in text}

    def bm25_rank(self, question: str) -> list[int]:
        return list(np.argsort(-self.bm25.get_scores(tokens(question)), kind="stable"))

    def dense_rank(self, vector: np.ndarray) -> list[int]:
        return list(np.argsort(-(self.vectors @ vector), kind="stable"))


def shown_snippets(recall, snippets_by_edge: dict[str, str]) -> list[str]:
    """What the model sees verbatim: [CONTEXT] snippets, and the snippets behind [MEMORY]."""
    return [*recall.context, *(snippets_by_edge[e] for e in recall.edge_ids
                               if e in snippets_by_edge)]


def evaluate(mem: Memory, conv: Conversation, at: datetime) -> list[Outcome]:
    index = TurnIndex(conv, mem.embedder.embed)
    by_edge = {sp: {e.id: e.snippet for e in mem.edges(user_of(conv, sp))}
               for sp in conv.speakers}
    outcomes = []
    for q in conv.questions:
        evidence = set(q["evidence"])
        shown: set[str] = set()
        words_shown: dict[str, int] = {}
        for speaker in conv.speakers:
            recall = mem.recall(user_of(conv, speaker), q["question"], at=at)
            words_shown[speaker] = len(recall.render().split())
            for snippet in shown_snippets(recall, by_edge[speaker]):
                shown |= index.turns_of(speaker, snippet)
        k = len(shown)
        budget = sum(words_shown.values())
        bm25 = index.bm25_rank(q["question"])
        dense = index.dense_rank(mem.embedder.embed([q["question"]])[0])
        by_words, used = set(), 0
        for i in bm25:
            if used + index.words[i] > budget:
                break
            by_words.add(index.turns[i].dia_id)
            used += index.words[i]
        top = {index.turns[i].dia_id for i in bm25[:k]}
        outcomes.append(Outcome(
            category=CATEGORIES[q["category"]], pegasus=bool(shown & evidence), turns_shown=k,
            words_shown=words_shown,
            bm25_k=bool(top & evidence),
            dense_k=bool({index.turns[i].dia_id for i in dense[:k]} & evidence),
            bm25_words=bool(by_words & evidence),
            missing=[] if shown & evidence else sorted(evidence)))
    return outcomes


def table(outcomes: list[Outcome]) -> list[str]:
    rows = ["| category | n | Pegasus | BM25, same turns | dense, same turns | BM25, same words |",
            "|---|---|---|---|---|---|"]
    groups = defaultdict(list)
    for o in outcomes:
        groups[o.category].append(o)
    order = [c for c in ("temporal", "single-hop", "multi-hop", "open-domain") if c in groups]

    def line(name: str, items: list[Outcome], bold: bool = False) -> str:
        def rate(attr: str) -> str:
            value = f"{sum(getattr(o, attr) for o in items) / len(items):.2f}"
            return f"**{value}**" if bold else value
        return (f"| {name} | {len(items)} | {rate('pegasus')} | {rate('bm25_k')} | "
                f"{rate('dense_k')} | {rate('bm25_words')} |")

    rows += [line(c, groups[c]) for c in order]
    rows.append(line("all", outcomes, bold=True))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ["PEGASUS_LOCOMO_DIR"])
                        if os.environ.get("PEGASUS_LOCOMO_DIR") else None,
                        help="the LoCoMo conversation's folder (default: $PEGASUS_LOCOMO_DIR)")
    parser.add_argument("--no-write", action="store_true", help="print, don't update docs/")
    parser.add_argument("--misses", action="store_true", help="list the questions missed")
    args = parser.parse_args()
    if args.data is None:
        parser.error("no LoCoMo conversation: pass --data DIR or set PEGASUS_LOCOMO_DIR "
                     "(the set is not part of this repository, CC BY-NC 4.0)")
    conv = load_conversation(args.data)
    with memory() as mem:
        began = time.monotonic()
        counts = commit_all(mem, conv)
        load_s = time.monotonic() - began
        at = session_time(conv.sessions[-1]["date_time"]) + timedelta(days=1)
        began = time.monotonic()
        outcomes = evaluate(mem, conv, at)
        recall_s = time.monotonic() - began
    per_user = [w for o in outcomes for w in o.words_shown.values()]
    lines = table(outcomes) + [
        "",
        f"{len(outcomes)} questions (categories 1-4) of `{conv.name}`, {len(conv.turns)} turns in "
        f"{len(conv.sessions)} sessions; edges per user: "
        + ", ".join(f"{u.rsplit('-', 1)[-1]} {n}" for u, n in counts.items()) + ".",
        f"Shown per question: {statistics.mean(o.turns_shown for o in outcomes):.1f} distinct "
        f"turns; words per user per question: mean {statistics.mean(per_user):.0f}, "
        f"max {max(per_user)}; both users together: mean "
        f"{statistics.mean(sum(o.words_shown.values()) for o in outcomes):.0f}.",
        f"Load {load_s:.0f} s; {2 * len(outcomes)} recalls in {recall_s:.1f} s.",
    ]
    print("\n".join(lines))
    if args.misses:
        for q, o in zip(conv.questions, outcomes, strict=True):
            if not o.pegasus:
                print(f"MISS [{o.category}] {q['question']} -> {o.missing}")
    if not args.no_write:
        write_section("Recall quality (LoCoMo dev set)",
                      "python -m benchmarks.recall_quality --data DIR", machine(), lines)


if __name__ == "__main__":
    main()
