"""The DESIGN.md walkthrough in a real browser (Debian chromium), against uvicorn on the demo DB.

Screenshots of each step are kept under the data directory (tests/browser_helpers.py).
"""

from __future__ import annotations

import uuid
from datetime import date

import pytest
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user
from tests.browser_helpers import PASSWORD, chromium, needs_chromium, served, shot, sign_in

pytestmark = needs_chromium
GROUP = "walkthrough"


@pytest.fixture(scope="module")
def server_url(demo_db, settings, embed_model):
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=date(2026, 11, 29))
    with served(create_app(settings, db=demo_db, pipeline=pipeline)) as url:
        yield url


@pytest.fixture(scope="module")
def people(demo_db) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    names = {"rep": f"walk-rep-{tag}", "compliance": f"walk-comp-{tag}"}
    with Session(demo_db.owner) as session, session.begin():
        for role, name in names.items():
            add_user(session, name=name, role=role, password=PASSWORD)
    return names


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _shot(page, name: str) -> None:
    shot(page, GROUP, name)


def test_walkthrough_in_browser(browser, server_url, people):
    # A rep asks without a date: 90 days, version 2.
    rep = sign_in(browser, server_url, people["rep"])
    _shot(rep, "01-rep-ask-page.png")
    rep.fill("#question", "What is the timely filing limit?")
    rep.click("form.ask-form button[type=submit]")
    rep.wait_for_selector("#result .answer-text")
    answer = rep.inner_text("#result .answer-text")
    assert "90 days" in answer
    assert "version 2" in rep.inner_text("#result .answer-window")
    rep.click("#result .show-text >> nth=0")  # cited text on demand, via htmx
    rep.wait_for_selector("#result .cited-text")
    _shot(rep, "02-rep-answer-90-days.png")
    # The rep marks it wrong (for the date they had in mind), via htmx.
    rep.select_option("#result .feedback select[name=reason]", "wrong_version")
    rep.fill("#result .feedback textarea[name=note]", "The provider billed for a 2025 visit.")
    rep.click("#result .feedback button[value=wrong]")
    rep.wait_for_selector("#result .feedback-recorded")
    assert "Wrong version" in rep.inner_text("#result .feedback-recorded")

    # The compliance reviewer finds it, opens it, checks it and replays it.
    reviewer = sign_in(browser, server_url, people["compliance"])
    reviewer.goto(f"{server_url}/disputes")
    reviewer.fill("input[name=words]", "timely filing")
    reviewer.fill("input[name=staff]", people["rep"])
    reviewer.click("form.search-form button[type=submit]")
    reviewer.wait_for_selector("#results table.hits")
    _shot(reviewer, "03-reviewer-search.png")
    reviewer.click("#results table.hits a >> nth=0")
    reviewer.wait_for_selector("dl.meta")
    assert people["rep"] in reviewer.inner_text("dl.meta")
    assert "no date entered" in reviewer.inner_text("dl.meta")
    assert reviewer.inner_text("dl.meta .proof").startswith("verifies")
    assert "The provider billed for a 2025 visit." in reviewer.inner_text(".staff-feedback")
    _shot(reviewer, "04-reviewer-answer-as-given.png")

    reviewer.fill("input[name=member_date]", "2025-11-03")
    reviewer.click("button:has-text('Check the versions')")
    reviewer.wait_for_selector("#verdicts .verdict-text")
    verdicts = reviewer.inner_text("#verdicts")
    assert "wrong policy version: version 1 applied, in force 2024-01-01 to 2025-12-31" in verdicts
    _shot(reviewer, "05-reviewer-check-wrong-version.png")

    reviewer.click("button:has-text('Replay for that date')")
    reviewer.wait_for_selector("#replay .side-by-side")
    replay = reviewer.inner_text("#replay .side-by-side .col >> nth=1")
    assert "180 days" in replay and "version 1" in replay
    reviewer.locator("#replay").scroll_into_view_if_needed()
    _shot(reviewer, "06-reviewer-replay-180-days.png")

    # The gaps report shows today's questions, with its charts drawn on the server.
    reviewer.goto(f"{server_url}/reports/gaps")
    reviewer.wait_for_selector("section.totals svg.chart")
    assert "marked wrong" in reviewer.inner_text(".totals-line")
    _shot(reviewer, "07-reviewer-gaps-report.png")

    # The rep can't open the disputes pages.
    response = rep.goto(f"{server_url}/disputes")
    assert response.status == 403
    assert "compliance reviewers only" in rep.inner_text("main")
    _shot(rep, "08-rep-disputes-403.png")
