"""Refuse to start insecure (issue 12): the app login must be bound by row-level security, every
protected table must have it enabled and forced, and proof tables must be append-only."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
from pydantic import SecretStr
from sqlalchemy import text

from policydesk.config import Settings
from policydesk.ops.runtime import open_migrated
from policydesk.storage.engine import create_database
from policydesk.storage.security import (
    InsecureStartError,
    check_secure_start,
    database_problems,
    settings_problems,
)
from tests.cli_helpers import run_cli



@pytest.fixture
def db(make_db):
    return make_db()


def _cli_ask(db, settings: Settings, role: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    if role:
        env["POLICYDESK_APP_DB_ROLE"] = role
    return run_cli("ask", "What is the timely filing limit?", "--as", "nobody", "--json", env=env)


def test_a_migrated_database_starts(db, settings):
    assert database_problems(db.app) == []
    check_secure_start(db, settings)


def test_start_refuses_an_app_login_with_bypassrls(settings):
    # Its own role, so the rest of the session's databases keep a plain one.
    role = f"pd_bypass_{uuid.uuid4().hex[:6]}"
    local = settings.model_copy(update={"APP_DB_ROLE": role})
    name = f"policydesk_{role}"
    create_database(local, name)
    db = open_migrated(local, name)
    try:
        with db.owner.begin() as conn:
            conn.execute(text(f"ALTER ROLE {role} BYPASSRLS"))
        with pytest.raises(InsecureStartError) as err:
            check_secure_start(db, local)
        assert err.value.problems == [
            f"the application login {role!r} has BYPASSRLS, so row-level security does not bind it: "
            f"ALTER ROLE {role} NOBYPASSRLS"]
        out = _cli_ask(db, local, role)
        assert out.returncode == 4, out.stderr
        assert f"ALTER ROLE {role} NOBYPASSRLS" in out.stderr and "refusing to start" in out.stderr
        assert out.stdout == ""  # nothing answered
    finally:
        db.dispose()


@pytest.mark.parametrize("table", ["data_chunks", "traces"])
def test_start_refuses_a_table_whose_rls_is_not_forced(db, settings, table):
    with db.owner.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY"))
    assert database_problems(db.app) == [
        f"row-level security is not forced on {table}: ALTER TABLE {table} FORCE ROW LEVEL SECURITY "
        "(or re-run the migrations to head)"]
    out = _cli_ask(db, settings)
    assert out.returncode == 4 and "FORCE ROW LEVEL SECURITY" in out.stderr


def test_start_refuses_rls_switched_off(db):
    with db.owner.begin() as conn:
        conn.execute(text("ALTER TABLE documents DISABLE ROW LEVEL SECURITY"))
    assert database_problems(db.app)[0].startswith("row-level security is off on documents")


def test_start_refuses_an_app_login_that_may_edit_traces(db, settings):
    with db.owner.begin() as conn:
        conn.execute(text(f"GRANT UPDATE, DELETE ON traces TO {settings.APP_DB_ROLE}"))
    problems = database_problems(db.app)
    assert [p.split(":")[0] for p in problems] == [
        "the application login may UPDATE traces, so a record it must only append to could be changed",
        "the application login may DELETE traces, so a record it must only append to could be changed"]


def test_production_refuses_default_db_password_and_short_secret(settings):
    prod = settings.model_copy(update={"ENVIRONMENT": "production", "SECRET_KEY": SecretStr("x" * 31)})
    problems = settings_problems(prod)
    assert len(problems) == 3
    assert problems[0].startswith("POLICYDESK_APP_DB_PASSWORD is the shipped default")
    assert problems[1].startswith("POLICYDESK_SECRET_KEY is shorter than 32 bytes")
    assert problems[2].startswith("POLICYDESK_METRICS_TOKEN is not set, so /metrics would be open")
    fixed = prod.model_copy(update={"APP_DB_PASSWORD": SecretStr("a-real-password-from-the-vault"),
                                 "SECRET_KEY": SecretStr("k" * 32), "METRICS_TOKEN": SecretStr("m" * 32)})
    assert settings_problems(fixed) == []
    assert settings_problems(settings) == []  # local and test runs keep their defaults


def test_start_refuses_an_app_login_that_can_read_the_full_text_side_table(db, settings):
    # The side table has no row-level security; the app may only reach it through the definer
    # function that applies its clearance (migration 0010).
    with db.owner.begin() as conn:
        conn.execute(text(f"GRANT SELECT ON chunk_search TO {settings.APP_DB_ROLE}"))
    assert database_problems(db.app) == [
        "the application login may SELECT chunk_search, so rows could be read or written around row-level "
        f"security: REVOKE SELECT ON chunk_search FROM {settings.APP_DB_ROLE}"]


def test_start_refuses_an_app_login_that_may_move_or_erase_sign_in_sessions(db, settings):
    # Sessions (migration 0018): the app may move seen_at/ended_at only; a grant that lets it
    # re-point a session at another user, or delete one, is refused at start-up.
    role = settings.APP_DB_ROLE
    with db.owner.begin() as conn:
        conn.execute(text(f"GRANT DELETE ON sessions TO {role}"))
        conn.execute(text(f"GRANT UPDATE (user_id) ON sessions TO {role}"))
    assert database_problems(db.app) == [
        "the application login may DELETE sessions, so a sign-in session could be moved to another user or "
        f"erased: REVOKE DELETE ON sessions FROM {role}",
        "the application login may UPDATE sessions.user_id, so a sign-in session could be moved to another "
        f"user: REVOKE UPDATE (user_id) ON sessions FROM {role}"]
