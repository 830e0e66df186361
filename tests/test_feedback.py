"""Feedback on answers (issue 20): round trip over HTTP, screening of the note, append-only storage,
and the disputes pages that show and search it."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.orm import Session

from policydesk.storage.models import Feedback, Trace
from policydesk.storage.clearance import NO_SOURCES
from policydesk.storage.scope import permitted_scope
from tests.web_helpers import ask, by_class, find, text_of, token_of


def _last_trace(db, user: str) -> uuid.UUID:
    with Session(db.owner) as s:
        return s.scalar(select(Trace.id).where(Trace.user_name == user, Trace.kind == "ask")
                        .order_by(Trace.seq.desc()).limit(1))


def _feedback_rows(db, trace_id) -> list[Feedback]:
    with Session(db.owner) as s:
        return list(s.scalars(select(Feedback).where(Feedback.trace_id == trace_id).order_by(Feedback.id)))


def _give(client, trace_id, **data):
    return client.post(f"/feedback/{trace_id}", data={"csrf_token": token_of(client), **data},
                       headers={"HX-Request": "true"})


def test_feedback_round_trip_from_ask_page_to_disputes(clients, staff, demo_db):
    rep = clients["rep"]
    page = ask(rep, "How long does a provider have to file a claim?")
    forms = find(page.text, "form")
    trace_id = _last_trace(demo_db, staff["rep"])
    assert any(f["attrs"].get("action") == f"/feedback/{trace_id}" for f in forms), "the answer offers feedback"

    r = _give(rep, trace_id, verdict="wrong", reason="wrong_version", note="The provider says 180 days applied.")
    assert r.status_code == 200
    assert "Thank you: recorded as “Wrong or unclear” (Wrong version)" in text_of(r.text, "feedback-recorded")
    [row] = _feedback_rows(demo_db, trace_id)
    assert (row.user_name, row.verdict, row.reason, row.note) == (
        staff["rep"], "wrong", "wrong_version", "The provider says 180 days applied.")

    reviewer = clients["compliance"]
    shown = reviewer.get(f"/disputes/{trace_id}").text
    assert "Wrong or unclear · Wrong version" in text_of(shown, "staff-feedback")
    assert "The provider says 180 days applied." in text_of(shown, "staff-feedback")
    hits = reviewer.get("/disputes", params={"staff": staff["rep"], "marked_wrong": "1"}).text
    linked = {a["attrs"]["href"] for a in find(hits, "a") if a["attrs"].get("href", "").startswith("/disputes/")}
    assert f"/disputes/{trace_id}" in linked
    assert by_class(hits, "tag-wrong")


def test_only_answers_marked_wrong_are_listed_when_asked(clients, staff, demo_db):
    rep2 = clients["rep2"]
    ask(rep2, "What is the appeal deadline?")
    helpful = _last_trace(demo_db, staff["rep2"])
    assert _give(rep2, helpful, verdict="helpful").status_code == 200
    ask(rep2, "How long does an appeal take?")
    unmarked = _last_trace(demo_db, staff["rep2"])
    hits = clients["compliance"].get("/disputes", params={"staff": staff["rep2"], "marked_wrong": "1"}).text
    listed = {a["attrs"]["href"] for a in find(hits, "a")}
    assert f"/disputes/{helpful}" not in listed and f"/disputes/{unmarked}" not in listed
    everything = clients["compliance"].get("/disputes", params={"staff": staff["rep2"]}).text
    assert f"/disputes/{helpful}" in {a["attrs"]["href"] for a in find(everything, "a")}


@pytest.mark.parametrize("note", [
    "member CVM12345678 called about this",
    "caller SSN 123-45-6789 says it is wrong",
])
def test_a_note_with_a_member_identifier_is_refused_and_not_stored(clients, staff, demo_db, note):
    rep = clients["rep"]
    ask(rep, "What is the timely filing limit?")
    trace_id = _last_trace(demo_db, staff["rep"])
    r = _give(rep, trace_id, verdict="wrong", reason="other", note=note)
    assert r.status_code == 422
    assert "looks like a member identifier" in text_of(r.text, "notice-error") and "Nothing was saved" in r.text
    assert _feedback_rows(demo_db, trace_id) == []
    with demo_db.owner.connect() as conn:  # never stored raw anywhere in the table
        assert conn.execute(text("SELECT count(*) FROM feedback WHERE note LIKE '%5678%'")).scalar_one() == 0


def test_feedback_only_on_ones_own_answer(clients, staff, demo_db):
    ask(clients["rep"], "What is the timely filing limit?")
    someone_elses = _last_trace(demo_db, staff["rep"])
    r = _give(clients["rep2"], someone_elses, verdict="wrong")
    assert r.status_code == 422 and "No answer of yours with that id." in r.text
    assert _give(clients["rep2"], "not-a-uuid", verdict="wrong").status_code == 422
    assert _give(clients["rep2"], uuid.uuid4(), verdict="maybe").status_code == 422


@pytest.mark.parametrize("statement", ["UPDATE feedback SET verdict = 'helpful'", "DELETE FROM feedback",
                                       "TRUNCATE feedback"])
def test_feedback_is_append_only_for_the_app(demo_db, statement):
    with pytest.raises(ProgrammingError, match="permission denied"):
        with permitted_scope(NO_SOURCES, user_name="anyone", all_traces=True), demo_db.app.begin() as conn:
            conn.execute(text(statement))


def test_staff_cannot_read_each_others_feedback(clients, staff, demo_db):
    from policydesk.proof.feedback import feedback_for

    ask(clients["rep"], "What is the timely filing limit?")
    trace_id = _last_trace(demo_db, staff["rep"])
    _give(clients["rep"], trace_id, verdict="helpful")
    assert [f.user_name for f in feedback_for(demo_db, trace_id, user_name=staff["rep"])] == [staff["rep"]]
    assert feedback_for(demo_db, trace_id, user_name=staff["rep2"]) == []
    assert feedback_for(demo_db, trace_id, user_name="reviewer", all_users=True)


# -- the same through the JSON API ----------------------------------------------------------------

@pytest.fixture(scope="module")
def api(settings, demo_db, pipeline):
    from fastapi.testclient import TestClient

    from policydesk.web.app import create_app

    return TestClient(create_app(settings.model_copy(update={"API_RATE_LIMIT": 10_000}), db=demo_db,
                                 pipeline=pipeline))


def test_feedback_through_the_api(api, staff, demo_db):
    from tests.api_helpers import bearer, make_token

    rep, rep2 = bearer(make_token(demo_db, staff["rep"])), bearer(make_token(demo_db, staff["rep2"]))
    answer = api.post("/api/v1/ask", json={"question": "What is the timely filing limit?"}, headers=rep).json()
    tid = answer["trace_id"]
    r = api.post("/api/v1/feedback", json={"trace_id": tid, "verdict": "wrong", "reason": "wrong_policy",
                                           "note": "Should cite the corrected-claims policy."}, headers=rep)
    assert r.status_code == 200, r.text
    assert r.json() == {"trace_id": tid, "verdict": "wrong", "reason": "wrong_policy",
                        "note": "Should cite the corrected-claims policy.", "recorded": True}
    assert [(f.verdict, f.reason) for f in _feedback_rows(demo_db, uuid.UUID(tid))] == [("wrong", "wrong_policy")]

    bad = api.post("/api/v1/feedback", json={"trace_id": tid, "verdict": "wrong",
                                             "note": "member CVM12345678 disagrees"}, headers=rep)
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
    assert bad.json()["errors"][0]["field"] == "note"
    theirs = api.post("/api/v1/feedback", json={"trace_id": tid, "verdict": "helpful"}, headers=rep2)
    assert theirs.status_code == 404 and theirs.json()["type"] == "not_found"
    unknown = api.post("/api/v1/feedback", json={"trace_id": tid, "verdict": "meh"}, headers=rep)
    assert unknown.status_code == 422 and unknown.json()["errors"][0]["field"] == "verdict"
    assert len(_feedback_rows(demo_db, uuid.UUID(tid))) == 1  # nothing else was stored
