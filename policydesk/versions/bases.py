"""Date bases: which date decides the version of a policy that applied, and how it is named.

One table. `label` is the name inside a sentence ("the member's date of service"); `title` is
the name on its own on a page (a form field, a verdict heading).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from policydesk.versions.dates import DateInputError, check_date_order, parse_input_date


@dataclass(frozen=True)
class DateBasis:
    key: str
    label: str
    title: str


BASES: dict[str, DateBasis] = {b.key: b for b in (
    DateBasis("date_of_service", "date of service", "Date of service"),
    DateBasis("denial_notice_date", "denial notice date", "Date on the denial notice"),
)}
BASIS_KEYS: tuple[str, ...] = tuple(BASES)

NO_BASIS_TITLE = "Date (this source names no date basis)"


def basis_label(basis: str | None) -> str:
    """'date of service': the basis named inside a sentence."""
    known = BASES.get(basis or "")
    return known.label if known else (basis or "date").replace("_", " ")


def basis_title(basis: str | None) -> str:
    """'Date of service': the basis named on its own on a page."""
    known = BASES.get(basis or "")
    return known.title if known else NO_BASIS_TITLE


def entered_dates(values: Mapping[str, date | str | None] | None) -> dict[str, date]:
    """The dates entered, by basis, parsed, range-checked and in order: the one check every entry
    point hands its dates to. A bad one raises `DateInputError` naming the field at fault."""
    values = dict(values or {})
    unknown = sorted(set(values) - set(BASIS_KEYS))
    if unknown:
        raise DateInputError(f"unknown date field(s): {', '.join(unknown)}; expected {', '.join(BASIS_KEYS)}")
    parsed: dict[str, date | None] = {}
    for basis in BASIS_KEYS:
        try:
            parsed[basis] = parse_input_date(values.get(basis), basis_label(basis))
        except DateInputError as exc:
            raise DateInputError(str(exc), field=basis) from None
    try:
        check_date_order(parsed["date_of_service"], parsed["denial_notice_date"])
    except DateInputError as exc:
        raise DateInputError(str(exc), field="denial_notice_date") from None
    return {b: d for b, d in parsed.items() if d is not None}
