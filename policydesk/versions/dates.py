"""Dates entered by staff: parsed and range-checked before anything is retrieved.

An error never repeats what was entered: a date field that held something else (a member ID,
an SSN) would otherwise carry it into the trace, the disputes page and the export. The
person who typed it still sees it in the field."""

from __future__ import annotations

import re
from datetime import date

MIN_DATE = date(1900, 1, 1)
MAX_DATE = date(2100, 12, 31)


_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


class DateInputError(ValueError):
    """A date that cannot be used; `field` names the input at fault (None: the set of fields itself)."""

    code = "invalid_date"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def iso_dates_in(text: str, limit: int = 2) -> list[date]:
    """The first ISO dates written in free text ("between 2025-06-01 and 2026-06-01")."""
    return [date.fromisoformat(d) for d in _ISO_DATE.findall(text)[:limit]]


def parse_input_date(value: str | date | None, label: str) -> date | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, date):
        parsed = value
    else:
        try:
            parsed = date.fromisoformat(value.strip())
        except ValueError:
            raise DateInputError(f"{label} is not a date; use YYYY-MM-DD") from None
    if not (MIN_DATE <= parsed <= MAX_DATE):
        raise DateInputError(f"{label} is outside {MIN_DATE.year}-{MAX_DATE.year}")
    return parsed


def check_date_order(date_of_service: date | None, denial_notice_date: date | None) -> None:
    if date_of_service and denial_notice_date and denial_notice_date < date_of_service:
        raise DateInputError(
            f"the denial notice date {denial_notice_date} is before the date of service {date_of_service}"
        )
