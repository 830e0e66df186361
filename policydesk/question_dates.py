"""Dates written in the question itself: "seen on the 3rd of May 2025", "denied last March".

Staff often put the date in the sentence instead of the date fields. When no date was entered,
PolicyDesk reads it from the question, says so in a warning, and resolves versions for it; when
a date was entered, the entered one wins and a different date in the question is pointed out.
Which basis a date is (date of service or denial notice date) comes from the words just before
it; without such a word it is taken as the date of service, the basis most rules use.

A month without a day ("in May 2025", "last March") is read as the first day of that month, and
the warning says so, because a rule may have changed within the month.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from policydesk.answer import AnswerWarning
from policydesk.dates import MAX_DATE, MIN_DATE, DateInputError, check_date_order
from policydesk.versions.bases import BASIS_KEYS, basis_label

_MONTHS = {m: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec")), start=1) for m in names}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_REL = r"(?P<rel>last|this|next|this\s+past|this\s+coming)"

# Most specific first; each pattern names the groups it fills.
_PATTERNS = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\b(?P<iso>\d{4}-\d{2}-\d{2})\b",
    r"\b(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})\b",
    r"\b(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b",
    r"\b" + _MONTH + r"\s+(?:the\s+)?" + _DAY + r",?\s+" + _YEAR + r"\b",
    r"\b" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b",
    r"\b(?:on\s+)?(?P<nomonth>" + _MONTH[len("(?P<month>"):] + r"\s+(?:the\s+)?(?P<noday>\d{1,2})(?:st|nd|rd|th)\b"
    r"|\b(?:on\s+)?the\s+(?P<noday2>\d{1,2})(?:st|nd|rd|th)\s+of\s+(?P<nomonth2>" + _MONTH[len("(?P<month>"):],
    r"\b" + _REL + r"\s+" + _MONTH + r"\b",
    r"\b(?P<ago_n>\d{1,2}|a|an|one|two|three|four|five|six)\s+(?P<ago_unit>days?|weeks?|months?)\s+ago\b",
    r"\b(?P<word>yesterday)\b",  # "today" is what applies with no date anyway: no warning for it
))
_SMALL_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
# Words shortly before a date that make it the denial notice date (a remittance advice, "RA", is the
# notice a claim was paid or denied on).
_DENIAL_CUE = re.compile(r"\b(?:deni(?:ed|al)|notice|letter|eob|decision|decided|determination|remittance|ra)\b", re.IGNORECASE)
_CUE_WINDOW = 48  # characters before the date that may carry its basis cue


@dataclass(frozen=True)
class QuestionDate:
    basis: str  # date_of_service | denial_notice_date
    value: date
    text: str  # as written in the question
    month_only: bool = False

    def describe(self) -> str:
        how = " (the first day of that month)" if self.month_only else ""
        return f"\u201c{self.text}\u201d as a {basis_label(self.basis)} of {self.value.isoformat()}{how}"


def _months_back(today: date, months: int) -> date:
    index = today.year * 12 + today.month - 1 - months
    year, month = divmod(index, 12)
    day = min(today.day, [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30, 31, 30,
                          31, 31, 30, 31, 30, 31][month])
    return date(year, month + 1, day)


def _relative_month(rel: str, month: int, today: date) -> date:
    rel = " ".join(rel.lower().split())
    if rel in ("last", "this past"):  # the most recent such month before the current one
        year = today.year if month < today.month else today.year - 1
    elif rel in ("next", "this coming"):
        year = today.year if month > today.month else today.year + 1
    else:  # "this March": the current year's
        year = today.year
    return date(year, month, 1)


def _value(m: re.Match, today: date) -> tuple[date, bool] | None:
    g = {k: v for k, v in m.groupdict().items() if v}
    try:
        if "iso" in g:
            return date.fromisoformat(g["iso"]), False
        if "m" in g:
            year = int(g["y"]) + (2000 if len(g["y"]) == 2 else 0)
            return date(year, int(g["m"]), int(g["d"])), False
        if "rel" in g:
            return _relative_month(g["rel"], _MONTHS[g["month"].lower()], today), True
        if "month" in g and "day" in g:
            return date(int(g["year"]), _MONTHS[g["month"].lower()], int(g["day"])), False
        if "month" in g:
            return date(int(g["year"]), _MONTHS[g["month"].lower()], 1), True
        if "noday" in g or "noday2" in g:  # no year: the most recent such day, today included
            month = _MONTHS[(g.get("nomonth") or g["nomonth2"]).lower().rstrip(".").split()[0]]
            day = int(g.get("noday") or g["noday2"])
            candidate = date(today.year, month, day)
            return (candidate if candidate <= today else date(today.year - 1, month, day)), False
        if "ago_n" in g:
            n = _SMALL_NUMBERS.get(g["ago_n"].lower()) or int(g["ago_n"])
            unit = g["ago_unit"].lower().rstrip("s")
            if unit == "month":
                return _months_back(today, n), False
            return today - timedelta(days=n * (7 if unit == "week" else 1)), False
        if "word" in g:
            return today - timedelta(days=1), False
    except (ValueError, KeyError):
        return None
    return None


def dates_in_question(question: str, today: date) -> list[QuestionDate]:
    """Every date written in the question, left to right, each with the basis its cue words give."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, QuestionDate]] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(question):
            start, end = m.span()
            if any(start < e and s < end for s, e in taken):
                continue
            parsed = _value(m, today)
            if parsed is None or not (MIN_DATE <= parsed[0] <= MAX_DATE):
                continue
            taken.append((start, end))
            before = question[max(0, start - _CUE_WINDOW):start]
            basis = "denial_notice_date" if _DENIAL_CUE.search(before) else "date_of_service"
            found.append((start, QuestionDate(basis, parsed[0], m.group(0).strip(), parsed[1])))
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
