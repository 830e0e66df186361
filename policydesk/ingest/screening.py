"""Screen a source for member PHI before it is indexed, line by line.

A thin layer over the identifier detector (`policydesk.detectors.find_member_identifiers`): it
runs the detector on each block of text a reader produced, and keeps only what is member PHI for
that kind of source.

- Every source: SSNs, member and subscriber identifiers, and a date of birth (a name with a date
  of birth) are refused.
- Call notes also refuse phone numbers, claim numbers and a member's address: a note is about
  one caller, so a number in it is theirs unless the words next to it give it to a line or an
  office (the detector decides that, `policydesk.detectors.attribution`). In a policy or wiki
  page they are the plan's and providers' lines and example numbers, and ingest fine.
- Numbers labelled as the plan's or a provider's (fax, PO box, policy / group / form number,
  NPI, TIN) are set aside before the finder runs, in every source.

A finding names the block ("line 12", "page 2") and the kind, never the identifier itself, so
the refusal message does not copy PHI into logs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from policydesk.ingest.layout import Block
from policydesk.detectors import find_member_identifiers

REFUSED_EVERYWHERE = ("ssn", "member_id", "subscriber_id", "date_of_birth")
REFUSED_IN_NOTES = REFUSED_EVERYWHERE + ("phone_number", "claim_number", "street_address")
KIND_NAMES = {
    "ssn": "a social security number",
    "member_id": "a member identifier",
    "subscriber_id": "a subscriber identifier",
    "date_of_birth": "a date of birth",
    "phone_number": "a phone number",
    "claim_number": "a claim number",
    "street_address": "a member's address",
}

# A label that makes the number after it the plan's or a provider's, not a member's.
_ORGANIZATIONAL = re.compile(
    r"\b(?:fax(?:\s*(?:number|no\.?|#))?|p\.?\s?o\.?\s+box|post\s+office\s+box|"
    r"(?:policy|group|form|plan|contract)\s*(?:number|no\.?|#|id)|npi|tin|tax\s+id(?:entification)?(?:\s+number)?)"
    r"[\s:#.]*(?P<num>[\d][\d\s().-]{2,18}\d)",
    re.IGNORECASE,
)


def _mask_organizational(text: str) -> str:
    return _ORGANIZATIONAL.sub(lambda m: m.group(0)[: m.start("num") - m.start()] + "(number)", text)


@dataclass(frozen=True)
class Finding:
    where: str
    kind: str

    def describe(self) -> str:
        return f"{self.where}: {KIND_NAMES.get(self.kind, self.kind)} ({self.kind})"


def screen_blocks(blocks: list[Block], source_type: str) -> list[Finding]:
    refused = REFUSED_IN_NOTES if source_type == "call_note" else REFUSED_EVERYWHERE
    findings: list[Finding] = []
    for block in blocks:
        for kind in find_member_identifiers(_mask_organizational(block.text)):
            if kind in refused:
                findings.append(Finding(block.where, kind))
    return findings
