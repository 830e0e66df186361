"""Bounded inputs, labels and logs (issue 49, points 4, 5, 6 and 8), over the public interface.

- A made-up HTTP method or path adds no metric label set: the method label is one of the standard
  methods or "other", the route label a route template or "unmatched".
- A question over POLICYDESK_MAX_QUESTION_CHARS is refused before any other work on every entry
  point (the ask form, the API, `policydesk ask`), with a clear error; the web and the API trace the
  refusal without the question's text; a form body past its limit is never read.
- Every refused web ask is traced like the API's (empty question, a NUL in any field, too long).
- The server log and the audit log carry no caller text as sent: a request id is kept only when
  well-formed and identifier-free, the access line names the route template (never the path), and
  the disputes staff filter is screened before the audit log.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from policydesk.ops import metrics
from policydesk.storage.storable import WITHHELD
from policydesk.web.app import create_app
from tests.api_helpers import bearer, is_problem, make_token
from tests.served_app import marks, rows_since, served, stored_text_since
from tests.web_helpers import sign_in, text_of, token_of

CLI = str(Path(sys.executable).parent / "policydesk")
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}  # the label values a method may take
REPO = Path(__file__).resolve().parent.parent
TIMELY = "What is the timely filing limit?"


def _series(body: str, label: str) -> set[str]:
    return set(re.findall(rf'policydesk_http_request_seconds_count\{{[^}}]*{label}="([^"]*)"', body))


# -- 4: metric labels come from a closed set ------------------------------------------------------

def test_made_up_methods_and_paths_add_no_metric_label_sets(web_app):
    client = TestClient(web_app)
    for i in range(12):
        client.request(f"PROBE{i}" + "X" * 40 * i, "/ask")
        client.request(f"BREW{i}", f"/api/v1/versions/CVM{i:08d}")
        client.get(f"/no-such-page/{i}-512-44-{9000 + i}")
    body = metrics.exposition().decode()
    assert _series(body, "method") <= METHODS | {"other"}, _series(body, "method")
    assert "other" in _series(body, "method")
    routes = _series(body, "route")
    assert not any("CVM" in r or "no-such-page" in r or "512-44" in r for r in routes), routes
    assert "unmatched" in routes
    before = len(re.findall(r"policydesk_http_request_seconds_count\{", body))
    for i in range(12, 30):  # more made-up methods and paths: no new series
        client.request(f"PROBE{i}", "/ask")
        client.get(f"/no-such-page/{i}")
    after = len(re.findall(r"policydesk_http_request_seconds_count\{", metrics.exposition().decode()))
    assert after == before


# -- 5 and 8: the question cap, and every refused web ask traced ----------------------------------

def _only_trace(demo_db, since, user: str) -> dict:
    rows = [r for r in rows_since(demo_db, since, "traces") if r["user_name"] == user]
    assert len(rows) == 1, [(r["question"][:40], r["error"]) for r in rows]
    return rows[0]


def test_a_question_over_the_cap_is_refused_before_any_work_on_the_ask_form(clients, staff, demo_db):
    rep = clients["rep"]
    csrf = token_of(rep)
    huge = f"{TIMELY} The member's ID is CVM12345678. " * 20_000  # about 1 MB
    for question, headers in ((huge, {"HX-Request": "true", "X-CSRF-Token": csrf}),  # the page's own htmx post
                              ("x" * 1001, {})):  # a plain form post just over the cap
        since = marks(demo_db)
        r = rep.post("/ask", data={"question": question, "csrf_token": csrf}, headers=headers)
        assert r.status_code == 422, r.status_code
        assert "longer than 1000 characters" in r.text
        trace = _only_trace(demo_db, since, staff["rep"])
        assert trace["status"] == "failed" and trace["question"] == ""
        assert trace["error"] == "question: is longer than 1000 characters"
        assert "refusal_gate" not in trace["stage_ms"], "the gate read an over-long question"
        stored = " ".join(" ".join(v) for v in stored_text_since(demo_db, since).values())
        assert "timely filing" not in stored.lower() and "xxxx" not in stored and "CVM12345678" not in stored
    # A body past the form limit with no CSRF header cannot be checked, so nothing is done with it.
    since = marks(demo_db)
    r = rep.post("/ask", data={"question": huge, "csrf_token": csrf})
    assert r.status_code == 413 and "up to 1000 characters" in r.text
    assert rows_since(demo_db, since, "traces") == []


def test_the_cap_is_a_setting_on_the_ask_form(settings, demo_db, pipeline, staff):
    narrow = create_app(settings.model_copy(update={"MAX_QUESTION_CHARS": 40}), db=demo_db, pipeline=pipeline)
    rep = sign_in(narrow, staff["rep2"])
    since = marks(demo_db)
    r = rep.post("/ask", data={"question": TIMELY + " Quickly please.", "csrf_token": token_of(rep)})
    assert r.status_code == 422 and "longer than 40 characters" in r.text
    assert 'maxlength="40"' in rep.get("/ask").text
    assert _only_trace(demo_db, since, staff["rep2"])["error"] == "question: is longer than 40 characters"


def test_a_question_over_the_cap_via_the_api_is_traced_without_its_text(demo_db, web_app, staff):
    client = TestClient(web_app)
    token = make_token(demo_db, staff["rep"])
    since = marks(demo_db)
    r = client.post("/api/v1/ask", json={"question": "timely filing " * 100}, headers=bearer(token))
    body = is_problem(r, 422, "invalid_request")
    assert body["detail"] == "question: is longer than 1000 characters"
    trace = _only_trace(demo_db, since, staff["rep"])
    assert trace["question"] == "" and trace["error"] == "question: is longer than 1000 characters"


def test_policydesk_ask_refuses_a_question_over_the_cap_before_opening_anything(tmp_path):
    env = dict(os.environ, POLICYDESK_DATA_DIR=str(tmp_path / "data"), POLICYDESK_MAX_QUESTION_CHARS="40",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    env.pop("DATABASE_URL", None)
    done = subprocess.run([CLI, "ask", TIMELY + " Quickly please.", "--as", "nobody"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "longer than 40 characters" in done.stderr and "POLICYDESK_MAX_QUESTION_CHARS" in done.stderr
    assert not (tmp_path / "data").exists(), "the database was opened for a question that was refused"


def test_every_refused_web_ask_is_traced_like_the_api(clients, staff, demo_db, web_app):
    rep = clients["rep"]
    api = TestClient(web_app)
    token = make_token(demo_db, staff["rep"])
    cases = [  # form fields, the problem shown, the trace's error (the API's words for the same input)
        ({"question": ""}, "Type a question first.", "question: is empty"),
        ({"question": "   "}, "Type a question first.", "question: is empty"),
        ({"question": "timely\x00filing"}, "NUL character", "question: contains a NUL character"),
        ({"question": TIMELY, "date_of_service": "2025-11-03\x00"}, "NUL character",
         "date_of_service: contains a NUL character"),
    ]
    for fields, shown, traced in cases:
        since = marks(demo_db)
        r = rep.post("/ask", data={**fields, "csrf_token": token_of(rep)})
        assert r.status_code == 422 and shown in text_of(r.text, "notice-error"), (fields, r.status_code)
        trace = _only_trace(demo_db, since, staff["rep"])
        assert (trace["status"], trace["question"], trace["error"], trace["user_role"]) == ("failed", "", traced, "rep")
        if fields["question"].strip() or "\x00" in fields["question"]:
            continue
        since = marks(demo_db)  # the API traces the same input with the same words
        api.post("/api/v1/ask", json={"question": "   "}, headers=bearer(token))
        assert _only_trace(demo_db, since, staff["rep"])["error"] == "question: is empty"
    since = marks(demo_db)
    api.post("/api/v1/ask", json={"question": "timely\x00filing"}, headers=bearer(token))
    assert _only_trace(demo_db, since, staff["rep"])["error"] == "question: contains a NUL character"


# -- 6: what reaches the server log and the audit log ---------------------------------------------

def test_only_a_well_formed_identifier_free_request_id_is_kept(web_app):
    client = TestClient(web_app)
    for sent in ("512-44-9087", "CVM12345678", "member.CVM12345678", "abc.def:ghi", "a b", "x" * 65, "ok\u00e9",
                 "CVM1234\u00ad5678", "1958-07-04", "5035550182", "1EG4-TE5-MK73"):
        given = client.get("/healthz", headers={"X-Request-ID": sent.encode("utf-8")}).headers["X-Request-ID"]
        assert given != sent and re.fullmatch(r"[0-9a-f]{32}", given), (sent, given)
    for sent in ("req-7f3a-42", "0b6e1d9c-5e8a-4c2e-9a4f-3f1b2c7d8e90", "A" * 64):
        assert client.get("/healthz", headers={"X-Request-ID": sent}).headers["X-Request-ID"] == sent


def test_log_lines_carry_route_templates_and_no_identifier_sent_in_a_path_or_header(web_app, demo_db, staff):
    token = make_token(demo_db, staff["rep"])
    with served(web_app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        client.get("/api/v1/versions/CVM12345678", params={"q": "512-44-9087"},
                   headers={**bearer(token), "X-Request-ID": "512-44-9087"})
        client.get("/api/v1/versions/POL-TF", headers=bearer(token))
        client.get("/no-such-page/CVM87654321")
        client.request("BREWCOFFEE", "/ask")
        client.get("/citations/CVM12345678/chunk-1")
    lines = "\n".join(server.lines)
    for planted in ("CVM12345678", "CVM87654321", "512-44-9087", "no-such-page", "BREWCOFFEE", "POL-TF"):
        assert planted not in lines, planted
    access = [(r.args[1], r.args[2], r.args[4]) for r in server.access_lines()]
    assert ("GET", "/api/v1/versions/{doc_id}", 404) in access and ("GET", "/api/v1/versions/{doc_id}", 200) in access
    assert ("GET", "unmatched", 404) in access and ("GET", "/citations/{trace_id}/{chunk_id}", 303) in access, access
    assert any(method == "other" for method, _, _ in access), access
    assert {method for method, _, _ in access} <= METHODS | {"other"}
    assert all(getattr(r, "request_id", None) for r in server.access_lines())


def test_the_disputes_staff_filter_is_screened_before_the_audit_log(clients, staff, demo_db, web_app):
    reviewer = clients["compliance"]
    api = TestClient(web_app)
    token = make_token(demo_db, staff["compliance"])
    since = marks(demo_db)
    reviewer.get("/disputes", params={"staff": "CVM12345678"})
    reviewer.get("/disputes", params={"staff": "member Janet Price"})
    reviewer.get("/disputes", params={"staff": staff["rep"]})  # a staff member's name is kept as typed
    api.get("/api/v1/traces", params={"staff": "512-44-9087"}, headers=bearer(token))
    reviewer.get("/disputes/export", params={"asked_from": "2026-01-01", "asked_to": "2026-12-31",
                                             "staff": "\uff23\uff36\uff2d\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18"})
    rows = rows_since(demo_db, since, "audit_log")
    searched = [r["details"].get("staff", r["details"].get("user")) for r in rows if r["action"] in ("search", "export")]
    assert searched == [WITHHELD, WITHHELD, staff["rep"], WITHHELD, WITHHELD], searched
    stored = " ".join(" ".join(v) for v in stored_text_since(demo_db, since).values())
    for planted in ("CVM12345678", "Janet Price", "512-44-9087", "\uff23\uff36\uff2d"):
        assert planted not in stored, planted
