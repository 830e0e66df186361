"""The security pass over real HTTP: a real `policydesk serve` (two workers), real sockets.

- Sign-out ends the session: a cookie copied before `POST /logout` is signed out when replayed,
  on fresh connections (so both workers answer it); the same after set-role, set-password and
  disable.
- No forwarded header is trusted by default: failed sign-ins from one address with a different
  X-Forwarded-For each still lock that address, and a forged X-Forwarded-For cannot lock out the
  address it names. A second server started with `--forwarded-allow-ips` trusts the named proxy
  only.
- A NUL in an API path is still audited (one `api_problem` row).
- A hostile run (member IDs, SSNs, phones and birth dates in every API and form field) leaves no
  planted identifier in any column of its traces or audit rows, on the disputes page or in the
  export.

Loopback addresses other than 127.0.0.1 (127.0.0.2-6) stand in for distinct clients: Linux routes
all of 127/8 to lo, and httpx binds the client side to them.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.proof.exports import export_traces, render
from policydesk.accounts.users import add_user, disable_user, set_password, set_role
from tests.api_helpers import bearer, make_token
from tests.serve_helpers import LogSince, serve_env, start_serve, stop_serve, wait_started
from tests.web_helpers import PASSWORD, by_class, csrf_from, text_of

pytestmark = pytest.mark.slow

TIMELY = "What is the timely filing limit?"
PROXY, NOT_PROXY = "127.0.0.5", "127.0.0.6"


@pytest.fixture(scope="module")
def served(shared_serve, tmp_path_factory):
    """The session's `serve --workers 2` (tests/serve_helpers.py: pol-tf-v1 and v2, no forwarded
    header trusted), its log from this module's start, and a second server of this module's, one
    worker, started with `--forwarded-allow-ips` on the same database (its own data directory for
    its metrics files, the database named by DATABASE_URL)."""
    s = shared_serve.get()
    db = s["db"]
    reviewer = f"sec-comp-{uuid.uuid4().hex[:6]}"
    with Session(db.owner) as session, session.begin():
        add_user(session, name=reviewer, role="compliance", password=PASSWORD)
    log = LogSince(s["log"])
    own = tmp_path_factory.mktemp("serve-security")
    env = serve_env(own, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    proxied, proxied_url = start_serve(env, own / "proxied.log", "--forwarded-allow-ips", PROXY)
    try:
        wait_started(proxied, own / "proxied.log", 1)
        yield {"url": s["url"], "proxied_url": proxied_url, "db": db, "reviewer": reviewer, "log": log,
               "reviewer_token": make_token(db, reviewer)}
    finally:
        stop_serve(proxied)


def _new_user(db, role: str = "rep") -> str:
    name = f"sec-{role}-{uuid.uuid4().hex[:8]}"
    with Session(db.owner) as s, s.begin():
        add_user(s, name=name, role=role, password=PASSWORD)
    return name


def _client(url: str, addr: str = "127.0.0.1", **kwargs) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=120, transport=httpx.HTTPTransport(local_address=addr), **kwargs)


def _login(client: httpx.Client, name: str, password: str = PASSWORD, headers: dict | None = None) -> httpx.Response:
    token = csrf_from(client.get("/login").text)
    return client.post("/login", data={"name": name, "password": password, "csrf_token": token, "next": "/ask"},
                       headers=headers)


def _signed_in(url: str, name: str) -> tuple[dict, str]:
    """A signed-in browser's cookies and CSRF token, after it asked and was answered."""
    with _client(url) as c:
        assert _login(c, name).status_code == 303
        token = csrf_from(c.get("/ask").text)
        r = c.post("/ask", data={"question": TIMELY, "csrf_token": token})
        assert r.status_code == 200 and text_of(r.text, "answer-text"), r.text[:500]
        return dict(c.cookies), token


def _assert_replay_signed_out(url: str, cookies: dict, token: str) -> None:
    for _ in range(3):  # a new connection each time: the kernel hands them to either worker
        with _client(url, cookies=cookies) as c:
            r = c.get("/ask")
            assert r.status_code == 303 and r.headers["location"] == "/login?next=/ask"
        with _client(url, cookies=cookies) as c:
            r = c.post("/ask", data={"question": TIMELY, "csrf_token": token})
            assert r.status_code == 303 and r.headers["location"] == "/login?next=/ask"
            assert not by_class(r.text, "answer-text")


def _traces_of(db, name: str) -> int:
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM traces WHERE user_name = :u"), {"u": name}).scalar_one()


# -- 1. sign-out, and the account changes, end the session ------------------------------------

def test_a_cookie_copied_before_sign_out_is_signed_out_on_every_worker(served):
    url, db = served["url"], served["db"]
    name = _new_user(db)
    cookies, token = _signed_in(url, name)
    asked = _traces_of(db, name)
    with _client(url, cookies=cookies) as c:
        r = c.post("/logout", data={"csrf_token": token})
        assert r.status_code == 303 and r.headers["location"] == "/login"
    _assert_replay_signed_out(url, cookies, token)
    assert _traces_of(db, name) == asked  # the replayed ask was not answered, nor traced


@pytest.mark.parametrize("change", ["set-role", "set-password", "disable"])
def test_an_account_change_ends_the_session_for_a_copied_cookie(served, change):
    url, db = served["url"], served["db"]
    name = _new_user(db)
    cookies, token = _signed_in(url, name)
    with Session(db.owner) as s, s.begin():
        {"set-role": lambda: set_role(s, name=name, role="supervisor"),
         "set-password": lambda: set_password(s, name=name),
         "disable": lambda: disable_user(s, name=name)}[change]()
    _assert_replay_signed_out(url, cookies, token)


# -- 4. forwarded addresses only from a named proxy -------------------------------------------

def _attempt_addrs(db, names: list[str]) -> set[str]:
    with db.owner.connect() as conn:
        return set(conn.execute(text("SELECT client_addr FROM login_attempts WHERE user_name = ANY(:n)"),
                                {"n": names}).scalars())


def test_a_different_forwarded_address_per_attempt_does_not_escape_the_address_lock(served):
    # Regression: serve trusted X-Forwarded-For from 127.0.0.1 by default, so 25 failures sent
    # with 25 forwarded addresses counted against 25 addresses and never locked.
    names = [f"nobody-{uuid.uuid4().hex[:8]}" for _ in range(25)]
    statuses = []
    with _client(served["url"], "127.0.0.4") as c:
        for i, name in enumerate(names):
            r = _login(c, name, "wrong-password-123", headers={"X-Forwarded-For": f"198.51.100.{i + 1}"})
            statuses.append(r.status_code)
        assert "this network address" in text_of(r.text, "notice-error")
    assert statuses == [401] * 20 + [429] * 5
    assert _attempt_addrs(served["db"], names) == {"127.0.0.4"}


def test_a_forged_forwarded_address_cannot_lock_out_the_address_it_names(served):
    victim = _new_user(served["db"])
    names = [f"nobody-{uuid.uuid4().hex[:8]}" for _ in range(20)]
    with _client(served["url"], "127.0.0.2") as attacker:
        for name in names:
            assert _login(attacker, name, "wrong-password-123",
                          headers={"X-Forwarded-For": "127.0.0.3"}).status_code == 401
        assert _login(attacker, victim).status_code == 429  # the attacker's own address is locked
    with _client(served["url"], "127.0.0.3") as real:
        assert _login(real, victim).status_code == 303  # the named address is not
    assert _attempt_addrs(served["db"], names) == {"127.0.0.2"}


def test_a_named_proxy_is_trusted_and_no_other_address(served):
    via_proxy, direct = f"nobody-{uuid.uuid4().hex[:8]}", f"nobody-{uuid.uuid4().hex[:8]}"
    with _client(served["proxied_url"], PROXY) as c:
        _login(c, via_proxy, "wrong-password-123", headers={"X-Forwarded-For": "198.51.100.23"})
    with _client(served["proxied_url"], NOT_PROXY) as c:
        _login(c, direct, "wrong-password-123", headers={"X-Forwarded-For": "198.51.100.24"})
    assert _attempt_addrs(served["db"], [via_proxy]) == {"198.51.100.23"}
    assert _attempt_addrs(served["db"], [direct]) == {NOT_PROXY}


# -- 5. every API problem audited -------------------------------------------------------------

def _api_problems(db, actor: str) -> list:
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT target, details FROM audit_log WHERE actor = :a AND action = 'api_problem' "
                                 "ORDER BY seq"), {"a": actor}).all()


def test_a_nul_in_an_api_path_is_refused_and_audited(served):
    # Regression: the NUL reached the audit insert, which failed with a database error (a
    # traceback in the log) and recorded nothing.
    db, reviewer = served["db"], served["reviewer"]
    before = len(_api_problems(db, reviewer))
    with _client(served["url"]) as c:
        r = c.post("/api/v1/traces/abc%00/check", json={"member_date": "2025-11-03"},
                   headers=bearer(served["reviewer_token"]))
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    rows = _api_problems(db, reviewer)[before:]
    assert len(rows) == 1
    assert rows[0].target == "/api/v1/traces/{trace_id}/check"
    # The screened form is stored: invisible and control characters are folded out before any
    # detector reads caller-typed text (detectors/normalize.py), so no NUL reaches the row.
    assert rows[0].details["status"] == 422 and rows[0].details["path_params"] == {"trace_id": "abc"}
    assert "could not record the API problem" not in served["log"].read_text(errors="replace")


# -- 2. no identifier reaches the proof through another field ---------------------------------

PLANTED = {"member id": "CVM-44712093", "SSN": "287-65-4321", "phone": "(509) 555-0142", "DOB": "03/14/1962"}
# What must not appear anywhere stored: each value, and its digits run together.
NEEDLES = [*PLANTED.values(), "44712093", "287654321", "555-0142", "14/1962"]


def _hostile_run(served, asker_token: str, asker: str) -> None:
    url, reviewer_token = served["url"], served["reviewer_token"]
    with _client(url) as c:
        for kind, value in PLANTED.items():
            for field in ("date_of_service", "denial_notice_date", "line_of_business"):
                r = c.post("/api/v1/ask", json={"question": TIMELY, field: value}, headers=bearer(asker_token))
                assert r.status_code == 422, (field, value, r.text[:300])
                assert value not in r.json()["detail"]
            r = c.post("/api/v1/ask", json={"question": TIMELY, value: "x"}, headers=bearer(asker_token))
            assert r.status_code == 422 and value not in r.text
            # The same identifier in the question, as a control: refused, and stored redacted.
            assert c.post("/api/v1/ask", json={"question": f"The member gave {kind} {value}. {TIMELY}"},
                          headers=bearer(asker_token)).status_code == 422
            assert c.get("/api/v1/traces", params={"words": value}, headers=bearer(reviewer_token)).status_code == 200
            c.get("/api/v1/traces", params={"words": value, "asked_from": value}, headers=bearer(reviewer_token))
            c.post(f"/api/v1/traces/{value}/check", json={"member_date": value, "line_of_business": value},
                   headers=bearer(reviewer_token))
            c.get(f"/api/v1/versions/{value}", headers=bearer(asker_token))
    with _client(url) as web:  # the ask form, as the same user
        assert _login(web, asker).status_code == 303
        token = csrf_from(web.get("/ask").text)
        for value in PLANTED.values():
            for field in ("date_of_service", "denial_notice_date", "line_of_business"):
                r = web.post("/ask", data={"question": TIMELY, field: value, "csrf_token": token})
                assert r.status_code == 422, (field, value)


def test_identifiers_in_any_field_never_reach_a_stored_column_the_disputes_page_or_the_export(served):
    db, reviewer = served["db"], served["reviewer"]
    asker = _new_user(db)
    started = datetime.now(timezone.utc) - timedelta(seconds=1)
    _hostile_run(served, make_token(db, asker), asker)

    with db.owner.connect() as conn:  # every column of every row the run wrote
        traces = conn.execute(text("SELECT id, row_to_json(t)::text AS row FROM traces t WHERE user_name = :u"),
                              {"u": asker}).all()
    assert len(traces) >= 4 * 5 + 4 * 3  # every API and form ask was traced
    rows = [row for _, row in traces]
    assert [n for n in NEEDLES if any(n in row for row in rows)] == []
    assert any("date of service is not a date" in row for row in rows)

    today = datetime.now(timezone.utc).date()
    export = "".join(render(export_traces(db, reviewer=reviewer, start=today, end=today, user=asker), "jsonl"))
    assert export.count("\n") == len(traces)
    assert [n for n in NEEDLES if n in export] == []

    with _client(served["url"]) as page:
        assert _login(page, reviewer).status_code == 303
        for value in PLANTED.values():  # the disputes search form: its audit row is scanned below
            assert page.get("/disputes", params={"words": value, "asked_from": value}).status_code in (200, 422)
            assert page.get("/disputes", params={"words": value}).status_code == 200
        for trace_id, _ in traces[:8]:
            html = page.get(f"/disputes/{trace_id}").text
            assert "date of service" in html or "line of business" in html or "request" in html
            assert [n for n in NEEDLES if n in html] == [], trace_id
    with db.owner.connect() as conn:
        audit = conn.execute(text("SELECT row_to_json(a)::text FROM audit_log a WHERE actor IN (:a, :r) AND at >= :s"),
                             {"a": asker, "r": reviewer, "s": started}).scalars().all()
    assert {a for a in ("api_problem", "search", "open", "export") if any(f'"{a}"' in row for row in audit)} == {
        "api_problem", "search", "open", "export"}
    assert [n for n in NEEDLES if any(n in row for row in audit)] == []
    assert re.search(r"Traceback", served["log"].read_text(errors="replace")) is None
