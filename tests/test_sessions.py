"""Issue 12, item 4: session hardening (OWASP ASVS level 2), over real HTTP on a real database.

Cookie flags, idle and absolute expiry, sign-in throttling per account and per address (agreed
by a second app instance), the password policy and the account commands of the real console
script. Time is an injected clock on the app (`create_app(clock=...)`): nothing sleeps.

These tests use a database of their own and the default thresholds (the shared test settings
raise the per-address one; see conftest.py).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session

from policydesk.config import Settings
from policydesk.ops.runtime import open_migrated
from policydesk.storage.models import User
from policydesk.accounts.users import add_user, disable_user, enable_user
from policydesk.web.app import create_app
from tests.web_helpers import PASSWORD, csrf_from, find, text_of
from tests.cli_helpers import run_cli

_days = itertools.count()


class Clock:
    """The app's clock, moved by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


@pytest.fixture(scope="module")
def hardening_settings(settings) -> Settings:
    """The defaults (5 per account, 20 per address, 15-minute window and lockout, 30-minute idle,
    8-hour lifetime) on the session's embedded server."""
    return Settings(DATA_DIR=settings.DATA_DIR, ENVIRONMENT="test", _env_file=None)


@pytest.fixture(scope="module")
def db(make_db):
    return make_db()


@pytest.fixture
def clock() -> Clock:
    # Each test starts on its own day, so sign-in attempts left by another test in this module's
    # database are outside every window this test looks at.
    return Clock(datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc) + timedelta(days=next(_days)))


@pytest.fixture
def app(hardening_settings, db, clock):
    return create_app(hardening_settings, db=db, clock=clock)


@pytest.fixture
def make_user(db):
    def _make(prefix: str = "sess", password: str = PASSWORD) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        with Session(db.owner) as s, s.begin():
            add_user(s, name=name, role="rep", password=password)
        return name

    return _make


def _client(app, addr: str = "testclient") -> TestClient:
    return TestClient(app, follow_redirects=False, client=(addr, 50000))


def _post_login(client: TestClient, name: str, password: str):
    token = csrf_from(client.get("/login").text)
    return client.post("/login", data={"name": name, "password": password, "csrf_token": token, "next": "/ask"})


def _signed_in(app, name: str, password: str = PASSWORD, addr: str = "testclient") -> TestClient:
    client = _client(app, addr)
    r = _post_login(client, name, password)
    assert r.status_code == 303 and r.headers["location"] == "/ask", r.text
    return client


def _assert_sent_to_sign_in(client: TestClient) -> None:
    r = client.get("/ask")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/ask"


def _set_cookie(response) -> str:
    cookies = [v for k, v in response.headers.multi_items() if k == "set-cookie"]
    assert len(cookies) == 1 and cookies[0].startswith("policydesk_session="), cookies
    return cookies[0].lower()


# -- 1. cookie flags ------------------------------------------------------------------------------

def test_session_cookie_is_httponly_and_samesite_lax_over_local_http(app, make_user):
    name = make_user()
    r = _post_login(_client(app), name, PASSWORD)
    assert r.status_code == 303
    flags = [f.strip() for f in _set_cookie(r).split(";")]
    assert "httponly" in flags and "samesite=lax" in flags
    assert "secure" not in flags  # tests and local runs are served over plain http
    assert f"max-age={8 * 60 * 60}" in flags


@pytest.mark.parametrize("environment", ["production", "staging"])
def test_session_cookie_is_secure_outside_local_and_test(environment, settings, db, clock, make_user):
    # Regression: the cookie was Secure only when ENVIRONMENT was exactly "production", so a
    # "staging" (or any other non-local) deployment sent the session cookie over plain http.
    prod = Settings(DATA_DIR=settings.DATA_DIR, ENVIRONMENT=environment, SECRET_KEY="s" * 40, _env_file=None)
    name = make_user()
    client = TestClient(create_app(prod, db=db, clock=clock), follow_redirects=False,
                        base_url="https://policydesk.example")
    r = _post_login(client, name, PASSWORD)
    assert r.status_code == 303
    flags = [f.strip() for f in _set_cookie(r).split(";")]
    assert {"httponly", "samesite=lax", "secure"} <= set(flags)


def test_secure_cookie_setting_overrides_the_environment(settings, db, clock, make_user):
    local_https = Settings(DATA_DIR=settings.DATA_DIR, ENVIRONMENT="local", SESSION_COOKIE_SECURE=True,
                           _env_file=None)
    client = TestClient(create_app(local_https, db=db, clock=clock), follow_redirects=False,
                        base_url="https://localhost")
    r = _post_login(client, make_user(), PASSWORD)
    assert "secure" in [f.strip() for f in _set_cookie(r).split(";")]


# -- 2. idle timeout and absolute lifetime ----------------------------------------------------------

def test_idle_session_is_signed_out_and_sent_to_sign_in(app, clock, make_user):
    client = _signed_in(app, make_user())
    for _ in range(3):  # activity keeps the session alive past 30 minutes in total
        clock.advance(minutes=29)
        assert client.get("/ask").status_code == 200
    clock.advance(minutes=30)
    _assert_sent_to_sign_in(client)
    page = client.get("/login?next=/ask")
    assert "signed out after a period of inactivity" in text_of(page.text, "signed-out-notice")
    clock.advance(minutes=-20)  # the session was cleared, not merely judged idle
    _assert_sent_to_sign_in(client)


def test_session_ends_at_its_absolute_lifetime_even_when_active(app, clock, make_user):
    client = _signed_in(app, make_user())
    for _ in range(23):  # a request every 20 minutes: never idle, 7 h 40 min in total
        clock.advance(minutes=20)
        assert client.get("/ask").status_code == 200
    clock.advance(minutes=20)  # 8 hours after sign-in
    _assert_sent_to_sign_in(client)
    assert "reached its time limit" in text_of(client.get("/login").text, "signed-out-notice")


def test_copied_cookie_stops_working_after_the_lifetime(app, clock, make_user):
    # Regression: the 8-hour limit was only the cookie's Max-Age, which the browser enforces and
    # Starlette re-sends with every response; a copied cookie replayed by another client stayed
    # valid indefinitely. The server now checks the signed timestamps itself.
    client = _signed_in(app, make_user())
    copied = client.cookies.get("policydesk_session")
    clock.advance(hours=8)
    replay = _client(app)
    replay.cookies.set("policydesk_session", copied)
    _assert_sent_to_sign_in(replay)


def test_copied_cookie_is_signed_out_after_sign_out(app, make_user):
    # Regression: sessions lived only in the signed cookie, so POST /logout cleared the browser's
    # copy while a copied cookie stayed signed in until its lifetime. The row ends now.
    client = _signed_in(app, make_user())
    copied, token = client.cookies.get("policydesk_session"), csrf_from(client.get("/ask").text)
    assert client.post("/logout", data={"csrf_token": token}).status_code == 303
    replay = _client(app)
    replay.cookies.set("policydesk_session", copied)
    _assert_sent_to_sign_in(replay)
    r = replay.post("/ask", data={"question": "What is the timely filing limit?", "csrf_token": token})
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/ask"


def test_a_session_row_is_ended_for_good_and_the_app_role_cannot_revive_erase_or_move_it(app, db, make_user):
    name = make_user()
    client = _signed_in(app, name)
    client.post("/logout", data={"csrf_token": csrf_from(client.get("/ask").text)})
    with db.owner.connect() as conn:
        row = conn.execute(text("SELECT s.id, s.end_reason FROM sessions s JOIN users u ON u.id = s.user_id "
                                "WHERE u.name = :n"), {"n": name}).one()
    assert row.end_reason == "signed_out"
    with db.app.connect() as conn, pytest.raises(Exception, match="has ended and cannot change"):
        conn.execute(text("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = :i"), {"i": row.id})
    for sql in ("DELETE FROM sessions", "UPDATE sessions SET user_id = user_id",
                "UPDATE sessions SET started_at = now()"):
        with db.app.connect() as conn, pytest.raises(ProgrammingError, match="permission denied"):
            conn.execute(text(sql))


# -- 3. sign-in throttling ----------------------------------------------------------------------

def _refused_text(r) -> str:
    assert r.status_code == 429, r.status_code
    return text_of(r.text, "notice-error")


def test_five_wrong_passwords_lock_the_account_even_for_the_right_one(app, make_user):
    name, neighbour = make_user(), make_user()
    client = _client(app)
    for _ in range(5):
        r = _post_login(client, name, "wrong-password-123")
        assert r.status_code == 401 and "did not match" in text_of(r.text, "notice-error")
    message = _refused_text(_post_login(client, name, PASSWORD))
    assert "Too many failed sign-in attempts for this account" in message
    assert "try again in 15 minutes" in message
    _assert_sent_to_sign_in(client)
    # The lock is on the account, wherever the next attempt comes from...
    assert "this account" in _refused_text(_post_login(_client(app, "192.0.2.7"), name, PASSWORD))
    # ...and not on other accounts from the same address, which is below its own threshold.
    _signed_in(app, neighbour)


def test_a_lock_lifts_after_the_lockout_and_retries_do_not_extend_it(app, clock, make_user):
    name = make_user()
    client = _client(app)
    for _ in range(5):
        assert _post_login(client, name, "wrong-password-123").status_code == 401
    clock.advance(minutes=10)
    assert "try again in 5 minutes" in _refused_text(_post_login(client, name, PASSWORD))
    clock.advance(minutes=4, seconds=30)
    assert "try again in 1 minute." in _refused_text(_post_login(client, name, "wrong-password-123"))
    clock.advance(seconds=30)  # 15 minutes after the fifth failure
    _signed_in(app, name)


def test_a_successful_sign_in_restarts_the_account_count(app, make_user):
    name = make_user()
    client = _client(app)
    for _ in range(4):
        assert _post_login(client, name, "wrong-password-123").status_code == 401
    _signed_in(app, name)
    for _ in range(4):
        assert _post_login(client, name, "wrong-password-123").status_code == 401
    _signed_in(app, name)  # eight failures in the window, but only four since the last success


def test_the_address_locks_after_twenty_failures_across_accounts(app, make_user):
    victim = make_user()
    attacker = _client(app, "198.51.100.9")
    guesses = [f"guess-{i}-{uuid.uuid4().hex[:6]}" for i in range(5)]
    for i in range(19):  # at most four per name, so no account reaches its own lock
        assert _post_login(attacker, guesses[i % 5], "wrong-password-123").status_code == 401
    _signed_in(app, victim, addr="198.51.100.9")  # 19 failures: the address is still allowed
    assert _post_login(attacker, guesses[4], "wrong-password-123").status_code == 401  # the 20th
    message = _refused_text(_post_login(attacker, victim, PASSWORD))
    assert "Too many failed sign-in attempts for this network address" in message
    _signed_in(app, victim, addr="203.0.113.5")  # the account itself is not locked


def test_a_lock_is_agreed_by_a_second_app_instance(app, hardening_settings, db, clock, make_user):
    # A second app with its own engines and connection pool on the same database, as a second
    # worker process would have: the count lives in Postgres, not in either process.
    second_db = open_migrated(hardening_settings, db.owner_url.database)
    try:
        other = create_app(hardening_settings, db=second_db, clock=clock)
        name = make_user()
        for instance in (app, other, app, other, app):
            assert _post_login(_client(instance), name, "wrong-password-123").status_code == 401
        for instance in (other, app):
            assert "this account" in _refused_text(_post_login(_client(instance), name, PASSWORD))
        clock.advance(minutes=15)
        _signed_in(other, name)
    finally:
        second_db.dispose()


def test_the_app_role_cannot_erase_sign_in_attempts(app, db, make_user):
    _post_login(_client(app), make_user(), "wrong-password-123")
    for sql in ("UPDATE login_attempts SET succeeded = true", "DELETE FROM login_attempts"):
        with db.app.connect() as conn, pytest.raises(ProgrammingError, match="permission denied"):
            conn.execute(text(sql))


# -- 4 and 5. password policy and account commands, through the command line (in this process) ------

@pytest.fixture(scope="module")
def cli_env(db, tmp_path_factory) -> dict:
    """The command line on this module's database, run in this process as the console script runs it
    (tests/cli_helpers.py), from an empty directory, so no stray .env is read."""
    return {"env": dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False),
                        POLICYDESK_ENVIRONMENT="test"),
            "cwd": tmp_path_factory.mktemp("cli")}


def _cli(cli_env, *args, check: bool = True) -> subprocess.CompletedProcess:
    out = run_cli(*args, **cli_env)
    if check:
        assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    return out


def _listed(cli_env, name: str) -> str:
    rows = [line for line in _cli(cli_env, "users", "list").stdout.splitlines() if line.split("\t")[0] == name]
    assert len(rows) == 1, rows
    return rows[0]


def test_password_policy_is_enforced_by_users_add_and_set_password(cli_env, app):
    name = f"casey-morgan-{uuid.uuid4().hex[:6]}"
    out = _cli(cli_env, "users", "add", name, "--role", "rep", "--password", "short-pw", check=False)
    assert out.returncode == 2
    assert "the password must be at least 12 characters long (this one has 8)" in out.stderr
    out = _cli(cli_env, "users", "add", name, "--role", "rep", "--password", name.upper(), check=False)
    assert out.returncode == 2 and "the password must not be the user name" in out.stderr

    out = _cli(cli_env, "users", "add", name, "--role", "rep")  # random password, shown once
    generated = out.stdout.rsplit("password: ", 1)[1].strip()
    assert len(generated) >= 12
    _signed_in(app, name, generated)

    out = _cli(cli_env, "users", "set-password", name, "--password", "eleven-char", check=False)
    assert out.returncode == 2 and "at least 12 characters" in out.stderr
    out = _cli(cli_env, "users", "set-password", "nobody-by-this-name", "--password", PASSWORD, check=False)
    assert out.returncode == 2 and "no user named 'nobody-by-this-name'" in out.stderr
    _signed_in(app, name, generated)  # refused changes changed nothing


def test_set_password_signs_out_existing_sessions(cli_env, app, make_user):
    name = make_user()
    client = _signed_in(app, name)
    out = _cli(cli_env, "users", "set-password", name)
    assert "existing sessions are signed out" in out.stdout
    new = out.stdout.rsplit("password: ", 1)[1].strip()
    _assert_sent_to_sign_in(client)
    assert _post_login(_client(app), name, PASSWORD).status_code == 401  # the old password is gone
    _signed_in(app, name, new)
    _cli(cli_env, "users", "set-password", name, "--password", "a-new-long-password")
    _signed_in(app, name, "a-new-long-password")


def test_disable_signs_out_refuses_sign_in_and_asking_then_enable_restores(cli_env, app, make_user):
    name = make_user()
    client = _signed_in(app, name)
    assert _cli(cli_env, "users", "disable", name).stdout.strip() == f"{name} is disabled"
    assert "\tdisabled since " in _listed(cli_env, name)

    _assert_sent_to_sign_in(client)
    r = _post_login(_client(app), name, PASSWORD)
    assert r.status_code == 401 and "did not match" in text_of(r.text, "notice-error")
    asked = _cli(cli_env, "ask", "What is the timely filing limit?", "--as", name, "--json", check=False)
    assert asked.returncode == 1
    result = json.loads(asked.stdout)
    assert result["error"] == f"unknown user '{name}'"  # disabled reads exactly like unknown
    assert not result["answer"] and not result["citations"] and result["role"] is None

    assert _cli(cli_env, "users", "enable", name).stdout.strip() == f"{name} is enabled"
    assert _listed(cli_env, name) == f"{name}\trep"
    _signed_in(app, name)


def test_set_role_signs_out_existing_sessions(cli_env, app, make_user):
    name = make_user()
    client = _signed_in(app, name)
    assert _cli(cli_env, "users", "set-role", name, "supervisor").stdout.strip() == (
        f"{name} is now supervisor; existing sessions are signed out")
    _assert_sent_to_sign_in(client)
    _signed_in(app, name)


def test_purge_sessions_deletes_only_sessions_unused_for_longer_than_asked(cli_env, app, db, make_user):
    old, current = make_user(), make_user()
    _signed_in(app, old), _signed_in(app, current)
    with db.owner.begin() as conn:  # this module's clock is not the wall clock the purge reads
        for name, age in ((old, "40 days"), (current, "0 days")):
            conn.execute(text("UPDATE sessions s SET started_at = now() - CAST(:age AS interval), "
                              "seen_at = now() - CAST(:age AS interval) FROM users u "
                              "WHERE u.id = s.user_id AND u.name = :n"), {"n": name, "age": age})
    out = _cli(cli_env, "users", "purge-sessions", "--older-than", "30")
    assert out.stdout.startswith("deleted ") and "sessions older than 30 days" in out.stdout
    with db.owner.connect() as conn:
        left = dict(conn.execute(text("SELECT u.name, count(*) FROM sessions s JOIN users u ON u.id = s.user_id "
                                      "WHERE u.name IN (:a, :b) GROUP BY u.name"), {"a": old, "b": current}).all())
    assert left == {current: 1}
    assert _cli(cli_env, "users", "purge-sessions", "--older-than", "0", check=False).returncode == 2


def test_disabled_or_deleted_users_next_request_is_signed_out(app, db, make_user):
    disabled, deleted = make_user(), make_user()
    clients = {n: _signed_in(app, n) for n in (disabled, deleted)}
    with Session(db.owner) as s, s.begin():
        disable_user(s, name=disabled)
        s.execute(delete(User).where(User.name == deleted))
    for client in clients.values():
        _assert_sent_to_sign_in(client)
    with Session(db.owner) as s, s.begin():
        enable_user(s, name=disabled)
    _assert_sent_to_sign_in(clients[disabled])  # that session stays ended; a new sign-in works
    _signed_in(app, disabled)


def test_sign_in_page_shows_a_lock_as_a_page_not_an_error_dump(app, make_user):
    name = make_user()
    client = _client(app)
    for _ in range(5):
        _post_login(client, name, "wrong-password-123")
    r = _post_login(client, name, PASSWORD)
    assert r.status_code == 429 and r.headers["retry-after"] == str(15 * 60)
    assert find(r.text, "form", action="/login")  # the form is still there for later
    assert find(r.text, "input", name="name")[0]["attrs"]["value"] == name


def test_migration_0006_steps_down_and_up_again(make_db, settings):
    from alembic import command

    from policydesk.storage.migrate import alembic_config, current_revision

    db = make_db()
    with db.owner.begin() as conn:
        command.downgrade(alembic_config(conn, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value()), "0005")
    assert current_revision(db.owner) == "0005"
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT to_regclass('login_attempts')")).scalar_one() is None
        assert conn.execute(text("SELECT count(*) FROM information_schema.columns "
                                 "WHERE table_name = 'users' AND column_name = 'disabled_at'")).scalar_one() == 0
    with db.owner.begin() as conn:
        command.upgrade(alembic_config(conn, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value()), "0006")
    assert current_revision(db.owner) == "0006"
