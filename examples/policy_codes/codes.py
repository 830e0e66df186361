"""A plan's own codes: found in text with a configured pattern, matched in SQL exactly.

The pattern is always configuration (a constructor field, set from POLICYDESK_RETRIEVERS): which
codes a plan uses is the plan's business, not this module's.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, case, cast, or_, select

from policydesk.storage.models import Chunk

MAX_CODES = 8  # codes taken from one text; a question naming more is not an exact lookup


@lru_cache(maxsize=32)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The code pattern, case-insensitive; refused if it is not a regex or matches nothing at all."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"code pattern {pattern!r} is not a regular expression: {exc}") from None
    if compiled.fullmatch(""):
        raise ValueError(f"code pattern {pattern!r} matches the empty string")
    return compiled


def check_pattern(pattern: str) -> str:
    compile_pattern(pattern)
    return pattern


def normalise(code: str) -> str:
    """'§ 3.2' and '§3.2' are one code; 'pol-tf' is 'POL-TF'."""
    return re.sub(r"\s+", "", code).upper()


def codes_in(pattern: str, text: str) -> list[str]:
    """Distinct codes in `text`, in order of first appearance."""
    found = dict.fromkeys(normalise(m.group(0)) for m in compile_pattern(pattern).finditer(text))
    return [c for c in found if c][:MAX_CODES]


def code_regex(code: str) -> str:
    """A Postgres regex for one normalised code, as a whole token: whitespace allowed after a
    symbol ('§ 3.2'), no letter or digit on either side ('PA-104' never matches 'PA-1040')."""
    body = "".join(re.escape(ch) if ch.isalnum() else re.escape(ch) + r"\s*" for ch in code)
    return rf"(^|[^[:alnum:]]){body}([^[:alnum:]]|$)"


def _hit(condition: ColumnElement[bool]) -> ColumnElement[Any]:
    return cast(case((condition, 1), else_=0), Integer)


def matching_chunks(codes: list[str], where: ColumnElement[bool], limit: int, *,
                    headings_only: bool = False) -> Select:
    """Chunks naming any of the codes: as their document id, in their section heading or (unless
    `headings_only`) in their text; more hits first, then by chunk id. `where` is the caller's
    access predicate (ComponentContext.where()), so nothing above the clearance is read."""
    heading = Chunk.metadata_["section"].astext
    conditions = []
    for code in codes:
        regex = code_regex(code)
        conditions.append(heading.op("~*")(regex))
        if not headings_only:
            conditions += [Chunk.doc_id == code, Chunk.text.op("~*")(regex)]
    score = sum((_hit(c) for c in conditions[1:]), _hit(conditions[0]))
    return (select(Chunk.text, Chunk.metadata_, score.label("score"))
            .where(where, or_(*conditions))
            .order_by(score.desc(), Chunk.node_id)
            .limit(limit))
