import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from pegasus import Memory
from pegasus.errors import Neo4jUnavailableError
from pegasus.recall.seeds import Seeds
from tests.helpers import edges, rel, snapshot

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)

WORK = {
    "entities": [
        {"name": "Bill", "kind": "PERSON", "is_user": True},
        {"name": "Sarah", "kind": "PERSON", "properties": {"role": "manager"}},
        {"name": "Acme", "kind": "ORG"},
        {"name": "Globex", "kind": "ORG"},
        {"name": "Tokyo", "kind": "PLACE"},
    ],
    "relations": [
        rel("User", "HAS_BOSS", "Sarah", stability="mutable", cardinality="one_to_one",
            snippet="my boss Sarah moved the deadline again, honestly I'm exhausted"),
        rel("User", "WORKS_AT", "Acme", cardinality="one_to_one",
            snippet="I've been at Acme for three years"),
        rel("Sarah", "WORKS_AT", "Acme", snippet="Sarah runs the platform team at Acme"),
        rel("User", "VISITED", "Tokyo", snippet="Tokyo in April was the best trip of my life"),
    ],
}


@pytest.fixture
def mem(settings, user_id):
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", WORK, at=T0)
        yield memory


def test_a_message_about_the_boss_recalls_her_and_her_words(mem, user_id):
    recall = mem.recall(user_id, "I had another argument with my manager Sarah", at=T0)
    assert "my boss Sarah moved the deadline again, honestly I'm exhausted" in recall.context
    names = {n.name: n for n in recall.nodes}
    assert names["Sarah"].direction == "seed" and names["Sarah"].hop == 0
    assert "Bill" not in names  # the self node never takes a budget slot
    text = recall.render()
    # Each quoted memory carries the date it was said; its edge is not repeated in [MEMORY].
    assert "[CONTEXT]\n- 2026-04-01: " in text
    assert '- 2026-04-01: "my boss Sarah moved the deadline again, honestly' in text
    assert not any(line.startswith("Bill -[HAS_BOSS]-> Sarah") for line in recall.memory)
    assert len(text.split()) <= mem.settings.budget_words
    assert recall.as_json()["nodes"][0].keys() == {"name", "kind", "score", "direction", "hop"}


def test_relation_label_matches_without_a_named_node(mem, user_id):
    recall = mem.recall(user_id, "where did I travel recently?", at=T0)
    assert recall.context[0] == "Tokyo in April was the best trip of my life"


def test_unrelated_message_recalls_nothing(mem, user_id):
    recall = mem.recall(user_id, "the the and of", at=T0)
    assert recall.render() == "" and recall.nodes == []


def _supersede_acme_and_fade_tokyo(mem, raw_driver, user_id):
    mem.commit(user_id, "c2", {"relations": [
        rel("User", "WORKS_AT", "Globex", cardinality="one_to_one",
            snippet="I just started at Globex")]}, at=T0 + timedelta(days=1))
    raw_driver.execute_query(
        "MATCH (:Entity {user_id: $u})-[r:VISITED]->() SET r.dormant = true", u=user_id)


def test_superseded_and_dormant_edges_are_never_walked(mem, raw_driver, user_id):
    _supersede_acme_and_fade_tokyo(mem, raw_driver, user_id)
    recall = mem.recall(user_id, "how are things at Acme and Globex? Tokyo?", at=T0)
    assert not any(line.startswith("Bill -[WORKS_AT]-> Acme") for line in recall.memory)
    assert "I just started at Globex" in recall.context
    assert "I've been at Acme for three years" not in recall.context
    assert not any("VISITED" in line for line in recall.memory)
    # Named by the label alone ("travel" seeds VISITED), the faded trip is not reached.
    travel = mem.recall(user_id, "where did I travel recently?", at=T0)
    assert "Tokyo in April was the best trip of my life" not in travel.context


def test_a_dormant_memory_comes_back_on_its_own_words_unless_faded_recall_is_off(
        mem, settings, raw_driver, user_id):
    _supersede_acme_and_fade_tokyo(mem, raw_driver, user_id)
    cued = mem.recall(user_id, "that trip to Tokyo in April", at=T0)
    assert "Tokyo in April was the best trip of my life" in cued.context
    [shown] = [s for s in cued.snippets if s.text.startswith("Tokyo")]
    assert shown.until is None and shown.said_at == T0  # faded, not ended: dated as said
    assert not any("VISITED" in line for line in cued.memory)
    with Memory(settings.model_copy(update={"recall_faded": False})) as strict:
        hidden = strict.recall(user_id, "that trip to Tokyo in April", at=T0)
    assert "Tokyo in April was the best trip of my life" not in hidden.context
    # A superseded memory needs a question about the past, faded recall or not.
    assert "I've been at Acme for three years" not in cued.context
    # Recalled, it strengthens: the read log reinforces it at close, and it is awake again.
    logged = mem.recall(user_id, "that trip to Tokyo in April", conversation_id="c3", at=T0)
    assert shown.edge_id in logged.edge_ids
    mem.close_conversation(user_id, "c3", at=T0 + timedelta(days=1))
    [visited] = [p for _, t, _, p in edges(raw_driver, user_id) if t == "VISITED"]
    assert visited["dormant"] is False and visited["reinforcements"] == 1


def test_an_expired_memory_is_quoted_with_the_day_it_ended_only_when_its_words_are_asked(
        mem, settings, user_id):
    mem.commit(user_id, "c2", {"entities": [{"name": "Dentist", "kind": "EVENT"}],
                               "relations": [rel("User", "HAS_APPOINTMENT", "Dentist",
                                                 stability="time_bound",
                                                 expires_at=(T0 + timedelta(days=2)).isoformat(),
                                                 snippet="dentist on Thursday, dreading it")]},
               at=T0)
    before = mem.recall(user_id, "dentist appointment", at=T0 + timedelta(days=1))
    after = mem.recall(user_id, "dentist appointment", at=T0 + timedelta(days=3))
    assert before.context == ["dentist on Thursday, dreading it"]
    assert before.snippets[0].until is None
    assert after.context == ["dentist on Thursday, dreading it"]
    assert after.snippets[0].until == T0 + timedelta(days=2)
    assert '- 2026-04-01, until 2026-04-03: "dentist on Thursday, dreading it"' in after.render()
    assert not any("HAS_APPOINTMENT" in ln for ln in after.memory)
    # Not walked: the appointment's entity named with none of its words brings nothing back.
    assert "dentist on Thursday, dreading it" not in mem.recall(
        user_id, "any appointments coming up?", at=T0 + timedelta(days=3)).context
    with Memory(settings.model_copy(update={"recall_faded": False})) as strict:
        hidden = strict.recall(user_id, "dentist appointment", at=T0 + timedelta(days=3))
    assert hidden.context == [] and not any("HAS_APPOINTMENT" in ln for ln in hidden.memory)


def test_a_past_fact_comes_back_on_its_own_words_with_the_day_it_ended(mem, user_id):
    """"I lost my job at Door Dash", with nothing to end, is kept ended (design §3, "Past
    facts"): never walked nor shown unasked, but its own words bring it back with the day it
    ended, while a memory replaced by another (Acme by Globex) still needs a question about
    the past."""
    ended = T0 + timedelta(days=1)
    mem.commit(user_id, "c2", {"relations": [
        rel("User", "WORKS_AT", "Globex", cardinality="one_to_one",
            snippet="I just started at Globex"),
        rel("User", "WORKED_AT", "Door Dash", status="ended", cardinality="one_to_one",
            snippet="Unfortunately, I also lost my job at Door Dash this month.")]}, at=ended)
    later = ended + timedelta(days=30)
    cued = mem.recall(user_id, "still sad about losing my job at Door Dash", at=later)
    [shown] = [s for s in cued.snippets if "Door Dash" in s.text]
    assert shown.until == ended and shown.said_at == ended
    assert ('- 2026-04-02, until 2026-04-02: "Unfortunately, I also lost my job at Door Dash '
            'this month."') in cued.render()
    assert not any("WORKED_AT" in line for line in cued.memory)
    unasked = mem.recall(user_id, "how is work going at Globex?", at=later)
    assert not any("Door Dash" in text for text in unasked.context)
    replaced = mem.recall(user_id, "three years at Acme", at=later)
    assert "I've been at Acme for three years" not in replaced.context


def test_an_entity_the_message_names_offers_its_faded_memories(mem, settings, raw_driver,
                                                              user_id):
    """"What is Tim excited to see at Universal Studios?": the entity is named, its memory
    ("my first time going, super stoked for the Harry Potter rides") faded and says no word of
    the name. An entity the message names (its name matched at least `faded_named_match`)
    offers its faded memories, quoted, not walked (design §7.6); one only associated with a
    word (Tokyo for "Asia") does not, and faded recall off hides them all."""
    mem.commit(user_id, "c2", {
        "entities": [{"name": "Universal Studios", "kind": "PLACE"}],
        "relations": [
            rel("User", "PLANS_TO_VISIT", "Universal Studios",
                snippet="my first time going, super stoked for the Harry Potter rides"),
            rel("Sarah", "LIKES", "Tokyo", snippet="Sarah keeps asking about the ramen")]},
        at=T0)
    raw_driver.execute_query(
        "MATCH (:Entity {user_id: $u})-[r:PLANS_TO_VISIT|VISITED]->() SET r.dormant = true",
        u=user_id)
    asked = mem.recall(user_id, "what will I see at Universal Studios?", at=T0)
    [shown] = [s for s in asked.snippets if "Harry Potter" in s.text]
    assert shown.said_at == T0 and shown.until is None
    assert not any("PLANS_TO_VISIT" in line for line in asked.memory)  # quoted, not walked
    trip = "Tokyo in April was the best trip of my life"
    assert trip in mem.recall(user_id, "any news from Japan?", at=T0).context
    assert trip not in mem.recall(user_id, "any news from Asia?", at=T0).context
    for off in ({"recall_faded": False}, {"faded_named_match": 2.0}):
        with Memory(settings.model_copy(update=off)) as strict:
            hidden = strict.recall(user_id, "what will I see at Universal Studios?", at=T0)
        assert not any("Harry Potter" in text for text in hidden.context)


def test_recall_writes_nothing_but_the_read_log(mem, raw_driver, user_id):
    before = snapshot(raw_driver)
    mem.recall(user_id, "my manager Sarah", at=T0)
    assert snapshot(raw_driver) == before
    mem.recall(user_id, "my manager Sarah", conversation_id="c2", at=T0)
    mem.settle_reads()  # the log is written off the request path
    after = snapshot(raw_driver)
    added = set(after[0]) - set(before[0])
    assert set(before[0]) <= set(after[0]) and after[1] == before[1]
    assert len(added) == 1 and '"Conversation"' in next(iter(added))
    log = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'c2'}) RETURN c.read_log AS log", u=user_id
    ).records[0]["log"]
    ends = {r["id"]: (r["s"], r["t"]) for r in raw_driver.execute_query(
        "MATCH (s:Entity {user_id: $u})-[r]->(t:Entity) RETURN r.id AS id, s.id AS s, t.id AS t",
        u=user_id).records}
    assert log and all(entry == f"{ends[e][0]}/{e}/{ends[e][1]}"
                       for entry, e in ((x, x.split("/")[1]) for x in log)), log


def test_a_read_log_entry_without_its_target_still_reinforces_its_edge(mem, raw_driver, user_id):
    """Read logs written before targets were logged name the source and the edge only."""
    recall = mem.recall(user_id, "my manager Sarah", conversation_id="c2", at=T0)
    mem.settle_reads()
    raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'c2'}) "
        "SET c.read_log = [e IN c.read_log | split(e, '/')[0] + '/' + split(e, '/')[1]]",
        u=user_id)
    later = T0 + timedelta(days=20)
    assert mem.close_conversation(user_id, "c2", at=later) == len(set(recall.edge_ids)) > 0
    touched = {p["id"] for _, _, _, p in edges(raw_driver, user_id)
               if p["touched_at"].to_native() == later}
    assert touched == set(recall.edge_ids)


def test_close_reinforces_each_shown_edge_once(mem, raw_driver, user_id):
    later = T0 + timedelta(days=20)
    recall = mem.recall(user_id, "my manager Sarah", conversation_id="c2", at=later)
    mem.recall(user_id, "Sarah again, my manager", conversation_id="c2", at=later)
    shown = set(recall.edge_ids)
    assert mem.close_conversation(user_id, "c2", at=later) == len(shown)
    assert mem.close_conversation(user_id, "c2", at=later) == 0  # once
    for _, label, _, p in edges(raw_driver, user_id):
        lam = {"mutable": 0.02, "stable": 0.005}[p["stability"]]
        if p["id"] in shown:
            assert p["strength"] == pytest.approx(min(100 * math.exp(-lam * 20) + 15, 100), abs=1e-9)
            assert p["touched_at"].to_native() == later
        else:
            assert p["strength"] == 100.0 and p["touched_at"].to_native() == T0, label


def test_crossed_mode_reinforces_every_edge_the_walk_crossed(settings, raw_driver, user_id):
    crossed = settings.model_copy(update={"read_reinforce": "crossed"})
    with Memory(crossed) as mem:
        mem.commit(user_id, "c1", WORK, at=T0)
        explained = mem.explain(user_id, "my manager Sarah", at=T0)
        mem.recall(user_id, "my manager Sarah", conversation_id="c2", at=T0)
        reinforced = mem.close_conversation(user_id, "c2", at=T0 + timedelta(days=1))
    assert reinforced == len(set(explained.crossed)) == 4


def _tenant_batch(snippet):
    return {"entities": [{"name": "Sarah", "kind": "PERSON"}],
            "relations": [rel("User", "HAS_BOSS", "Sarah", snippet=snippet)]}


def test_two_users_with_the_same_names_see_only_their_own(settings, user_id):
    alice, bob = user_id + "-alice", user_id + "-bob"
    with Memory(settings) as mem:
        mem.commit(alice, "c1", _tenant_batch("alice says Sarah is a great boss"), at=T0)
        mem.commit(bob, "c1", _tenant_batch("bob says Sarah never listens"), at=T0)
        a = mem.recall(alice, "Sarah my boss", at=T0)
        b = mem.recall(bob, "Sarah my boss", at=T0)
    assert a.context == ["alice says Sarah is a great boss"]
    assert b.context == ["bob says Sarah never listens"]
    assert {n.entity_id for n in a.nodes}.isdisjoint({n.entity_id for n in b.nodes})


def test_snippets_of_equal_relevance_come_newest_first(settings, user_id):
    """Ties used to fall back to the edges' random ids, so which snippets made the block could
    change between identical runs on fresh graphs."""
    said = ["Priya loves sailing", "Priya lives in Lisbon", "Priya founded Northwind",
            "Priya runs marathons", "Priya plays the cello"]
    labels = ["LOVES", "LIVES_IN", "FOUNDED", "RUNS", "PLAYS"]
    targets = ["sailing", "Lisbon", "Northwind", "marathons", "cello"]
    with Memory(settings) as memory:
        memory.commit(user_id, "c-friend", {
            "entities": [{"name": "Priya", "kind": "PERSON"}],
            "relations": [rel("User", "HAS_FRIEND", "Priya", snippet="my friend Priya")]}, at=T0)
        for day, (text, label, target) in enumerate(zip(said, labels, targets, strict=True)):
            memory.commit(user_id, f"c{day}", {
                "entities": [{"name": "Priya", "kind": "PERSON"},
                             {"name": target, "kind": "THING"}],
                "relations": [rel("Priya", label, target, snippet=text,
                                  stability="immutable")]}, at=T0 + timedelta(days=day))
        recall = memory.recall(user_id, "Priya", at=T0 + timedelta(days=10))
        ranked = memory.explain(user_id, "Priya", at=T0 + timedelta(days=10)).ranked
    # Every snippet names Priya; equal scores are ordered newest first.
    assert set(said) <= set(recall.context)
    for a, b in zip(ranked, ranked[1:], strict=False):
        assert a.score > b.score or (a.score == b.score and a.said_at >= b.said_at)


def test_the_users_own_life_goes_before_another_persons_in_the_same_words(settings, user_id):
    """A large memory holds the lives of the people the user talks about: Deborah's "I lost my
    job" meets "when did I lose my job?" as well as the user's own. The self node is an end of
    the user's own memory, and rank_own adds to it: found by the same walk, ranked first."""
    def recalled(own: float):
        with Memory(settings.model_copy(update={"rank_own": own})) as memory:
            memory.commit(user_id, "c-mine", {
                "entities": [{"name": "Door Dash", "kind": "ORG"}],
                "relations": [rel("User", "LOST_JOB_AT", "Door Dash",
                                  snippet="I lost my job at Door Dash this month")]}, at=T0)
            memory.commit(user_id, "c-deborah", {
                "entities": [{"name": "Deborah", "kind": "PERSON"},
                             {"name": "Bakery", "kind": "ORG"}],
                "relations": [rel("Deborah", "LOST_JOB_AT", "Bakery",
                                  snippet="Deborah: I lost my job, it has been a rough month")]},
                at=T0 + timedelta(days=3))
            return memory.explain(user_id, "when did I lose my job this month?",
                                  at=T0 + timedelta(days=4)).ranked
    plain = {c.snippet: c for c in recalled(0.0)}
    ranked = recalled(0.1)
    mine = "I lost my job at Door Dash this month"
    hers = "Deborah: I lost my job, it has been a rough month"
    by = {c.snippet: c for c in ranked}
    assert (by[mine].own, by[hers].own) == (1.0, 0.0)
    assert by[mine].score == round(plain[mine].score + 0.1, 6)
    assert by[hers].score == plain[hers].score
    assert [c.snippet for c in ranked].index(mine) < [c.snippet for c in ranked].index(hers)


def test_history_on_demand_finds_what_a_newer_memory_replaced(mem, user_id):
    mem.commit(user_id, "c2", {"entities": [{"name": "Nimbus", "kind": "ORG"}], "relations": [
        rel("User", "WORKS_AT", "Nimbus", cardinality="one_to_one",
            snippet="I started at Nimbus this week")]}, at=T0 + timedelta(days=30))
    later = T0 + timedelta(days=31)
    now = mem.recall(user_id, "how is work at Nimbus going", at=later)
    assert "I started at Nimbus this week" in now.context
    assert "I've been at Acme for three years" not in now.context
    past = mem.recall(user_id, "where did I work before Nimbus? Acme?", at=later)
    [acme] = [s for s in past.snippets if s.text == "I've been at Acme for three years"]
    assert acme.until is not None and acme.until.date().isoformat() == "2026-05-01"
    assert '- 2026-04-01, until 2026-05-01: "I\'ve been at Acme for three years"' in past.render()


def test_the_users_own_name_does_not_seed_what_is_named_after_them(settings, user_id):
    with Memory(settings) as memory:
        memory.commit(user_id, "c1", {
            "entities": [{"name": "Caroline", "kind": "PERSON", "is_user": True},
                         {"name": "Caroline's grandma", "kind": "PERSON"},
                         {"name": "LGBTQ support group", "kind": "ORG"}],
            "relations": [
                rel("User", "HAS_GRANDMA", "Caroline's grandma",
                    snippet="my grandma gave me a necklace"),
                rel("User", "ATTENDED", "LGBTQ support group",
                    snippet="I went to a LGBTQ support group yesterday")]}, at=T0)
        explained = memory.explain(user_id, "When did Caroline go to the LGBTQ support group?",
                                   at=T0)
    assert "caroline" not in explained.words
    ids = {n.name: n.id for n in explained.reached}
    assert ids["Caroline's grandma"] not in explained.seeds.entity_scores
    assert explained.fired[0].name == "LGBTQ support group"
    assert explained.recall.context[0] == "I went to a LGBTQ support group yesterday"


def test_rank_fusion_setting_reaches_the_ranking(settings, user_id):
    """PEGASUS_RANK_FUSION=rrf ranks by reciprocal rank fusion: the scores shown are the fused
    ones (the first in every signal it has scores 1 × its signals' share of the weights;
    rank_together 0, so no memory said beside another is lifted above that)."""
    fused = settings.model_copy(update={"rank_fusion": "rrf", "rrf_k": 10, "rank_together": 0.0,
                                        "rank_own": 0.0})
    with Memory(fused) as memory:
        memory.commit(user_id, "c1", WORK, at=T0)
        recall = memory.recall(user_id, "I had another argument with my manager Sarah", at=T0)
    assert "my boss Sarah moved the deadline again, honestly I'm exhausted" in recall.context
    top = recall.snippets[0].score
    assert 0 < top <= 1.0
    # Under RRF every score is a sum of weight / (k + rank) over (Σ weight / (k + 1)).
    s = fused
    shares = {round(sum(w * 11 / (10 + r) for w, r in zip((s.rank_keywords, s.rank_meaning,
                                                          s.rank_graph), ranks, strict=True))
                    / (s.rank_keywords + s.rank_meaning + s.rank_graph), 6)
              for ranks in [(a, b, c) for a in (1, 2, 3, 1e9) for b in (1, 2, 3, 1e9)
                            for c in (1, 2, 3, 1e9)]}
    assert round(top, 6) in shares


def test_a_read_log_write_that_fails_is_tried_again_and_keeps_the_order(
        mem, raw_driver, user_id, monkeypatch):
    """The log is written off the request path, at least once and in order (design §7.10)."""
    mem.recall_engine.read_log.retry_s = 0.05
    real, failures = mem.store.write, iter([True, True])

    def flaky(fn):
        if next(failures, False):
            raise Neo4jUnavailableError("Neo4j went away for a moment")
        return real(fn)

    monkeypatch.setattr(mem.store, "write", flaky)
    first = mem.recall(user_id, "my manager Sarah", conversation_id="c3", at=T0)
    second = mem.recall(user_id, "Sarah again, the deadline", conversation_id="c3", at=T0)
    mem.settle_reads()
    log = raw_driver.execute_query(
        "MATCH (c:Conversation {user_id: $u, id: 'c3'}) RETURN c.read_log AS log", u=user_id
    ).records[0]["log"]
    assert first.edge_ids and second.edge_ids
    assert [entry.split("/")[1] for entry in log] == first.edge_ids + second.edge_ids


def test_a_recall_reads_in_two_statements_and_the_users_own_name_seeds_nothing(
        mem, user_id, monkeypatch):
    """Design §7, "Round trips": a recall is one seed search (which reads the partition too)
    and one walk (the spread, the bonus, the hottest nodes and the candidates in one
    statement); the user's own name ("Bill") is dropped, so it seeds what the message without
    it seeds."""
    import pegasus.recall.engine as engine_module

    run, calls = engine_module.run_values, []

    def counted(tx, name, **params):
        calls.append(name)
        return run(tx, name, **params)

    monkeypatch.setattr(engine_module, "run_values", counted)
    named = mem.recall_engine.explain(user_id, "Bill argued with his boss Sarah", T0)
    assert calls == ["read/seed_keys", "read/recall_walk"]
    plain = mem.recall_engine.explain(user_id, "argued with his boss Sarah", T0)
    assert named.seeds.entity_scores and named.recall.context == plain.recall.context


@pytest.mark.parametrize("spare", [4, 0])
def test_the_users_names_are_dropped_before_the_words_are_cut(mem, user_id, monkeypatch, spare):
    """The words kept from a long message are its first and last `words` // 2 once the user's
    own names are dropped, as when the partition was read before the search: the first search
    asks NAME_WORDS_SPARE more words at each end, and a kept word it did not ask (more names at
    an end than that: spare 0 here) is asked in the next round, so the seeds are the same."""
    import pegasus.recall.engine as engine_module

    monkeypatch.setattr(engine_module, "NAME_WORDS_SPARE", spare)
    run, calls, depths = engine_module.run_values, [], []

    def counted(tx, name, **params):
        calls.append(name)
        if name == "read/seed_keys":
            depths.append(params["n"])
        return run(tx, name, **params)

    monkeypatch.setattr(engine_module, "run_values", counted)
    params = engine_module.RecallParams.for_recall(mem.settings.recall)
    params.words = 4
    named = mem.recall_engine.explain(
        user_id, "Bill said his boss Sarah moved the Paris budget review again", T0, params)
    assert named.words == ["boss", "sarah", "budget", "review"]
    assert calls == (["read/seed_keys", "read/recall_walk"] if spare
                     else ["read/seed_keys", "read/seed_keys", "read/recall_walk"])
    # A word the first search did not ask is asked at the first depth, as every word was in
    # the three-statement form (deeper, its answer could hold more label keys: more seeds).
    assert depths == [mem.settings.seed_candidates] * len(depths)
    plain = mem.recall_engine.explain(
        user_id, "said his boss Sarah moved the Paris budget review again", T0, params)
    assert plain.words == named.words
    assert named.seeds.entity_scores == plain.seeds.entity_scores
    assert named.seeds.entity_scores and named.recall.context == plain.recall.context


def test_another_users_entity_handed_in_as_a_seed_offers_none_of_its_faded_memories(
        settings, raw_driver, user_id):
    """Attack on the named entities' branch (design §7.6): the walk is given Bob's entity id as
    if a word of Alice's had named it. Every read of the branch is Alice's partition's, so
    Bob's faded memory never becomes her candidate, and her own named entity still offers
    hers."""
    alice, bob = user_id + "-alice", user_id + "-bob"
    studios = {}  # each user's Universal Studios entity, its one memory faded
    with Memory(settings) as mem:
        for who in (alice, bob):
            mem.commit(who, "c1", {
                "entities": [{"name": "Universal Studios", "kind": "PLACE"}],
                "relations": [rel("User", "PLANS_TO_VISIT", "Universal Studios",
                                  snippet=f"{who} is super stoked for the rides")]}, at=T0)
            [studios[who]] = [r["id"] for r in raw_driver.execute_query(
                "MATCH (n:Entity {user_id: $u, name: 'Universal Studios'})-[r:PLANS_TO_VISIT]-() "
                "SET r.dormant = true RETURN n.id AS id", u=who).records]
        bobs, hers = studios[bob], studios[alice]
        engine = mem.recall_engine
        self_id = engine.partition(alice).self_id
        _, _, stolen = engine.walk(alice, Seeds({bobs: 1.0}, {}, []), T0, self_id,
                                   message=np.zeros(384))
        _, _, own = engine.walk(alice, Seeds({hers: 1.0}, {}, []), T0, self_id,
                                message=np.zeros(384))
    assert stolen == []
    assert [c.snippet for c in own] == [f"{alice} is super stoked for the rides"]
