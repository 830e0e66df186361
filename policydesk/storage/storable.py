"""Text bound for the database: escaped where Postgres would refuse it, screened where a caller typed it.

Postgres `text` holds no NUL, and neither `text` nor `jsonb` holds a lone UTF-16 surrogate (nor
`jsonb` the escape `\\u0000`). A record that must always be written, such as an audit row for
a refused request, carries such characters as visible escapes (`\\u0000`), never as a database
error that loses the row.

Free text a caller typed (an echoed field, a search, a path) may carry a member identifier;
`screened` removes it with the question's own redactor before anything stores it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from policydesk.detectors.redact import redact

_REFUSED = re.compile("[\x00\ud800-\udfff]")


def storable(value: str) -> str:
    """`value` with each character Postgres refuses written as a visible `\\uXXXX` escape."""
    return _REFUSED.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def storable_json(value: Any) -> Any:
    """A JSON-ready value (keys and strings at any depth) with `storable` applied throughout."""
    plain = json.loads(json.dumps(value, default=str))
    return _walk(plain)


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(k): _walk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v) for v in value]
    return value


def screened(value: str, plan_patterns: Sequence[str] | None = None) -> str:
    """Caller-typed text as it may be stored: identifiers redacted, then refused characters escaped."""
    return storable(redact(value, plan_patterns).text)


MAX_ECHO_CHARS = 64
# What a stored record says in place of caller-typed text it may not repeat.
WITHHELD = "[withheld: it had digits or an identifier]"


def echoable(value: str, max_chars: int = MAX_ECHO_CHARS) -> bool:
    """May a stored record repeat this caller-typed value (a product or field name, search words)?
    Only when it has no digit (every member ID, SSN, phone or birth-date shape has one), is short,
    and the redactor finds nothing in it (an e-mail, a cued name)."""
    return len(value) <= max_chars and not any(c.isdigit() for c in value) and not redact(value).changed


def screened_param(value: str, plan_patterns: Sequence[str] | None = None) -> str:
    """One path or query value: PolicyDesk's own ids (UUIDs) kept, anything else screened."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return screened(value, plan_patterns)
