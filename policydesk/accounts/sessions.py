"""Server-side sign-in sessions (migration 0018): keyword-only data-access functions that take a session.

The cookie carries a random session id (256 bits); the `sessions` row, found by the id's
SHA-256, decides on every request whether the session is still on. So ending a row ends the
session for every copy of the cookie on every worker at once: sign-out (`end`), and the account
changes that must not leave an old session running (`end_user_sessions`, called by
`policydesk.accounts.users` and single sign-on). The idle and absolute limits are read from the row's
timestamps against the app's clock (OWASP ASVS 4.0, 3.3.1-3.3.3).

The user's name and role are read from `users` in the same statement, never from the cookie.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import text
from sqlalchemy.orm import Session

# Why a session ended (the table's CHECK lists the same words).
SIGNED_OUT, IDLE, EXPIRED = "signed_out", "idle", "expired"
PASSWORD_CHANGED, ROLE_CHANGED, DISABLED = "password_changed", "role_changed", "disabled"


@dataclass(frozen=True)
class SessionLimits:
    idle: timedelta
    lifetime: timedelta

    @classmethod
    def from_settings(cls, settings) -> "SessionLimits":
        return cls(idle=timedelta(minutes=settings.SESSION_IDLE_MINUTES),
                   lifetime=timedelta(hours=settings.SESSION_MAX_HOURS))


@dataclass(frozen=True)
class Touched:
    """The outcome of one request's look at its session: who, or why not."""

    user_name: str | None = None
    role: str | None = None
    ended: str | None = None  # IDLE or EXPIRED when this look ended it; None otherwise


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def open_session(session: Session, *, user_name: str, now: datetime) -> str | None:
    """A new session for an active user; returns its id (for the cookie only), or None."""
    session_id = secrets.token_urlsafe(32)
    row = session.execute(text(
        "INSERT INTO sessions (secret_sha256, user_id, started_at, seen_at) "
        "SELECT :h, id, :now, :now FROM users WHERE name = :name AND disabled_at IS NULL RETURNING id"),
        {"h": _digest(session_id), "now": now, "name": user_name}).first()
    return session_id if row is not None else None


_TOUCH = text("""
    UPDATE sessions s SET seen_at = GREATEST(s.seen_at, :now)
    FROM users u
    WHERE s.secret_sha256 = :h AND s.ended_at IS NULL AND u.id = s.user_id AND u.disabled_at IS NULL
      AND s.started_at > :now - :lifetime AND s.seen_at > :now - :idle
    RETURNING u.name, u.role
""")
_STATE = text("SELECT started_at, seen_at, ended_at FROM sessions WHERE secret_sha256 = :h")


def touch(session: Session, *, session_id: str, now: datetime, limits: SessionLimits) -> Touched:
    """The session's user (and current role) if it is on, marking it used now; otherwise why not.
    A session found over a time limit is ended here, so it stays ended if the clock goes back."""
    params = {"h": _digest(session_id), "now": now, "idle": limits.idle, "lifetime": limits.lifetime}
    row = session.execute(_TOUCH, params).first()
    if row is not None:
        return Touched(user_name=row.name, role=row.role)
    state = session.execute(_STATE, params).first()
    if state is None or state.ended_at is not None:
        return Touched()
    if now - state.started_at >= limits.lifetime:
        reason = EXPIRED
    elif now - state.seen_at >= limits.idle:
        reason = IDLE
    else:
        return Touched()  # within its limits: its user is disabled (their next sign-in is refused)
    if not _end(session, params["h"], now, reason):
        return Touched()  # ended by someone else in the meantime
    return Touched(ended=reason)


def _end(session: Session, digest: str, now: datetime, reason: str) -> bool:
    return session.execute(text(
        "UPDATE sessions SET ended_at = :now, end_reason = :r WHERE secret_sha256 = :h AND ended_at IS NULL"),
        {"h": digest, "now": now, "r": reason}).rowcount > 0


def end(session: Session, *, session_id: str, now: datetime, reason: str = SIGNED_OUT) -> bool:
    """End one session (sign-out); False when it was not on."""
    return _end(session, _digest(session_id), now, reason)


def end_user_sessions(session: Session, *, user_id: int, reason: str) -> int:
    """End every open session of a user (owner login: account changes); how many ended."""
    session.flush()
    return session.execute(text(
        "UPDATE sessions SET ended_at = now(), end_reason = :r WHERE user_id = :u AND ended_at IS NULL"),
        {"u": user_id, "r": reason}).rowcount


def purge_sessions(session: Session, *, older_than_days: int, now: datetime | None = None) -> int:
    """Owner login: delete sessions ended, or last used, more than `older_than_days` ago."""
    if older_than_days <= 0:
        raise ValueError("older_than_days must be positive")
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=older_than_days)
    return session.execute(text("DELETE FROM sessions WHERE coalesce(ended_at, seen_at) < :c"),
                           {"c": cutoff}).rowcount
