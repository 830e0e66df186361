"""Heading signals that do not depend on the format: numbering, ALL CAPS, title-like lines.

Readers combine these with what their format knows (font size and weight, Word styles) and
rank the heading styles they found into levels with `rank_levels`.
"""

from __future__ import annotations

import re

# "2.", "2.1", "2.1.3", "IV.", "B." and an optional "Section"/"Article"/"Part" before it.
_NUMBERING = re.compile(
    r"^(?:(?:section|article|part)\s+)?"
    r"(?P<num>(?:\d{1,3}\.)*\d{1,3}\.?|[IVXLC]{1,6}\.|[A-Z]\.)\s+(?=\S)",
    re.IGNORECASE,
)
_TERMINAL = re.compile(r"[.;,!?]$")
MAX_TITLE_WORDS = 14
MAX_TITLE_CHARS = 120


def numbering(text: str) -> tuple[int, str]:
    """(depth, title without the number): "2.1 Urgent requests" -> (2, "Urgent requests"); (0, text) if unnumbered."""
    m = _NUMBERING.match(text)
    if not m:
        return 0, text
    num = m.group("num").rstrip(".")
    depth = num.count(".") + 1 if num[:1].isdigit() else 1
    return depth, text[m.end():]


def is_all_caps(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 3 and all(c.isupper() for c in letters)


def is_title_like(text: str) -> bool:
    """Short, has letters, and does not end like a sentence or a list item."""
    text = text.strip()
    if not text or len(text) > MAX_TITLE_CHARS or len(text.split()) > MAX_TITLE_WORDS:
        return False
    if _TERMINAL.search(text) or not any(c.isalpha() for c in text):
        return False
    _, rest = numbering(text)
    return rest[:1].isupper() or rest[:1].isdigit()


def clean_title(text: str) -> str:
    """The title a section is known by: no numbering (renumbering keeps ids), no trailing colon."""
    _, rest = numbering(" ".join(text.split()))
    rest = rest.rstrip(":").strip()
    return rest or " ".join(text.split())


def rank_levels(keys: list) -> list[int]:
    """Dense 1-based ranks of sortable style keys: the smallest key is the outermost level."""
    order = {k: i + 1 for i, k in enumerate(sorted(set(keys)))}
    return [order[k] for k in keys]
