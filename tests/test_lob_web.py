"""Line of business (issue 18) where people meet it: the ask page's selector (remembered per
user), the JSON API, the CLI, the disputes pages and check, exports and the gaps report."""

from __future__ import annotations

import json
import os
import uuid
from datetime import date, datetime, timezone

from sqlalchemy import text

from policydesk.accounts.access import clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.proof.exports import export_traces, render, verify_export_lines
from policydesk.reports.gaps import gaps_report
from policydesk.reports.tables import report_rows
from policydesk.proof.tracing import write_trace
from tests.api_helpers import bearer, is_problem, make_token
from tests.web_helpers import ask, by_class, find, text_of, token_of
from tests.cli_helpers import run_cli

SUPPLY = "What is the maximum days supply of a maintenance drug in one fill?"
VALID = "valid: commercial, medicaid, medicare_advantage"


def _selected(html: str, name: str) -> str | None:
    options = [e for e in find(html, "option") if "selected" in e["attrs"]]
    select = find(html, "select", name=name)
    assert select, f"no <select name={name}>"
    return options[0]["attrs"]["value"] if options else None


# -- ask page ------------------------------------------------------------------------------------

def test_ask_page_offers_the_corpus_products_and_remembers_each_users_choice(clients):
    page = clients["rep2"].get("/ask").text
    assert [e["attrs"]["value"] for e in find(page, "option")] == ["", "commercial", "medicaid", "medicare_advantage"]
    assert _selected(page, "line_of_business") == ""
    r = ask(clients["rep2"], SUPPLY, line_of_business="medicare_advantage")
    assert r.status_code == 200
    assert "100-day supply" in text_of(r.text, "answer-text")
    assert text_of(r.text, "answer-product") == "Line of business: Medicare Advantage"
    assert "Medicare Advantage only" in text_of(r.text, "cite-products")
    # Remembered server-side for this user, not for anyone else.
    assert _selected(clients["rep2"].get("/ask").text, "line_of_business") == "medicare_advantage"
    assert _selected(clients["supervisor"].get("/ask").text, "line_of_business") == ""
    ask(clients["rep2"], "What is the timely filing limit?", line_of_business="")
    assert _selected(clients["rep2"].get("/ask").text, "line_of_business") == ""


def test_ask_page_without_a_product_on_a_variant_rule_asks_for_it(clients):
    r = ask(clients["supervisor"], SUPPLY)
    assert r.status_code == 200
    assert text_of(r.text, "answer-kind") == "No answer"
    warning = text_of(r.text, "warning-line_of_business")
    assert "POL-RXS-COM" in warning and "POL-RXS-MA" in warning and "POL-RXS-MCD" in warning
    assert not by_class(r.text, "citation")


def test_ask_page_unknown_product_is_an_error_listing_valid_ones(clients):
    r = ask(clients["rep"], SUPPLY, line_of_business="dental")
    assert r.status_code == 422
    assert text_of(r.text, "answer-reason") == f"unknown line of business 'dental'; {VALID}"


# -- JSON API and CLI ----------------------------------------------------------------------------

def test_api_applies_the_product_and_refuses_an_unknown_one(web_app, demo_db, staff):
    from fastapi.testclient import TestClient

    api = TestClient(web_app)
    token = make_token(demo_db, staff["rep"])
    r = api.post("/api/v1/ask", json={"question": SUPPLY, "line_of_business": "medicaid"}, headers=bearer(token))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["line_of_business"] == "medicaid" and "34-day supply" in body["answer"]
    assert {c["doc_id"] for c in body["citations"]} & {"POL-RXS-COM", "POL-RXS-MA"} == set()
    assert next(c for c in body["citations"] if c["doc_id"] == "POL-RXS-MCD")["line_of_business"] == ["medicaid"]
    bad = is_problem(api.post("/api/v1/ask", json={"question": SUPPLY, "line_of_business": "dental"},
                              headers=bearer(token)), 422, "unknown_line_of_business")
    assert VALID in bad["detail"] and bad["errors"][0]["field"] == "line_of_business"
    with demo_db.owner.connect() as conn:  # the refused request is traced, as any bad input is
        assert conn.execute(text("SELECT status FROM traces WHERE id = :i"), {"i": bad["trace_id"]}).scalar_one() == "failed"


def test_cli_line_of_business_json_and_unknown_name(demo_db, staff):
    env = dict(os.environ, DATABASE_URL=demo_db.owner_url.render_as_string(hide_password=False))
    out = run_cli("ask", SUPPLY, "--as", staff["rep"], "--line-of-business", "commercial", "--json", env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert data["line_of_business"] == "commercial" and "90-day supply" in data["answer"]
    assert [c["line_of_business"] for c in data["citations"] if c["doc_id"].startswith("POL-RXS")] == [["commercial"]]
    bad = run_cli("ask", SUPPLY, "--as", staff["rep"], "--line-of-business", "dental", "--json", env=env)
    assert bad.returncode == 2 and bad.stdout == ""
    assert f"error: unknown line of business 'dental'; {VALID}" in bad.stderr


# -- disputes, exports, gaps -----------------------------------------------------------------------

def _given_for_ma(pipeline, staff):
    result = pipeline.ask(AskRequest(user_name=staff["rep"], question=SUPPLY, line_of_business="medicare_advantage"))
    assert "100-day supply" in result.answer
    return result


def test_disputes_page_shows_the_product_and_the_check_flags_a_wrong_one(clients, pipeline, staff):
    result = _given_for_ma(pipeline, staff)
    reviewer = clients["compliance"]
    page = reviewer.get(f"/disputes/{result.trace_id}").text
    assert text_of(page, "product") == "Medicare Advantage"
    csrf = token_of(reviewer, f"/disputes/{result.trace_id}")
    form = {"member_date": "2026-03-02", "csrf_token": csrf}
    wrong = reviewer.post(f"/disputes/{result.trace_id}/check", data=form | {"member_product": "medicaid"})
    assert wrong.status_code == 200
    flagged = by_class(wrong.text, "verdict-wrong_product")
    assert flagged and "wrong product: Prescription Supply Limits (POL-RXS-MA) applies to Medicare Advantage only, not the " \
                      "member's Medicaid" in flagged[0]["text"]
    right = reviewer.post(f"/disputes/{result.trace_id}/check", data=form | {"member_product": "medicare_advantage"})
    assert not by_class(right.text, "verdict-wrong_product") and by_class(right.text, "verdict-right")
    unknown = reviewer.post(f"/disputes/{result.trace_id}/check", data=form | {"member_product": "dental"})
    assert unknown.status_code == 422 and VALID in text_of(unknown.text, "notice-error")
    hits = reviewer.get("/disputes", params={"words": "supply", "staff": staff["rep"]}).text
    assert "medicare_advantage" in text_of(hits, "tag-product")


def test_api_check_flags_a_wrong_product(web_app, demo_db, pipeline, staff):
    from fastapi.testclient import TestClient

    result = _given_for_ma(pipeline, staff)
    token = make_token(demo_db, staff["compliance"])
    r = TestClient(web_app).post(f"/api/v1/traces/{result.trace_id}/check",
                                 json={"member_date": "2026-03-02", "line_of_business": "commercial"},
                                 headers=bearer(token))
    assert r.status_code == 200, r.text
    kinds = {v["doc_id"]: v["verdict"] for v in r.json()["verdicts"]}
    assert kinds["POL-RXS-MA"] == "wrong_product"


def test_export_carries_the_product_and_still_verifies(demo_db, pipeline, staff):
    result = _given_for_ma(pipeline, staff)
    today = datetime.now(timezone.utc).date()
    records = export_traces(demo_db, reviewer=staff["compliance"], start=today, end=today, user=staff["rep"])
    mine = next(r for r in records if r.fields["id"] == str(result.trace_id))
    assert mine.fields["line_of_business"] == "medicare_advantage"
    assert any(c["line_of_business"] == ["medicare_advantage"] for c in mine.fields["citations"])
    assert verify_export_lines("".join(render(records, "jsonl")).splitlines()) == []
    tampered = [json.loads(line) for line in render(records, "jsonl")]
    for rec in tampered:
        if rec["id"] == str(result.trace_id):
            rec["line_of_business"] = "commercial"
    problems = verify_export_lines([json.dumps(r) for r in tampered])
    assert any("line_of_business" in p for p in problems)


def test_gaps_report_counts_per_product(demo_db):
    day = datetime(2019, 5, 2, 12, tzinfo=timezone.utc)
    for product, abstained in (("medicaid", False), ("medicaid", False), (None, True), ("commercial", False)):
        write_trace(demo_db, {
            "id": uuid.uuid4(), "kind": "ask", "user_name": "lob-gaps", "user_role": "rep",
            "permitted_levels": ["public", "internal"], "sensitive_cleared": False, "question": "supply limit?",
            "created_at": day, "line_of_business": product, "abstained": abstained,
            "answer": {"abstain_code": "line_of_business" if abstained else None},
        })
    report = gaps_report(demo_db, clearance_for("compliance"), start=date(2019, 5, 1), end=date(2019, 5, 31),
                         today=date(2019, 6, 1))
    assert {p: (c.asked, c.answered, dict(c.abstained)) for p, c in report.products.items()} == {
        "": (1, 0, {"line_of_business": 1}), "commercial": (1, 1, {}), "medicaid": (2, 2, {})}
    rows = {r["name"]: r for r in report_rows(report) if r["level"] == "product"}
    assert rows["medicaid"]["line_of_business"] == "medicaid" and rows["medicaid"]["asked"] == 2
    assert rows["no line of business chosen"]["no_answer_line_of_business"] == 1
    sources = {s.doc_id: s.line_of_business for s in report.sources}
    assert sources["POL-RXS-MCD"] == ("medicaid",) and sources["POL-TF"] == ()
