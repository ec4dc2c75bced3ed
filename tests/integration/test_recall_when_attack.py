"""An outside review's attacks on "memories said when the message says" (846a3f7, #39): the
days a message names (history.spans_named) and the snippet_said channel of read/recall_walk.

Rules attacked: tenant isolation is absolute; bad input gets a clear error or is harmless and
loses nothing (a recall never raises on user text); a huge message costs what its ends cost.
"""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from pegasus import Memory
from pegasus.recall import history
from pegasus.recall.history import MAX_SPANS, Span, spans_named
from pegasus.text import head_and_tail
from tests.helpers import rel

DAY = datetime(2023, 12, 4, 15, 30, tzinfo=UTC)
NOW = datetime(2024, 1, 10, 12, tzinfo=UTC)
LATER = DAY + timedelta(days=31)
WEEK = timedelta(days=7)
FENCE = "spent the whole afternoon fixing the fence with my neighbour Joe"
BREAD = "baked sourdough bread for the first time"
QUESTION = "What was I doing on December 4, 2023?"
DEC_4 = Span(datetime(2023, 12, 3, 10, tzinfo=UTC), datetime(2023, 12, 12, 12, tzinfo=UTC))


def _said(name: str, snippet: str) -> dict:
    return {"entities": [{"name": "Sam", "kind": "PERSON", "is_user": True},
                         {"name": name, "kind": "THING"}],
            "relations": [rel("User", "MENTIONED", name, snippet=snippet)]}


def _when(explained) -> list[str]:
    return sorted(c.snippet for c in explained.ranked if c.when)


# --- spans_named alone (no Neo4j) -----------------------------------------------------------

# Dates dateparser reads at the ends of datetime's range: the span arithmetic (a month's
# `+ timedelta(days=32)`, a day's `+ 1 day`, the zones' `- 14 h` / `+ 7 days + 12 h`) leaves it.
EDGE_DATES = ["in December 9999", "what happened on 31 December 9999?", "December 9999",
              "on January 1, 0001", "in January 0001"]


@pytest.mark.parametrize("named", EDGE_DATES)
def test_a_date_at_the_ends_of_time_raises_nothing_and_keeps_the_other_days(named):
    """Review of 846a3f7: OverflowError from history.spans_named (lines 108, 110, 113). A date
    that cannot be widened to a span is no span; the real day named beside it still is."""
    alone = spans_named(named, NOW, WEEK)
    assert all(s.start < s.end for s in alone)
    beside = spans_named(f"What was I doing on December 4, 2023, or {named}?", NOW, WEEK)
    assert DEC_4 in beside
    assert all(s.start < s.end for s in beside)


@pytest.mark.parametrize("now", [datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC)])
def test_a_relative_day_at_the_ends_of_time_raises_nothing(now):
    """Review of 846a3f7: 'yesterday' asked at 0001-01-02 or 9999-12-30 (an `at` an MCP client
    may send) overflows the span's zone / told-within widening (history.py line 113)."""
    spans = spans_named("what did I do yesterday?", now, WEEK)
    assert all(s.start < s.end for s in spans)
    assert DEC_4 in spans_named("what did I do on December 4, 2023?", now, WEEK)


def test_many_days_named_bring_at_most_three_spans_the_first_named():
    days = ", ".join(f"{m} {d} 2020" for d, m in enumerate(
        ["May", "June", "July", "August", "September", "October", "November"], start=1))
    spans = spans_named(f"on {days}", NOW, timedelta(0))
    assert len(spans) == MAX_SPANS
    assert [s.start.date().isoformat() for s in spans] == [
        "2020-04-30", "2020-06-01", "2020-07-02"]


def test_words_dateparser_reads_as_dates_name_no_day():
    """'may' (the verb), 'second', 'sat', a bare year, a time of day: no span."""
    for text in ["we may go on the second", "I sat there", "it was 2019", "at 3pm",
                 "today", "the 4th"]:
        assert spans_named(text, NOW, WEEK) == [], text


def test_non_english_and_control_characters_are_harmless():
    for text in ["4 декабря 2023", "2023年12月4日", "el 4 de diciembre de 2023",
                 "\x00 on \x00 December \ufeff 4, 2023 \x00", "on \u202eDec 4 2023"]:
        spans = spans_named(text, NOW, WEEK)
        assert len(spans) <= MAX_SPANS and all(s.start < s.end for s in spans), text
    assert spans_named("\x00 on Dec 4 2023 \x00", NOW, WEEK) == [DEC_4]


def test_a_megabyte_of_dates_costs_what_its_ends_cost(monkeypatch):
    """Only the message's ends are searched (its first and last 1,000 characters): a 1 MB
    message full of dates names what its ends name, and dateparser is handed those only."""
    filler = "on December 4, 2023 and May 5, 2021 and 12/04/2023, 3 days ago; " * 16_000
    huge = filler[:1_000_000]
    ends = head_and_tail(huge, 2_000)
    search = history._search()
    read: list[int] = []

    def counted(text, **kwargs):
        read.append(len(text))
        return search(text, **kwargs)

    monkeypatch.setattr(history, "_search", lambda: counted)
    spans_ends = spans_named(ends, NOW, WEEK)
    spans_huge = spans_named(huge, NOW, WEEK)
    assert spans_huge == spans_ends
    assert DEC_4 in spans_huge and len(spans_huge) <= MAX_SPANS
    assert read == [len(ends), len(ends)] and len(ends) <= 2_002


def test_a_date_past_the_searched_ends_is_not_read():
    """An overflowing date hidden in the middle of a long message is never parsed."""
    text = "on December 4, 2023 " + "x " * 500_000 + " yesterday"
    spans = spans_named(text + "", NOW, WEEK)
    assert DEC_4 in spans
    middle = "on December 4, 2023 " + "x " * 5_000 + " in December 9999 " + "x " * 5_000
    assert spans_named(middle, NOW, WEEK) == [DEC_4]


# --- through recall (Neo4j) -----------------------------------------------------------------

@pytest.mark.parametrize("named", ["in December 9999", "on January 1, 0001"])
def test_recall_of_a_message_naming_an_edge_date_still_finds_the_day(settings, user_id, named):
    """Review of 846a3f7: mem.explain raises OverflowError (history.py spans_named, from
    engine._explain) on user text. A recall never raises on user text and loses nothing."""
    settings.meaning_candidates = 0
    with Memory(settings) as mem:
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        found = mem.explain(user_id, f"What was I doing on December 4, 2023, or {named}?",
                            at=LATER)
    assert found.recall.context[0] == FENCE
    assert _when(found) == [FENCE]


def test_recall_asked_at_the_end_of_time_about_yesterday_raises_nothing(settings, user_id):
    """Review of 846a3f7: an `at` of 9999-12-30 with 'yesterday' overflows in spans_named."""
    with Memory(settings) as mem:
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        found = mem.explain(user_id, "what did I do with the fence yesterday?",
                            at=datetime(9999, 12, 30, tzinfo=UTC))
    assert _when(found) == []


def test_another_user_cannot_crowd_the_day_out_past_the_scan_cap(settings, user_id):
    """Mallory stores many more memories said earlier on the victim's day than when_scan
    reads: were the scan not keyed by user first, her snippets would fill it and the
    victim's would never be compared."""
    settings.meaning_candidates = 0
    settings.when_scan = 5
    settings.when_candidates = 3
    mallory = user_id + "-mallory"
    with Memory(settings) as mem:
        for i in range(4):
            mem.commit(mallory, f"flood-{i}", {
                "entities": [{"name": f"Thing{i}-{j}", "kind": "THING"} for j in range(15)],
                "relations": [rel("User", "MENTIONED", f"Thing{i}-{j}",
                                  snippet=f"what was I doing on December 4, 2023? {i} {j}")
                              for j in range(15)]}, at=DAY - timedelta(hours=5 - i))
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        victim = mem.explain(user_id, QUESTION, at=LATER)
        theirs = mem.explain(mallory, QUESTION, at=LATER)
    assert [c.snippet for c in victim.ranked] == [FENCE]
    assert victim.recall.context == [FENCE]
    assert FENCE not in [c.snippet for c in theirs.ranked]
    # hers come by the day and by her words (all 60 say "December 4, 2023"): all hers
    assert len(_when(theirs)) >= 3 and all("December 4" in s for s in _when(theirs))


@pytest.mark.parametrize("suffix", [" ", "*", "\\", "'", "\" OR true //", "%", "İ"])
def test_odd_user_ids_next_to_the_victims_stay_apart(settings, user_id, suffix):
    """Ids that differ from the victim's by a trailing space, a wildcard, a quote, an escape
    or a case-folding letter are other partitions, for the day's channel too."""
    settings.meaning_candidates = 0
    other = user_id + suffix
    with Memory(settings) as mem:
        mem.commit(other, "that-day", _said("Bread", BREAD), at=DAY)
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        victim = mem.explain(user_id, QUESTION, at=LATER)
        theirs = mem.explain(other, QUESTION, at=LATER)
    assert _when(victim) == [FENCE] and [c.snippet for c in victim.ranked] == [FENCE]
    assert _when(theirs) == [BREAD] and [c.snippet for c in theirs.ranked] == [BREAD]


def test_snippets_with_a_null_or_mistyped_said_at_are_harmless(settings, user_id, raw_driver):
    """A snippet whose said_at is missing or a string (an old import, a hand edit) is not found
    by the day's range search, breaks no recall, and nothing is lost."""
    settings.meaning_candidates = 0
    with Memory(settings) as mem:
        mem.commit(user_id, "fence", _said("Fence", FENCE), at=DAY)
        mem.commit(user_id, "bread", _said("Bread", BREAD), at=DAY + timedelta(hours=1))
        mem.commit(user_id, "rent", _said("Lisbon", "the rent in Lisbon went up again"),
                   at=DAY + timedelta(hours=2))
        raw_driver.execute_query(
            "MATCH (s:Snippet {user_id: $u, text: $t}) REMOVE s.said_at", u=user_id, t=BREAD)
        raw_driver.execute_query(
            "MATCH (s:Snippet {user_id: $u, text: $t}) SET s.said_at = '2023-12-04'",
            u=user_id, t="the rent in Lisbon went up again")
        found = mem.explain(user_id, QUESTION, at=LATER)
        words = mem.explain(user_id, "sourdough bread on December 4, 2023", at=LATER)
    assert _when(found) == [FENCE]
    assert BREAD in [c.snippet for c in words.ranked]
    count = raw_driver.execute_query("MATCH (s:Snippet {user_id: $u}) RETURN count(s) AS n",
                                     u=user_id).records[0]["n"]
    assert count == 3


def test_a_day_is_the_day_in_every_time_zone_and_no_more(settings, user_id):
    """Said at 00:30 on 4 December at UTC+14 (3 December 10:30 UTC) and at 23:30 on 4 December
    at UTC-12 (5 December 11:30 UTC): both on the named day; 3 December 09:00 UTC is not."""
    settings.meaning_candidates = 0
    settings.when_told_within_days = 0
    early = "woke up before dawn to watch the meteor shower"
    late = "stayed up late finishing the quilt for my sister"
    before = "the rent in Lisbon went up again"
    with Memory(settings) as mem:
        mem.commit(user_id, "early", _said("Meteor", early),
                   at=datetime(2023, 12, 4, 0, 30, tzinfo=timezone(timedelta(hours=14))))
        mem.commit(user_id, "late", _said("Quilt", late),
                   at=datetime(2023, 12, 4, 23, 30, tzinfo=timezone(timedelta(hours=-12))))
        mem.commit(user_id, "before", _said("Lisbon", before),
                   at=datetime(2023, 12, 3, 9, 0, tzinfo=UTC))
        found = mem.explain(user_id, QUESTION, at=LATER)
        naive = mem.explain(user_id, QUESTION, at=LATER.replace(tzinfo=None))
    assert _when(found) == sorted([early, late])
    assert _when(naive) == _when(found)
    assert [c.snippet for c in naive.ranked] == [c.snippet for c in found.ranked]


def test_a_huge_message_of_dates_recalls_the_day_its_ends_name(settings, user_id):
    settings.meaning_candidates = 0
    huge = ("What was I doing on December 4, 2023? " * 30_000)[:1_000_000]
    with Memory(settings) as mem:
        mem.commit(user_id, "that-day", _said("Fence", FENCE), at=DAY)
        found = mem.explain(user_id, huge, at=LATER)
    assert _when(found) == [FENCE]
    assert found.recall.context[0] == FENCE
