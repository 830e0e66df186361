"""Issue 19: API token lifecycle (through the command line), expiry, revocation, disabled
users, the per-token rate limit agreed by two app instances, and what the app login may not do."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session

from policydesk.storage.security import database_problems
from policydesk.accounts.users import add_user, disable_user, enable_user
from policydesk.web.app import create_app
from tests.api_helpers import bearer, is_problem, make_token
from tests.cli_helpers import run_cli
from tests.web_helpers import PASSWORD

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture(scope="module")
def db(make_db):
    return make_db()


@pytest.fixture(scope="module")
def users(db) -> dict[str, str]:
    names = {"comp": f"tok-comp-{uuid.uuid4().hex[:6]}", "rep": f"tok-rep-{uuid.uuid4().hex[:6]}"}
    with Session(db.owner) as session, session.begin():
        add_user(session, name=names["comp"], role="compliance", password=PASSWORD)
        add_user(session, name=names["rep"], role="rep", password=PASSWORD)
    return names


def _app(settings, db, clock=None, **overrides):
    # No pipeline: these tests call only endpoints that read the database (trace search).
    return create_app(settings.model_copy(update=overrides), db=db, pipeline=object(), clock=clock)


def _cli(db, *args: str) -> subprocess.CompletedProcess:
    """`policydesk tokens ARGS`, run in this process as the console script runs it (tests/cli_helpers.py)."""
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    return run_cli("tokens", *args, env=env)


def test_token_lifecycle_through_the_console_script(settings, db, users):
    created = _cli(db, "create", users["comp"], "--expires", "7", "--label", "case tool")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    key_id, secret = re.fullmatch(r"pdk_([a-f0-9]{12})_([A-Za-z0-9_-]{43})", token).groups()
    assert f"token {key_id} for {users['comp']}" in created.stdout and "shown once" in created.stdout

    with db.owner.connect() as conn:
        row = conn.execute(text("SELECT * FROM api_tokens WHERE key_id = :k"), {"k": key_id}).mappings().one()
    assert row["secret_sha256"] == hashlib.sha256(secret.encode()).hexdigest()
    assert not any(secret in str(v) for v in row.values()), "the secret is never stored"
    assert row["expires_at"] - row["created_at"] == timedelta(days=7)

    api = TestClient(_app(settings, db))
    assert api.get("/api/v1/traces", headers=bearer(token)).status_code == 200
    listed = _cli(db, "list", users["comp"])
    assert listed.returncode == 0 and key_id in listed.stdout and "active" in listed.stdout
    assert "case tool" in listed.stdout and secret not in listed.stdout and "last used 20" in listed.stdout

    revoked = _cli(db, "revoke", key_id)
    assert revoked.returncode == 0 and "is revoked" in revoked.stdout
    is_problem(api.get("/api/v1/traces", headers=bearer(token)), 401, "unauthorized")
    assert "revoked" in _cli(db, "list").stdout
    assert _cli(db, "create", "no-such-user").returncode == 2
    assert _cli(db, "revoke", "000000000000").returncode == 2


def test_expired_token_is_refused(settings, db, users):
    token = make_token(db, users["rep"], days=1, now=T0)
    clock = Clock(T0 + timedelta(hours=23))
    api = TestClient(_app(settings, db, clock))
    is_problem(api.get("/api/v1/traces", headers=bearer(token)), 403, "forbidden")  # valid, but a rep
    clock.at = T0 + timedelta(days=1)
    body = is_problem(api.get("/api/v1/traces", headers=bearer(token)), 401, "unauthorized")
    assert 'error="invalid_token"' in api.get("/api/v1/traces", headers=bearer(token)).headers["www-authenticate"]
    assert "expired" in body["detail"]


def test_a_wrong_secret_for_a_real_key_is_refused(settings, db, users):
    token = make_token(db, users["rep"])
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    is_problem(TestClient(_app(settings, db)).get("/api/v1/traces", headers=bearer(forged)), 401, "unauthorized")


def test_disabled_users_token_is_refused_until_enabled(settings, db, users):
    token = make_token(db, users["comp"])
    api = TestClient(_app(settings, db))
    assert api.get("/api/v1/traces", headers=bearer(token)).status_code == 200
    with Session(db.owner) as session, session.begin():
        disable_user(session, name=users["comp"])
    try:
        is_problem(api.get("/api/v1/traces", headers=bearer(token)), 401, "unauthorized")
    finally:
        with Session(db.owner) as session, session.begin():
            enable_user(session, name=users["comp"])
    assert api.get("/api/v1/traces", headers=bearer(token)).status_code == 200


def test_rate_limit_is_per_token_and_agreed_by_two_app_instances(settings, db, users):
    clock = Clock(T0)
    limits = {"API_RATE_LIMIT": 3, "API_RATE_WINDOW_SECONDS": 60}
    first = TestClient(_app(settings, db, clock, **limits))
    second = TestClient(_app(settings, db, clock, **limits))  # another worker on the same database
    token, other = make_token(db, users["comp"], now=T0), make_token(db, users["comp"], now=T0)
    for client in (first, second, first):
        clock.at += timedelta(seconds=1)
        assert client.get("/api/v1/traces", headers=bearer(token)).status_code == 200
    refused = second.get("/api/v1/traces", headers=bearer(token))
    body = is_problem(refused, 429, "rate_limited")
    assert refused.headers["retry-after"] == "58" and "58 s" in body["detail"]  # the first call leaves at T0+61s
    assert first.get("/api/v1/traces", headers=bearer(other)).status_code == 200  # per token
    clock.at = T0 + timedelta(seconds=40)  # retries while limited are recorded but do not extend the wait
    for _ in range(3):
        assert first.get("/api/v1/traces", headers=bearer(token)).headers["retry-after"] == "21"
    clock.at = T0 + timedelta(seconds=61)
    assert second.get("/api/v1/traces", headers=bearer(token)).status_code == 200
    with db.owner.connect() as conn:
        counted = conn.execute(text(
            "SELECT count(*) FILTER (WHERE NOT limited), count(*) FILTER (WHERE limited) FROM api_requests r "
            "JOIN api_tokens t ON t.id = r.token_id WHERE t.key_id = :k"), {"k": token.split("_")[1]}).one()
    assert tuple(counted) == (4, 4)


@pytest.mark.parametrize("statement", [
    "INSERT INTO api_tokens (key_id, secret_sha256, user_id, expires_at) "
    "SELECT 'abcdefabcdef', repeat('a', 64), id, now() + interval '1 day' FROM users LIMIT 1",
    "UPDATE api_tokens SET revoked_at = NULL, expires_at = now() + interval '10 years'",
    "DELETE FROM api_tokens",
    "UPDATE api_requests SET limited = true",
    "DELETE FROM api_requests",
    "UPDATE users SET role = 'compliance'",
    "INSERT INTO users (name, role, password_hash) VALUES ('intruder', 'compliance', 'x')",
])
def test_the_app_login_cannot_mint_extend_or_erase_tokens(db, users, statement):
    make_token(db, users["rep"])
    with pytest.raises(ProgrammingError, match="permission denied"):
        with db.app.begin() as conn:
            conn.execute(text(statement))


@pytest.mark.parametrize("grant,problem", [
    ("UPDATE ON api_tokens", "the application login may UPDATE api_tokens, so a table only the owner login may change"),
    ("INSERT ON api_tokens", "the application login may INSERT api_tokens, so a table only the owner login may change"),
    ("DELETE ON api_requests", "the application login may DELETE api_requests, so a record it must only append to"),
    ("INSERT ON users", "the application login may INSERT users, so a table only the owner login may change"),
    # Regression: login_attempts was listed but skipped (only tables with RLS were looked up).
    ("DELETE ON login_attempts", "the application login may DELETE login_attempts, so a record it must only append to"),
])
def test_start_refuses_an_app_login_that_may_change_tokens_or_accounts(make_db, settings, grant, problem):
    fresh = make_db()
    with fresh.owner.begin() as conn:
        conn.execute(text(f"GRANT {grant} TO {settings.APP_DB_ROLE}"))
    found = database_problems(fresh.app)
    assert len(found) == 1 and found[0].startswith(problem), found


def test_migration_0009_steps_down_and_up_again(make_db, settings):
    from alembic import command

    from policydesk.storage.migrate import alembic_config, current_revision

    fresh = make_db()
    with fresh.owner.begin() as conn:
        command.downgrade(alembic_config(conn, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value()), "0008")
    with fresh.owner.connect() as conn:
        assert conn.execute(text("SELECT to_regclass('api_tokens')")).scalar_one() is None
        assert conn.execute(text("SELECT to_regclass('api_requests')")).scalar_one() is None
    with fresh.owner.begin() as conn:
        command.upgrade(alembic_config(conn, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value()), "0009")
    assert current_revision(fresh.owner) == "0009"
    # At 0009 the start-up check rightly names the tables later migrations add (0014's
    # product_choices); back at head it finds nothing wrong.
    assert all("product_choices" in p for p in database_problems(fresh.app))
    with fresh.owner.begin() as conn:
        command.upgrade(alembic_config(conn, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value()), "head")
    assert database_problems(fresh.app) == []
