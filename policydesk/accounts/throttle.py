"""Sign-in throttling, counted in Postgres (`login_attempts`) so every worker agrees.

Two counters (OWASP ASVS 4.0, 2.2.1):
- per account: LOGIN_ACCOUNT_MAX_FAILURES failures within LOGIN_FAILURE_WINDOW_MINUTES, counted
  since that account's last successful sign-in, lock the account for LOGIN_LOCKOUT_MINUTES;
- per client address: LOGIN_ADDRESS_MAX_FAILURES failures (any account name) lock the address.

A lock starts at the failure that reached the threshold and lasts the lockout. Attempts refused
while locked are recorded with `throttled` and are not failures: the password was not checked,
and the lock ends on time rather than being extended by every retry.

Unknown names are counted exactly like real ones, so a lock reveals nothing about which names exist.
Time comes from the caller (`now`), so tests inject a clock instead of sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.storage.models import LoginAttempt


@dataclass(frozen=True)
class ThrottlePolicy:
    account_failures: int = 5
    address_failures: int = 20
    window: timedelta = timedelta(minutes=15)
    lockout: timedelta = timedelta(minutes=15)

    @classmethod
    def from_settings(cls, settings) -> "ThrottlePolicy":
        return cls(account_failures=settings.LOGIN_ACCOUNT_MAX_FAILURES,
                   address_failures=settings.LOGIN_ADDRESS_MAX_FAILURES,
                   window=timedelta(minutes=settings.LOGIN_FAILURE_WINDOW_MINUTES),
                   lockout=timedelta(minutes=settings.LOGIN_LOCKOUT_MINUTES))


@dataclass(frozen=True)
class Lock:
    scope: str  # "account" | "address"
    until: datetime


# The latest failure at which `threshold` failures fell within `window` (RANGE counts by time,
# Postgres 11+). Only failures after `since` count, and only those that can still hold a lock:
# a lock from a failure before now - lockout is over, and its window reaches back one window more.
_LOCKED_SINCE = """
SELECT max(at) FROM (
  SELECT at, count(*) OVER (ORDER BY at RANGE BETWEEN CAST(:window AS interval) PRECEDING AND CURRENT ROW) AS n
  FROM login_attempts
  WHERE {column} = :key AND NOT succeeded AND NOT throttled
    AND at > :since AND at <= :now
) failures
WHERE n >= :threshold
"""

_LAST_SUCCESS = "SELECT max(at) FROM login_attempts WHERE user_name = :name AND succeeded AND at <= :now"


def _locked_until(session: Session, *, column: str, key: str, since: datetime | None, threshold: int,
                  policy: ThrottlePolicy, now: datetime) -> datetime | None:
    horizon = now - policy.lockout - policy.window
    since = horizon if since is None else max(since, horizon)
    reached = session.execute(text(_LOCKED_SINCE.format(column=column)), {
        "key": key, "since": since, "now": now, "threshold": threshold, "window": policy.window,
    }).scalar_one()
    if reached is None or reached + policy.lockout <= now:
        return None
    return reached + policy.lockout


def active_lock(session: Session, *, user_name: str, client_addr: str, policy: ThrottlePolicy,
                now: datetime) -> Lock | None:
    """The lock that refuses this attempt without checking the password, or None."""
    last_success = session.execute(text(_LAST_SUCCESS), {"name": user_name, "now": now}).scalar_one()
    until = _locked_until(session, column="user_name", key=user_name, since=last_success,
                          threshold=policy.account_failures, policy=policy, now=now)
    if until is not None:
        return Lock("account", until)
    until = _locked_until(session, column="client_addr", key=client_addr, since=None,
                          threshold=policy.address_failures, policy=policy, now=now)
    return Lock("address", until) if until is not None else None


def serialize_account(session: Session, *, user_name: str) -> None:
    """Take a transaction-scoped lock on this account name, so parallel attempts (on any worker)
    are counted one after another and cannot all slip under the threshold together."""
    session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended('policydesk.login:' || :n, 0))"),
                    {"n": user_name})


def record_attempt(session: Session, *, user_name: str, client_addr: str, succeeded: bool, now: datetime,
                   throttled: bool = False) -> None:
    session.add(LoginAttempt(at=now, user_name=user_name, client_addr=client_addr, succeeded=succeeded,
                             throttled=throttled))
    session.flush()
