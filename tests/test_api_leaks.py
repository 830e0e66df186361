"""Issue 19: for every role, nothing above its clearance comes back from any /api/v1 endpoint:
answers, cited text, version timelines, trace search and checks. Same probes and the same
checker as tests/test_page_leaks.py, with a positive control (a deliberately unscoped pipeline
behind the same API must be reported) so the check itself is shown able to fail."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.accounts.access import clearance_for
from policydesk.evals.leaks import ChunkCatalog
from policydesk.pipeline import AskPipeline
from policydesk.accounts.users import add_user
from policydesk.web.app import create_app
from tests.api_helpers import bearer, change_role, is_problem, make_token
from tests.conftest import WEB_TODAY
from tests.web_helpers import PASSWORD

PROBES = [
    "What happens after a member calls three times in a month about the same problem?",
    "How should a caller in a behavioral health crisis be handled?",
    "What should I do when a caller says billed services were never received?",
    "How are specialist visits reimbursed to providers?",
    "How quickly must member complaints be reported?",
    "How many calls per representative are reviewed each month, and what score passes?",
    "What is the timely filing limit?",
    "What is the SIU procedure for a fraud referral?",
]
SIU_QUESTION = "What is the SIU procedure for a fraud referral?"


def _client(settings, db, pipeline) -> TestClient:
    return TestClient(create_app(settings.model_copy(update={"API_RATE_LIMIT": 10_000}), db=db, pipeline=pipeline))


def _doc_ids(db) -> list[str]:
    with db.owner.connect() as conn:
        return list(conn.execute(text("SELECT DISTINCT doc_id FROM document_versions ORDER BY doc_id")).scalars())


def _everything(api: TestClient, token: str, doc_ids: list[str]) -> str:
    """Every API response this caller can get on the probes, their citations and every document."""
    out, auth = [], bearer(token)
    for q in PROBES:
        r = api.post("/api/v1/ask", json={"question": q}, headers=auth)
        out.append(r.text)
        body = r.json()
        for c in body.get("citations", []):
            out.append(api.get(f"/api/v1/citations/{body['trace_id']}/{quote(c['chunk_id'], safe='')}", headers=auth).text)
        if body.get("trace_id"):
            out.append(api.post(f"/api/v1/traces/{body['trace_id']}/check", json={"member_date": "2025-11-03"},
                                headers=auth).text)
    out += [api.get(f"/api/v1/versions/{d}", headers=auth).text for d in doc_ids]
    out.append(api.get("/api/v1/traces", params={"words": "referral"}, headers=auth).text)
    return "\n".join(out)


@pytest.fixture(scope="module")
def catalog(demo_db) -> ChunkCatalog:
    return ChunkCatalog(demo_db)


@pytest.fixture(scope="module")
def callers(demo_db) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    names = {role: f"api-leak-{role}-{tag}" for role in ("rep", "supervisor", "compliance")}
    with Session(demo_db.owner) as session, session.begin():
        for role, name in names.items():
            add_user(session, name=name, role=role, password=PASSWORD)
    return names


@pytest.fixture(scope="module")
def responses(settings, demo_db, pipeline, callers) -> dict[str, str]:
    api, docs = _client(settings, demo_db, pipeline), _doc_ids(demo_db)
    return {role: _everything(api, make_token(demo_db, name), docs) for role, name in callers.items()}


@pytest.mark.parametrize("role", ["rep", "supervisor", "compliance"])
def test_nothing_above_clearance_comes_back_from_the_api(role, responses, catalog):
    assert catalog.restricted_in_text(role, responses[role]) == set()


def test_probes_do_reach_restricted_text_when_cleared(responses, catalog):
    assert catalog.restricted_in_text("rep", responses["compliance"]), "the probes never surfaced text a rep may not see"
    assert catalog.restricted_in_text("rep", responses["supervisor"])


class _UnscopedPipeline(AskPipeline):
    """Deliberately leaky: every caller is given compliance clearance (the positive control)."""

    def _resolve_role(self, req):
        role, _ = super()._resolve_role(req)
        return role, clearance_for("compliance")


def test_positive_control_an_unscoped_api_is_reported(settings, demo_db, pipeline, callers, catalog):
    leaky = _UnscopedPipeline(demo_db, settings, pipeline.embed_model, pipeline.llm, today=WEB_TODAY)
    api = _client(settings, demo_db, leaky)
    leaked = catalog.restricted_in_text("rep", _everything(api, make_token(demo_db, callers["rep"]), []))
    assert leaked, "the API leak check did not notice an unscoped pipeline: the check itself is broken"


def test_cited_text_follows_todays_clearance_and_stays_with_its_owner(settings, demo_db, pipeline, catalog):
    api = _client(settings, demo_db, pipeline)
    name = f"api-demoted-{uuid.uuid4().hex[:6]}"
    other = f"api-other-{uuid.uuid4().hex[:6]}"
    with Session(demo_db.owner) as session, session.begin():
        add_user(session, name=name, role="supervisor", password=PASSWORD)
        add_user(session, name=other, role="compliance", password=PASSWORD)
    token, other_token = make_token(demo_db, name), make_token(demo_db, other)
    answer = api.post("/api/v1/ask", json={"question": SIU_QUESTION}, headers=bearer(token)).json()
    siu = [c["chunk_id"] for c in answer["citations"] if c["doc_id"] == "POL-SIU"]
    assert siu, "the supervisor's answer should cite the SIU procedure"
    url = f"/api/v1/citations/{answer['trace_id']}/{quote(siu[0], safe='')}"
    shown = api.get(url, headers=bearer(token))
    assert shown.status_code == 200 and catalog.restricted_in_text("rep", shown.text)

    def same_as_missing(response):
        missing = api.get(f"/api/v1/citations/{answer['trace_id']}/POL-NOPE%3Av1%3Ax", headers=bearer(token))
        strip = lambda b: {k: v for k, v in b.items() if k != "instance"}  # noqa: E731
        assert strip(is_problem(response, 404, "not_found")) == strip(missing.json())

    same_as_missing(api.get(url, headers=bearer(other_token)))  # another user's trace, even for compliance
    change_role(demo_db, name, "rep")
    try:
        same_as_missing(api.get(url, headers=bearer(token)))  # the very next call, same token
    finally:
        change_role(demo_db, name, "supervisor")
    assert api.get(url, headers=bearer(token)).status_code == 200
