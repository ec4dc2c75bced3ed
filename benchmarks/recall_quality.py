"""Retrieval quality on a LoCoMo conversation: does recall show the turn that answers a question?

    python -m benchmarks.recall_quality --data DIR [DIR ...] [--no-write] [--no-peers] [--misses]
                                        [--peers-cache FILE] [--distractors DIR [DIR ...]]
                                        [--synthetic EDGES] [--dump FILE]

The data is a LoCoMo conversation kept outside this repository (its licence is
non-commercial), in the layout qa.json, sessions/*.json, batches/: `--data DIR [DIR ...]`, or
the folders PEGASUS_LOCOMO_DIR names (separated by ':'). Each conversation is measured on its own
server and written to its own section of docs/benchmarks.md.
Each speaker's extraction batches are committed as that speaker's own user, in session order,
with the session's time as the clock, a decay pass of that user before each session, and the
transcript passed so snippets are checked. A day after the last session every question of
categories 1-4 is recalled against both users. A question is a hit when one of its evidence
turns reaches the model: quoted in [CONTEXT], or the snippet behind a [MEMORY] line.

Every other system is shown the words Pegasus showed for the same question, no more:
- the peers (benchmarks/peers.py: Graphiti hybrid RRF, Graphiti with BFS from the user's node,
  mem0 dense), fed the same batches, searched per user, their results rendered like Pegasus's
  [CONTEXT] lines and taken in rank order while they fit in the words Pegasus showed that user;
- BM25 and dense (the project's model) over the raw turns of both speakers, taken in rank order
  while they fit in the words Pegasus showed both users together.
The peers need `pip install -e '.[peers]'`; `--no-peers` leaves them out. `--peers-cache FILE`
keeps the peers' ranked results and timings per conversation in FILE: a later run with the same
FILE takes them from it (cut at the words Pegasus shows then) instead of loading the peers.

A memory many times larger: `--distractors DIR [DIR ...]` commits, into each user of the
conversation under test and before its first session, every speaker's batches of those other
conversations (other lives, each conversation moved back by whole weeks so that its last session
ends a week before the first session under test: its sessions keep their weekdays, hours and
gaps); `--synthetic EDGES` adds that many synthetic edges per user (benchmarks/synthetic.py)
before them. The same questions are asked; the peers are given the same memories.

Every miss is classified (`classify`): why the evidence did not reach the model, from the
ranked candidates `Memory.explain` returns. `--dump FILE` pickles every recall's ranked
candidates (with the turns each quotes), so a ranking can be tried offline
(benchmarks/rerank.py) without a server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks._server import machine, memory
from benchmarks.peers import Fact, Found, PeerCache
from benchmarks.report import p95, timed, write_section
from benchmarks.synthetic import conversations
from pegasus import Memory
from pegasus.recall.engine import Explained, asked_words
from pegasus.recall.rank import Candidate
from pegasus.text import fold, function_words, is_placeholder, words

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
    """One question's result for every system, each shown the words Pegasus showed."""

    category: str
    hits: dict[str, bool]
    turns_shown: int
    words_shown: dict[str, int]
    missing: list[str] = field(default_factory=list)
    why: str = ""  # a miss's class (MISS_CLASSES), "" for a hit


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
    for q in questions:  # LoCoMo sometimes lists several turns in one string: "D9:1 D4:4"
        q["evidence"] = [d for e in q["evidence"] for d in re.split(r"[\s;,]+", e) if d]
    speakers = [sessions[0]["speaker_a"], sessions[0]["speaker_b"]]
    return Conversation(root.name, speakers, sessions, turns, questions, root / "batches")


def user_of(conv: Conversation, speaker: str) -> str:
    return f"locomo-{conv.name}-{speaker.lower()}"


def batches(conv: Conversation) -> Iterator[tuple[str, int, dict, Path]]:
    """(speaker, session number, session, batch path) for each speaker's sessions, in order."""
    for speaker in conv.speakers:
        for number, session in enumerate(conv.sessions, start=1):
            yield speaker, number, session, conv.batches / f"s{number:02d}_{speaker.lower()}.json"


def transcript_of(session: dict, speaker: str) -> list[dict[str, str]]:
    """A session's turns as `speaker`'s transcript: theirs the user's, the other's the
    assistant's."""
    return [{"role": "user" if t["speaker"] == speaker else "assistant", "content": t["text"]}
            for t in session["turns"]]


def commit_all(mem: Memory, conv: Conversation, distractors: list[Conversation] = (),
               synthetic: int = 0, own_lives: bool = False) -> dict[str, int]:
    """Every session's batch for each speaker, in order, after the distractors (`distract`);
    returns the edges each user holds."""
    before = {}
    for speaker in conv.speakers:
        distract(mem, user_of(conv, speaker), conv, distractors, synthetic, own_lives)
        before[speaker] = len(mem.edges(user_of(conv, speaker)))
    for speaker, number, session, path in batches(conv):
        if not path.exists():
            print(f"  no batch {path.name}: its questions count as misses", file=sys.stderr)
            continue
        user = user_of(conv, speaker)
        at = session_time(session["date_time"])
        mem.consolidate(at=at, user_id=user)
        mem.commit(user, f"{conv.name}-s{number:02d}", json.loads(path.read_text()), at=at,
                   transcript=transcript_of(session, speaker))
    counts = {user_of(conv, sp): len(mem.edges(user_of(conv, sp))) for sp in conv.speakers}
    if distractors or synthetic:
        print("  edges per user, own / with the distractors: " + ", ".join(
            f"{sp} {counts[user_of(conv, sp)] - before[sp]} / {counts[user_of(conv, sp)]}"
            for sp in conv.speakers), file=sys.stderr)
    return counts



def moved_back(conv: Conversation, before: datetime) -> timedelta:
    """How far to move `conv` (whole weeks) so its last session ends a week before `before`."""
    last = session_time(conv.sessions[-1]["date_time"])
    weeks = -(-(last - before + timedelta(days=7)) // timedelta(days=7))  # rounded up
    return timedelta(days=7 * weeks)


def other_life(batch: dict, speaker: str) -> dict:
    """A distractor speaker's batch as another person's life, not the user's: the speaker's
    `is_user` entity becomes a person of that name, and the relations that name the user by a
    placeholder ("User", "me") name that person. Committed as the user's own, another
    conversation's speaker would become the user, and its memories ("I'm currently reading Dune")
    true answers to the questions about the user: the evidence would no longer be the answer."""
    entities = [{**e, "is_user": False, "name": speaker} if e.get("is_user") else e
                for e in batch.get("entities", [])]
    if not any(fold(e["name"]) == fold(speaker) for e in entities):
        entities.append({"name": speaker, "kind": "PERSON", "confidence": 0.9})

    def named(end: str) -> str:
        return speaker if is_placeholder(end) else end

    relations = [{**r, "source": named(r["source"]), "target": named(r["target"])}
                 for r in batch.get("relations", [])]
    return {**batch, "entities": entities, "relations": relations}


def distractor_batches(user: str, conv: Conversation, distractors: list[Conversation],
                       synthetic: int, own_lives: bool = False
                       ) -> Iterator[tuple[datetime, str, dict, list[dict] | None, str]]:
    """The other lives committed into `user` before `conv`'s first session, in order, as
    (instant, conversation id, batch, transcript or None, the speaker whose batch it is):
    `synthetic` edges (a synthetic user's batches, a day apart), then every speaker's batches of
    each distractor conversation in session order. Each distractor conversation is moved back
    by whole weeks so it ends before the next begins, the last a week before `conv`."""
    first = session_time(conv.sessions[0]["date_time"])
    if synthetic:
        made = list(conversations(random.Random(user), edges=synthetic))
        start = first - timedelta(days=7 * (len(distractors) * 40 + 8) + len(made))
        for n, batch in enumerate(made):
            yield start + timedelta(days=n), f"synthetic-{n}", batch, None, "User"
    for k, other in enumerate(distractors):
        shift = moved_back(other, first - timedelta(days=7 * 40 * (len(distractors) - 1 - k)))
        sessions = sorted(((session_time(s["date_time"]) - shift, sp, n, s, path)
                           for sp, n, s, path in batches(other) if path.exists()),
                          key=lambda row: (row[0], row[1]))
        for at, speaker, number, session, path in sessions:
            batch = json.loads(path.read_text())
            yield (at, f"{other.name}-{speaker.lower()}-s{number:02d}",
                   batch if own_lives else other_life(batch, speaker),
                   transcript_of(session, speaker), speaker)


def distract(mem: Memory, user: str, conv: Conversation, distractors: list[Conversation],
             synthetic: int, own_lives: bool = False) -> None:
    """`distractor_batches` committed into `user`, with the session's transcript and a decay
    pass before each, as the conversation's own are."""
    for at, conversation, batch, transcript, _ in distractor_batches(
            user, conv, distractors, synthetic, own_lives):
        mem.consolidate(at=at, user_id=user)
        mem.commit(user, conversation, batch, at=at, transcript=transcript)


def distractor_facts(conv: Conversation, distractors: list[Conversation], synthetic: int,
                     own_lives: bool = False) -> list[Fact]:
    """What `distract` commits into each user, as the peers are given it: the same memories."""
    facts = []
    for speaker in conv.speakers:
        user = user_of(conv, speaker)
        for n, (at, _, batch, _, other) in enumerate(distractor_batches(
                user, conv, distractors, synthetic, own_lives)):
            me = speaker if own_lives or other == "User" else other  # who "I" is, as committed
            facts += [Fact(user, -1 - n, at, me if is_placeholder(r["source"]) else r["source"],
                           r["relation"], me if is_placeholder(r["target"]) else r["target"],
                           r["snippet"])
                      for r in batch.get("relations", []) if r.get("snippet")]
    return facts


def tokens(text: str) -> list[str]:
    stop = function_words()
    return [w for w in words(text) if len(w) > 1 and w not in stop]


class TurnIndex:
    """Maps shown snippets back to the turns they were said in, and ranks turns for baselines."""

    def __init__(self, conv: Conversation, embed) -> None:
        self.turns = conv.turns
        self.folded = [(t.speaker, fold(t.text)) for t in conv.turns]
        self.bm25 = BM25Okapi([tokens(t.text) or ["_"] for t in conv.turns])
        self.embed = embed
        self.vectors = embed([t.text for t in conv.turns])

    def turns_of(self, speaker: str, snippet: str) -> set[str]:
        needle = fold(snippet)
        return {t.dia_id for t, (who, text) in zip(self.turns, self.folded, strict=True)
                if who == speaker and needle and needle in text}

    def bm25_rank(self, question: str) -> list[int]:
        return list(np.argsort(-self.bm25.get_scores(tokens(question)), kind="stable"))

    def dense_rank(self, question: str) -> list[int]:
        vector = self.embed([question])[0]
        return list(np.argsort(-(self.vectors @ vector), kind="stable"))


def shown_snippets(recall, snippets_by_edge: dict[str, str]) -> list[str]:
    """What the model sees verbatim: [CONTEXT] snippets, and the snippets behind [MEMORY]."""
    return [*recall.context, *(snippets_by_edge[e] for e in recall.edge_ids
                               if e in snippets_by_edge)]


def facts_of(conv: Conversation) -> list[Fact]:
    """Every relation of every batch, as the peers are given it ("User" is the speaker)."""
    facts = []
    for speaker, number, session, path in batches(conv):
        if not path.exists():
            continue
        batch = json.loads(path.read_text())
        at = session_time(session["date_time"])
        me = next((e["name"] for e in batch.get("entities", []) if e.get("is_user")), speaker)
        facts += [Fact(user_of(conv, speaker), number, at,
                       me if r["source"] == "User" else r["source"], r["relation"],
                       me if r["target"] == "User" else r["target"], r["snippet"])
                  for r in batch.get("relations", []) if r.get("snippet")]
    return facts


def episodes_of(conv: Conversation) -> dict[tuple[str, int], str]:
    """Each speaker's own turns of each session, as Graphiti stores a session's messages."""
    episodes: dict[tuple[str, int], list[str]] = defaultdict(list)
    for t in conv.turns:
        episodes[(user_of(conv, t.speaker), t.session)].append(f"{t.speaker}: {t.text}")
    return {key: "\n".join(lines) for key, lines in episodes.items()}


def within(lines: list[str], budget: int) -> int:
    """How many of the lines, in order, fit in `budget` words."""
    used = 0
    for n, line in enumerate(lines):
        used += len(line.split())
        if used > budget:
            return n
    return len(lines)


class Timer:
    """Milliseconds per call, by system."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = defaultdict(list)

    def __call__(self, name: str, fn, *args):
        ms, result = timed(fn, *args)
        self.ms[name].append(ms)
        return result

    def cell(self, name: str) -> str:
        values = self.ms[name]
        return f"{statistics.median(values):.1f} / {p95(values):.1f}" if values else "–"


def evaluate(mem: Memory, conv: Conversation, at: datetime,
             peers: dict[str, Callable[[str, str], list[Found]]] | None = None,
             timer: Timer | None = None, dump: list | None = None) -> list[Outcome]:
    """Each question against both users: Pegasus, then every other system at its words."""
    peers = peers or {}
    timer = timer or Timer()
    index = TurnIndex(conv, mem.embedder.embed)
    by_edge = {sp: {e.id: e.snippet for e in mem.edges(user_of(conv, sp))}
               for sp in conv.speakers}
    # the turns some memory of each user quotes (a miss outside them no ranking can mend)
    quoted_by = {sp: {t for snippet in set(by_edge[sp].values())
                      for t in index.turns_of(sp, snippet)} for sp in conv.speakers}
    self_ids = {sp: mem.recall_engine.partition(user_of(conv, sp)).self_id
                for sp in conv.speakers}
    # One untimed search per system and user first: the timings are of warm systems.
    for speaker in conv.speakers:
        mem.recall(user_of(conv, speaker), conv.questions[0]["question"], at=at)
        for search in peers.values():
            search(user_of(conv, speaker), conv.questions[0]["question"])
    # Pegasus answers every question first, then each peer in turn: a system's latency is
    # its own, not also the caches and heaps the other systems' searches disturbed between
    # two of its own (decisions.md, "Each system timed in its own pass").
    explained = [{speaker: timer("Pegasus", mem.explain, user_of(conv, speaker), q["question"],
                                 at) for speaker in conv.speakers} for q in conv.questions]
    recalls = [{speaker: e.recall for speaker, e in row.items()} for row in explained]
    found_by: dict[str, list[dict[str, list[Found]]]] = {
        name: [{speaker: timer(name, search, user_of(conv, speaker), q["question"])
                for speaker in conv.speakers} for q in conv.questions]
        for name, search in peers.items()}
    outcomes = []
    for n, q in enumerate(conv.questions):
        evidence = set(q["evidence"])
        shown: dict[str, set[str]] = defaultdict(set)
        words_shown: dict[str, int] = {}
        for speaker in conv.speakers:
            recall = recalls[n][speaker]
            words_shown[speaker] = len(recall.render().split())
            for snippet in shown_snippets(recall, by_edge[speaker]):
                shown["Pegasus"] |= index.turns_of(speaker, snippet)
            for name in peers:
                found = found_by[name][n][speaker]
                keep = within([f.line for f in found], words_shown[speaker])
                for f in found[:keep]:
                    shown[name] |= index.turns_of(speaker, f.text)
        budget = sum(words_shown.values())
        for name, rank in (("BM25 over turns", index.bm25_rank),
                           ("dense over turns", index.dense_rank)):
            order = timer(name, rank, q["question"])
            keep = within([index.turns[i].text for i in order], budget)
            shown[name] = {index.turns[i].dia_id for i in order[:keep]}
        hit = bool(shown["Pegasus"] & evidence)
        outcomes.append(Outcome(
            category=CATEGORIES[q["category"]],
            hits={name: bool(turns & evidence) for name, turns in shown.items()},
            turns_shown=len(shown["Pegasus"]), words_shown=words_shown,
            missing=[] if hit else sorted(evidence),
            why="" if hit else min(
                (classify(explained[n][sp].ranked, evidence, partial_turns(index, sp),
                          quoted_by[sp], mem.settings.budget_words) for sp in conv.speakers),
                key=MISS_CLASSES.index)))
        if dump is not None:
            dump.append({sp: {**candidates_of(explained[n][sp], partial_turns(index, sp),
                                              self_ids[sp], by_edge[sp]),
                              "quoted": sorted(quoted_by[sp] & evidence)}
                         for sp in conv.speakers})
    return outcomes


def partial_turns(index: TurnIndex, speaker: str) -> Callable[[str], set[str]]:
    return lambda snippet: index.turns_of(speaker, snippet)


# Why a question's evidence did not reach the model, nearest to a hit first: the class of the
# user (of the two) whose evidence came nearest.
MISS_CLASSES = [
    "displaced",        # an evidence candidate would fit, were the lines above it that repeat
                        # a turn already shown (duplicates) or quote no turn of this
                        # conversation (a neighbour's, another life's, memory) left out
    "below budget",     # ranked, keyword-matched, outranked by other turns' memories
    "words miss",       # ranked, but the question shares no word with the memory's snippet
    "not a candidate",  # a memory quotes the evidence, the walk never reached it
    "not extracted",    # no memory of either user quotes the evidence
]


def classify(ranked: list[Candidate], evidence: set[str], turns_of: Callable[[str], set[str]],
             quoted: set[str], budget_words: int) -> str:
    """The class (MISS_CLASSES) of one user's miss, from the ranked candidates of its recall
    (`Explained.ranked`) and the turns the user's memories quote."""
    at = next((i for i, c in enumerate(ranked) if turns_of(c.snippet) & evidence), None)
    if at is None:
        return "not a candidate" if quoted & evidence else "not extracted"
    seen: set[str] = set()
    used = 1
    for c in ranked[:at]:
        turns = turns_of(c.snippet)
        if turns and not turns <= seen:
            used += len(c.line.split())
        seen |= turns
    if used + len(ranked[at].line.split()) <= budget_words:
        return "displaced"
    return "below budget" if ranked[at].text_score > 0 else "words miss"


def candidates_of(explained: Explained, turns_of: Callable[[str], set[str]],
                  self_id: str | None, snippets_by_edge: dict[str, str]) -> dict:
    """One recall's ranked candidates as plain values, for offline ranking (benchmarks/rerank):
    with the edges between fired nodes, which may be [MEMORY] lines, as the engine finds them,
    and the turns of each edge's own snippet (`shown_snippets` counts them when it is shown)."""
    shown = set(explained.recall.edge_ids)
    ends = {n.id for n in explained.fired} | ({self_id} if self_id else set())
    return {
        "words": asked_words(explained.words, explained.reached),  # what the ranking counts
        "shown": [c["id"] for c in explained.shown],
        "between": [c.id for c in explained.ranked if c.source_id in ends and c.target_id in ends
                    and (c.source_id != self_id or c.target_id != self_id)],
        "candidates": [{**{k: getattr(c, k) for k in (
            "id", "source_id", "source", "label", "target_id", "target", "snippet", "said_at",
            "until", "since", "text_score", "dense", "graph", "when", "own", "score")},
            "turns": sorted(turns_of(c.snippet)), "shown": c.id in shown,
            "edge_turns": sorted(turns_of(snippets_by_edge.get(c.id, "")))}
            for c in explained.ranked],
    }


def table(outcomes: list[Outcome], timer: Timer | None = None) -> list[str]:
    """Hit rate per category and system (bold: best of a row); latency p50 / p95 if timed."""
    systems = list(outcomes[0].hits) if outcomes else []
    rows = ["| category | n | " + " | ".join(systems) + " |",
            "|---|---|" + "---|" * len(systems)]
    groups = defaultdict(list)
    for o in outcomes:
        groups[o.category].append(o)
    order = [c for c in ("temporal", "single-hop", "multi-hop", "open-domain") if c in groups]

    def line(name: str, items: list[Outcome]) -> str:
        rates = {s: sum(o.hits[s] for o in items) / len(items) for s in systems}
        best = max(rates.values())
        cells = [f"**{r:.2f}**" if r == best else f"{r:.2f}" for r in rates.values()]
        return f"| {name} | {len(items)} | " + " | ".join(cells) + " |"

    rows += [line(c, groups[c]) for c in order]
    rows.append(line("all", outcomes))
    if timer is not None:
        rows.append("| ms per search, p50 / p95 | | "
                    + " | ".join(timer.cell(s) for s in systems) + " |")
    return rows


def run(conv: Conversation, with_peers: bool, cache_file: Path | None = None,
        distractors: list[Conversation] = (), synthetic: int = 0, dump: Path | None = None,
        own_lives: bool = False) -> tuple[list[Outcome], list[str]]:
    """One conversation on its own throwaway server (Lucene's BM25 statistics are the whole
    index's, so another conversation beside it would change the ranking): outcomes and lines."""
    timer = Timer()
    cache = PeerCache(cache_file, conv.name) if with_peers and cache_file else None
    cached = cache is not None and cache.entry is not None
    with memory() as mem, contextlib.ExitStack() as stack:
        began = time.monotonic()
        counts = commit_all(mem, conv, distractors, synthetic, own_lives)
        load_s = time.monotonic() - began
        peers = {}
        if cached:
            peers = cache.searchers()
        elif with_peers:
            from benchmarks.peers import peers as load_peers
            from pegasus.embedding.embed import model_path

            peers = stack.enter_context(load_peers(
                facts_of(conv) + distractor_facts(conv, distractors, synthetic, own_lives),
                {user_of(conv, sp): sp for sp in conv.speakers},
                episodes_of(conv), mem.embedder.embed, model_path(mem.settings.embedding_model)))
            if cache is not None:
                peers = cache.recording(peers)
        at = session_time(conv.sessions[-1]["date_time"]) + timedelta(days=1)
        began = time.monotonic()
        dumped: list | None = [] if dump is not None else None
        outcomes = evaluate(mem, conv, at, peers, timer, dumped)
        recall_s = time.monotonic() - began
    if dump is not None:
        with dump.open("wb") as out:
            pickle.dump({"conversation": conv.name, "questions": conv.questions,
                         "speakers": conv.speakers, "recalls": dumped,
                         "budget_words": mem.settings.budget_words,
                         "floor": mem.settings.rank_floor,
                         "max_memory_lines": mem.settings.max_memory_lines}, out)
    if cached:
        timer.ms.update(cache.timings())
    elif cache is not None:
        cache.save(timer.ms)
    per_user = [w for o in outcomes for w in o.words_shown.values()]
    why = {c: sum(o.why == c for o in outcomes) for c in MISS_CLASSES}
    lines = table(outcomes, timer) + [
        "",
        f"{len(outcomes)} questions (categories 1-4) of `{conv.name}`, {len(conv.turns)} turns in "
        f"{len(conv.sessions)} sessions; edges per user: "
        + ", ".join(f"{u.rsplit('-', 1)[-1]} {n}" for u, n in counts.items()) + ".",
        f"Shown per question: {statistics.mean(o.turns_shown for o in outcomes):.1f} distinct "
        f"turns; words per user per question: mean {statistics.mean(per_user):.0f}, "
        f"max {max(per_user)}; both users together: mean "
        f"{statistics.mean(sum(o.words_shown.values()) for o in outcomes):.0f}.",
        f"Load {load_s:.0f} s; {len(outcomes)} questions against every system in "
        f"{recall_s:.1f} s" + (" (the peers' results and timings from the cache)." if cached
                               else "."),
        "Pegasus's misses by why: " + ", ".join(f"{c} {n}" for c, n in why.items()) + ".",
    ]
    if distractors or synthetic:
        lines.append(
            "Distractors committed into each user before its first session: "
            + ", ".join(f"`{d.name}` (both speakers)" for d in distractors)
            + (f"{', ' if distractors else ''}{synthetic} synthetic edges" if synthetic else "")
            + ".")
    return outcomes, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+",
                        default=[Path(d) for d in os.environ.get("PEGASUS_LOCOMO_DIR", "").split(
                            os.pathsep) if d],
                        help="the LoCoMo conversations' folders, each measured on its own "
                             "(default: $PEGASUS_LOCOMO_DIR, folders separated by ':')")
    parser.add_argument("--no-write", action="store_true", help="print, don't update docs/")
    parser.add_argument("--no-peers", action="store_true",
                        help="Pegasus and the baselines only (no Graphiti, no mem0)")
    parser.add_argument("--misses", action="store_true", help="list the questions missed")
    parser.add_argument("--peers-cache", type=Path,
                        help="keep the peers' results here; take them from here when present")
    parser.add_argument("--distractors", type=Path, nargs="+", default=[],
                        help="other conversations' folders whose batches (every speaker's) are "
                             "committed into each user first")
    parser.add_argument("--synthetic", type=int, default=0, metavar="EDGES",
                        help="synthetic edges committed into each user first")
    parser.add_argument("--own-lives", action="store_true",
                        help="commit the distractor speakers as the user (their lives become "
                             "the user's own) instead of as other people")
    parser.add_argument("--dump", type=Path, metavar="DIR",
                        help="pickle every recall's ranked candidates to DIR/<conversation>.pkl")
    args = parser.parse_args()
    if not args.data:
        parser.error("no LoCoMo conversation: pass --data DIR [DIR ...] or set "
                     "PEGASUS_LOCOMO_DIR (the set is not part of this repository, CC BY-NC 4.0)")
    convs = [load_conversation(d) for d in args.data]
    others = [load_conversation(d) for d in args.distractors]
    if not args.no_peers:
        from benchmarks.peers import check_installed

        check_installed()
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
    for conv in convs:
        distractors = [d for d in others if d.name != conv.name]
        size = ""
        if distractors or args.synthetic:
            size = f", {len(distractors)} conversations" + (
                f" and {args.synthetic} synthetic edges" if args.synthetic else "") + " before"
        outcomes, lines = run(conv, not args.no_peers, args.peers_cache, distractors,
                              args.synthetic,
                              args.dump / f"{conv.name}{size and f'-x{len(distractors)}'}.pkl"
                              if args.dump else None, args.own_lives)
        print(f"== {conv.name}{size}\n" + "\n".join(lines))
        if args.misses:
            for q, o in zip(conv.questions, outcomes, strict=True):
                if not o.hits["Pegasus"]:
                    found = ", ".join(name for name, hit in o.hits.items() if hit) or "none"
                    print(f"MISS [{o.category}] [{o.why}] {q['question']} -> {o.missing} "
                          f"(found by: {found})")
        if not args.no_write:
            write_section(f"Recall quality (LoCoMo dev set, {conv.name}{size})",
                          "python -m benchmarks.recall_quality --data DIR [DIR ...]"
                          + (" --distractors DIR [DIR ...]" if distractors else "")
                          + (" --synthetic EDGES" if args.synthetic else ""), machine(), lines)

if __name__ == "__main__":
    main()
