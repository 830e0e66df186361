"""Dates written in the question itself: "seen on the 3rd of May 2025", "denied last March",
"a visit last month", "two weeks ago", "yesterday".

Staff often put the date in the sentence instead of the date fields. When no date was entered,
PolicyDesk reads it from the question, says so in a warning, and resolves versions for it; when
a date was entered, the entered one wins and a different date in the question is pointed out.
Which basis a date is (date of service or denial notice date) comes from the words just before
it; without such a word it is taken as the date of service, the basis most rules use.

Relative dates are counted from the request's date (the pipeline's injected `today`, never the
clock read here), and the warning names that date:
- a day back: "yesterday", "the day before yesterday", "3 days ago", "two weeks ago", "a month
  ago", "one year ago" are that day ("a month ago" on 31 March is the last day of February);
  "last Tuesday" is the most recent Tuesday before today;
- a period: "last month", "last week", "last year", "earlier this month", "earlier this week",
  "earlier this year", "last March", "next January" are the first day of that period (a week
  starts on Monday), and the warning says so, because a rule may have changed within it. A month
  without a day ("in May 2025") is likewise its first day.

Not read as a date:
- a duration: "we have 90 days", "within 30 days", "a 90-day limit";
- an elapsed time counted from something other than today: "two days earlier", "30 days after
  the denial", "3 weeks later";
- a span or a bound rather than a day: "in the last month", "the past 2 weeks", "the last 3
  months", "more than 90 days ago" (some day before then);
- a vague count: "a few days ago", "a couple of weeks ago", "several months ago";
- the present: "today", "this month", "this year" (today's versions apply anyway);
- "next week", "next month", "next year": more often a plan year or a coming change than the
  date of a service ("carry over into next year"); the scheduled-change warning covers those;
- hours and minutes ago (today), and business days ago (holidays decide which day that is).
Durations, number words ("ninety (90) days ago") and the story/rule distinction are read by
`versions/durations.py`; this module only decides which of them name a day.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta

from policydesk.contract.answer import AnswerWarning
from policydesk.versions.dates import MAX_DATE, MIN_DATE, DateInputError, check_date_order
from policydesk.versions.bases import BASIS_KEYS, basis_label
from policydesk.versions.durations import parse_durations

_MONTHS = {m: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec")), start=1) for m in names}
_WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_MONTH_NAME = _MONTH[len("(?P<month>"):]  # the same after a group's opening: "(?P<other>" + _MONTH_NAME
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_REL = r"(?P<rel>last|this|next|this\s+past|this\s+coming)"
# "in the last month", "the last week of December": a span or a part of something, not the calendar period before this one
_NOT_AFTER_THE = r"(?<!\bthe\s)"

# Words shortly before a date that make it the denial notice date (a remittance advice, "RA", is the
# notice a claim was paid or denied on).
_DENIAL_CUE = re.compile(r"\b(?:deni(?:ed|al)|notice|letter|eob|decision|decided|determination|remittance|ra)\b", re.IGNORECASE)
_CUE_WINDOW = 48  # characters before the date that may carry its basis cue

_PERIOD_NOTE = {"month": "the first day of that month", "week": "the Monday of that week",
                "year": "the first day of that year"}

# What a reader returns: the day, the period it stands for (None: a day), whether it was counted from today.
Read = tuple[date, str | None, bool]


@dataclass(frozen=True)
class QuestionDate:
    basis: str  # date_of_service | denial_notice_date
    value: date
    text: str  # as written in the question
    period: str | None = None  # "month" | "week" | "year": a period, read as its first day
    counted_from: date | None = None  # the request's date a relative phrase was counted from

    @property
    def month_only(self) -> bool:
        """The phrase names a period (a month, week or year), not a day (`date_conditions` reads days only)."""
        return self.period is not None

    def describe(self) -> str:
        notes = [_PERIOD_NOTE[self.period]] if self.period else []
        if self.counted_from is not None:
            notes.append(f"counted from today, {self.counted_from.isoformat()}")
        how = f" ({'; '.join(notes)})" if notes else ""
        return f"\u201c{self.text}\u201d as a {basis_label(self.basis)} of {self.value.isoformat()}{how}"


def _months_back(today: date, months: int) -> date:
    """The same day `months` months earlier (later, if negative), clamped to the month's last day."""
    index = today.year * 12 + today.month - 1 - months
    year, month = divmod(index, 12)
    day = min(today.day, [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30, 31, 30,
                          31, 31, 30, 31, 30, 31][month])
    return date(year, month + 1, day)


def _period_start(period: str, today: date, step: int) -> date:
    """The first day of the week (Monday), month or year `step` periods from today's (-1: the last one, 0: this one)."""
    if period == "week":
        return today - timedelta(days=today.weekday()) + timedelta(weeks=step)
    if period == "month":
        return _months_back(today.replace(day=1), -step)
    return date(today.year + step, 1, 1)


def _step(rel: str) -> int:
    rel = " ".join(rel.lower().split())
    return -1 if rel in ("last", "this past") else 1 if rel in ("next", "this coming") else 0


def _relative_month(rel: str, month: int, today: date) -> date:
    step = _step(rel)
    if step < 0:  # "last March": the most recent such month before the current one
        year = today.year if month < today.month else today.year - 1
    elif step > 0:
        year = today.year if month > today.month else today.year + 1
    else:  # "this March": the current year's
        year = today.year
    return date(year, month, 1)


def _back(today: date, amount: int, unit: str) -> date | None:
    if unit in ("days", "calendar days"):
        return today - timedelta(days=amount)
    if unit == "weeks":
        return today - timedelta(weeks=amount)
    if unit in ("months", "years"):
        return _months_back(today, amount * (12 if unit == "years" else 1))
    return None  # hours and minutes: today; business days: holidays decide the day


def _int(g: dict, key: str) -> int:
    return int(g[key])


# Most specific first; a later reader never takes text an earlier one read.
_READERS: tuple[tuple[re.Pattern, Callable[[dict, date], Read]], ...] = tuple(
    (re.compile(p, re.IGNORECASE), f) for p, f in (
        (r"\b(?P<iso>\d{4}-\d{2}-\d{2})\b", lambda g, t: (date.fromisoformat(g["iso"]), None, False)),
        (r"\b(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})\b",
         lambda g, t: (date(_int(g, "y") + (2000 if len(g["y"]) == 2 else 0), _int(g, "m"), _int(g, "d")), None, False)),
        (r"\b(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b",
         lambda g, t: (date(_int(g, "year"), _MONTHS[g["month"].lower()], _int(g, "day")), None, False)),
        (r"\b" + _MONTH + r"\s+(?:the\s+)?" + _DAY + r",?\s+" + _YEAR + r"\b",
         lambda g, t: (date(_int(g, "year"), _MONTHS[g["month"].lower()], _int(g, "day")), None, False)),
        (r"\b" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b",
         lambda g, t: (date(_int(g, "year"), _MONTHS[g["month"].lower()], 1), "month", False)),
        # no year: the most recent such day, today included
        (r"\b(?:on\s+)?(?:" + _MONTH + r"\s+(?:the\s+)?(?P<day>\d{1,2})(?:st|nd|rd|th)\b"
         r"|the\s+(?P<day2>\d{1,2})(?:st|nd|rd|th)\s+of\s+(?P<month2>" + _MONTH_NAME + r")",
         lambda g, t: _latest(g, t)),
        (r"\b" + _REL + r"\s+" + _MONTH + r"\b",
         lambda g, t: (_relative_month(g["rel"], _MONTHS[g["month"].lower()], t), "month", True)),
        (r"\b(?:the\s+)?day\s+before\s+yesterday\b", lambda g, t: (t - timedelta(days=2), None, True)),
        (r"\byesterday\b", lambda g, t: (t - timedelta(days=1), None, True)),  # "today" applies anyway: not read
        (_NOT_AFTER_THE + r"\b(?P<rel>last|this\s+past)\s+(?P<period>week|month|year)\b",
         lambda g, t: (_period_start(g["period"].lower(), t, _step(g["rel"])), g["period"].lower(), True)),
        (r"\bearlier\s+this\s+(?P<period>week|month|year)\b",
         lambda g, t: (_period_start(g["period"].lower(), t, 0), g["period"].lower(), True)),
        (r"\b(?:last|this\s+past)\s+(?P<weekday>" + "|".join(_WEEKDAYS) + r")\b",
         lambda g, t: (t - timedelta(days=(t.weekday() - _WEEKDAYS[g["weekday"].lower()]) % 7 or 7), None, True)),
        # durations.py reads "a year" only after "within", "in" or "per"; here "a week ago" is one week
        (r"\b(?:a|an)\s+(?P<unit>day|week|month|year)\s+ago\b",
         lambda g, t: (_back(t, 1, g["unit"].lower() + "s"), None, True)),
    ))
_AGO = re.compile(r"\s*ago\b", re.IGNORECASE)
# "more than 90 days ago" is some day before then, not that day
_BOUND_BEFORE = re.compile(r"\b(?:more|less|fewer)\s+than\s+$|\b(?:over|under|within|at\s+(?:least|most)|up\s+to)\s+$",
                           re.IGNORECASE)


def _latest(g: dict, today: date) -> Read:
    month = _MONTHS[(g.get("month") or g["month2"]).lower().rstrip(".")]
    day = int(g.get("day") or g["day2"])
    candidate = date(today.year, month, day)
    return (candidate if candidate <= today else date(today.year - 1, month, day)), None, True


def _spans(question: str, today: date) -> Iterator[tuple[int, int, Read]]:
    """Every reading, most specific first: (start, end, reading)."""
    for pattern, read in _READERS:
        for m in pattern.finditer(question):
            if m.group(0).lower().endswith("ago") and _BOUND_BEFORE.search(question[:m.start()]):
                continue
            try:
                yield m.start(), m.end(), read({k: v for k, v in m.groupdict().items() if v}, today)
            except (ValueError, KeyError, OverflowError):
                continue
    # "two weeks ago", "ninety (90) days ago": an elapsed time told as a story, counted back from today
    for d in parse_durations(question):
        ago = _AGO.match(question, d.end)
        if not (d.narrative and ago) or d.amount.denominator != 1 or _BOUND_BEFORE.search(question[:d.start]):
            continue
        try:
            value = _back(today, int(d.amount), d.unit)
        except (ValueError, OverflowError):
            continue
        if value is not None:
            yield d.start, ago.end(), (value, None, True)


def dates_in_question(question: str, today: date) -> list[QuestionDate]:
    """Every date written in the question, left to right, each with the basis its cue words give.
    `today` is the request's date: relative dates ("last month", "two weeks ago") count from it."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, QuestionDate]] = []
    for start, end, (value, period, relative) in _spans(question, today):
        if any(start < e and s < end for s, e in taken) or not (MIN_DATE <= value <= MAX_DATE):
            continue
        taken.append((start, end))
        before = question[max(0, start - _CUE_WINDOW):start]
        basis = "denial_notice_date" if _DENIAL_CUE.search(before) else "date_of_service"
        found.append((start, QuestionDate(basis, value, question[start:end].strip(), period,
                                          today if relative else None)))
    return [d for _, d in sorted(found, key=lambda pair: pair[0])]


def dates_by_basis(found: list[QuestionDate]) -> dict[str, QuestionDate]:
    """The first date the question gives for each basis."""
    out: dict[str, QuestionDate] = {}
    for d in found:
        out.setdefault(d.basis, d)
    return out


def _quoted(d: QuestionDate) -> str:
    return f"\u201c{d.text}\u201d ({d.value.isoformat()})"


def applied_dates(question: str, entered: dict[str, date], today: date) -> tuple[dict[str, date], list[AnswerWarning]]:
    """The dates versions are resolved for, and the warnings that say where they came from.
    Entered dates win; with none entered, the dates written in the question apply, and say so."""
    found = dates_in_question(question, today)
    if not found or any(sum(d.basis == b for d in found) > 1 for b in BASIS_KEYS):
        return entered, []  # none, or a range ("between X and Y"), which only what-changed reads
    written = dates_by_basis(found)
    if entered:
        return entered, [AnswerWarning(kind="date_in_question", message=(
            f"The question mentions {_quoted(d)}, but the {basis_label(d.basis)} entered is "
            f"{entered[d.basis].isoformat()}; versions were resolved for the entered date."))
            for d in written.values() if d.basis in entered and entered[d.basis] != d.value]
    applied = {b: d.value for b, d in written.items()}
    try:
        check_date_order(applied.get("date_of_service"), applied.get("denial_notice_date"))
    except DateInputError as exc:
        return entered, [AnswerWarning(kind="date_in_question", message=(
            f"The dates in the question were not used ({exc}); enter them in the date fields."))]
    read = "; ".join(d.describe() for d in written.values())
    return applied, [AnswerWarning(kind="date_from_question", message=(
        f"No date was entered, so PolicyDesk read {read} from the question and resolved versions for it. "
        "Enter the date in the date fields if that is not the date that applies."))]
