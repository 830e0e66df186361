"""The DESIGN.md walkthrough in a real browser (Debian chromium), against uvicorn on the demo DB:
one walkthrough per role (a rep asks and gives feedback; a compliance reviewer searches, opens,
checks, replays and filters the audit log), with layout checks on element boxes where people
found controls out of line (issue 51), and a model's answer shown once.

Screenshots of each step are kept under the data directory (tests/browser_helpers.py).
"""

from __future__ import annotations

import re
import uuid
from datetime import date

import httpx
import pytest
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user
from tests.browser_helpers import (
    PASSWORD,
    assert_left_of,
    assert_same_row,
    assert_within,
    box,
    chromium,
    needs_chromium,
    served,
    shot,
    sign_in,
)
from tests.stored_chunks import V2_QUOTE
from tests.test_plan_server import answer, scripted_plan_server
from tests.web_helpers import csrf_from

pytestmark = needs_chromium
GROUP = "walkthrough"
TODAY = date(2026, 11, 29)
QUESTION = "What is the timely filing limit?"


@pytest.fixture(scope="module")
def server_url(demo_db, settings, embed_model):
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    with served(create_app(settings, db=demo_db, pipeline=pipeline)) as url:
        yield url


@pytest.fixture(scope="module")
def people(demo_db) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    names = {"rep": f"walk-rep-{tag}", "rep2": f"walk-rep2-{tag}", "compliance": f"walk-comp-{tag}"}
    with Session(demo_db.owner) as session, session.begin():
        for key, name in names.items():
            add_user(session, name=name, role=key.rstrip("2"), password=PASSWORD)
    return names


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _shot(page, name: str) -> None:
    shot(page, GROUP, name)


def assert_same_height(page, first: str, second: str, slack: float = 1.0) -> None:
    a, b = box(page, first), box(page, second)
    assert abs(a["height"] - b["height"]) <= slack, (
        f"{first} is {a['height']:.0f}px high, {second} {b['height']:.0f}px")


def assert_level(page, first: str, second: str, slack: float = 1.0) -> None:
    """The two elements' top edges are level."""
    a, b = box(page, first), box(page, second)
    assert abs(a["y"] - b["y"]) <= slack, f"{first} top at y {a['y']:.0f}, {second} at y {b['y']:.0f}"


def assert_once(page, scope: str, sentence: str) -> None:
    """`sentence` is printed exactly once in the visible text of `scope`."""
    shown = " ".join(page.inner_text(scope).split())
    assert " ".join(sentence.split()) in shown, f"{sentence!r} is not shown in {scope}"
    assert shown.count(" ".join(sentence.split())) == 1, f"{sentence!r} is shown more than once in {scope}"


def assert_ask_form_in_line(page) -> None:
    """The product select is drawn like the date inputs beside it: same height, on their line."""
    for date_input in ("input[name=date_of_service]", "input[name=denial_notice_date]"):
        assert_same_height(page, "#line_of_business", date_input)
        assert_same_row(page, "#line_of_business", date_input)
        assert_level(page, "#line_of_business", date_input)
    assert_left_of(page, "input[name=denial_notice_date]", "#line_of_business")
    assert_within(page, "#line_of_business", "form.ask-form")


def assert_feedback_in_line(page) -> None:
    """Reason and note side by side, tops level; both verdict buttons on one row under them,
    starting where the reason starts; all inside the feedback box."""
    fb = "#result .feedback"
    reason, note = f"{fb} select[name=reason]", f"{fb} textarea[name=note]"
    helpful, wrong = f"{fb} button[value=helpful]", f"{fb} button[value=wrong]"
    assert_same_row(page, reason, note)
    assert_level(page, reason, note)
    assert_left_of(page, reason, note)
    assert_same_row(page, helpful, wrong)
    assert_level(page, helpful, wrong)
    assert_left_of(page, helpful, wrong)
    below = box(page, note)
    assert box(page, helpful)["y"] >= below["y"] + below["height"], "the buttons are not under the fields"
    assert abs(box(page, helpful)["x"] - box(page, reason)["x"]) <= 1, "the buttons do not start under the reason"
    for part in (reason, note, helpful, wrong):
        assert_within(page, part, fb)


def _ask(page, question: str, *, date_of_service: str = "", product_label: str | None = None) -> None:
    page.fill("#question", question)
    page.fill("input[name=date_of_service]", date_of_service)
    if product_label is not None:
        page.select_option("#line_of_business", label=product_label)
    with page.expect_response(lambda r: r.url.endswith("/ask") and r.request.method == "POST"):
        page.click("form.ask-form button[type=submit]")
    page.wait_for_selector("#result .answer")


def test_rep_walkthrough(browser, server_url, people):
    rep = sign_in(browser, server_url, people["rep"])
    assert_ask_form_in_line(rep)
    _shot(rep, "01-rep-ask-page.png")

    # Without a date: today's version, 90 days. No model here, so the answer is the policy text
    # with its likely sentence marked, and that sentence is printed once, not again above it.
    _ask(rep, QUESTION)
    assert "90 days" in rep.inner_text("#result .answer-text")
    assert "version 2" in rep.inner_text("#result .answer-window")
    sentence = rep.inner_text("#result .answer mark")
    assert "90 days" in sentence
    assert_once(rep, "#result .answer", sentence)
    assert rep.locator("#result .claims").count() == 0
    assert_feedback_in_line(rep)
    _shot(rep, "02-rep-answer-90-days.png")
    rep.click("#result .show-text >> nth=0")  # cited text on demand, via htmx
    rep.wait_for_selector("#result .cited-text")
    # The rep marks it wrong (for the date they had in mind), via htmx.
    rep.select_option("#result .feedback select[name=reason]", "wrong_version")
    rep.fill("#result .feedback textarea[name=note]", "The provider billed for a 2025 visit.")
    rep.click("#result .feedback button[value=wrong]")
    rep.wait_for_selector("#result .feedback-recorded")
    assert "Wrong version" in rep.inner_text("#result .feedback-recorded")
    _shot(rep, "03-rep-feedback-recorded.png")

    # With the member's date of service and a product chosen: version 1, 180 days, for that product.
    _ask(rep, QUESTION, date_of_service="2025-11-03", product_label="Medicare Advantage")
    assert "180 days" in rep.inner_text("#result .answer-text")
    assert "version 1" in rep.inner_text("#result .answer-window")
    assert "Date of service 2025-11-03" in rep.inner_text("#result .answer-dates")
    assert rep.inner_text("#result .answer-product") == "Line of business: Medicare Advantage"
    assert_once(rep, "#result .answer", rep.inner_text("#result .answer mark"))
    assert_ask_form_in_line(rep)
    assert_feedback_in_line(rep)
    _shot(rep, "04-rep-answer-180-days-medicare-advantage.png")
    rep.click("#result .feedback button[value=helpful]")
    rep.wait_for_selector("#result .feedback-recorded")
    assert "Helpful" in rep.inner_text("#result .feedback-recorded")

    # The product is remembered for this rep on the next visit.
    rep.goto(f"{server_url}/ask")
    assert rep.input_value("#line_of_business") == "medicare_advantage"

    # The rep can't open the disputes pages.
    response = rep.goto(f"{server_url}/disputes")
    assert response.status == 403
    assert "compliance reviewers only" in rep.inner_text("main")
    _shot(rep, "05-rep-disputes-403.png")


@pytest.fixture(scope="module")
def rep_answers(server_url, people) -> dict[str, str]:
    """Two answers another rep got through the ask form: one with the member's date of service,
    one without, marked wrong. Trace ids by kind."""
    client = httpx.Client(base_url=server_url, follow_redirects=False, timeout=120)
    r = client.post("/login", data={"name": people["rep2"], "password": PASSWORD, "next": "/ask",
                                    "csrf_token": csrf_from(client.get("/login").text)})
    assert r.status_code == 303, r.text
    ids = {}
    for kind, dated in (("dated", "2025-11-03"), ("undated", "")):
        page = client.post("/ask", data={"question": QUESTION, "date_of_service": dated,
                                         "csrf_token": csrf_from(client.get("/ask").text)})
        assert page.status_code == 200, page.text[:300]
        ids[kind] = re.search(r'id="feedback-([0-9a-f-]{36})"', page.text).group(1)
    r = client.post(f"/feedback/{ids['undated']}", data={"verdict": "wrong", "reason": "wrong_version",
                                                         "note": "Member's visit was in 2025.",
                                                         "csrf_token": csrf_from(client.get("/ask").text)})
    assert r.status_code == 200, r.text[:300]
    return ids


def _hit_row(page, trace_id: str):
    return page.locator("#results table.hits tr", has=page.locator(f"a[href='/disputes/{trace_id}']"))


def test_compliance_walkthrough(browser, server_url, people, rep_answers):
    reviewer = sign_in(browser, server_url, people["compliance"])
    reviewer.goto(f"{server_url}/disputes")
    check, label = "form.search-form label.check input[type=checkbox]", "form.search-form label.check span"
    assert_same_row(reviewer, check, label)
    assert_left_of(reviewer, check, label)
    assert_same_row(reviewer, check, "form.search-form button[type=submit]")

    # Search: every answer of the rep's, with the dates the rep entered in its own column.
    reviewer.fill("input[name=words]", "timely filing")
    reviewer.fill("input[name=staff]", people["rep2"])
    reviewer.click("form.search-form button[type=submit]")
    reviewer.wait_for_selector("#results table.hits")
    heads = reviewer.locator("#results table.hits th").all_inner_texts()
    column = [h.strip().lower() for h in heads].index("dates entered")
    dated, undated = _hit_row(reviewer, rep_answers["dated"]), _hit_row(reviewer, rep_answers["undated"])
    assert dated.locator("td").nth(column).inner_text() == "Date of service 2025-11-03"
    assert undated.locator("td").nth(column).inner_text() == "none"
    _shot(reviewer, "06-reviewer-search-dates-entered.png")

    # Only the answers marked wrong: the undated one.
    reviewer.check(check)
    with reviewer.expect_response(lambda r: "/disputes?" in r.url):
        reviewer.click("form.search-form button[type=submit]")
    reviewer.wait_for_selector("#results table.hits")
    assert _hit_row(reviewer, rep_answers["undated"]).count() == 1
    assert _hit_row(reviewer, rep_answers["dated"]).count() == 0
    _shot(reviewer, "07-reviewer-search-marked-wrong.png")

    # Open it: the answer as given, its record verified, the rep's feedback.
    reviewer.click(f"#results a[href='/disputes/{rep_answers['undated']}']")
    reviewer.wait_for_selector("dl.meta")
    meta = reviewer.inner_text("dl.meta")
    assert people["rep2"] in meta and "no date entered" in meta
    assert reviewer.inner_text("dl.meta .proof").startswith("verifies")
    assert "Member's visit was in 2025." in reviewer.inner_text(".staff-feedback")
    assert_once(reviewer, "article.answer", reviewer.inner_text("article.answer mark"))
    _shot(reviewer, "08-reviewer-answer-as-given.png")

    # Check it against the member's date: the version that applied was another.
    reviewer.fill("input[name=member_date]", "2025-11-03")
    reviewer.click("button:has-text('Check the versions')")
    reviewer.wait_for_selector("#verdicts .verdict-text")
    assert ("wrong policy version: version 1 applied, in force 2024-01-01 to 2025-12-31"
            in reviewer.inner_text("#verdicts"))
    _shot(reviewer, "09-reviewer-check-wrong-version.png")

    # Replay it for that date: 180 days, version 1.
    reviewer.click("button:has-text('Replay for that date')")
    reviewer.wait_for_selector("#replay .side-by-side")
    replay = reviewer.inner_text("#replay .side-by-side .col >> nth=1")
    assert "180 days" in replay and "version 1" in replay
    reviewer.locator("#replay").scroll_into_view_if_needed()
    _shot(reviewer, "10-reviewer-replay-180-days.png")

    # The audit log, filtered by action: only checks, this reviewer's among them, read as key: value.
    reviewer.goto(f"{server_url}/disputes/audit")
    reviewer.select_option("form.audit-filter select[name=action]", "check")
    reviewer.click("form.audit-filter button[type=submit]")
    reviewer.wait_for_url(re.compile(r".*/disputes/audit\?.*action=check.*"))
    actions = reviewer.locator("table.audit td.audit-action").all_inner_texts()
    assert actions and set(actions) == {"check"}
    assert people["compliance"] in reviewer.locator("table.audit td.audit-actor").all_inner_texts()
    assert "member date" in reviewer.locator("table.audit dl.kv dt").all_inner_texts()
    assert reviewer.input_value("form.audit-filter select[name=action]") == "check"
    assert_same_height(reviewer, "form.audit-filter select[name=action]", "form.audit-filter input[name=actor]")
    assert_same_row(reviewer, "form.audit-filter select[name=action]", "form.audit-filter input[name=logged_from]")
    _shot(reviewer, "11-reviewer-audit-log-checks.png")

    # The gaps report shows today's questions, with its charts drawn on the server.
    reviewer.goto(f"{server_url}/reports/gaps")
    reviewer.wait_for_selector("section.totals svg.chart")
    assert "marked wrong" in reviewer.inner_text(".totals-line")
    _shot(reviewer, "12-reviewer-gaps-report.png")


# -- a model's answer -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def model_server():
    with scripted_plan_server() as served:
        yield served


@pytest.fixture(scope="module")
def model_url(demo_db, settings, embed_model, model_server):
    from policydesk.pipeline import build_pipeline
    from policydesk.providers import llm_for
    from policydesk.web.app import create_app

    _, url = model_server
    configured = settings.model_copy(update={"OPENAI_COMPATIBLE_BASE_URL": url, "OPENAI_COMPATIBLE_MODEL": "plan-llm",
                                             "PROVIDER_TIMEOUT_SECONDS": 5.0, "PROVIDER_MAX_RETRIES": 0})
    pipeline = build_pipeline(demo_db, configured, embed_model=embed_model, llm=llm_for(configured), today=TODAY)
    with served(create_app(configured, db=demo_db, pipeline=pipeline)) as served_url:
        yield served_url


def test_a_model_answer_prints_each_sentence_once(browser, model_url, model_server, people):
    script, _ = model_server
    rep = sign_in(browser, model_url, people["rep"])

    # The model answers with its one claim word for word: shown once, its source marked on it.
    said = "Timely Filing of Claims version 2: 90 days from the date of service."
    script.replies[:] = [answer(said)]
    _ask(rep, QUESTION)
    assert rep.inner_text("#result .answer-text").startswith(said)
    assert rep.locator("#result .answer-text a.ref").all_inner_texts() == ["[1]"]
    assert rep.locator("#result .claims").count() == 0
    assert_once(rep, "#result .answer", said)
    _shot(rep, "13-rep-model-answer-once.png")

    # A claim the answer does not say is still listed, once, under the answer.
    summary, claim = "Timely Filing of Claims version 2 sets the limit.", V2_QUOTE
    script.replies[:] = [answer(summary).replace(f'"text": "{summary}"', f'"text": "{claim}"')]
    _ask(rep, QUESTION)
    assert rep.inner_text("#result .answer-text") == summary
    assert rep.locator("#result .claims li").count() == 1
    assert_once(rep, "#result .answer", summary)
    assert_once(rep, "#result .answer", claim)
    _shot(rep, "14-rep-model-answer-and-claim.png")
