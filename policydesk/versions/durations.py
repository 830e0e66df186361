"""Durations stated in policy text: "90 days", "30 calendar days", "10 business days", "72 hours".

Shared by the conflict flagger and the version comparison. Units are kept apart: "30 calendar
days" and "30 days" are different units and are never compared with each other.
"""

from __future__ import annotations

import re

_DURATION = re.compile(
    r"\b(\d{1,4})[\s-]+(?:additional\s+|more\s+)?(?:(calendar|business)[\s-]+)?(days?|hours?)\b", re.IGNORECASE
)


def durations(text: str) -> dict[str, list[int]]:
    """Durations by unit, each value once, in order of first mention: {'days': [180], 'hours': [72]}."""
    out: dict[str, list[int]] = {}
    for m in _DURATION.finditer(text):
        base = "days" if m.group(3).lower().startswith("day") else "hours"
        unit = f"{m.group(2).lower()} days" if m.group(2) and base == "days" else base
        values = out.setdefault(unit, [])
        if int(m.group(1)) not in values:
            values.append(int(m.group(1)))
    return out


def say(values: list[int], unit: str) -> str:
    """[180], 'days' -> '180 days'; [90, 365], 'days' -> '90 days and 365 days'."""
    return " and ".join(f"{v} {unit}" for v in values)
