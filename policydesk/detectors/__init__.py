"""Text detectors: member identifiers, claim-action and claim-decision language, out of scope.

Pure functions of text, no I/O and no role: the refusal gate (`policydesk.screening.refusal`),
the ingester and the post-flight check all ask these, and decide for themselves what
a hit means.
"""

from policydesk.detectors.claims import find_claim_decision_language, is_claim_action
from policydesk.detectors.identifiers import find_member_identifiers
from policydesk.detectors.scope import is_out_of_scope

__all__ = [
    "find_claim_decision_language",
    "find_member_identifiers",
    "is_claim_action",
    "is_out_of_scope",
]
