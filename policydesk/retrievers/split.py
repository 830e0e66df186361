"""Split a multi-part question before retrieval, so each part gets its own embedding."""

from __future__ import annotations

import re

_QUESTION_START = r"(?:what|when|where|which|who|why|how|can|could|do|does|did|is|are|should|must|will)\b"
_JOINERS = re.compile(rf"(?:\?\s+|;\s*|,?\s+and\s+(?={_QUESTION_START})|,?\s+also\s+(?={_QUESTION_START}))", re.I)


def split_question(question: str, max_parts: int = 4) -> list[str]:
    """'what is the timely filing limit and how do I file an appeal?' -> two parts.

    A conjunction splits only when a new question starts after it, so
    'prior authorization and referrals' stays whole.
    """
    parts = [p.strip(" ?,.;") for p in _JOINERS.split(question)]
    parts = [p for p in parts if len(p.split()) >= 2]
    if len(parts) <= 1:
        return [question.strip()]
    return parts[:max_parts]
