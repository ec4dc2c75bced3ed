"""What a message says of time: whether it asks about the past, so superseded memories may
answer it, and which days it names, so memories said on them may.

"Where did I work before Nimbus?" must find Acme, which Nimbus superseded; "where do I work?"
must not. Markers of the past ("used to", "before", "when did" …) or a date the message names
that lies before now (dateparser reads "last year", "in March", "2019") open the history.

"What was Sam doing on December 4, 2023?" names a day: the memories said that day answer it,
whatever words they use (decisions.md, "Memories said when the message says").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from pegasus.text import fold, head_and_tail

PAST_MARKERS = (
    "used to", "before", "previously", "formerly", "earlier", "ago", "back then", "back when",
    "no longer", "anymore", "any more", "when did", "last year", "last month", "last week",
    "in the past", "originally", "at first", "once was", "former", "old", "ex",
)
_MARKER = re.compile(r"\b(?:" + "|".join(re.escape(m) for m in PAST_MARKERS) + r")\b")
_MONTH_OR_YEAR = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|(?:19|20)\d\d|yesterday|"
    r"last|ago)\b")
# dateparser reads ~10 k characters a second: a long message is searched for dates at its ends.
DATE_SEARCH_CHARS = 2_000
# A date found in the message counts as a day it names only when its words hold a number (a
# day of the month, a year) or say a day relative to now: dateparser also reads "may" (the
# verb), "we", "sat" or "second" as dates.
_DAY_NAMED = re.compile(r"\d|\b(?:yesterday|today|last|ago)\b")
# How long each kind of date lasts; a year (or a time of day) names no span: a year's memories
# are no hint, and a time is too narrow for the day a memory is dated by.
_SPANS = {"day": timedelta(days=1), "week": timedelta(days=7)}
# The span is the named day(s) in any time zone: a memory said on 4 December at local time
# lies between 4 December 00:00 at UTC+14 and 5 December 00:00 at UTC-12.
# dateparser's search may take a date's next words with it: "in December 2023 after a long
# time" is found as "in December 2023 after a", which parses as 1 December (the "a"); such
# trailing little words are cut before the date and its period are read.
_TRAILING = re.compile(r"(?i)(?:[\s,]+(?:after|before|a|an|the|at|of|and|or|with|for|to|"
                       r"from|since|until|when|while|by))+[\s,]*$")
EARLIEST_ZONE = timedelta(hours=14)
LATEST_ZONE = timedelta(hours=12)
MAX_SPANS = 3


@dataclass(frozen=True)
class Span:
    """The instants (UTC, end excluded) in which a day, week or month the message named lies."""

    start: datetime
    end: datetime

    def holds(self, at: datetime | None) -> bool:
        return at is not None and self.start <= at < self.end


@cache
def _search():
    from dateparser.search import search_dates

    return search_dates


Named = tuple[tuple[str, datetime, str | None], ...]


def _dates(text: str, base: datetime) -> Named:
    """The dates dateparser finds in `text` (relative ones from `base`): each one's words,
    the date and what it lasts ("day", "week", "month", "year", "time")."""
    from dateparser.date import DateDataParser

    settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past",
                "RETURN_AS_TIMEZONE_AWARE": False}
    found = _search()(text, languages=["en"], settings=settings) or []
    parser = DateDataParser(languages=["en"], settings=settings)
    dates = []
    for words, when in found:
        data = parser.get_date_data(_TRAILING.sub("", words) or words)
        if data.date_obj is None:
            data = parser.get_date_data(words)
        dates.append((words, (data.date_obj or when).replace(tzinfo=None), data.period))
    return tuple(dates)


def dates_named(text: str, now: datetime) -> Named:
    """The dates the message names, as `_dates` gives them (none without a month, a year or
    a relative day: dateparser is slow). A recall searches once and hands the answer to both
    questions of this module (`named`)."""
    if not _MONTH_OR_YEAR.search(fold(text)):
        return ()
    return _dates(head_and_tail(text, DATE_SEARCH_CHARS), now.replace(tzinfo=None))


def asks_about_past(text: str, now: datetime, named: Named | None = None) -> bool:
    """True when the message names the past: a marker, or a date before `now` (of `named`,
    its dates, when already searched)."""
    if _MARKER.search(fold(text)):
        return True
    base = now.replace(tzinfo=None)
    named = dates_named(text, now) if named is None else named
    return any(when < base for _, when, _ in named)


def spans_named(text: str, now: datetime, told_within: timedelta = timedelta(0),
                named: Named | None = None) -> list[Span]:
    """The days, weeks and months the message names with a number or relative to now ("on
    December 4, 2023", "in May 2023", "yesterday", "last week"), at most MAX_SPANS, each
    widened to every time zone and to `told_within` after its end (what happens on a day is
    often told in the days after: "yesterday I…"); `named`: its dates, when already searched."""
    spans: list[Span] = []
    for words, when, period in dates_named(text, now) if named is None else named:
        if not _DAY_NAMED.search(fold(words)):
            continue
        if period != "month" and period not in _SPANS:
            continue
        try:
            day = datetime(when.year, when.month, when.day, tzinfo=UTC)
            if period == "month":
                start = day.replace(day=1)
                end = (start + timedelta(days=32)).replace(day=1)
            else:
                start, end = day, day + _SPANS[period]
            span = Span(start - EARLIEST_ZONE, end + told_within + LATEST_ZONE)
        except OverflowError:  # a day at the ends of time ("December 9999"): no memory's
            continue
        if span not in spans:
            spans.append(span)
    return spans[:MAX_SPANS]
