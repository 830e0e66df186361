"""Sentences whose rule holds only for a range of dates: "For dates of service on or after March 1,
2030, ... within 75 days"; "For dates of service before March 1, 2030 the earlier limit of 150 days
still applies".

One version of a policy often states both the new rule and the old one it keeps for earlier
dates. Which of them answers depends on the date that applies: the one the staff member entered
(or that was read from the question), else today, which is on or after the day the quoted version
came into force. A sentence whose own range leaves that date out does not answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from policydesk.question_dates import dates_in_question

# The bound a sentence puts on its dates, and how it compares: "on or after X" holds from X,
# "before X" / "prior to X" until the day before, "on or before X" / "through X" until X.
_BOUND = re.compile(r"\b(on\s+or\s+after|after|on\s+or\s+before|through|before|prior\s+to)\s+", re.IGNORECASE)
_FROM, _UNTIL_BEFORE, _UNTIL = "from", "until_before", "until"
_KIND = {"on or after": _FROM, "after": _FROM, "on or before": _UNTIL, "through": _UNTIL,
         "before": _UNTIL_BEFORE, "prior to": _UNTIL_BEFORE}
_DATE_REACH = 24  # characters after the bound word its date is read from
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def date_ranges(sentence: str) -> list[tuple[str, date]]:
    """The (bound, day) pairs a sentence limits its rule with, for bounds written with a full date."""
    out = []
    for m in _BOUND.finditer(sentence):
        snippet = sentence[m.end():m.end() + _DATE_REACH]
        found = dates_in_question(snippet, date.today())
        if found and snippet.lower().startswith(found[0].text.lower()) and _YEAR.search(found[0].text) \
                and not found[0].month_only:
            out.append((_KIND[" ".join(m.group(1).lower().split())], found[0].value))
    return out


def _holds_on(bound: str, day: date, on: date) -> bool:
    if bound == _FROM:
        return on >= day
    return on < day if bound == _UNTIL_BEFORE else on <= day


def leaves_out(sentence: str, entered: Sequence[date], in_force_from: date | None) -> bool:
    """The sentence's own date range excludes the date that applies: every entered one; with none
    entered, today, known only to be on or after `in_force_from` (so only an upper bound that
    ends before it can exclude today)."""
    for bound, day in date_ranges(sentence):
        if entered and not any(_holds_on(bound, day, on) for on in entered):
            return True
        if not entered and in_force_from is not None and bound != _FROM and not _holds_on(bound, day, in_force_from):
            return True
    return False
