"""Early refusal: screen a question before retrieval, in code, with no model call.

Order: empty -> too long -> member identifier -> claim action -> topic gate
(role) -> out of scope. The first check that fires decides the refusal.

Topic-gated questions get the same reason and byte-identical message as
out-of-scope ones, so a refusal never reveals that a restricted document
exists.

The gate decides and words the refusal; what counts as a member identifier,
a claim action or an out-of-scope question is text detection in
`policydesk.detectors`, where the borderline decisions are written down
(pinned in tests/data/refusal_cases.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from policydesk.access import Clearance, topic_denied
from policydesk.detectors import find_member_identifiers, is_claim_action, is_out_of_scope

DEFAULT_MAX_CHARS = 1000


class RefusalReason(str, Enum):
    member_identifier = "member_identifier"
    claim_action = "claim_action"
    out_of_scope = "out_of_scope"
    empty_question = "empty_question"
    question_too_long = "question_too_long"


@dataclass(frozen=True)
class Refusal:
    reason: RefusalReason
    message: str


MEMBER_IDENTIFIER_MESSAGE = (
    "This question contains what looks like a member identifier (member or "
    "subscriber ID, SSN, phone number, claim number, or a name with a date of "
    "birth). PolicyDesk answers policy questions only; remove personal details "
    "and ask about the rule."
)
CLAIM_ACTION_MESSAGE = (
    "PolicyDesk explains policy; it cannot approve, deny, pay, price, adjudicate "
    "or override a claim. Use the claims platform for claim actions."
)
# Also used, unchanged, for topic-gated questions (no existence leak).
OUT_OF_SCOPE_MESSAGE = (
    "PolicyDesk can't help with that question. Ask about a plan policy you work "
    "with, or contact your supervisor."
)
EMPTY_QUESTION_MESSAGE = "Type a policy question to ask PolicyDesk."
QUESTION_TOO_LONG_MESSAGE = (
    "This question is longer than {max_chars} characters. Ask about one policy "
    "rule at a time, in a shorter question."
)


def screen_question(question: str, clearance: Clearance, max_chars: int = DEFAULT_MAX_CHARS) -> Refusal | None:
    """The refusal for this question and caller, or None if it may go to retrieval.

    Takes the resolved `Clearance`, so an unknown role has already failed in `clearance_for`.
    """
    text = (question or "").strip()
    if not text:
        return Refusal(RefusalReason.empty_question, EMPTY_QUESTION_MESSAGE)
    if len(text) > max_chars:
        return Refusal(
            RefusalReason.question_too_long,
            QUESTION_TOO_LONG_MESSAGE.format(max_chars=max_chars),
        )
    if find_member_identifiers(text):
        return Refusal(RefusalReason.member_identifier, MEMBER_IDENTIFIER_MESSAGE)
    if is_claim_action(text):
        return Refusal(RefusalReason.claim_action, CLAIM_ACTION_MESSAGE)
    if topic_denied(clearance, text) is not None or is_out_of_scope(text):
        return Refusal(RefusalReason.out_of_scope, OUT_OF_SCOPE_MESSAGE)
    return None
