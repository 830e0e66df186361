"""Issue 19: the JSON API, /api/v1, per role, on the demo corpus through the real pipeline and
a real Postgres. Tokens come from the owner login, as `policydesk tokens create` makes them."""

from __future__ import annotations

import json
import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.contract.answer import AskRequest
from policydesk.storage.models import AuditEntry, Trace
from policydesk.web.api.schemas import AnswerOut
from policydesk.web.app import create_app
from tests.api_helpers import bearer, change_role, is_problem, make_token

TIMELY = "What is the timely filing limit?"


@pytest.fixture(scope="module")
def api_app(settings, demo_db, pipeline):
    # A generous limit here; tests/test_api_tokens.py checks the limit itself.
    return create_app(settings.model_copy(update={"API_RATE_LIMIT": 10_000}), db=demo_db, pipeline=pipeline)


@pytest.fixture(scope="module")
def tokens(demo_db, staff) -> dict[str, str]:
    return {key: make_token(demo_db, name) for key, name in staff.items()}


@pytest.fixture(scope="module")
def api(api_app) -> TestClient:
    return TestClient(api_app)


def _traces(db, user_name: str) -> list[Trace]:
    with Session(db.owner) as session:
        return list(session.scalars(select(Trace).where(Trace.user_name == user_name).order_by(Trace.created_at)))


def _audit(db, actor: str) -> list[AuditEntry]:
    with Session(db.owner) as session:
        return list(session.scalars(select(AuditEntry).where(AuditEntry.actor == actor).order_by(AuditEntry.id)))


def test_ask_returns_the_same_json_as_the_cli(api, tokens, staff, pipeline, demo_db):
    r = api.post("/api/v1/ask", json={"question": TIMELY}, headers=bearer(tokens["rep"]))
    assert r.status_code == 200, r.text
    body = r.json()
    local = pipeline.ask(AskRequest(user_name=staff["rep"], question=TIMELY)).to_json()
    assert set(body) == set(local)
    for key in ("answer", "citations", "claims", "refused", "warnings", "degraded", "role", "user"):
        assert body[key] == local[key], key
    AnswerOut.model_validate(body)
    assert body["citations"] and all(c["text_sha256"] and c["effective_from"] for c in body["citations"])
    assert "90" in body["answer"] and {c["version"] for c in body["citations"] if c["source_type"] == "policy"} == {2}
    trace = next(t for t in _traces(demo_db, staff["rep"]) if str(t.id) == body["trace_id"])
    assert trace.user_role == "rep" and trace.kind == "ask"


def test_ask_with_a_date_of_service_cites_the_version_in_force(api, tokens):
    r = api.post("/api/v1/ask", json={"question": TIMELY, "date_of_service": "2025-11-03"}, headers=bearer(tokens["rep"]))
    assert r.status_code == 200, r.text
    body = r.json()
    assert "180" in body["answer"]
    assert body["dates"]["date_of_service"] == "2025-11-03"
    assert {c["version"] for c in body["citations"] if c["source_type"] == "policy"} == {1}


def test_refusal_is_problem_json_carrying_the_answer(api, tokens, demo_db, staff):
    r = api.post("/api/v1/ask", json={"question": "Approve claim 4471 for payment please"},
                 headers=bearer(tokens["rep"]))
    body = is_problem(r, 422, "refused")
    assert body["refused"] is True and body["refusal_code"] == "claim_action" and body["answer"] == ""
    assert body["detail"] == body["refusal_reason"]
    assert any(str(t.id) == body["trace_id"] and t.refused for t in _traces(demo_db, staff["rep"]))


BAD_INPUT = [
    ({"question": TIMELY, "date_of_service": "03/11/2025"}, "invalid_date", "date_of_service"),
    ({"question": TIMELY, "denial_notice_date": "2025-02-30"}, "invalid_date", "denial_notice_date"),
    ({"question": TIMELY, "date_of_service": "2025-11-03", "denial_notice_date": "2025-01-01"}, "invalid_date",
     "denial_notice_date"),
    ({"question": TIMELY, "line_of_business": "medicare"}, "unknown_line_of_business", "line_of_business"),
    ({"question": TIMELY, "asked_by": "someone"}, "invalid_request", "asked_by"),
    ({"question": 42}, "invalid_request", "question"),
    ({}, "invalid_request", "question"),
    ({"question": "   "}, "invalid_request", "question"),
    ({"question": "x" * 1001}, "invalid_request", "question"),
    ({"question": "timely\x00filing"}, "invalid_request", "question"),
    ({"question": "timely \ud800 filing"}, "invalid_request", "question"),
    ([TIMELY], "invalid_request", "body"),
]


@pytest.mark.parametrize("payload,kind,field", BAD_INPUT, ids=[f"{k}-{f}-{i}" for i, (_, k, f) in enumerate(BAD_INPUT)])
def test_bad_input_is_422_naming_the_field_and_traced(api, tokens, demo_db, staff, payload, kind, field):
    raw = json.dumps(payload).encode()
    r = api.post("/api/v1/ask", content=raw, headers={**bearer(tokens["rep2"]), "Content-Type": "application/json"})
    body = is_problem(r, 422, kind)
    assert [e["field"] for e in body["errors"]][0] == field
    trace = next(t for t in _traces(demo_db, staff["rep2"]) if str(t.id) == body["trace_id"])
    assert trace.status == "failed" and trace.user_role == "rep" and trace.answer_text == ""
    # the trace says why, in the words of whichever check refused it (the pipeline's for dates and product)
    assert body["errors"][0]["message"] in trace.error
    assert body["detail"] == f"{field}: {body['errors'][0]['message']}" or kind == "invalid_request"


@pytest.mark.parametrize("payload,detail", [
    ({"date_of_service": "03/11/2025"}, "date_of_service: date of service is not a date; use YYYY-MM-DD"),
    ({"denial_notice_date": "2025-02-30"}, "denial_notice_date: denial notice date is not a date; use YYYY-MM-DD"),
    ({"date_of_service": "1850-01-01"}, "date_of_service: date of service is outside 1900-2100"),
    ({"date_of_service": "2025-11-03", "denial_notice_date": "2025-01-01"},
     "denial_notice_date: the denial notice date 2025-01-01 is before the date of service 2025-11-03"),
])
def test_date_problems_come_from_the_pipelines_check_word_for_word(api, tokens, payload, detail):
    body = is_problem(api.post("/api/v1/ask", json={"question": TIMELY, **payload}, headers=bearer(tokens["rep2"])),
                      422, "invalid_date")
    assert body["detail"] == detail and body["title"] == "A date is not valid" and body["trace_id"]


@pytest.mark.parametrize("raw,message", [(b"{not json", "is not valid JSON"), (b"", "must be a JSON object"),
                                         (b'{"question": "' + b"a" * 20_000 + b'"}', "larger than")])
def test_malformed_or_oversize_body_is_422_naming_the_body(api, tokens, raw, message):
    r = api.post("/api/v1/ask", content=raw, headers={**bearer(tokens["rep2"]), "Content-Type": "application/json"})
    body = is_problem(r, 422, "invalid_request")
    assert body["errors"][0]["field"] == "body" and message in body["errors"][0]["message"]
    assert body["trace_id"]  # the token's user is known: traced as a failed ask


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic cmVwOnJlcA=="},
                                     {"Authorization": "Bearer pdk_000000000000_" + "A" * 43}])
def test_no_valid_token_is_401_problem_never_a_page(api, headers):
    for method, path in (("post", "/api/v1/ask"), ("get", "/api/v1/versions/POL-TF"), ("get", "/api/v1/traces"),
                         ("get", f"/api/v1/citations/{uuid.uuid4()}/x"), ("post", f"/api/v1/traces/{uuid.uuid4()}/check")):
        r = getattr(api, method)(path, headers=headers, **({"json": {"question": TIMELY}} if method == "post" else {}))
        body = is_problem(r, 401, "unauthorized")
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "<html" not in r.text.lower() and body["instance"] == path


def test_a_signed_in_browser_session_does_not_open_the_api(api_app, clients):
    browser = clients["compliance"]  # has a session cookie and a CSRF token
    browser_app_client = TestClient(api_app, cookies=browser.cookies)
    is_problem(browser_app_client.get("/api/v1/traces"), 401, "unauthorized")
    is_problem(browser_app_client.post("/api/v1/ask", json={"question": TIMELY}), 401, "unauthorized")


def test_unknown_api_paths_and_methods_are_problems(api, tokens):
    is_problem(api.get("/api/v1/nothing-here", headers=bearer(tokens["rep"])), 404, "not_found")
    is_problem(api.delete("/api/v1/ask", headers=bearer(tokens["rep"])), 405, "method_not_allowed")


@pytest.mark.parametrize("role", ["rep", "supervisor"])
def test_other_roles_get_403_on_compliance_endpoints_and_it_is_audited(api, tokens, demo_db, staff, role):
    before = len(_audit(demo_db, staff[role]))
    is_problem(api.get("/api/v1/traces", params={"words": "timely"}, headers=bearer(tokens[role])), 403, "forbidden")
    is_problem(api.post(f"/api/v1/traces/{uuid.uuid4()}/check", json={"member_date": "2025-11-03"},
                        headers=bearer(tokens[role])), 403, "forbidden")
    rows = _audit(demo_db, staff[role])[before:]
    assert [(r.action, r.details["status"]) for r in rows] == [("api_problem", 403), ("api_problem", 403)]


def test_walkthrough_search_and_check_mirror_the_disputes_page(api, tokens, demo_db, staff):
    asked = api.post("/api/v1/ask", json={"question": TIMELY}, headers=bearer(tokens["mover"])).json()
    found = api.get("/api/v1/traces", params={"staff": staff["mover"], "words": "timely filing"},
                    headers=bearer(tokens["compliance"]))
    assert found.status_code == 200, found.text
    hit = next(h for h in found.json()["traces"] if h["id"] == asked["trace_id"])
    assert hit["user_role"] == "rep" and "90" in hit["answer_text"]
    check = api.post(f"/api/v1/traces/{asked['trace_id']}/check", json={"member_date": "2025-11-03"},
                     headers=bearer(tokens["compliance"]))
    assert check.status_code == 200, check.text
    policy = [v for v in check.json()["verdicts"] if v["cited_version"] == 2]
    assert policy and all(v["verdict"] == "wrong_version" and v["applied_version"] == 1 for v in policy)
    assert policy[0]["text"] == "wrong policy version: version 1 applied, in force 2024-01-01 to 2025-12-31"
    actions = [(e.action, e.target) for e in _audit(demo_db, staff["compliance"])][-2:]
    assert actions == [("search", ""), ("check", asked["trace_id"])]


def test_compliance_input_errors_name_the_field(api, tokens):
    body = is_problem(api.get("/api/v1/traces", params={"asked_from": "yesterday"}, headers=bearer(tokens["compliance"])),
                      422, "invalid_date")
    assert body["errors"][0]["field"] == "asked_from"
    some = str(uuid.uuid4())
    body = is_problem(api.post(f"/api/v1/traces/{some}/check", json={"member_date": "11/03/2025"},
                               headers=bearer(tokens["compliance"])), 422, "invalid_date")
    assert body["errors"][0]["field"] == "member_date"
    body = is_problem(api.post(f"/api/v1/traces/{some}/check", json={"member_date": "2025-11-03", "x": 1},
                               headers=bearer(tokens["compliance"])), 422, "invalid_request")
    assert body["errors"][0]["field"] == "x"
    is_problem(api.post(f"/api/v1/traces/{some}/check", json={"member_date": "2025-11-03"},
                        headers=bearer(tokens["compliance"])), 404, "not_found")
    is_problem(api.post("/api/v1/traces/not-a-uuid/check", json={"member_date": "2025-11-03"},
                        headers=bearer(tokens["compliance"])), 404, "not_found")


def test_versions_shows_the_timeline_the_caller_may_see(api, tokens):
    r = api.get("/api/v1/versions/POL-TF", headers=bearer(tokens["rep"]))
    assert r.status_code == 200, r.text
    versions = r.json()["versions"]
    assert [(v["version"], v["effective_from"], v["effective_to"], v["status"]) for v in versions] == [
        (1, "2024-01-01", "2025-12-31", "past"), (2, "2026-01-01", None, "in_force")]
    # A restricted document is not found for a rep, exactly like a missing one; compliance sees it.
    is_problem(api.get("/api/v1/versions/POL-SIU", headers=bearer(tokens["rep"])), 404, "not_found")
    missing = api.get("/api/v1/versions/POL-NOPE", headers=bearer(tokens["rep"]))
    assert missing.json()["detail"] == api.get("/api/v1/versions/POL-SIU", headers=bearer(tokens["rep"])).json()["detail"]
    assert api.get("/api/v1/versions/POL-SIU", headers=bearer(tokens["compliance"])).status_code == 200


def test_demoted_token_acts_with_the_new_role_on_the_next_call(api, demo_db, staff):
    name = staff["mover"]
    token = make_token(demo_db, name)
    is_problem(api.get("/api/v1/traces", headers=bearer(token)), 403, "forbidden")
    change_role(demo_db, name, "compliance")
    try:
        assert api.get("/api/v1/traces", headers=bearer(token)).status_code == 200
        assert api.get("/api/v1/versions/POL-SIU", headers=bearer(token)).status_code == 200
    finally:
        change_role(demo_db, name, "rep")
    is_problem(api.get("/api/v1/traces", headers=bearer(token)), 403, "forbidden")
    is_problem(api.get("/api/v1/versions/POL-SIU", headers=bearer(token)), 404, "not_found")
    asked = api.post("/api/v1/ask", json={"question": TIMELY}, headers=bearer(token)).json()
    assert asked["role"] == "rep"


def test_openapi_documents_every_answer_field(api, pipeline, staff):
    r = api.get("/openapi.json")
    assert r.status_code == 200
    schema = r.json()
    assert set(schema["paths"]) == {"/api/v1/ask", "/api/v1/citations/{trace_id}/{chunk_id}", "/api/v1/versions/{doc_id}",
                                    "/api/v1/traces", "/api/v1/traces/{trace_id}/check", "/api/v1/feedback",
                                    "/api/v1/sources/changed"}
    notice = schema["paths"]["/api/v1/sources/changed"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(notice["properties"]) == {"paths", "ids"} and notice["additionalProperties"] is False
    answer = schema["components"]["schemas"]["AnswerOut"]["properties"]
    local = pipeline.ask(AskRequest(user_name=staff["rep"], question=TIMELY)).to_json()
    assert set(answer) == set(local)
    ask_body = schema["paths"]["/api/v1/ask"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(ask_body["properties"]) == {"question", "date_of_service", "denial_notice_date", "line_of_business"}
    assert ask_body["additionalProperties"] is False
    assert schema["components"]["securitySchemes"]["token"]["scheme"] == "bearer"
