"""Dates written in the question: read when none was entered, pointed out when one was (issue 16);
relative dates ("last month", "two weeks ago", "yesterday") counted from the request's date (issue 48)."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.contract.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.reading.question_dates import applied_dates, dates_in_question
from policydesk.accounts.users import add_user

TODAY = date(2026, 9, 14)


@pytest.mark.parametrize("question, expected", [
    ("TFL for a claim with DOS on the 3rd of May 2025?", [("date_of_service", "2025-05-03", None)]),
    ("what's the filing limit for a visit on May 3, 2025", [("date_of_service", "2025-05-03", None)]),
    ("seen 6/1/2025 and denied on July 15, 2025", [("date_of_service", "2025-06-01", None),
                                                   ("denial_notice_date", "2025-07-15", None)]),
    ("claim was denied last March, how long to appeal?", [("denial_notice_date", "2026-03-01", "month")]),
    ("denial letter dated next January", [("denial_notice_date", "2027-01-01", "month")]),
    ("copay for a visit in June 2025", [("date_of_service", "2025-06-01", "month")]),
    ("service on March 3rd", [("date_of_service", "2026-03-03", None)]),
    ("service on the 20th of September", [("date_of_service", "2025-09-20", None)]),  # no year: the last one
    ("visit 3 weeks ago", [("date_of_service", "2026-08-24", None)]),
    ("appointment two months ago", [("date_of_service", "2026-07-14", None)]),
    ("the 12th of Sept. 2025", [("date_of_service", "2025-09-12", None)]),
    # a remittance advice is the notice a claim was paid or denied on
    ("replacement claim, the RA was dated June 2, 2026", [("denial_notice_date", "2026-06-02", None)]),
    ("the remittance on the first bill is from 4/9/2026", [("denial_notice_date", "2026-04-09", None)]),
])
def test_dates_written_in_words_are_read_with_their_basis(question, expected):
    found = dates_in_question(question, TODAY)
    assert [(d.basis, d.value.isoformat(), d.period) for d in found] == expected


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


# -- relative dates (issue 48): counted from the request's date, never the clock ----------------

NEW_YEAR = date(2026, 1, 5)  # a Monday, five days into the year


@pytest.mark.parametrize("question, expected", [
    # a period is its first day (a week starts on Monday)
    ("a claim for a visit last month", ("date_of_service", "2025-12-01", "month")),
    ("seen last week", ("date_of_service", "2025-12-29", "week")),
    ("seen this past week", ("date_of_service", "2025-12-29", "week")),
    ("seen earlier this month", ("date_of_service", "2026-01-01", "month")),
    ("seen earlier this week", ("date_of_service", "2026-01-05", "week")),  # today is the Monday
    ("seen earlier this year", ("date_of_service", "2026-01-01", "year")),
    ("the denial came last year", ("denial_notice_date", "2025-01-01", "year")),
    ("denied last month", ("denial_notice_date", "2025-12-01", "month")),
    ("last month's visit", ("date_of_service", "2025-12-01", "month")),
    # a day back is that day
    ("seen yesterday", ("date_of_service", "2026-01-04", None)),
    ("seen the day before yesterday", ("date_of_service", "2026-01-03", None)),
    ("seen 3 days ago", ("date_of_service", "2026-01-02", None)),
    ("seen two weeks ago", ("date_of_service", "2025-12-22", None)),
    ("seen a week ago", ("date_of_service", "2025-12-29", None)),
    ("seen a month ago", ("date_of_service", "2025-12-05", None)),
    ("seen one year ago", ("date_of_service", "2025-01-05", None)),
    ("seen ninety (90) days ago", ("date_of_service", "2025-10-07", None)),  # number words: durations.py
    ("seen twenty-one days ago", ("date_of_service", "2025-12-15", None)),
    ("seen last Tuesday", ("date_of_service", "2025-12-30", None)),
    ("seen last Monday", ("date_of_service", "2025-12-29", None)),  # today is a Monday: the one before
    ("the EOB came 2 weeks ago", ("denial_notice_date", "2025-12-22", None)),
])
def test_relative_dates_are_counted_from_the_request_date(question, expected):
    (found,) = dates_in_question(question, NEW_YEAR)
    assert (found.basis, found.value.isoformat(), found.period) == expected
    assert found.counted_from == NEW_YEAR


@pytest.mark.parametrize("question, today, expected", [
    ("seen yesterday", date(2026, 3, 1), "2026-02-28"),
    ("seen yesterday", date(2028, 3, 1), "2028-02-29"),  # leap year
    ("seen yesterday", date(2026, 1, 1), "2025-12-31"),
    ("seen 3 days ago", date(2026, 3, 2), "2026-02-27"),
    ("seen last month", date(2026, 3, 31), "2026-02-01"),
    ("seen last month", date(2026, 1, 31), "2025-12-01"),
    ("seen a month ago", date(2026, 3, 31), "2026-02-28"),  # no 31 February: its last day
    ("seen two months ago", date(2026, 1, 15), "2025-11-15"),
    ("seen a year ago", date(2028, 2, 29), "2027-02-28"),
    ("seen last week", date(2026, 1, 4), "2025-12-22"),  # a Sunday: the week before the one ending today
    ("seen earlier this week", date(2026, 1, 1), "2025-12-29"),  # the week began in December
    ("seen last year", date(2026, 12, 31), "2025-01-01"),
])
def test_relative_dates_across_month_and_year_boundaries(question, today, expected):
    (found,) = dates_in_question(question, today)
    assert found.value.isoformat() == expected


def test_the_same_words_follow_the_date_they_are_given_not_the_clock():
    assert [dates_in_question("a visit last month", today)[0].value for today in
            (date(2031, 7, 20), date(2019, 2, 3))] == [date(2031, 6, 1), date(2019, 1, 1)]


@pytest.mark.parametrize("question", [
    "we have 90 days to file, right?",  # a duration
    "must the claim be filed within 30 days?",
    "is it a 90-day limit?",
    "how many claims in the last month were late?",  # a span
    "any denials over the past 2 weeks?",
    "the last 3 months of claims",
    "the visit was more than 90 days ago",  # a bound: some day before then
    "it was over a month ago",
    "denied two days earlier",  # counted from another event
    "appealed 30 days after the denial",
    "resubmitted 3 weeks later",
    "seen a few days ago",  # a vague count
    "seen a couple of weeks ago",
    "is it still 90 days this month?",  # the present: today applies anyway
    "seen 2 hours ago",
    "denied 3 business days ago",  # holidays decide which day that is
    "how many sick days carry over into next year?",
    "a procedure next month",
])
def test_durations_spans_and_vague_times_are_not_read_as_dates(question):
    assert dates_in_question(question, NEW_YEAR) == []


def test_a_duration_beside_a_relative_date_leaves_only_the_date():
    found = dates_in_question("we have 90 days from the DOS and the visit was two weeks ago", NEW_YEAR)
    assert [(d.text, d.value.isoformat()) for d in found] == [("two weeks ago", "2025-12-22")]


def test_the_warning_names_the_words_the_date_and_the_day_it_was_counted_from():
    applied, (warning,) = applied_dates("a claim for a visit last month, what's the timely filing limit?", {},
                                        NEW_YEAR)
    assert applied == {"date_of_service": date(2025, 12, 1)}
    assert warning.kind == "date_from_question"
    assert "\u201clast month\u201d" in warning.message and "2025-12-01" in warning.message
    assert "the first day of that month" in warning.message and "2026-01-05" in warning.message

    _, (warning,) = applied_dates("seen two weeks ago, denied yesterday", {}, NEW_YEAR)
    assert "\u201ctwo weeks ago\u201d as a date of service of 2025-12-22" in warning.message
    assert "\u201cyesterday\u201d as a denial notice date of 2026-01-04" in warning.message
    assert "first day" not in warning.message


def test_an_entered_date_wins_over_a_relative_one():
    applied, (warning,) = applied_dates("visit last month", {"date_of_service": date(2025, 12, 17)}, NEW_YEAR)
    assert applied == {"date_of_service": date(2025, 12, 17)}
    assert warning.kind == "date_in_question" and "2025-12-01" in warning.message


@pytest.fixture(scope="module")
def qd_rep(demo_db):
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name="qd_rep", role="rep", password="question-dates-pw-1")
    return "qd_rep"


@pytest.fixture(scope="module")
def pipeline(demo_db, settings, embed_model, qd_rep):
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
    # The entered date picks version 2: nothing of version 1's rule (180 days) is cited or shown.
    # (Which sentence of version 2 the offline reader marks is the evals' measure, not this test's.)
    assert {c.version for c in r.citations if c.doc_id == "POL-TF"} == {2}
    assert "180 days" not in r.answer + " ".join(p.text for p in r.passages)
    assert any(w.kind == "date_in_question" and "2025-05-03" in w.message and "2026-02-10" in w.message
               for w in r.warnings)
    assert not any(w.kind == "date_from_question" for w in r.warnings)


def test_a_range_in_the_question_is_left_to_what_changed(pipeline):
    r = pipeline.ask(AskRequest("qd_rep", "What changed in timely filing between 2025-06-01 and 2026-06-01?"))
    assert not any(w.kind in ("date_from_question", "date_in_question") for w in r.warnings)
    assert r.dates == {"date_of_service": None, "denial_notice_date": None}


# Timely Filing of Claims: v1 (180 days) in force 2024-01-01..2025-12-31, v2 (90 days) from 2026-01-01.
JAN_10 = date(2026, 1, 10)


@pytest.fixture(scope="module")
def pipeline_jan_10(demo_db, settings, embed_model, qd_rep):
    return build_pipeline(demo_db, settings, embed_model=embed_model, today=JAN_10)


@pytest.mark.parametrize("question, dos, limit, version", [
    ("a claim for a visit last month, what's the timely filing limit?", "2025-12-01", "180 days", 1),
    ("a claim for a visit two weeks ago, what's the timely filing limit?", "2025-12-27", "180 days", 1),
    ("a claim for a visit yesterday, what's the timely filing limit?", "2026-01-09", "90 days", 2),
])
def test_the_version_follows_the_relative_date_of_service(pipeline_jan_10, question, dos, limit, version):
    r = pipeline_jan_10.ask(AskRequest("qd_rep", question))
    assert not r.refused and not r.abstained, r.abstain_reason
    assert r.dates["date_of_service"] == dos
    assert limit in r.answer and {c.version for c in r.citations if c.doc_id == "POL-TF"} == {version}
    warning = next(w for w in r.warnings if w.kind == "date_from_question")
    assert dos in warning.message and "2026-01-10" in warning.message
