"""The web app against the real demo database: routes, sessions, CSRF, roles, escaping, fragments."""

from __future__ import annotations

import re

import uuid
from datetime import date

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.storage.models import AuditEntry, Trace
from policydesk.accounts.users import set_role
from tests.web_helpers import PASSWORD, ask, by_class, csrf_from, find, parse, sign_in, text_of, token_of  # noqa: F401

TODAY = date(2026, 11, 29)
HOSTILE = "<script>alert(1)</script> What is the timely filing limit?"


@pytest.fixture(scope="session")
def walkthrough_trace(clients, staff, demo_db) -> uuid.UUID:
    """The rep's undated timely-filing answer, as stored."""
    r = ask(clients["rep"], "What is the timely filing limit?")
    assert r.status_code == 200, r.text
    with Session(demo_db.owner) as session:
        return session.scalar(select(Trace.id).where(Trace.user_name == staff["rep"], Trace.kind == "ask")
                              .order_by(Trace.created_at.desc()).limit(1))


# -- sign-in, sessions ---------------------------------------------------------------------------

def test_sign_in_page_renders_with_csrf_field(web_app):
    client = TestClient(web_app)
    r = client.get("/login")
    assert r.status_code == 200
    assert find(r.text, "form", action="/login")
    assert csrf_from(r.text)


@pytest.mark.parametrize("path", ["/ask", "/disputes", "/disputes/audit", f"/disputes/{uuid.uuid4()}",
                                  f"/citations/{uuid.uuid4()}/POL-TF:v2:limit"])
def test_pages_redirect_to_sign_in_when_signed_out(web_app, path):
    r = TestClient(web_app, follow_redirects=False).get(path)
    assert r.status_code == 303
    assert r.headers["location"].startswith("/login?next=/")


def test_home_redirects_to_ask(clients):
    r = clients["rep"].get("/")
    assert r.status_code == 303 and r.headers["location"] == "/ask"


def test_sign_in_fails_with_wrong_password(web_app, staff):
    client = TestClient(web_app, follow_redirects=False)
    token = csrf_from(client.get("/login").text)
    r = client.post("/login", data={"name": staff["rep"], "password": "nope", "csrf_token": token})
    assert r.status_code == 401
    assert "did not match" in text_of(r.text, "notice-error")
    assert find(r.text, "input", name="name")[0]["attrs"]["value"] == staff["rep"]
    assert client.get("/ask").status_code == 303


def test_sign_in_ignores_offsite_next(web_app, staff):
    client = TestClient(web_app, follow_redirects=False)
    token = csrf_from(client.get("/login").text)
    r = client.post("/login", data={"name": staff["rep"], "password": PASSWORD, "csrf_token": token,
                                    "next": "//evil.example/"})
    assert r.headers["location"] == "/ask"


def test_session_cookie_holds_a_session_id_and_no_name_or_role(web_app, staff):
    import base64
    import json

    client = sign_in(web_app, staff["rep"])
    raw = client.cookies.get("policydesk_session").split(".")[0]
    data = json.loads(base64.b64decode(raw + "=" * (-len(raw) % 4)))
    # A random session id (the row in `sessions` is the session) and the CSRF token: never the
    # name, the role or anything of the password (tests/test_sessions.py).
    assert set(data) == {"sid", "csrf"} and len(data["sid"]) >= 43
    assert staff["rep"] not in json.dumps(data) and "argon2" not in json.dumps(data)


def test_logout_ends_the_session(web_app, staff):
    client = sign_in(web_app, staff["rep"])
    r = client.post("/logout", data={"csrf_token": token_of(client)})
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert client.get("/ask").status_code == 303


# -- CSRF --------------------------------------------------------------------------------------

def test_post_without_csrf_token_is_rejected(clients):
    client = clients["rep"]
    assert client.post("/ask", data={"question": "What is the timely filing limit?"}).status_code == 403
    assert client.post("/ask", data={"question": "x", "csrf_token": "forged"}).status_code == 403
    assert client.post("/logout").status_code == 403


def test_sign_in_without_csrf_token_is_rejected(web_app, staff):
    client = TestClient(web_app, follow_redirects=False)
    client.get("/login")
    r = client.post("/login", data={"name": staff["rep"], "password": PASSWORD})
    assert r.status_code == 403


def test_htmx_post_with_csrf_header_is_accepted(clients):
    client = clients["rep"]
    r = client.post("/ask", data={"question": "What is the appeal window after a denial?"},
                    headers={"HX-Request": "true", "X-CSRF-Token": token_of(client)})
    assert r.status_code == 200


# -- ask page ----------------------------------------------------------------------------------

def test_ask_page_labels_date_fields_from_the_corpus(clients):
    r = clients["rep"].get("/ask")
    assert r.status_code == 200
    labels = [e["text"].strip() for e in find(r.text, "label") if find(r.text, "fieldset")]
    assert any(t.startswith("Date of service") for t in labels)
    assert any(t.startswith("Date on the denial notice") for t in labels)
    assert {e["attrs"]["name"] for e in find(r.text, "input", type="date")} == {"date_of_service", "denial_notice_date"}


def test_ask_without_date_answers_from_current_version(clients, walkthrough_trace):
    r = ask(clients["rep"], "What is the timely filing limit?")
    assert r.status_code == 200
    assert "90 days" in text_of(r.text, "answer-text")
    assert "Timely Filing of Claims · version 2 · in force 2026-01-01 → open" in text_of(r.text, "answer-window")
    assert "No date entered" in text_of(r.text, "answer-dates")
    assert "version 2 · in force 2026-01-01 → open" in text_of(r.text, "cite-version")
    assert "Policy text, not a written answer" in text_of(r.text, "warnings")
    # No model here: the passage in force is shown under its label, the sentence that answers marked,
    # and its sentences are not repeated as claims.
    assert "Filing Limit · version 2" in text_of(r.text, "passage-source")
    passage = text_of(r.text, "passage-text")
    assert "within 90 days of the date of service" in passage and "cannot override" in passage
    marked = re.findall(r"<mark>(.*?)</mark>", r.text, re.S)
    assert marked and all(m in passage for m in marked) and any("90 days" in m for m in marked)
    assert not by_class(r.text, "claims")
    # the timeline shows both versions of the policy, the current one cited and applying today
    assert by_class(r.text, "timeline")
    cited = by_class(r.text, "tl-seg")
    assert [s["text"] for s in cited if "cited" in s["attrs"]["class"]] == ["v2"]
    assert "Today 2026-11-29" in text_of(r.text, "tl-marker")


def test_ask_with_date_of_service_answers_from_version_in_force(clients):
    r = ask(clients["rep"], "What is the timely filing limit?", date_of_service="2025-11-03")
    assert r.status_code == 200
    assert "180 days" in text_of(r.text, "answer-text")
    assert "version 1 · in force 2024-01-01 → 2025-12-31" in text_of(r.text, "answer-window")
    assert "Date of service 2025-11-03" in text_of(r.text, "answer-dates")
    assert "Date of service 2025-11-03" in text_of(r.text, "tl-marker")


def test_ask_with_bad_date_keeps_form_values(clients):
    r = ask(clients["rep"], "What is the timely filing limit?", date_of_service="2025-13-45")
    assert r.status_code == 422
    assert "not a date" in text_of(r.text, "answer-reason")
    assert find(r.text, "input", name="date_of_service")[0]["attrs"]["value"] == "2025-13-45"
    assert find(r.text, "textarea", name="question")[0]["text"] == "What is the timely filing limit?"


def test_ask_with_empty_question_asks_for_one(clients):
    r = ask(clients["rep"], "   ")
    assert r.status_code == 422
    assert "Type a question" in text_of(r.text, "notice-error")


def test_ask_refusal_is_rendered_with_reason(clients):
    r = ask(clients["rep"], "Member CVM12345678 wants to know the timely filing limit.")
    assert r.status_code == 200
    assert by_class(r.text, "status-refused")
    assert text_of(r.text, "answer-reason").strip()
    assert not by_class(r.text, "answer-text")


def test_ask_htmx_returns_fragment(clients):
    client = clients["rep"]
    r = client.post("/ask", data={"question": "What is the timely filing limit?", "csrf_token": token_of(client)},
                    headers={"HX-Request": "true"})
    assert r.status_code == 200
    assert not find(r.text, "html") and not find(r.text, "form", action="/ask")  # the answer only, not the page
    assert "90 days" in text_of(r.text, "answer-text")


def test_hostile_question_is_escaped_on_ask_page(clients):
    r = ask(clients["rep"], HOSTILE)
    assert r.status_code in (200, 422)
    scripts = [e for e in find(r.text, "script")]
    assert all("alert(1)" not in e["text"] for e in scripts)
    assert all(e["attrs"].get("src") == "/static/htmx.min.js" for e in scripts)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text


# -- citation text on demand ---------------------------------------------------------------------

def _first_citation_url(html: str) -> str:
    return find(html, "a", **{"class": "show-text"})[0]["attrs"]["href"]


def test_citation_fragment_reads_own_trace(clients):
    r = ask(clients["rep"], "What is the timely filing limit?")
    url = _first_citation_url(r.text)
    frag = clients["rep"].get(url, headers={"HX-Request": "true"})
    assert frag.status_code == 200
    assert not find(frag.text, "html")
    assert "90" in text_of(frag.text, "cited-text")
    page = clients["rep"].get(url)
    assert page.status_code == 200 and find(page.text, "html")


def test_citation_of_another_users_trace_is_not_found(clients):
    url = _first_citation_url(ask(clients["rep"], "What is the timely filing limit?").text)
    assert clients["rep2"].get(url).status_code == 404
    assert clients["compliance"].get(url).status_code == 404


@pytest.mark.parametrize("path", ["/citations/not-a-uuid/x", f"/citations/{uuid.uuid4()}/POL-TF:v2:x"])
def test_citation_unknown_is_not_found(clients, path):
    assert clients["rep"].get(path).status_code == 404


def test_citation_unknown_chunk_in_own_trace_is_not_found(clients, walkthrough_trace):
    assert clients["rep"].get(f"/citations/{walkthrough_trace}/POL-XX:v9:nothing").status_code == 404


# -- disputes: who may see them ---------------------------------------------------------------------

def _dispute_requests(trace_id):
    return [
        ("GET", "/disputes", None),
        ("GET", "/disputes?words=timely+filing", None),
        ("GET", "/disputes/audit", None),
        ("GET", f"/disputes/{trace_id}", None),
        ("GET", f"/disputes/{uuid.uuid4()}", None),
        ("POST", f"/disputes/{trace_id}/check", {"member_date": "2025-11-03"}),
        ("POST", f"/disputes/{trace_id}/replay", {"member_date": "2025-11-03"}),
    ]


@pytest.mark.parametrize("role", ["rep", "supervisor"])
@pytest.mark.parametrize("index", range(7))
def test_disputes_are_forbidden_to_other_roles(clients, walkthrough_trace, demo_db, role, index):
    method, path, data = _dispute_requests(walkthrough_trace)[index]
    client = clients[role]
    before = _audit_count(demo_db)
    if method == "POST":
        r = client.post(path, data={**data, "csrf_token": token_of(client)})
    else:
        r = client.get(path)
    assert r.status_code == 403
    assert "compliance reviewers only" in r.text
    assert _audit_count(demo_db) == before  # nothing ran


def _audit_count(db) -> int:
    with Session(db.owner) as session:
        return len(session.scalars(select(AuditEntry.id)).all())


def test_role_change_ends_the_session_and_the_new_role_applies_at_the_next_sign_in(web_app, staff, demo_db):
    # DESIGN step 1: a role change applies at once. It ends the user's sessions (the next request
    # goes to sign-in), and the role is read from the database, never the cookie.
    client = sign_in(web_app, staff["mover"])
    assert client.get("/disputes").status_code == 403
    with Session(demo_db.owner) as session, session.begin():
        set_role(session, name=staff["mover"], role="compliance")
    r = client.get("/disputes")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/disputes"
    client = sign_in(web_app, staff["mover"])
    assert client.get("/disputes").status_code == 200
    with Session(demo_db.owner) as session, session.begin():
        set_role(session, name=staff["mover"], role="rep")
    assert client.get("/disputes").status_code == 303
    assert sign_in(web_app, staff["mover"]).get("/disputes").status_code == 403


# -- disputes: the reviewer's flow ------------------------------------------------------------------

def test_disputes_search_finds_the_answer(clients, walkthrough_trace, staff):
    r = clients["compliance"].get("/disputes", params={"words": "timely filing", "staff": staff["rep"]})
    assert r.status_code == 200
    links = [e["attrs"]["href"] for e in find(r.text, "a") if e["attrs"].get("href", "").startswith("/disputes/")]
    assert f"/disputes/{walkthrough_trace}" in links


def test_disputes_search_empty_form_runs_no_search(clients):
    r = clients["compliance"].get("/disputes")
    assert r.status_code == 200 and not find(r.text, "table")


def test_disputes_search_bad_date_is_a_clear_message(clients):
    r = clients["compliance"].get("/disputes", params={"words": "x", "asked_from": "yesterday"})
    assert r.status_code == 422
    assert "not a date" in text_of(r.text, "notice-error")


def test_disputes_search_htmx_returns_fragment(clients):
    r = clients["compliance"].get("/disputes", params={"words": "timely filing"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and not find(r.text, "html") and find(r.text, "table")


def test_disputes_open_shows_the_answer_as_given(clients, walkthrough_trace, staff):
    r = clients["compliance"].get(f"/disputes/{walkthrough_trace}")
    assert r.status_code == 200
    meta = text_of(r.text, "meta")
    assert staff["rep"] in meta and "rep" in meta and "no date entered" in meta
    assert "90 days" in text_of(r.text, "answer-text")
    assert "version 2 · in force 2026-01-01 → open" in text_of(r.text, "cite-version")
    assert any(e["text"].startswith("Member's date of service") for e in find(r.text, "label"))


def test_disputes_open_unknown_is_not_found(clients):
    assert clients["compliance"].get(f"/disputes/{uuid.uuid4()}").status_code == 404
    assert clients["compliance"].get("/disputes/not-a-trace").status_code == 404


def test_disputes_check_names_the_version_that_applied(clients, walkthrough_trace):
    client = clients["compliance"]
    r = client.post(f"/disputes/{walkthrough_trace}/check",
                    data={"member_date": "2025-11-03", "csrf_token": token_of(client, "/disputes")})
    assert r.status_code == 200
    assert "wrong policy version: version 1 applied, in force 2024-01-01 to 2025-12-31" in text_of(r.text, "verdict-text")
    assert "Date of service: 2025-11-03" in text_of(r.text, "verdict")


def test_disputes_check_htmx_returns_fragment(clients, walkthrough_trace):
    client = clients["compliance"]
    r = client.post(f"/disputes/{walkthrough_trace}/check", data={"member_date": "2026-03-01"},
                    headers={"HX-Request": "true", "X-CSRF-Token": token_of(client, "/disputes")})
    assert r.status_code == 200 and not find(r.text, "html")
    assert {e["text"].strip() for e in by_class(r.text, "verdict-text")} == {"right version"}


def test_disputes_check_without_date_asks_for_one(clients, walkthrough_trace):
    client = clients["compliance"]
    r = client.post(f"/disputes/{walkthrough_trace}/check", data={"member_date": "", "csrf_token": token_of(client, "/disputes")})
    assert r.status_code == 422
    assert "Enter the member's date of service" in text_of(r.text, "notice-error")


def test_disputes_replay_answers_for_the_member_date(clients, walkthrough_trace, staff, demo_db):
    client = clients["compliance"]
    r = client.post(f"/disputes/{walkthrough_trace}/replay",
                    data={"member_date": "2025-11-03", "csrf_token": token_of(client, "/disputes")})
    assert r.status_code == 200
    side = by_class(r.text, "side-by-side")
    assert side
    assert "90 days" in r.text and "180 days" in text_of(r.text, "answer-text")
    assert "version 1 · in force 2024-01-01 → 2025-12-31" in text_of(r.text, "answer-window")
    with Session(demo_db.owner) as session:
        replay = session.scalars(select(Trace).where(Trace.replay_of == walkthrough_trace)
                                 .order_by(Trace.created_at.desc())).first()
    assert replay.kind == "replay" and replay.user_name == staff["compliance"] and replay.user_role == "rep"
    assert replay.dates["date_of_service"] == "2025-11-03"
    # a replay is never found by the search
    hits = client.get("/disputes", params={"words": "timely filing"}).text
    assert f"/disputes/{replay.id}" not in hits


def test_disputes_actions_are_audited(clients, walkthrough_trace, staff, demo_db):
    client = clients["compliance"]
    client.get("/disputes", params={"words": "timely filing"})
    client.get(f"/disputes/{walkthrough_trace}")
    client.post(f"/disputes/{walkthrough_trace}/check", data={"member_date": "2025-11-03", "csrf_token": token_of(client, "/disputes")})
    with Session(demo_db.owner) as session:
        actions = {a for a, in session.execute(select(AuditEntry.action).where(AuditEntry.actor == staff["compliance"]))}
    assert {"search", "open", "check"} <= actions
    r = client.get("/disputes/audit")
    assert r.status_code == 200
    assert {"search", "open", "check"} <= {e["text"] for e in find(r.text, "td")}


def test_hostile_question_is_escaped_on_disputes_page(clients, staff, demo_db):
    ask(clients["rep2"], HOSTILE)
    with Session(demo_db.owner) as session:
        trace_id = session.scalar(select(Trace.id).where(Trace.user_name == staff["rep2"], Trace.question == HOSTILE))
    for r in (clients["compliance"].get(f"/disputes/{trace_id}"),
              clients["compliance"].get("/disputes", params={"staff": staff["rep2"]})):
        assert r.status_code == 200
        assert all("alert(1)" not in e["text"] for e in find(r.text, "script"))
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
