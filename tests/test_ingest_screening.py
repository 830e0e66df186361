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
