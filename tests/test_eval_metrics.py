"""Scoring rules of the golden-set eval (issue 16), on strings: no database needed."""

from __future__ import annotations

import pytest

from policydesk.evals.metrics import cited_versions_match, key_facts_present, right_version_in_context


@pytest.mark.parametrize("answer, fact", [
    ("Claims must be received within 190 days of the date of service.", "90 days"),
    ("A claim received within 110 business days is late.", "10 business days"),
    ("The limit was 1,090 days in the old contract.", "90 days"),
    ("Rentals run 113 continuous months.", "13 continuous months"),
    ("Urgent care has a 10 dollar copay.", "0 dollar"),
    ("The parent may discuss it until the child turns 180.", "turns 18"),
    ("Ninety (90) days.", "90 days"),  # the unit must follow the number as written
])
def test_a_key_fact_is_not_found_inside_a_longer_number_or_word(answer, fact):
    assert not key_facts_present(answer, [fact])


@pytest.mark.parametrize("answer, fact", [
    ("An initial claim must be received within 90 days of the date of service.", "90 days"),
    ("Members must be offered a routine appointment within 10 Business\n  Days.", "10 business days"),
    ("(90 days)", "90 days"),
    ("Standard requests: 14 calendar days; urgent: 72 hours.", "14 calendar days"),
    ("Primary care telehealth visits have a 0 dollar copay.", "0 dollar"),
    ("Expedited exceptions are decided in 24-hours.", "24 hours"),  # hyphens still read as spaces
])
def test_a_key_fact_is_found_on_token_boundaries_ignoring_case_and_whitespace(answer, fact):
    assert key_facts_present(answer, [fact])


def test_every_key_fact_must_be_present():
    answer = "The filing limit is 90 days; corrected claims 150 days."
    assert key_facts_present(answer, ["90 days", "150 days"])
    assert not key_facts_present(answer, ["90 days", "180 days"])
    assert not key_facts_present(answer, [])


def test_what_changed_needs_both_versions_cited_and_in_context():
    both = {"POL-TF": (1, 2)}
    assert cited_versions_match([("POL-TF", 1), ("POL-TF", 2)], both)
    assert not cited_versions_match([("POL-TF", 2)], both)
    assert right_version_in_context(["POL-TF:v1:filing-limit", "POL-TF:v2:filing-limit"], both)
    assert not right_version_in_context(["POL-TF:v2:filing-limit"], both)
    # A single expected version still means: that one and no other.
    assert not cited_versions_match([("POL-TF", 1), ("POL-TF", 2)], {"POL-TF": 2})
    assert cited_versions_match([("POL-TF", 2), ("POL-CORR", 1)], {"POL-TF": 2})


def test_a_source_not_in_force_may_be_neither_cited_nor_in_context():
    expected, excluded = {"POL-TH": 1}, ["WIKI-TH"]
    assert cited_versions_match([("POL-TH", 1)], expected, excluded)
    assert not cited_versions_match([("POL-TH", 1), ("WIKI-TH", 1)], expected, excluded)
    assert right_version_in_context(["POL-TH:v1:member-cost-sharing"], expected, excluded)
    assert not right_version_in_context(["POL-TH:v1:member-cost-sharing", "WIKI-TH:v1:audio-only-visits-and-copays"],
                                        expected, excluded)
