"""Retention for the bookkeeping tables: old sign-in attempts and API request records are deleted
by the owner path (`policydesk bookkeeping purge`), audited, and never rows a throttle still reads;
the application login cannot delete them at all."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session

from policydesk.storage.retention import purge_bookkeeping
from policydesk.accounts.users import add_user
from tests.api_helpers import make_token
from tests.web_helpers import PASSWORD
from tests.cli_helpers import run_cli

NOW = datetime.now(timezone.utc)
AGES = (200, 100, 40, 1)  # days


@pytest.fixture
def db(make_db):
    db = make_db()
    with Session(db.owner) as s, s.begin():
        add_user(s, name="keeper", role="rep", password=PASSWORD)
    make_token(db, "keeper")
    with db.owner.begin() as conn:
        token = conn.execute(text("SELECT id FROM api_tokens")).scalar_one()
        for days in AGES:
            at = NOW - timedelta(days=days)
            conn.execute(text("INSERT INTO login_attempts (at, user_name, client_addr, succeeded, throttled) "
                              "VALUES (:at, 'keeper', '10.0.0.1', false, false)"), {"at": at})
            conn.execute(text("INSERT INTO api_requests (token_id, at, limited) VALUES (:t, :at, false)"),
                         {"t": token, "at": at})
    return db


def _ages(db, table: str) -> list[int]:
    with db.owner.connect() as conn:
        rows = conn.execute(text(f"SELECT at FROM {table} ORDER BY at")).scalars().all()
    return [round((NOW - at) / timedelta(days=1)) for at in rows]


def test_purge_removes_only_rows_past_the_cutoff_and_is_audited(db, settings):
    removed = purge_bookkeeping(db.owner, settings, older_than_days=90, actor="ops-ravi", now=NOW)
    assert removed == {"login_attempts": 2, "api_requests": 2}
    assert _ages(db, "login_attempts") == [40, 1] and _ages(db, "api_requests") == [40, 1]
    with db.owner.connect() as conn:
        entry = conn.execute(text("SELECT actor, details FROM audit_log WHERE target = 'bookkeeping'")).one()
    assert entry.actor == "ops-ravi" and entry.details["rows_removed"] == removed


@pytest.mark.parametrize("days", [0, -3])
def test_purge_refuses_a_cutoff_that_is_not_in_the_past(db, settings, days):
    with pytest.raises(ValueError, match="positive"):
        purge_bookkeeping(db.owner, settings, older_than_days=days, actor="x", now=NOW)


def test_purge_never_reaches_into_what_the_sign_in_throttle_reads(db, settings):
    # A plan that locks accounts for two days: a one-day purge would lift live locks.
    strict = settings.model_copy(update={"LOGIN_LOCKOUT_MINUTES": 2 * 24 * 60})
    with pytest.raises(ValueError, match="sign-in throttle"):
        purge_bookkeeping(db.owner, strict, older_than_days=1, actor="x", now=NOW)
    assert _ages(db, "login_attempts") == list(AGES)  # nothing was deleted


@pytest.mark.parametrize("table", ["login_attempts", "api_requests"])
def test_the_application_login_cannot_delete_bookkeeping(db, table):
    with pytest.raises(ProgrammingError) as raised, db.app.begin() as conn:
        conn.execute(text(f"DELETE FROM {table}"))
    assert isinstance(raised.value.orig, psycopg.errors.InsufficientPrivilege)


def test_cli_purges_with_the_setting_as_default(db):
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False),
               POLICYDESK_BOOKKEEPING_RETENTION_DAYS="30")
    out = run_cli("bookkeeping", "purge", "--by", "ops-cli", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "deleted 3 login_attempts rows, deleted 3 api_requests rows older than 30 days"
    assert _ages(db, "login_attempts") == [1] and _ages(db, "api_requests") == [1]
    refused = run_cli("bookkeeping", "purge", "--older-than", "0", env=env)
    assert refused.returncode == 2 and "must be positive" in refused.stderr
