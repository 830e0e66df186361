"""PHI screening at ingest (issue 14 item 4): member identifiers are refused per file with the line
and the reason; the plan's and providers' numbers ingest fine."""

from __future__ import annotations

import pytest

from policydesk.ingest.layout import Block
from policydesk.ingest.readers.text import read_text
from policydesk.ingest.screening import screen_blocks


def _screen(text: str, source_type: str) -> list[tuple[str, str]]:
    return [(f.where, f.kind) for f in screen_blocks(read_text(text).blocks, source_type)]


@pytest.mark.parametrize("source_type", ["wiki", "policy"])
@pytest.mark.parametrize("line", [
    "Provider services: (503) 555-0142, Monday to Friday.",
    "Fax prior authorization requests to 503-555-0199.",
    "Fax: 503 555 0199",
    "Mail paper claims to PO Box 44102, Salem.",
    "Appeals cite policy number 20250117 and the member's plan.",
    "Group number 88812345 applies to every member of the employer plan.",
    "Include the ordering NPI 1234567893 on the claim.",
    "Claims filed between 20250101 and 20251231 follow version 1.",
    "Members born on or after 2000-01-01 are eligible.",
    "The member services line is 1-800-555-0100.",
])
def test_plan_and_provider_numbers_ingest_fine(line, source_type):
    # Regression, issue 14: a contacts page with the provider line refused the whole corpus.
    assert _screen(f"Contacts\n\n{line}\n", source_type) == []


@pytest.mark.parametrize("line,kind", [
    ("The caller gave SSN 123-45-6789 by mistake.", "ssn"),
    ("Member ID 483920174 was read back to confirm.", "member_id"),
    ("Subscriber number 5551234567 was on the letter.", "member_id"),
    ("Jane Doe, DOB 04/12/1961, asked about her appeal.", "date_of_birth"),
    ("Call the member back at 503-555-0187 tomorrow.", "phone_number"),
    ("Claim 998877665544 was denied as untimely.", "claim_number"),
])
def test_member_identifiers_in_a_call_note_are_found_with_their_line(line, kind):
    found = _screen(f"Call note - Follow-up\n\nThe member called.\n\n{line}\n", "call_note")
    assert ("line 5", kind) in found


@pytest.mark.parametrize("line,kind", [
    ("Example: SSN 123-45-6789.", "ssn"),
    ("Member ID 483920174 is on file.", "member_id"),
])
def test_member_identifiers_are_refused_in_a_wiki_page_too(line, kind):
    assert ("line 3", kind) in _screen(f"Tips\n\n{line}\n", "wiki")


def test_the_title_line_is_screened_too():
    assert screen_blocks([Block("Call about Jane Doe DOB 04/12/1961", "title")], "call_note")[0].where == "title"


def test_a_finding_names_the_line_and_kind_never_the_identifier():
    (finding,) = screen_blocks([Block("SSN 123-45-6789", "line 7")], "call_note")
    assert finding.describe() == "line 7: a social security number (ssn)"


# A contacts or directory page as plans write it: the number's own label, the line's shape (a ZIP+4
# after a state, a citation after its code, a directory row naming NPIs) say it is the plan's.
@pytest.mark.parametrize("source_type", ["wiki", "policy"])
@pytest.mark.parametrize("line", [
    "Pre-service review fax: (207) 555-0133",
    "Behavioral health referrals (207) 555-0134, ext. 410",
    "Members with hearing loss: TTY 711 or (207) 555-0135",
    "Grievances: P.O. Box 5120, Augusta, ME 04332-5120",
    "Northgate Family Clinic | 1861472391 | 91-2233445 | 18 Front St, Bath, ME 04530 | 207-555-0136",
    "Submitter ID 451207 and payer ID 77810 are on the EDI enrollment form.",
    "Appeals rules: Me. Code R. 10-144-101, and 42 CFR 438.410 for expedited appeals.",
    "Claims edits are listed in Provider Alert 2026-031.",
])
def test_plan_lines_on_a_contacts_page_ingest(line, source_type):
    assert _screen(f"Contacts\n\n{line}\n", source_type) == []


@pytest.mark.parametrize("line", [
    "The caller asked for the pre-service fax number; gave (207) 555-0133 and the portal address.",
    "Transferred the member to behavioral health referrals, (207) 555-0134.",
    "Told the member to mail the grievance to P.O. Box 5120, Augusta, ME 04332-5120.",
])
def test_the_plans_own_lines_in_a_call_note_ingest(line):
    assert _screen(f"Call note - Contacts\n\nThe member called.\n\n{line}\n", "call_note") == []


# The same shapes, given to a member by the words before them: still refused.
@pytest.mark.parametrize("line,kind", [
    ("The member's fax at home, (207) 555-0190, is where she wants the letter.", "phone_number"),
    ("Reached the subscriber on his cell (207) 555-0191.", "phone_number"),
    ("Member's mailing address: P.O. Box 88, Bath, ME 04530.", "street_address"),
    ("Member moved to 22 Front St, Bath, ME 04530 last month.", "street_address"),
    ("Member ID 1861472391 per the card.", "member_id"),  # an NPI's shape, named a member's
    ("Northside Clinic called about 5551234567; they had the wrong plan.", "member_id"),  # an office, no phone line
])
def test_member_identifiers_in_plan_shapes_are_refused_in_a_call_note(line, kind):
    assert ("line 5", kind) in _screen(f"Call note - Contacts\n\nThe member called.\n\n{line}\n", "call_note")
