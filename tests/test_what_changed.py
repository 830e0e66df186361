"""'What changed' answered from the versions themselves, section by section, citing both."""

from __future__ import annotations

from datetime import date

import pytest

from policydesk.accounts.access import Clearance, clearance_for
from policydesk.versions import (
    NoVersionInForce,
    NoVisibleVersion,
    VersionLookup,
    compare_versions,
    is_what_changed_question,
    render_comparison,
)

TODAY = date(2026, 11, 29)
REP = clearance_for("rep")


@pytest.mark.parametrize("question", [
    "What changed in the timely filing policy?",
    "what has changed in member appeals",
    "What's different in the new prior authorization policy?",
    "How did the appeal deadline change?",
    "How has the timely filing limit changed since 2025?",
    "Compare versions of the coordination of benefits policy",
    "What are the differences between version 1 and version 2 of timely filing?",
])
def test_what_changed_questions_are_recognised(question):
    assert is_what_changed_question(question)


@pytest.mark.parametrize("question", [
    "What is the timely filing limit?",
    "How long does a member have to file an appeal?",
    "How do I change a member's address?",
    "Can a member change their primary care provider?",
    "Does prior authorization apply to MRI?",
])
def test_ordinary_questions_are_not_what_changed(question):
    assert not is_what_changed_question(question)


def test_timely_filing_comparison_cites_both_versions_with_windows(demo_db):
    c = compare_versions(VersionLookup(demo_db), "POL-TF", REP, today=TODAY)
    assert (c.old.version, c.new.version) == (1, 2)
    assert [s.section_id for s in c.changed] == ["filing-limit", "late-claims-and-exceptions"]
    assert c.added == [] and c.removed == []
    assert {s.section_id for s in c.unchanged} == {"purpose", "scope", "corrected-claims"}
    filing = c.changed[0]
    assert (filing.durations_before, filing.durations_after) == (["180 days"], ["90 days"])

    text, nodes = render_comparison(c)
    assert text.startswith(
        "Timely Filing of Claims: version 1 (in force 2024-01-01 to 2025-12-31) \u2192 "
        "version 2 (in force from 2026-01-01). Filing Limit: 180 days \u2192 90 days."
    )
    cited = [n.node_id for n in nodes]
    assert {"POL-TF:v1:filing-limit", "POL-TF:v2:filing-limit"} <= set(cited)
    assert {n.metadata["version"] for n in nodes} == {1, 2}
    assert all(n.get_content() for n in nodes)


def test_prior_authorization_comparison_includes_the_scheduled_version(demo_db):
    # Only version 1 has taken effect by today, so the two newest are compared and version 2 is
    # shown as scheduled.
    c = compare_versions(VersionLookup(demo_db), "POL-PA", REP, today=TODAY)
    text, nodes = render_comparison(c)
    assert "version 1 (in force 2024-01-01 to 2026-12-31) \u2192 version 2 (takes effect 2027-01-01)" in text
    assert "Decision Timeframes: 14 calendar days \u2192 7 calendar days." in text
    assert "genetic and molecular testing" in text
    assert {n.metadata["version"] for n in nodes} == {1, 2}


def test_comparison_between_two_dates(demo_db):
    lookup = VersionLookup(demo_db)
    c = compare_versions(lookup, "POL-APL", REP, (date(2025, 6, 30), date(2025, 7, 1)))
    assert (c.old.version, c.new.version) == (1, 2)
    text, _ = render_comparison(c)
    assert "version 1 (in force 2024-01-01 to 2025-06-30)" in text
    assert "Appeal Filing Deadline: 180 days \u2192 60 days." in text
    # Both dates under the same version: nothing to compare.
    same = compare_versions(lookup, "POL-APL", REP, (date(2025, 8, 1), date(2026, 8, 1)))
    assert same.old is None
    with pytest.raises(NoVersionInForce, match="first version took effect 2024-01-01"):
        compare_versions(lookup, "POL-APL", REP, (date(2023, 5, 1), None))


def test_single_version_policy_says_so(demo_db):
    c = compare_versions(VersionLookup(demo_db), "POL-TH", REP, today=TODAY)
    text, nodes = render_comparison(c)
    assert c.old is None and "only one version" in text and "in force from 2026-03-01" in text
    assert nodes and all(n.metadata["version"] == 1 for n in nodes)


def test_comparison_is_permission_scoped(demo_db):
    # POL-PA is internal: a public-only caller can't compare (or learn of) its versions.
    with pytest.raises(NoVisibleVersion):
        compare_versions(VersionLookup(demo_db), "POL-PA", Clearance("test", ("public",), False), today=TODAY)
