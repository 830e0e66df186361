"""The values a text states, in a form two spellings of one value share.

What a reader of an answer acts on: durations ("ninety (90) days" = "90 days"; business days
apart), dates ("January 1, 2026" = "1/1/2026" = "2026-01-01"), amounts ("$25" = "$25.00"),
percentages ("20%" = "20 percent"), phone and fax numbers (digits only), codes and form numbers
("CMS-1500" = "CMS 1500"), and any other number ("12 visits" = "twelve (12) visits").
`grounding.py` requires every value an answer states to be one its quotes state.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from policydesk.reading.language import NUMBER_PHRASE, words_value
from policydesk.versions.durations import parse_durations

Value = tuple[str, object]  # (kind, normalised value)

_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_MONTHS |= {m[:3]: i for m, i in list(_MONTHS.items())} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"

_DATE_PATTERNS = (
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})\b"),
    re.compile(rf"\b{_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", re.I),
    re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\s+(?P<y>\d{{4}})\b", re.I),
)
_PHONE = re.compile(r"(?<![\w-])(?:\+?1[\s.-]?)?\(?(\d{3})\)?[\s.-]?(\d{3})[\s.-](\d{4})(?![\w-])")
_PERCENT = re.compile(rf"(?P<n>\d+(?:\.\d+)?|{NUMBER_PHRASE})\s*(?:%|percent\b|per\s+cent\b)", re.I)
_AMOUNT = re.compile(r"\$\s?(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?P<c>\.\d{1,2})?")
# A code or form number: a token with a digit and a letter, or digits joined by a hyphen
# ("CMS-1500", "E0260", "HB-2026-02", "UB-04", "PA-100"), or five or more digits (a CPT code).
_CODE = re.compile(r"(?<![\w$.])(?=[\w-]*\d)(?=[\w-]*[A-Za-z]|\d+-\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+|\s\d+)*(?!\w|\.\w)"
                   r"|(?<![\w$.,-])\d{5,}(?![\w,-])")
_NUMBER = re.compile(rf"(?<![\w.])\d+(?:,\d{{3}})*(?:\.\d+)?(?![\w])|{NUMBER_PHRASE}", re.I)


def normalise(text: str) -> str:
    """Compatibility forms folded, invisible characters dropped, quotes and dashes made plain."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text)
    return re.sub(r"[\u2018\u2019\u201a\u201b]", "'", re.sub(r"[\u201c\u201d\u201e\u201f]", '"', text))


def _number(raw: str) -> Fraction:
    raw = raw.replace(",", "")
    return Fraction(raw) if raw[:1].isdigit() else Fraction(words_value(raw))


def values(text: str) -> set[Value]:
    """Every value the text states, each once."""
    text = normalise(text)
    found: set[Value] = set()
    taken: list[tuple[int, int]] = []

    def take(kind: str, value: object, span: tuple[int, int], number: object = None) -> None:
        found.add((kind, value))
        if number is not None:  # the count inside it, for an answer that states it bare
            found.add(("number", Fraction(str(number))))
        taken.append(span)

    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            month = m.group("month") if "month" in m.groupdict() and m.group("month") else m.group("m")
            month_n = _MONTHS.get(month.lower().rstrip("."), 0) if not month.isdigit() else int(month)
            try:
                take("date", date(int(m.group("y")), month_n, int(m.group("d"))).isoformat(), m.span(),
                     number=m.group("y"))
            except ValueError:
                continue
    for m in _PHONE.finditer(text):
        take("phone", "".join(m.groups()), m.span())
    for m in _AMOUNT.finditer(text):
        try:
            amount = Decimal(m.group("n").replace(",", "") + (m.group("c") or "")).normalize()
            take("amount", amount, m.span(), number=amount)
        except InvalidOperation:
            continue
    for m in _PERCENT.finditer(text):
        take("percent", _number(m.group("n")), m.span(), number=_number(m.group("n")))
    for d in parse_durations(text):
        if not d.narrative:
            unit = "days" if d.unit == "calendar days" else d.unit
            take("duration", _measure(d.amount, unit), (d.start, d.end), number=d.amount)
    free = _blank(text, taken)
    for m in _CODE.finditer(free):
        code = re.sub(r"[-\s]", "", m.group(0)).upper()
        if not code.isdigit() or len(code) >= 5:
            take("code", code, m.span())
    free = _blank(text, taken)
    for m in _NUMBER.finditer(free):
        found.add(("number", _number(m.group(0))))
    return found


def _measure(amount: Fraction, unit: str) -> tuple[str, Fraction]:
    """One scale per family of units that convert exactly (minutes to weeks; months and years)."""
    minutes = {"minutes": 1, "hours": 60, "days": 1440, "weeks": 10080}
    if unit in minutes:
        return "minutes", amount * minutes[unit]
    if unit in ("months", "years"):
        return "months", amount * (12 if unit == "years" else 1)
    return unit, amount  # business days: only with business days


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    return "".join(chars)

