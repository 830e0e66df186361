"""The per-token API rate limit, counted in Postgres (`api_requests`) so every worker agrees.

A sliding window: at most `limit` requests in any `window`. Each request made with a valid
token is one row; a request refused by the limit is recorded with `limited` and not counted,
so a client that retries in a loop is let in again when its oldest counted request leaves the
window. Parallel requests on one token are counted one after another under a transaction-scoped
advisory lock, so they cannot all slip under the limit together (the pattern of throttle.py).
Time comes from the caller (`now`), so tests move a clock instead of sleeping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.storage.models import ApiRequest


@dataclass(frozen=True)
class RatePolicy:
    limit: int = 60
    window: timedelta = timedelta(seconds=60)

    @classmethod
    def from_settings(cls, settings) -> "RatePolicy":
        return cls(limit=settings.API_RATE_LIMIT, window=timedelta(seconds=settings.API_RATE_WINDOW_SECONDS))


@dataclass(frozen=True)
class Limited:
    retry_after_seconds: int


_COUNTED = """
SELECT count(*) AS n, min(at) AS oldest FROM api_requests
WHERE token_id = :token AND NOT limited AND at > :since AND at <= :now
"""


def admit(session: Session, *, token_id: int, policy: RatePolicy, now: datetime) -> Limited | None:
    """Count this request against the token; None if admitted, else how long to wait.
    Run inside the caller's transaction (the lock and the row commit with it)."""
    session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended('policydesk.api:' || :t, 0))"),
                    {"t": str(token_id)})
    row = session.execute(text(_COUNTED), {"token": token_id, "since": now - policy.window, "now": now}).one()
    limited = row.n >= policy.limit
    session.add(ApiRequest(token_id=token_id, at=now, limited=limited))
    session.flush()
    if not limited:
        return None
    wait = (row.oldest + policy.window - now).total_seconds()
    return Limited(max(1, math.ceil(wait)))
