"""The ranking rules of recall (docs/design.md, "Recall"): pure, no database."""

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pegasus.models.recall import Recall, ShownSnippet
from pegasus.recall.history import Span, asks_about_past, spans_named
from pegasus.recall.rank import Candidate, Weights, choose, graph_scores, ranks, score, word_share
from pegasus.recall.seeds import KeySet, combine, select_seeds
from pegasus.settings import Settings

NOW = datetime(2026, 6, 1, tzinfo=UTC)
S = Settings()


def shipped(**more) -> Weights:
    """The three signals' shipped weights, and whatever else a test sets."""
    return Weights(keywords=0.45, meaning=0.35, graph=0.20, **more)


def test_recall_settings_give_the_weights_and_only_by_name():
    assert Weights.of(Settings().recall, ("bill",)) == Weights(
        keywords=0.45, meaning=0.35, graph=0.20, fusion="weighted", rrf_k=10, when=0.0,
        coverage=1.0, words=("bill",), together=0.4, own=0.1)
    assert Weights.of(Settings(rank_fusion="rrf", rrf_k=3).recall).fusion == "rrf"
    with pytest.raises(TypeError):
        Weights(0.45, 0.35, 0.20)  # type: ignore[misc]


def cand(cid, snippet, text=0.0, dense=0.0, graph=0.0, source="me", target="x", label="REL",
         said=datetime(2026, 5, 1, tzinfo=UTC), until=None):
    return Candidate(id=cid, source_id=source, source=source.title(), label=label,
                     target_id=target, target=target.title(), snippet=snippet, said_at=said,
                     until=until, text_score=text, dense=dense, graph=graph)


def test_a_key_matching_several_words_beats_one_matching_one():
    keys = KeySet(ids=["k1", "k2"], kinds=["entity", "entity"], entity_ids=["group", "artists"],
                  labels=[None, None], vectors=np.zeros((2, 3)))
    # words: lgbtq, support, group; "LGBTQ support group" matches all three, "LGBTQ artists" one.
    scores = np.array([[0.6, 0.6], [0.5, 0.0], [0.7, 0.0]])
    seeds = select_seeds(["lgbtq", "support", "group"], scores, keys, S.seed_threshold,
                         S.margin_top, S.margin_gap, S.seeds_per_word)
    assert seeds.entity_scores["group"] > seeds.entity_scores["artists"]
    assert abs(seeds.entity_scores["group"] - (1 - 0.4 * 0.5 * 0.3)) < 1e-12
    assert abs(seeds.entity_scores["artists"] - 0.6) < 1e-12


def test_a_word_seeds_its_best_keys_up_to_the_cap():
    keys = KeySet(ids=[f"k{i}" for i in range(5)], kinds=["entity"] * 5,
                  entity_ids=[f"e{i}" for i in range(5)], labels=[None] * 5,
                  vectors=np.zeros((5, 3)))
    scores = np.array([[0.35, 0.9, 0.5, 0.5, 0.2]])
    capped = select_seeds(["w"], scores, keys, 0.30, S.margin_top, S.margin_gap, 3)
    # above 0.30: e1 0.9, e2 0.5, e3 0.5, e0 0.35; the best three, the tie in key order
    assert set(capped.entity_scores) == {"e1", "e2", "e3"}
    wide = select_seeds(["w"], scores, keys, 0.30, S.margin_top, S.margin_gap, 10)
    assert set(wide.entity_scores) == {"e0", "e1", "e2", "e3"}


@given(st.lists(st.dictionaries(st.sampled_from("abc"), st.floats(0, 1)), max_size=6))
def test_graded_seeds_stay_within_zero_and_one_and_grow_with_words(per_word):
    combined = combine(per_word)
    for seed, value in combined.items():
        assert 0.0 <= value <= 1.0
        assert value >= max(w.get(seed, 0.0) for w in per_word) - 1e-12


def test_the_self_node_adds_no_graph_signal_but_a_matched_label_does():
    edges = [cand("e1", "a", source="me", target="sarah"), cand("e2", "b", source="me",
                                                                target="tea", label="LIKES")]
    graph_scores(edges, {"me": 5.0, "sarah": 0.4, "tea": 0.1}, "me", {"LIKES": 0.5})
    assert edges[0].graph == 0.4 and edges[1].graph == 0.6


def test_an_edge_of_the_self_node_is_the_users_own_and_another_persons_is_not():
    edges = [cand("mine", "a", source="me", target="job"), cand("hers", "b", source="deb",
                                                                target="job"),
             cand("to_me", "c", source="sarah", target="me")]
    graph_scores(edges, {"job": 0.5}, "me")
    assert [c.own for c in edges] == [1.0, 0.0, 1.0]
    graph_scores(edges, {"job": 0.5}, None)  # no self node yet: nothing is the user's own
    assert [c.own for c in edges] == [0.0, 0.0, 0.0]


def test_the_users_own_memory_goes_before_another_persons_with_the_same_words():
    """"When did I lose my job?" in a memory that also holds Deborah's life: her "I lost my job
    last month" matches as well as the user's own, and rank_own puts the user's first."""
    mine = cand("mine", "I lost my job at the bakery.", text=2.0, dense=0.40, source="me")
    hers = cand("hers", "I lost my job last month.", text=2.2, dense=0.45, source="deb")
    graph_scores([mine, hers], {}, "me")
    assert [c.id for c in score([mine, hers], shipped())] == ["hers", "mine"]
    ranked = score([mine, hers], shipped(own=0.1))
    assert [c.id for c in ranked] == ["mine", "hers"]
    assert ranked[0].score == round(0.45 * 2.0 / 2.2 + 0.35 * 0.40 + 0.1, 6)
    # in rank fusion too: added to the fused score
    assert [c.id for c in score([mine, hers], shipped(fusion="rrf", own=0.5))] == [
        "mine", "hers"]


def test_scores_combine_scaled_signals_best_first():
    ranked = score([cand("kw", "k", text=4.0), cand("both", "b", text=2.0, dense=0.9),
                    cand("none", "n")], Weights(keywords=0.5, meaning=0.5, graph=0.0))
    assert [c.id for c in ranked] == ["both", "kw", "none"]
    assert ranked[0].score == 0.5 * 0.5 + 0.5 * 0.9 and ranked[1].score == 0.5


def test_ranks_share_the_better_rank_on_ties_and_leave_non_positive_values_unranked():
    assert list(ranks(np.array([0.5, 0.0, 0.9, 0.5, 0.1, -1.0]))) == [2, 0, 1, 2, 4, 0]


def test_rank_fusion_adds_weight_over_k_plus_rank_and_first_everywhere_scores_one():
    rrf = Weights(keywords=0.5, meaning=0.3, graph=0.2, fusion="rrf", rrf_k=10)
    ranked = score([cand("all", "a", text=3.0, dense=0.9, graph=2.0),
                    cand("kw", "k", text=1.0), cand("none", "n")], rrf)
    assert [c.id for c in ranked] == ["all", "kw", "none"]
    assert ranked[0].score == 1.0
    # second in keywords only: 0.5 / 12, over the best possible (0.5 + 0.3 + 0.2) / 11
    assert ranked[1].score == round(0.5 / 12 / (1.0 / 11), 6)
    assert ranked[2].score == 0.0


def test_rank_fusion_uses_ranks_so_one_huge_raw_value_does_not_drown_the_others():
    """Weighted, a keyword score 10x the next leaves everything else near 0; by ranks the
    runner-up in keywords that is first in meaning and graph comes first."""
    huge = cand("huge", "h", text=50.0)
    rounded = cand("rounded", "r", text=5.0, dense=0.5, graph=1.0)
    weighted = score([huge, rounded], shipped())
    fused = score([huge, rounded], shipped(fusion="rrf", rrf_k=10))
    assert [c.id for c in weighted] == ["huge", "rounded"]
    assert [c.id for c in fused] == ["rounded", "huge"]


def test_rank_fusion_ranks_float_noise_as_a_tie():
    """Equal words embedded in two batches differ in the last bits: they share a rank."""
    a = cand("a", "same words", dense=0.700000000001, text=1.0)
    b = cand("b", "same words again", dense=0.7, text=1.0)
    fused = score([a, b], shipped(fusion="rrf", rrf_k=10))
    assert fused[0].score == fused[1].score


def test_equal_scores_put_the_more_recent_first():
    old = cand("old", "x", text=1.0, said=datetime(2025, 1, 1, tzinfo=UTC))
    new = cand("new", "y", text=1.0, said=datetime(2026, 1, 1, tzinfo=UTC))
    assert [c.id for c in score([old, new], shipped())] == ["new", "old"]


def test_float_noise_in_a_signal_does_not_reorder_equal_memories():
    """Found by the export round trip: an embedding computed in another batch differed in its
    last bits, and two relation lines with the same score swapped places (#26)."""
    weights = shipped()
    a = cand("a", "same words", dense=0.5, label="OWNS")
    b = cand("b", "same words", dense=0.5 + 1e-9, label="FINDS_REWARDING")
    first = [c.id for c in score([a, b], weights)]
    a2 = cand("a", "same words", dense=0.5 + 1e-9, label="OWNS")
    b2 = cand("b", "same words", dense=0.5, label="FINDS_REWARDING")
    assert [c.id for c in score([b2, a2], weights)] == first == ["b", "a"]  # by label


def test_the_block_never_exceeds_the_word_budget_and_drops_contained_snippets():
    ranked = score([cand("long", "my boss Sarah moved the deadline again", text=3.0),
                    cand("inside", "Sarah moved the deadline", text=2.9),
                    cand("other", "I work at Acme", text=2.0),
                    cand("big", " ".join(["word"] * 50), text=1.9)], shipped())
    shown, relations = choose(ranked, budget_words=20, floor=0.0)
    assert [c.id for c in shown] == ["long", "other"]
    rendered = Recall(snippets=[c.shown() for c in shown]).render()
    assert len(rendered.split()) <= 20


def test_memories_far_below_the_best_are_not_shown():
    ranked = score([cand("a", "x", text=10.0), cand("b", "y", text=1.0)],
                   Weights(keywords=1.0, meaning=0.0, graph=0.0))
    shown, _ = choose(ranked, budget_words=100, floor=0.3)
    assert [c.id for c in shown] == ["a"]


def test_relation_lines_only_for_edges_whose_snippet_is_not_quoted():
    ranked = score([cand("q", "quoted words", text=2.0), cand("r", "not shown", text=0.1,
                                                                label="HAS_BOSS")],
                   Weights(keywords=1.0, meaning=0.0, graph=0.0))
    ranked[1].since = datetime(2026, 2, 3, tzinfo=UTC)
    shown, relations = choose(ranked, budget_words=11, floor=0.5, relation_ids={"q", "r"},
                              max_relations=6)
    assert [c.id for c in shown] == ["q"] and [c.relation for c in relations] == [
        "Me -[HAS_BOSS]-> X (since 2026-02-03)"]
    assert choose(ranked, budget_words=10, floor=0.5, relation_ids={"q", "r"},
                  max_relations=6)[1] == []


def test_snippet_lines_carry_their_date_and_a_superseded_one_its_end():
    line = ShownSnippet(text="I work at Acme", edge_id="e", said_at=datetime(2023, 5, 8),
                        until=datetime(2024, 1, 2)).line
    assert line == '- 2023-05-08, until 2024-01-02: "I work at Acme"'
    assert ShownSnippet(text="hi", edge_id="e", said_at=datetime(2023, 5, 8)).line == \
        '- 2023-05-08: "hi"'


def test_questions_about_the_past_open_the_history():
    assert asks_about_past("where did I work before Nimbus?", NOW)
    assert asks_about_past("what did I do last year", NOW)
    assert asks_about_past("what happened in March 2019?", NOW)
    assert not asks_about_past("where do I work?", NOW)
    assert not asks_about_past("I like tea", NOW)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_days_a_message_names_are_spans_in_every_time_zone():
    """A day named is that day anywhere: from its start at UTC+14 to its end at UTC-12."""
    assert spans_named("What was Sam doing on December 4, 2023?", NOW) == [
        Span(_utc(2023, 12, 3, 10), _utc(2023, 12, 5, 12))]
    assert spans_named("what happened on 8 May, 2023", NOW) == [
        Span(_utc(2023, 5, 7, 10), _utc(2023, 5, 9, 12))]
    # a month is its days, whichever day dateparser fills in
    assert spans_named("Which hobby did Sam take up in May 2023?", NOW) == [
        Span(_utc(2023, 4, 30, 10), _utc(2023, 6, 1, 12))]
    # a date's next little words are not part of it ("after a" is not the 1st)
    assert spans_named("Which activity did Sam resume in December 2023 after a long time?",
                       NOW) == [Span(_utc(2023, 11, 30, 10), _utc(2024, 1, 1, 12))]
    assert spans_named("what did we talk about yesterday?", NOW) == [
        Span(_utc(2026, 5, 30, 10), _utc(2026, 6, 1, 12))]
    assert spans_named("and last week?", NOW) == [Span(_utc(2026, 5, 24, 10), _utc(2026, 6, 1, 12))]
    # two days named, two spans; the same day twice, one
    assert spans_named("I went there on 1 May 2023. Then on 9 June 2023 I left.", NOW) == [
        Span(_utc(2023, 4, 30, 10), _utc(2023, 5, 2, 12)),
        Span(_utc(2023, 6, 8, 10), _utc(2023, 6, 10, 12))]
    assert len(spans_named("on 9 June 2023 I left. Yes, 9 June 2023.", NOW)) == 1


def test_words_that_only_look_like_dates_name_no_day():
    """dateparser reads "may" (the verb) and "we" as dates; a year alone, or a month with no
    number, names no span (a year's memories are no hint)."""
    for text in ["What may I do?", "what did we plan", "what did he do in 2023?",
                 "I like tea", "remind me in May", ""]:
        assert spans_named(text, NOW) == [], text


def test_a_memory_said_on_a_named_day_ranks_above_an_equal_one():
    """rank_when lifts a memory said on a day the message names; 0 ranks by the other
    signals alone (a tie then goes to the more recently said)."""
    then = cand("then", "fixed the fence", dense=0.4, said=_utc(2023, 12, 4, 15))
    later = cand("later", "fixed the gate", dense=0.4, said=_utc(2024, 1, 4, 15))
    then.when = 1.0
    assert [c.id for c in score([then, later], shipped())] == ["later", "then"]
    assert [c.id for c in score([then, later], shipped(when=0.2))] == [
        "then", "later"]
    assert [c.id for c in score([then, later], shipped(fusion="rrf",
                                                       when=0.2))] == ["then", "later"]


def test_empty_recall_renders_empty_text():
    assert Recall().render() == ""
    assert Recall(memory=["A -[X]-> B"]).render() == "[MEMORY]\nA -[X]-> B"


def test_the_walk_starts_from_the_hottest_max_seeds_ties_by_id():
    from pegasus.recall.seeds import Seeds, strongest
    seeds = Seeds({"c": 0.5, "a": 0.9, "b": 0.5, "d": 0.4}, {"KNOWS": 0.6}, [("w", "k", 0.9)])
    kept = strongest(seeds, 2)
    assert kept.entity_scores == {"a": 0.9, "b": 0.5} and kept.labels == {"KNOWS": 0.6}
    assert strongest(seeds, 4) is seeds


def test_an_edge_said_in_other_words_is_ranked_by_each_and_kept_once_at_its_best():
    early = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [cand("e1", "I lost my job at Door Dash", text=1.0, dense=0.2, said=NOW),
            cand("e1", "I deliver for Door Dash on weekends", text=4.0, dense=0.6, said=early),
            cand("e2", "weekends are for dancing", text=2.0, dense=0.3)]
    ranked = score(rows, shipped())
    assert [(c.id, c.snippet) for c in ranked] == [
        ("e1", "I deliver for Door Dash on weekends"), ("e2", "weekends are for dancing")]
    assert ranked[0].said_at == early  # quoted with the day those words were said
    # Scaling is over every text: the best keyword score (4.0) is the one that scores 1.
    assert ranked[1].score == round(0.45 * 0.5 + 0.35 * 0.3, 6)


def test_a_snippet_sharing_one_common_word_of_the_question_is_no_keyword_match_of_it():
    """"How does Evan spend his time with his bride after the wedding?": a snippet that says
    only "time" had the best BM25 score, hence the whole keyword weight, and ranked above the
    honeymoon the question is about. The keyword signal counts the share of the message's words
    a snippet holds (rank_coverage)."""
    words = ("spend", "time", "bride", "wedding")
    day_at_a_time = cand("time", "Just take it one day at a time.", text=2.0, dense=0.05)
    honeymoon = cand("moon", "We're off to Canada next month for our honeymoon", dense=0.2,
                     graph=1.0)
    assert word_share(words, day_at_a_time.snippet) == 0.25
    assert word_share(words, honeymoon.snippet) == 0.0
    # words compared by their first five letters, as the index compares stems
    assert word_share(words, "the bride is spending her time planning weddings") == 1.0
    plain = shipped()
    counted = shipped(coverage=1.0, words=words)
    assert [c.id for c in score([day_at_a_time, honeymoon], plain)] == ["time", "moon"]
    assert [c.id for c in score([day_at_a_time, honeymoon], counted)] == ["moon", "time"]
    # no words asked: nothing is counted
    assert word_share((), "anything") == 1.0


def test_a_memory_said_beside_the_best_match_rises_with_it():
    """"How does Ana feel about the bakery's launch?" is answered by "Honestly, I'm thrilled",
    said in the session whose "The bakery launches on Friday" matches the question:
    rank_together adds, times its weight, the best score of the other memories said at the same
    moment."""
    session = _utc(2023, 6, 16, 15)
    night = cand("night", "The bakery launches on Friday.", text=4.0, dense=0.5, said=session)
    excited = cand("excited", "Honestly, I'm thrilled.", dense=0.15, said=session)
    other = cand("other", "Opening a shop takes time.", text=1.0, dense=0.1,
                 said=_utc(2023, 3, 1, 15))
    plain = score([night, excited, other], shipped())
    assert [c.id for c in plain] == ["night", "other", "excited"]
    together = score([night, excited, other], shipped(together=0.2))
    assert [c.id for c in together] == ["night", "excited", "other"]
    by_id = {c.id: c.score for c in together}
    best = 0.45 + 0.35 * 0.5
    # each is lifted by the best *other* memory of its moment; one alone in its moment is not
    assert by_id["excited"] == round(0.35 * 0.15 + 0.2 * best, 6)
    assert by_id["night"] == round(best + 0.2 * 0.35 * 0.15, 6)
    assert by_id["other"] == round(0.45 * 0.25 + 0.35 * 0.1, 6)


def test_memories_without_a_moment_are_not_lifted_together():
    undated = [cand("a", "one", dense=0.5, said=None), cand("b", "two", dense=0.1, said=None)]
    ranked = score(undated, shipped(together=0.5))
    assert [(c.id, c.score) for c in ranked] == [("a", 0.175), ("b", 0.035)]


def test_the_names_of_people_the_message_seeded_are_not_keywords_of_it():
    """"How do Jon and Gina like to destress?": Jon and Gina are seeded people, so a snippet
    holding "Jon" alone holds none of the words the share counts; a place's name still counts,
    and a message of names alone keeps them all."""
    from pegasus.recall.budget import Reached
    from pegasus.recall.engine import asked_words

    reached = [Reached(id="j", name="Jon", kind="PERSON", score=1.0, hop=0, seed=True),
               Reached(id="g", name="Gina Rossi", kind="PERSON", score=1.0, hop=0, seed=True),
               Reached(id="p", name="Paris", kind="PLACE", score=1.0, hop=0, seed=True),
               Reached(id="m", name="Maria", kind="PERSON", score=0.5, hop=1, seed=False)]
    words = ["jon", "gina's", "destress", "paris", "maria"]
    assert asked_words(words, reached) == ["destress", "paris", "maria"]
    assert asked_words(["jon", "gina"], reached) == ["jon", "gina"]
    faith = cand("faith", "Have faith in yourself, Jon", text=2.5)
    fix = cand("fix", "Dance is my stress fix, and how I destress", text=1.5)
    by_names = score([faith, fix], shipped(coverage=1.0, words=("jon", "destress")))
    assert [c.id for c in by_names] == ["faith", "fix"]
    asked = tuple(asked_words(["jon", "destress"], reached))
    assert [c.id for c in score([faith, fix], shipped(coverage=1.0, words=asked))] == [
        "fix", "faith"]
