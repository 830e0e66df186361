"""Post-flight checks on a drafted answer, and monotonic restriction of the final action.

Citations are the synthesizer's to validate (tests/test_synthesis.py; end to end in
tests/test_pipeline.py): post-flight judges what a cited draft says."""

from __future__ import annotations

import itertools

import pytest

from policydesk.synthesis.postflight import ACTION_ORDER, check_draft, combine
from policydesk.synthesis.schema import ModelAnswer, ModelClaim, ModelQuote

V2_ID = "POL-TF:v2:filing-limit"
ACTIONS = ("allow", "abstain", "refuse")


def draft(answer="Providers have 90 days from the date of service.", citations=(V2_ID,), answerable=True):
    return ModelAnswer(answers="yes" if answerable else "no", answer=answer, claims=[ModelClaim(
        text="Claims are due within 90 days.", quotes=[ModelQuote(chunk_id=c, text="90 days") for c in citations])])


def test_cited_answer_is_allowed():
    verdict = check_draft(draft())
    assert verdict.action == "allow" and verdict.reasons == []


def test_unanswerable_draft_abstains():
    verdict = check_draft(ModelAnswer(answers="no", answer="", reason="Not covered."))
    assert verdict == type(verdict)("abstain", ["Not covered."])


def test_member_identifier_in_answer_refuses():
    verdict = check_draft(draft(answer="Member CVM-12345678 has 90 days."))
    assert verdict.action == "refuse" and "member_id" in verdict.reasons[0]


def test_claim_decision_language_refuses():
    verdict = check_draft(draft(answer="Your claim is approved; providers have 90 days."))
    assert verdict.action == "refuse" and "your claim is approved" in verdict.reasons[0]


def test_a_policys_own_decision_words_quoted_verbatim_are_the_rule_not_a_decision():
    policy = "Filing Limit\nA claim received more than 90 days after the date of service is denied as untimely."
    quoted = draft(answer="A claim received more than 90 days after the date of service is denied as untimely.")
    quoted.claims[0].text = quoted.answer
    assert check_draft(quoted, [policy]).action == "allow"
    # The same words in the model's own sentence about this claim are still a decision.
    own = draft(answer="Your claim is denied as untimely.")
    assert check_draft(own, [policy]).action == "refuse"


def test_refusal_outranks_abstaining_and_keeps_both_reasons():
    unanswerable = ModelAnswer(answers="no", answer="We will pay it.", reason="Not covered.")
    verdict = check_draft(unanswerable)
    assert verdict.action == "refuse" and verdict.reasons[1:] == ["Not covered."] and len(verdict.reasons) == 2


@pytest.mark.parametrize("pre, post", list(itertools.product(ACTIONS, repeat=2)))
def test_combine_never_relaxes_preflight(pre, post):
    result = combine(pre, post)
    assert result == max(pre, post, key=ACTION_ORDER.__getitem__)
    assert ACTION_ORDER[result] >= ACTION_ORDER[pre] and ACTION_ORDER[result] >= ACTION_ORDER[post]


CONTACTS = "Contacts › Hearing and Speech\nMembers who are deaf or hard of hearing can call (541) 555-0108."


def test_a_number_quoted_verbatim_from_a_source_in_context_is_allowed():
    quoted = draft(answer="Members who are deaf or hard of hearing can call (541) 555-0108.")
    assert check_draft(quoted).action == "refuse"  # the detector alone reads it as a member's number
    assert check_draft(quoted, [CONTACTS]) == type(check_draft(quoted))("allow", [])


def test_an_identifier_no_source_in_context_holds_still_refuses():
    made_up = draft(answer="Members who are deaf or hard of hearing can call (541) 555-0109.")
    verdict = check_draft(made_up, [CONTACTS])
    assert verdict.action == "refuse" and "phone_number" in verdict.reasons[0]
    leaked = draft(answer="Call (541) 555-0108; member ID 883104726 is on the appeal.")
    verdict = check_draft(leaked, [CONTACTS])
    assert verdict.action == "refuse" and "member_id" in verdict.reasons[0] and "phone_number" not in verdict.reasons[0]


def test_whitespace_differences_do_not_hide_a_quoted_number_but_digits_must_match():
    reflowed = draft(answer="Members who are deaf or hard of hearing can call (541)\n555-0108.")
    assert check_draft(reflowed).action == "refuse"
    assert check_draft(reflowed, [CONTACTS]).action == "allow"
    assert check_draft(draft(answer="Members can call (541) 555-0180."), [CONTACTS]).action == "refuse"
