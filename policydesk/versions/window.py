"""Effective-date windows: which version is in force on a date, and the one way a window is shown.

A closed version's stored `effective_to` is the next version's `effective_from` (an exclusive
end); an open version ends at OPEN_END (9999-12-31). People read windows with an inclusive end,
so a `Window` holds the first and the last day in force, and `Window.format` is the only place
a window becomes text: stored 2024-01-01 .. 2026-01-01 shows as "in force 2024-01-01 to
2025-12-31". Citations store that inclusive last day (`Window.cited` reads it back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from policydesk.storage.models import OPEN_END

WindowStyle = Literal["words", "arrow", "range", "ascii"]

# style -> (closed window, open-ended window). "words" is for sentences (answers, warnings,
# verdicts), "arrow" for the web page, "range" for the source blocks of the prompt, "ascii" for
# the terminal.
_STYLES: dict[str, tuple[str, str]] = {
    "words": ("in force {first} to {last}", "in force from {first}"),
    "arrow": ("in force {first} \u2192 {last}", "in force {first} \u2192 open"),
    "range": ("{first} to {last}", "{first} to open"),
    "ascii": ("in force {first} -> {last}", "in force {first} -> open"),
}
# A window that starts after `today`, in sentences.
_SCHEDULED = ("in force {first} to {last} (scheduled)", "takes effect {first}")


def as_date(value: date | str | None) -> date | None:
    if value is None or isinstance(value, date):
        return value
    return date.fromisoformat(value)


@dataclass(frozen=True)
class Window:
    first: date
    last: date | None  # the last day in force (inclusive); None while open-ended

    @classmethod
    def stored(cls, effective_from: date | str, effective_to: date | str | None) -> "Window":
        """From stored columns or chunk metadata: `effective_to` is exclusive, OPEN_END when open."""
        end = as_date(effective_to)
        last = None if end is None or end >= OPEN_END else end - timedelta(days=1)
        return cls(as_date(effective_from), last)

    @classmethod
    def cited(cls, effective_from: date | str, last_day: date | str | None) -> "Window":
        """From a stored citation, whose `effective_to` is already the last day in force."""
        return cls(as_date(effective_from), as_date(last_day))

    def format(self, style: WindowStyle = "words", *, today: date | None = None) -> str:
        closed, open_ended = _SCHEDULED if today is not None and self.first > today else _STYLES[style]
        if self.last is None:
            return open_ended.format(first=self.first.isoformat())
        return closed.format(first=self.first.isoformat(), last=self.last.isoformat())

    def iso(self) -> tuple[str, str | None]:
        return self.first.isoformat(), self.last.isoformat() if self.last else None


def display_window(effective_from: date | str, effective_to: date | str | None) -> tuple[str, str | None]:
    """(first day, last day) as ISO strings from stored dates; the last day is None when open-ended."""
    return Window.stored(effective_from, effective_to).iso()


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
