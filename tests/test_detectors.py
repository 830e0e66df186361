"""Text detectors shared by the refusal gate, the ingester and the post-flight check."""

from __future__ import annotations

import pytest

from policydesk.detectors import find_claim_decision_language, find_member_identifiers


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("member CVM12345678", "member_id"),
        ("subscriber CVS-12345678", "subscriber_id"),
        ("CLM123456789", "claim_number"),
        ("claim number 123456789", "claim_number"),
        ("SSN 123-45-6789", "ssn"),
        ("ssn ending in 6789", "ssn"),
        ("call (312) 555-0199", "phone_number"),
        ("DOB: 1/2/1980", "date_of_birth"),
    ],
)
def test_find_member_identifiers_kinds(text, kind):
    assert kind in find_member_identifiers(text)


@pytest.mark.parametrize(
    "text",
    [
        "Version 1 says 180 days, in force 2024-01-01 to 2025-12-31.",
        "Call Provider Services at 1-800-555-0100 for prior authorization.",
        "Claims must be filed within 90 days of the date of service.",
    ],
)
def test_find_member_identifiers_policy_text_is_clean(text):
    assert find_member_identifiers(text) == []


def test_find_claim_decision_language():
    found = find_claim_decision_language(
        "Your claim is approved. The claim will be denied. This claim will be paid. "
        "We will pay the balance. It is approved for payment."
    )
    assert found == [
        "your claim is approved",
        "the claim will be denied",
        "this claim will be paid",
        "we will pay",
        "approved for payment",
    ]


def test_find_claim_decision_language_rule_statements_are_clean():
    text = (
        "Claims filed after 90 days are denied. A claim filed late may be appealed "
        "within 60 days of the denial notice. The plan pays secondary claims after the primary."
    )
    assert find_claim_decision_language(text) == []
