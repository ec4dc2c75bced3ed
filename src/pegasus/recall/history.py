"""Whether a message asks about the past, so superseded memories may answer it.

"Where did I work before Nimbus?" must find Acme, which Nimbus superseded; "where do I work?"
must not. Markers of the past ("used to", "before", "when did" …) or a date the message names
that lies before now (dateparser reads "last year", "in March", "2019") open the history.
"""

from __future__ import annotations

import re
from datetime import datetime
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


@cache
def _search():
    from dateparser.search import search_dates

    return search_dates


def asks_about_past(text: str, now: datetime) -> bool:
    """True when the message names the past: a marker, or a date before `now`."""
    folded = fold(text)
    if _MARKER.search(folded):
        return True
    if not _MONTH_OR_YEAR.search(folded):  # dateparser is slow: only when a date may be there
        return False
    base = now.replace(tzinfo=None)
    found = _search()(head_and_tail(text, DATE_SEARCH_CHARS), languages=["en"], settings={
        "RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False})
    return any(when.replace(tzinfo=None) < base for _, when in found or [])
