"""Date bases: which date decides the version of a policy that applied, and how it is named.

One table. `label` is the name inside a sentence ("the member's date of service"); `title` is
the name on its own on a page (a form field, a verdict heading).
"""

from __future__ import annotations

from dataclasses import dataclass


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
