"""Effective-date windows: which version is in force on a date, and how a window is shown.

A closed version's stored `effective_to` is the next version's `effective_from` (an exclusive
end); an open version ends at OPEN_END (9999-12-31). People read windows with an inclusive end,
so every rendering goes through `display_window`: 2024-01-01 .. 2026-01-01 shows as
"2024-01-01 to 2025-12-31".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

from policydesk.storage.models import OPEN_END

# How each date basis is named in messages shown to staff.
BASIS_LABELS = {
    "date_of_service": "date of service",
    "denial_notice_date": "denial notice date",
}


# How each date basis is titled on pages (form fields, verdicts).
BASIS_TITLES = {
    "date_of_service": "Date of service",
    "denial_notice_date": "Date on the denial notice",
}


def basis_label(basis: str | None) -> str:
    return BASIS_LABELS.get(basis or "", (basis or "date").replace("_", " "))


def as_date(value: date | str | None) -> date | None:
    if value is None or isinstance(value, date):
        return value
    return date.fromisoformat(value)


def display_window(effective_from: date | str, effective_to: date | str | None) -> tuple[str, str | None]:
    """(first day, last day) as ISO strings; the last day is None for an open-ended version."""
    start = as_date(effective_from)
    end = as_date(effective_to)
    if end is None or end >= OPEN_END:
        return start.isoformat(), None
    return start.isoformat(), (end - timedelta(days=1)).isoformat()


def window_text(effective_from: date | str, effective_to: date | str | None, today: date | None = None) -> str:
    """'in force 2024-01-01 to 2025-12-31', 'in force from 2026-01-01', or 'takes effect 2027-01-01'."""
    start, end = display_window(effective_from, effective_to)
    if today is not None and as_date(effective_from) > today:
        return f"takes effect {start}" if end is None else f"in force {start} to {end} (scheduled)"
    return f"in force from {start}" if end is None else f"in force {start} to {end}"


def in_force_on(versions: Sequence, on: date):
    """The version whose window holds `on`: latest effective_from <= on, None if none had started.

    Chosen by effective_from alone (not effective_to), so a gap or overlap in stored windows
    can't hide the version that most recently took effect.
    """
    started = [v for v in versions if v.effective_from <= on]
    return max(started, key=lambda v: v.effective_from) if started else None


def in_force_today(versions: Sequence, today: date):
    """The version with effective_from <= today < effective_to, never a scheduled one."""
    current = [v for v in versions if v.effective_from <= today < v.effective_to]
    return max(current, key=lambda v: v.effective_from) if current else None


def previous_version(versions: Sequence, version):
    earlier = [v for v in versions if v.effective_from < version.effective_from]
    return max(earlier, key=lambda v: v.effective_from) if earlier else None
