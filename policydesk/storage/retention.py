"""Retention for the bookkeeping tables: sign-in attempts and API requests are kept only as long as
an operator needs them, then deleted by the owner login (the application login may only append).

Never rows the throttles still read: a cut-off inside the sign-in lockout horizon or the API rate
window is refused, so a purge cannot lift a lock or reset a rate limit.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from sqlalchemy import text
from sqlalchemy.engine import Engine

# Table -> its timestamp column. Both are append-only for the application login (storage/security.py).
BOOKKEEPING_TABLES = {"login_attempts": "at", "api_requests": "at"}


def throttle_horizon(settings) -> timedelta:
    """How far back the sign-in throttle and the API rate limit read (throttle.py, ratelimit.py)."""
    sign_in = timedelta(minutes=settings.LOGIN_FAILURE_WINDOW_MINUTES + settings.LOGIN_LOCKOUT_MINUTES)
    return max(sign_in, timedelta(seconds=settings.API_RATE_WINDOW_SECONDS))


def purge_bookkeeping(owner: Engine, settings, *, older_than_days: int, actor: str,
                      now: datetime | None = None) -> dict[str, int]:
    """Delete rows older than `older_than_days` from each bookkeeping table, with one audit entry
    (who, cut-off, rows removed per table) in the same transaction. Returns rows removed per table."""
    if older_than_days <= 0:
        raise ValueError("older_than_days must be positive")
    keep = timedelta(days=older_than_days)
    if keep <= throttle_horizon(settings):
        raise ValueError(f"older_than_days={older_than_days} would delete rows the sign-in throttle or the API "
                         f"rate limit still reads (they look back {throttle_horizon(settings)})")
    cutoff = (now or datetime.now(timezone.utc)) - keep
    removed: dict[str, int] = {}
    with owner.begin() as conn:
        for table, column in BOOKKEEPING_TABLES.items():
            removed[table] = conn.execute(text(f"DELETE FROM {table} WHERE {column} < :c"), {"c": cutoff}).rowcount
        conn.execute(text(
            "INSERT INTO audit_log (actor, action, target, details) VALUES (:a, 'purge', 'bookkeeping', "
            "jsonb_build_object('cutoff', CAST(:c AS text), 'rows_removed', CAST(:n AS jsonb)))"),
            {"a": actor, "c": cutoff.isoformat(), "n": json.dumps(removed)})
    return removed
