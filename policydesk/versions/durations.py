"""Durations as people write them, and whether two of them say the same thing.

Read: digits ("90 days", "90-day"), number words ("ninety days", "one hundred eighty days",
"a year"), both together ("ninety (90) days", "90 (ninety) days"); calendar, business and
working days; minutes, hours ("hrs"), days, weeks, months, years. An elapsed time told as a
story ("two days earlier", "3 weeks ago", "over the past 2 days") is marked `narrative`: it
is not a rule and is never compared.

Compared (`compare`):
- exactly, where the units convert exactly: minutes, hours, days and weeks with each other
  (1 day = 24 hours, 1 week = 7 days); months and years with each other (12 months = 1 year);
  business (working) days only with business days;
- otherwise by range: a month is 28 to 31 days, so "6 months" (181 to 184 days) is different
  from 90 days, while "3 months" (89 to 92 days) against 90 days is `not_comparable`;
- business days against calendar time: `not_comparable` (holidays and weekends decide it).

Plain "days" are calendar days, the usual reading in plan documents; the text keeps the unit
as written ("30 calendar days") for display.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from functools import lru_cache
from typing import Literal

from policydesk.versions.number_words import NUMBER_WORD, words_value

Comparison = Literal["same", "different", "not_comparable"]

_WORDS = rf"{NUMBER_WORD}(?:[\s-]+(?:and[\s-]+)?{NUMBER_WORD})*"
_NUMBER = (rf"(?:(?P<w1>{_WORDS})\s*\(\s*(?P<d1>\d{{1,4}})\s*\)"      # ninety (90)
           rf"|(?P<d2>\d{{1,4}})\s*\(\s*(?:{_WORDS})\s*\)"              # 90 (ninety)
           rf"|(?P<d3>\d{{1,4}}(?:\.\d+)?)"                             # 90, 1.5
           rf"|(?P<w2>{_WORDS})"                                        # ninety
           rf"|(?<=within\s)(?P<a>an?)|(?<=in\s)(?P<a2>an?)|(?<=per\s)(?P<a3>an?))")  # within a year
_UNIT = (r"(?:(?P<kind>calendar|business|working)[\s-]+)?"
         r"(?P<unit>minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|months?|mos?|years?|yrs?)")
_DURATION = re.compile(
    rf"\b{_NUMBER}[\s-]+(?:(?:additional|more|full|consecutive|further)\s+)?{_UNIT}\b", re.IGNORECASE)
_STORY_AFTER = re.compile(r"\s*(?:ago|earlier|later|away|previously|back|old|before\s+(?:that|this|then))\b", re.I)
_STORY_BEFORE = re.compile(r"\b(?:past|last|previous|preceding|next|other)\s+$", re.I)

_BASE_UNIT = {"min": "minutes", "hou": "hours", "hr": "hours", "hrs": "hours", "day": "days", "wee": "weeks",
              "wk": "weeks", "wks": "weeks", "mon": "months", "mo": "months", "mos": "months", "yea": "years",
              "yr": "years", "yrs": "years"}
_MINUTES = {"minutes": 1, "hours": 60, "days": 24 * 60, "weeks": 7 * 24 * 60}
_MONTHS = {"months": 1, "years": 12}


@dataclass(frozen=True)
class Duration:
    amount: Fraction
    unit: str  # as written, normalised: "days", "calendar days", "business days", "hours", "months", ...
    start: int = 0  # span in the text it was read from
    end: int = 0
    narrative: bool = False  # "two days earlier": an elapsed time, not a rule

    @property
    def value(self) -> int | float:
        return int(self.amount) if self.amount.denominator == 1 else float(self.amount)

    def __str__(self) -> str:
        return _one(self.value, self.unit)


def _unit(m: re.Match) -> str:
    raw = m.group("unit").lower()
    base = _BASE_UNIT.get(raw) or _BASE_UNIT.get(raw[:3]) or _BASE_UNIT[raw[:2]]
    kind = (m.group("kind") or "").lower()
    if base == "days" and kind:
        return "business days" if kind in ("business", "working") else "calendar days"
    return base


def parse_durations(text: str) -> list[Duration]:
    """Every duration in the text, in order, with its span and whether it is told as a story."""
    out = []
    for m in _DURATION.finditer(text):
        digits = m.group("d1") or m.group("d2") or m.group("d3")
        if digits:
            amount = Fraction(digits)
        elif m.group("w1") or m.group("w2"):
            amount = Fraction(words_value(m.group("w1") or m.group("w2")))
        else:
            amount = Fraction(1)  # "within a year"
        story = bool(_STORY_AFTER.match(text, m.end()) or _STORY_BEFORE.search(text[max(0, m.start() - 20):m.start()]))
        out.append(Duration(amount, _unit(m), m.start(), m.end(), story))
    return out


def durations(text: str) -> dict[str, list[int | float]]:
    """Rule durations by unit as written, each value once, in order: {'days': [180], 'hours': [72]}."""
    out: dict[str, list] = {}
    for d in parse_durations(text):
        if d.narrative:
            continue
        values = out.setdefault(d.unit, [])
        if d.value not in values:
            values.append(d.value)
    return out


def say(values: list, unit: str) -> str:
    """[180], 'days' -> '180 days'; [90, 365], 'days' -> '90 days and 365 days'."""
    return " and ".join(_one(v, unit) for v in values)


def _one(value, unit: str) -> str:
    return f"{value} {unit[:-1] if value == 1 and unit.endswith('s') else unit}"


def _measure(d: Duration) -> tuple[str, Fraction]:
    base = "days" if d.unit == "calendar days" else d.unit
    if base == "business days":
        return "business", d.amount
    if base in _MINUTES:
        return "minutes", d.amount * _MINUTES[base]
    return "months", d.amount * _MONTHS[base]


@lru_cache(maxsize=256)
def _month_span_days(months: Fraction) -> tuple[Fraction, Fraction]:
    """Fewest and most calendar days `months` months can cover (over every start month, leap years too)."""
    whole = int(months)
    spans = []
    for year in range(2024, 2028):
        for month in range(1, 13):
            end_index = year * 12 + month - 1 + whole
            end = date(end_index // 12, end_index % 12 + 1, 1)
            spans.append((end - date(year, month, 1)).days)
    extra = months - whole  # a fraction of a month: 28 to 31 days per month
    return Fraction(min(spans)) + extra * 28, Fraction(max(spans)) + extra * 31


def compare(a: Duration, b: Duration) -> Comparison:
    """Whether two durations state the same length of time, a different one, or can't be told."""
    (fa, va), (fb, vb) = _measure(a), _measure(b)
    if fa == fb:
        return "same" if va == vb else "different"
    if "business" in (fa, fb):
        return "not_comparable"
    days, months = (va / (24 * 60), vb) if fa == "minutes" else (vb / (24 * 60), va)
    low, high = _month_span_days(months)
    return "different" if days < low or days > high else "not_comparable"
