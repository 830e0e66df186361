"""Dates written in the question: read when none was entered, pointed out when one was (issue 16)."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.question_dates import dates_in_question
from policydesk.users import add_user

TODAY = date(2026, 9, 14)


@pytest.mark.parametrize("question, expected", [
    ("TFL for a claim with DOS on the 3rd of May 2025?", [("date_of_service", "2025-05-03", False)]),
    ("what's the filing limit for a visit on May 3, 2025", [("date_of_service", "2025-05-03", False)]),
    ("seen 6/1/2025 and denied on July 15, 2025", [("date_of_service", "2025-06-01", False),
                                                   ("denial_notice_date", "2025-07-15", False)]),
    ("claim was denied last March, how long to appeal?", [("denial_notice_date", "2026-03-01", True)]),
    ("denial letter dated next January", [("denial_notice_date", "2027-01-01", True)]),
    ("copay for a visit in June 2025", [("date_of_service", "2025-06-01", True)]),
    ("service on March 3rd", [("date_of_service", "2026-03-03", False)]),
    ("service on the 20th of September", [("date_of_service", "2025-09-20", False)]),  # no year: the last one
    ("visit 3 weeks ago", [("date_of_service", "2026-08-24", False)]),
    ("appointment two months ago", [("date_of_service", "2026-07-14", False)]),
    ("the 12th of Sept. 2025", [("date_of_service", "2025-09-12", False)]),
    # a remittance advice is the notice a claim was paid or denied on
    ("replacement claim, the RA was dated June 2, 2026", [("denial_notice_date", "2026-06-02", False)]),
    ("the remittance on the first bill is from 4/9/2026", [("denial_notice_date", "2026-04-09", False)]),
])
def test_dates_written_in_words_are_read_with_their_basis(question, expected):
    found = dates_in_question(question, TODAY)
    assert [(d.basis, d.value.isoformat(), d.month_only) for d in found] == expected


@pytest.mark.parametrize("question", [
    "A member may file an appeal within 60 days of the denial.",  # "may" the verb
    "How long is the filing limit?",
    "Is 866-555-0199 still the provider line?",
    "What is policy 2024-017 about?",
    "Is the 13/45/2025 claim late?",  # not a date
    "Is the filing limit still 90 days today?",  # today applies anyway: nothing to read or warn about
])
def test_text_without_a_date_yields_none(question):
    assert dates_in_question(question, TODAY) == []


@pytest.fixture(scope="module")
def pipeline(demo_db, settings, embed_model):
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name="qd_rep", role="rep", password="question-dates-pw-1")
    return build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)


def test_date_of_service_in_words_resolves_the_version_in_force_then_and_says_so(pipeline, demo_db):
    r = pipeline.ask(AskRequest("qd_rep", "What was the timely filing limit for a claim with a date of service "
                                          "on the 3rd of May 2025?"))
    assert not r.refused and not r.abstained, r.abstain_reason
    assert "180 days" in r.answer and {c.version for c in r.citations if c.doc_id == "POL-TF"} == {1}
    warning = next(w for w in r.warnings if w.kind == "date_from_question")
    assert "2025-05-03" in warning.message and "the 3rd of May 2025" in warning.message
    assert r.dates["date_of_service"] == "2025-05-03"
    with demo_db.owner.connect() as conn:
        stored = conn.execute(text("SELECT dates FROM traces WHERE id = :i"), {"i": r.trace_id}).scalar_one()
    assert stored["date_of_service"] == "2025-05-03"  # the trace says which date the answer was given for


def test_an_entered_date_wins_over_one_in_the_question_and_the_difference_is_shown(pipeline):
    r = pipeline.ask(AskRequest("qd_rep", "What was the timely filing limit for a service on May 3, 2025?",
                                dates={"date_of_service": "2026-02-10"}))
    assert "90 days" in r.answer and {c.version for c in r.citations if c.doc_id == "POL-TF"} == {2}
    assert any(w.kind == "date_in_question" and "2025-05-03" in w.message and "2026-02-10" in w.message
               for w in r.warnings)
    assert not any(w.kind == "date_from_question" for w in r.warnings)


def test_a_range_in_the_question_is_left_to_what_changed(pipeline):
    r = pipeline.ask(AskRequest("qd_rep", "What changed in timely filing between 2025-06-01 and 2026-06-01?"))
    assert not any(w.kind in ("date_from_question", "date_in_question") for w in r.warnings)
    assert r.dates == {"date_of_service": None, "denial_notice_date": None}
