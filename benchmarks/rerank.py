"""Rankings tried offline on `recall_quality --dump` files: no server, the same candidates.

    python -m benchmarks.rerank DUMP.pkl [DUMP.pkl ...] [--set NAME=VALUE ...] [--loo NAME=V1,V2,...]

Each dump holds, for every question and user, the candidates the walk found with the raw parts
of their score (src/pegasus/recall/rank.py). This re-scores them with `rank.score` and
`rank.choose` under other settings and counts the questions whose evidence turn is shown: what a
ranking change would do, without re-running the walk (a change to the walk needs the harness).
`--loo NAME=V1,V2,...` chooses the value leave-one-conversation-out: for each conversation, the
value best on the others (ties: the first listed), scored on it; printed beside the in-sample
best (one value for all).
"""

from __future__ import annotations

import argparse
import pickle
from dataclasses import fields
from pathlib import Path

from benchmarks.recall_quality import CATEGORIES, MISS_CLASSES, classify
from pegasus.recall.rank import Candidate, Weights, choose, score
from pegasus.settings import RecallSettings

CANDIDATE_FIELDS = {f.name for f in fields(Candidate)}
# The settings of one ranking: recall's own, with their names and defaults (--set NAME=VALUE).
Ranking = RecallSettings


def shown_turns(recall: dict, ranking: Ranking) -> set[str]:
    """The turns one user's recall shows under `ranking`."""
    # what the harness counts as shown: the quoted words, and the edge's own snippet
    turns = {c["id"] + "\0" + c["snippet"]: {*c["turns"], *c.get("edge_turns", ())}
             for c in recall["candidates"]}
    ranked = ranked_candidates(recall, ranking)
    quoted, relations = choose(ranked, ranking.budget_words, ranking.rank_floor,
                               set(recall["between"]), ranking.max_memory_lines)
    return {t for c in [*quoted, *relations] for t in turns[c.id + "\0" + c.snippet]}


def ranked_candidates(recall: dict, ranking: Ranking) -> list[Candidate]:
    found = [Candidate(**{k: v for k, v in c.items() if k in CANDIDATE_FIELDS})
             for c in recall["candidates"]]
    return score(found, Weights.of(ranking, tuple(recall["words"])))


def why(dump: dict, ranking: Ranking) -> list[str]:
    """Per question, "" for a hit, else its miss class (recall_quality.classify); a dump
    without the turns each user's memories quote says "no candidate" for the two classes
    that need them."""
    out = []
    for q, recall, hit in zip(dump["questions"], dump["recalls"], hits(dump, ranking),
                              strict=True):
        if hit:
            out.append("")
            continue
        evidence = set(q["evidence"])
        classes = []
        for r in recall.values():
            turns = {c["snippet"]: set(c["turns"]) for c in r["candidates"]}
            got = classify(ranked_candidates(r, ranking), evidence,
                           lambda snippet, turns=turns: turns.get(snippet, set()),
                           set(r.get("quoted", evidence)), ranking.budget_words)
            classes.append(got if "quoted" in r or got not in MISS_CLASSES[-2:]
                           else "no candidate")
        out.append(min(classes, key=lambda c: [*MISS_CLASSES, "no candidate"].index(c)))
    return out


def hits(dump: dict, ranking: Ranking) -> list[bool]:
    """Per question: is one of its evidence turns shown to either user?"""
    out = []
    for q, recall in zip(dump["questions"], dump["recalls"], strict=True):
        shown = set().union(*(shown_turns(r, ranking) for r in recall.values()))
        out.append(bool(shown & set(q["evidence"])))
    return out


def with_own(dump: dict) -> dict:
    """A dump written before candidates carried `own` (the self node is an end): the self node
    is named after its speaker in the harness, so a candidate with an end of that name is."""
    for recall in dump["recalls"]:
        for speaker, r in recall.items():
            for c in r["candidates"]:
                c.setdefault("own", float(speaker in (c["source"], c["target"])))
    return dump


def as_value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--loo", metavar="NAME=V1,V2,...")
    args = parser.parse_args()
    dumps = [with_own(pickle.loads(p.read_bytes())) for p in args.dumps]
    base = Ranking.model_validate(
        {k: as_value(v) for k, v in (s.split("=", 1) for s in args.set)})
    if not args.loo:
        total = 0
        for d in dumps:
            got = hits(d, base)
            total += sum(got)
            by = {}
            for q, hit in zip(d["questions"], got, strict=True):
                by.setdefault(CATEGORIES[q["category"]], []).append(hit)
            print(f"{d['conversation']}: {sum(got)}/{len(got)} = {sum(got) / len(got):.3f} ("
                  + ", ".join(f"{c} {sum(h)}/{len(h)} = {sum(h) / len(h):.2f}"
                              for c, h in sorted(by.items())) + ")")
            classes = why(d, base)
            print("  misses by why: " + ", ".join(
                f"{c} {classes.count(c)}" for c in [*MISS_CLASSES, "no candidate"]
                if c in classes))
        print(f"all: {total}/{sum(len(d['questions']) for d in dumps)}")
        return
    name, values = args.loo.split("=", 1)
    candidates = [as_value(v) for v in values.split(",")]
    table = {v: [sum(hits(d, Ranking.model_validate({**base.model_dump(), name: v})))
                 for d in dumps] for v in candidates}
    for v, row in table.items():
        print(f"{name}={v}: " + " ".join(f"{d['conversation']} {n}" for d, n in zip(
            dumps, row, strict=True)) + f" all {sum(row)}")
    sizes = [len(d["questions"]) for d in dumps]
    in_sample = max(candidates, key=lambda v: (sum(table[v]), -candidates.index(v)))
    held = []
    for i, d in enumerate(dumps):
        chosen = max(candidates, key=lambda v: (sum(table[v]) - table[v][i],
                                                -candidates.index(v)))
        held.append(table[chosen][i])
        print(f"held out {d['conversation']}: chosen {name}={chosen} on the others, "
              f"{table[chosen][i]}/{sizes[i]} (in-sample {name}={in_sample}: "
              f"{table[in_sample][i]}/{sizes[i]})")
    print(f"held-out folds {sum(held)}/{sum(sizes)} = {sum(held) / sum(sizes):.3f}; in-sample "
          f"{sum(table[in_sample])}/{sum(sizes)} = {sum(table[in_sample]) / sum(sizes):.3f}")


if __name__ == "__main__":
    main()
