"""The disputes service on the real demo database: search, open, check verdicts, replay, audit."""

from __future__ import annotations

import copy
import uuid
from datetime import date, datetime, timedelta, timezone

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.proof import disputes
from policydesk.contract.answer import AskRequest
from policydesk.storage.models import AuditEntry, Trace
from policydesk.proof.tracing import write_trace
from policydesk.accounts.users import add_user
from tests.served_app import served
from tests.web_helpers import by_class, csrf_from, find, text_of

TODAY = date(2026, 11, 29)


@pytest.fixture(scope="module")
def pipeline(demo_db, settings, embed_model):
    from policydesk.pipeline import build_pipeline

    return build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)


@pytest.fixture(scope="module")
def names(demo_db) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    out = {"rep": f"svc-rep-{tag}", "reviewer": f"svc-comp-{tag}"}
    with Session(demo_db.owner) as session, session.begin():
        add_user(session, name=out["rep"], role="rep", password="svc-rep-password")
        add_user(session, name=out["reviewer"], role="compliance", password="svc-comp-password")
    return out


@pytest.fixture(scope="module")
def answered(pipeline, names, demo_db) -> Trace:
    result = pipeline.ask(AskRequest(user_name=names["rep"], question="What is the timely filing limit?"))
    assert "90 days" in result.answer
    return _trace(demo_db, result.trace_id)


def _trace(db, trace_id) -> Trace:
    with Session(db.owner) as session:
        trace = session.get(Trace, trace_id)
        session.expunge(trace)
    return trace


def _audit(db, actor: str) -> list[AuditEntry]:
    with Session(db.owner) as session:
        return list(session.scalars(select(AuditEntry).where(AuditEntry.actor == actor).order_by(AuditEntry.id)))


def _forged(db, source: Trace, **changes) -> Trace:
    """A stored copy of `source` with edited citations (the cited text as it was at answer time)."""
    citations = copy.deepcopy(source.citations)
    for c in citations:
        c.update(changes)
    new_id = uuid.uuid4()
    write_trace(db, dict(id=new_id, kind="ask", user_name=source.user_name, user_role=source.user_role,
                         permitted_levels=source.permitted_levels, sensitive_cleared=source.sensitive_cleared,
                         question=source.question, dates=source.dates, answer=source.answer,
                         answer_text=source.answer_text, citations=citations))
    return _trace(db, new_id)


# -- search ------------------------------------------------------------------------------------

def test_search_finds_asks_by_words_and_staff(demo_db, answered, names):
    hits = disputes.search(demo_db, "timely filing", names["rep"], None, None, reviewer=names["reviewer"])
    assert answered.id in {h.id for h in hits}
    assert all(h.user_name == names["rep"] for h in hits)


def test_search_excludes_replays_and_eval_runs(demo_db, pipeline, answered, names):
    pipeline.ask(AskRequest(user_name=names["rep"], question="What is the timely filing limit?", kind="eval"))
    replayed = disputes.replay(pipeline, answered, date(2025, 11, 3), reviewer=names["reviewer"])
    hits = disputes.search(demo_db, "timely filing", None, None, None, reviewer=names["reviewer"])
    ids = {h.id for h in hits}
    assert replayed.trace_id not in ids
    with Session(demo_db.owner) as session:
        kinds = set(session.scalars(select(Trace.kind).where(Trace.id.in_(ids))))
    assert kinds == {"ask"}


def test_search_by_asked_dates_is_inclusive(demo_db, answered, names):
    asked = answered.created_at.date()
    same_day = disputes.search(demo_db, None, names["rep"], asked, asked, reviewer=names["reviewer"])
    assert answered.id in {h.id for h in same_day}
    later = disputes.search(demo_db, None, names["rep"], asked + timedelta(days=1), None, reviewer=names["reviewer"])
    assert answered.id not in {h.id for h in later}


def test_search_treats_hostile_words_as_data(demo_db, names):
    hits = disputes.search(demo_db, "'); DROP TABLE traces; --", "x' OR '1'='1", None, None, reviewer=names["reviewer"])
    assert hits == []
    with Session(demo_db.owner) as session:
        assert session.scalar(select(Trace.id).limit(1)) is not None


# -- open ----------------------------------------------------------------------------------------

def test_open_returns_the_stored_answer_and_is_audited(demo_db, answered, names):
    trace = disputes.open(demo_db, answered.id, reviewer=names["reviewer"])
    assert trace.answer["answer"] == answered.answer_text
    assert trace.user_role == "rep" and trace.dates == {"date_of_service": None, "denial_notice_date": None}
    entry = _audit(demo_db, names["reviewer"])[-1]
    assert (entry.action, entry.target) == ("open", str(answered.id))


def test_open_unknown_trace_is_none_and_still_audited(demo_db, names):
    missing = uuid.uuid4()
    assert disputes.open(demo_db, missing, reviewer=names["reviewer"]) is None
    entry = _audit(demo_db, names["reviewer"])[-1]
    assert (entry.action, entry.target, entry.details) == ("open", str(missing), {"found": False})


# -- check ---------------------------------------------------------------------------------------

def test_check_names_the_version_that_applied(demo_db, answered, names):
    verdicts = disputes.check(demo_db, answered, date(2025, 11, 3), reviewer=names["reviewer"])
    assert verdicts and {v.kind for v in verdicts} == {disputes.WRONG}
    assert verdicts[0].text == "wrong policy version: version 1 applied, in force 2024-01-01 to 2025-12-31"
    assert verdicts[0].basis == "date_of_service" and verdicts[0].basis_title == "Date of service"
    entry = _audit(demo_db, names["reviewer"])[-1]
    assert entry.action == "check" and entry.details["member_date"] == "2025-11-03"


def test_check_right_version(demo_db, answered, names):
    verdicts = disputes.check(demo_db, answered, date(2026, 3, 1), reviewer=names["reviewer"])
    assert [v.text for v in verdicts] == ["right version"] * len(verdicts)


def test_check_edited_section_says_so(demo_db, answered, names):
    # The hash stored at answer time no longer matches the text indexed now.
    edited = _forged(demo_db, answered, text_sha256="0" * 64)
    verdicts = disputes.check(demo_db, edited, date(2026, 3, 1), reviewer=names["reviewer"])
    assert {v.text for v in verdicts} == {"right version, but the section was edited since it was cited"}


def test_check_section_gone_says_so(demo_db, answered, names):
    gone = _forged(demo_db, answered, chunk_id="POL-TF:v2:a-section-that-was-removed")
    verdicts = disputes.check(demo_db, gone, date(2026, 3, 1), reviewer=names["reviewer"])
    assert {v.kind for v in verdicts} == {disputes.MISSING}
    assert "no longer exists" in verdicts[0].text


def test_check_before_any_version_says_none_in_force(demo_db, answered, names):
    verdicts = disputes.check(demo_db, answered, date(2023, 6, 1), reviewer=names["reviewer"])
    assert {v.text for v in verdicts} == {"no version in force on that date"}


# -- replay --------------------------------------------------------------------------------------

def test_replay_uses_the_original_role_and_links_the_trace(demo_db, pipeline, answered, names):
    result = disputes.replay(pipeline, answered, date(2025, 11, 3), reviewer=names["reviewer"])
    assert "180 days" in result.answer
    assert {c.version for c in result.citations if c.doc_id == "POL-TF"} == {1}
    replay = _trace(demo_db, result.trace_id)
    assert replay.kind == "replay" and replay.replay_of == answered.id
    assert replay.user_name == names["reviewer"] and replay.user_role == "rep"
    assert list(replay.permitted_levels) == ["public", "internal"] and replay.sensitive_cleared is False
    assert replay.dates["date_of_service"] == "2025-11-03"
    entry = _audit(demo_db, names["reviewer"])[-1]
    assert entry.action == "replay" and entry.details["replay_trace"] == str(result.trace_id)
    assert [r.id for r in disputes.replays_of(demo_db, answered.id, reviewer=names["reviewer"])].count(result.trace_id) == 1


def test_audit_entries_lists_newest_first(demo_db, names):
    disputes.audit(demo_db, actor=names["reviewer"], action="search", details={"words": "first"})
    disputes.audit(demo_db, actor=names["reviewer"], action="search", details={"words": "second"})
    mine = [e for e in disputes.audit_entries(demo_db, reviewer=names["reviewer"]) if e.actor == names["reviewer"]]
    assert mine[0].details["words"] == "second"


# -- the pages, over HTTP: which dates each answer was given for; the audit log, filtered ----------

@pytest.fixture(scope="module")
def site(demo_db, settings, pipeline) -> str:
    from policydesk.web.app import create_app

    with served(create_app(settings, db=demo_db, pipeline=pipeline)) as running:
        yield running.url


def _signed_in(url: str, name: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=url, follow_redirects=False, timeout=120)
    token = csrf_from(client.get("/login").text)
    r = client.post("/login", data={"name": name, "password": password, "csrf_token": token, "next": "/ask"})
    assert r.status_code == 303, r.text
    return client


@pytest.fixture(scope="module")
def reviewer_page(site, names) -> httpx.Client:
    return _signed_in(site, names["reviewer"], "svc-comp-password")


def _page_ask(client: httpx.Client, question: str, **fields) -> None:
    r = client.post("/ask", data={"question": question, "csrf_token": csrf_from(client.get("/ask").text), **fields})
    assert r.status_code == 200 and text_of(r.text, "answer-text"), r.text[:500]


def _row_cells(html: str, trace_id) -> dict[str, str]:
    """The search results row linking to `trace_id`, as {column heading: cell text}."""
    heads = [e["text"].strip() for e in find(html, "th")]
    rows = [row for row in html.split("<tr>")[1:] if f'href="/disputes/{trace_id}"' in row]
    assert len(rows) == 1, f"{trace_id} is listed {len(rows)} times"
    cells = [e["text"].strip() for e in find(rows[0], "td")]
    return dict(zip(heads, cells))


def test_search_results_show_the_dates_each_answer_was_given_for(site, reviewer_page, names, demo_db):
    rep = _signed_in(site, names["rep"], "svc-rep-password")
    _page_ask(rep, "What is the timely filing limit?", date_of_service="2025-11-03")
    _page_ask(rep, "What is the timely filing limit?")
    _page_ask(rep, "What was the timely filing limit for a visit on 6/1/2025?")
    with Session(demo_db.owner) as session:
        dated, undated, written = session.scalars(
            select(Trace.id).where(Trace.user_name == names["rep"], Trace.kind == "ask")
            .order_by(Trace.created_at.desc()).limit(3)).all()[::-1]
    r = reviewer_page.get("/disputes", params={"words": "timely filing", "staff": names["rep"]})
    assert r.status_code == 200
    assert "Dates entered" in [e["text"].strip() for e in find(r.text, "th")]
    assert _row_cells(r.text, dated)["Dates entered"] == "Date of service 2025-11-03"
    assert _row_cells(r.text, undated)["Dates entered"] == "none"
    # A date read from the question was not entered: the column says so, and which date applied.
    assert _row_cells(r.text, written)["Dates entered"] == "none (Date of service 2025-06-01 read from the question)"
    page = reviewer_page.get(f"/disputes/{written}").text
    assert "no date entered (Date of service 2025-06-01 read from the question)" in text_of(page, "meta")


def _audit_rows(html: str) -> list[dict[str, str]]:
    return [{"actor": a["text"], "action": b["text"]}
            for a, b in zip(by_class(html, "audit-actor"), by_class(html, "audit-action"))]


def test_the_audit_log_is_filtered_in_sql_by_action_actor_and_days(reviewer_page, answered, names):
    me = names["reviewer"]
    reviewer_page.get("/disputes", params={"words": "timely filing"})
    reviewer_page.get(f"/disputes/{answered.id}")
    opened = reviewer_page.get("/disputes/audit", params={"action": "open", "actor": me})
    assert opened.status_code == 200
    rows = _audit_rows(opened.text)
    assert rows and {(r["actor"], r["action"]) for r in rows} == {(me, "open")}
    # Details read as key: value, not JSON; the target links to the answer opened.
    assert f'href="/disputes/{answered.id}"' in opened.text
    assert ("found", "yes") in zip([e["text"] for e in find(opened.text, "dt")], [e["text"] for e in find(opened.text, "dd")])
    assert '{"found"' not in opened.text
    searched = reviewer_page.get("/disputes/audit", params={"action": "search", "actor": me})
    assert {r["action"] for r in _audit_rows(searched.text)} == {"search"}
    assert "words" in [e["text"] for e in find(searched.text, "dt")]
    # The action filter offers the actions the log holds; the chosen one stays selected.
    options = [e for e in find(searched.text, "option")]
    assert {"open", "search"} <= {e["attrs"]["value"] for e in options}
    assert [e["attrs"]["value"] for e in options if "selected" in e["attrs"]] == ["search"]
    # Days logged, inclusive (the log is stamped by the database clock, in UTC).
    today = datetime.now(timezone.utc).date()
    on_the_day = reviewer_page.get("/disputes/audit", params={"actor": me, "logged_from": today.isoformat(),
                                                              "logged_to": today.isoformat()})
    assert {"open", "search"} <= {r["action"] for r in _audit_rows(on_the_day.text)}
    before = reviewer_page.get("/disputes/audit", params={"actor": me, "logged_to": (today - timedelta(days=1)).isoformat()})
    assert before.status_code == 200 and _audit_rows(before.text) == []
    assert "Nothing logged matches" in text_of(before.text, "notice")
    nobody = reviewer_page.get("/disputes/audit", params={"actor": f"nobody-{uuid.uuid4().hex[:6]}"})
    assert _audit_rows(nobody.text) == []


@pytest.mark.parametrize("params, message", [
    ({"logged_from": "last week"}, "logged from is not a date; use YYYY-MM-DD"),
    ({"logged_from": "2026-02-01", "logged_to": "2026-01-01"}, "'logged from' (2026-02-01) is after 'logged to' (2026-01-01)."),
    ({"action": "delete_everything"}, "No action 'delete_everything' is logged"),
])
def test_an_unreadable_audit_filter_is_a_clear_error_and_lists_nothing(reviewer_page, params, message):
    r = reviewer_page.get("/disputes/audit", params=params)
    assert r.status_code == 422
    assert message in text_of(r.text, "notice-error")
    assert not find(r.text, "table")
