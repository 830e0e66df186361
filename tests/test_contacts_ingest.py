"""A plan's contacts page and provider directory ingest; a call note with a member's number is still
refused; an answer quoting the plan's own number from a cited source is shown, not withheld.

The fixture is written here, the way payers lay these pages out: fax and phone lines in every usual
form, TTY 711, extensions, PO boxes with ZIP+4, a directory table with NPIs and tax ids, regulation
citations, procedure codes, form and bulletin numbers."""

from __future__ import annotations

import os
import subprocess
from datetime import date
from pathlib import Path

import pytest
import yaml
from sqlalchemy.orm import Session

from policydesk.ingest import IngestError, ingest_directory
from policydesk.pipeline import AskRequest, build_pipeline
from policydesk.accounts.users import add_user
from tests.cli_helpers import run_cli

TODAY = date(2026, 11, 29)
PA_FAX = "(541) 555-0142"
TTY_LINE = "(541) 555-0108"

CONTACTS_MD = f"""# Contacts for Providers

## Utilization Management

Prior Authorization Fax: {PA_FAX}
Prior authorization phone: (541) 555-0141, option 2, Monday to Friday 8 a.m. to 5 p.m.
Urgent requests after hours: 1-866-555-0149 (TTY 711)
Case management referrals (541) 555-0177 ext. 2201

## Hearing and Speech

Members who are deaf or hard of hearing can call {TTY_LINE}.

## Claims

Paper claims: PO Box 44102, Salem, OR 97309-0102
Claims inquiries 541.555.0126; corrected claims go to Post Office Box 22190, Salem OR 97309-2190.

## Appeals

Mail written appeals to Appeals Unit, P.O. Box 3011, Eugene, OR 97440-3011, or fax (541) 555-0167.
Appeals are decided as 42 CFR 438.408 and 42 C.F.R. § 422.566(b) require; Medicaid appeals under
OAC 5160-58-08.4 use form AP-100 (rev. 3/2025). Claims Bulletin No. 2025-07 moved the filing limit.
"""

CALL_NOTE_PLAN_LINE = """Call note - Where to send a prior authorization

The member asked where the clinic should send the request. Gave her the UM fax (541) 555-0142 and told her the office can also use the portal.
"""

CALL_NOTE_MEMBER_PHONE = """Call note - Appeal status

The member asked about her appeal. Member callback (541) 555-0187 after 3 pm.
"""


def _directory_docx(path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.add_paragraph("Provider Directory: Lane County", style="Title")
    doc.add_heading("Primary care", level=1)
    doc.add_paragraph("Each listing shows the practice, its NPI, its tax id, the office address and phone.")
    rows = [
        ("Practice", "NPI", "Tax ID", "Address", "Phone"),
        ("Harbor Pediatrics", "1629071238", "92-3344556", "412 Pine St, Eugene, OR 97401", "(541) 555-0171"),
        ("Ana Ruiz, MD, Family Medicine", "1234567893", "93-1234567", "77 Oak Avenue, Springfield, OR 97477",
         "541-555-0172"),
    ]
    table = doc.add_table(rows=len(rows), cols=len(rows[0]))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_heading("Billing", level=1)
    doc.add_paragraph("Riverside Clinic, Group NPI 1003000126, TIN 91-0456789, bills office visits as 99213 "
                      "and CPAP supplies as E0601 with diagnosis M54.5 where it applies.")
    doc.save(str(path))


def _entry(file: str, doc_id: str, title: str, kind: str) -> dict:
    return {"file": file, "id": doc_id, "title": title, "type": kind, "version": 1, "effective_from": "2024-01-01",
            "date_basis": "date_of_service" if kind == "policy" else "none", "access_level": "public",
            "sensitive": False, "owner": "Provider Network"}


def build_contacts_corpus(root: Path, *, member_note: bool = False) -> Path:
    for folder in ("wiki", "policies", "notes"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "wiki/contacts.md").write_text(CONTACTS_MD)
    _directory_docx(root / "policies/directory.docx")
    (root / "notes/pa-fax.txt").write_text(CALL_NOTE_PLAN_LINE)
    entries = [_entry("wiki/contacts.md", "CT-CONTACTS", "Contacts for Providers", "wiki"),
               _entry("policies/directory.docx", "CT-DIR", "Provider Directory: Lane County", "policy"),
               _entry("notes/pa-fax.txt", "CT-NOTE-1", "Where to send a prior authorization", "call_note")]
    if member_note:
        (root / "notes/appeal.txt").write_text(CALL_NOTE_MEMBER_PHONE)
        entries.append(_entry("notes/appeal.txt", "CT-NOTE-2", "Appeal status", "call_note"))
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    return root


def _cli(*args: str, db) -> subprocess.CompletedProcess:
    """`policydesk ARGS` on a new database of the session's server, in this process (tests/cli_helpers.py)."""
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    return run_cli(*args, env=env)


def test_policydesk_ingest_writes_a_contacts_page_and_a_provider_directory(tmp_path, make_db):
    root = build_contacts_corpus(tmp_path / "corpus")
    out = _cli("ingest", str(root), db=make_db())
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 sources: 3 written" in out.stdout, out.stdout
    assert "PHI" not in out.stdout + out.stderr


def test_policydesk_ingest_still_refuses_a_call_note_with_a_members_callback_number(tmp_path, make_db):
    root = build_contacts_corpus(tmp_path / "corpus", member_note=True)
    out = _cli("ingest", str(root), db=make_db())
    assert out.returncode != 0
    report = out.stdout + out.stderr
    assert "notes/appeal.txt: file: contains what looks like member PHI - line 3: a phone number (phone_number)" \
        in report, report
    assert "pa-fax" not in report and "contacts.md" not in report and "555-0187" not in report


@pytest.mark.parametrize("line,kind", [
    ("Member ID 883104726 was read back to confirm.", "member_id"),
    ("Member's home address: 1420 Elm St, Salem, OR 97301.", "street_address"),
    ("Called the member back at 541-555-0190; no answer.", "phone_number"),
])
def test_a_call_note_with_a_members_id_address_or_number_is_refused(make_db, embed_model, settings, tmp_path, line, kind):
    root = build_contacts_corpus(tmp_path / "corpus", member_note=True)
    (root / "notes/appeal.txt").write_text(f"Call note - Appeal status\n\n{line}\n")
    with pytest.raises(IngestError, match=rf"notes/appeal.txt: file: contains what looks like member PHI - line 3: .*\({kind}\)"):
        ingest_directory(make_db(), root, embed_model, settings)


@pytest.fixture(scope="module")
def contacts_pipeline(make_db, embed_model, settings, tmp_path_factory):
    db = make_db()
    ingest_directory(db, build_contacts_corpus(tmp_path_factory.mktemp("contacts")), embed_model, settings)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="ct_rep", role="rep", password="ct-rep-password")
    return build_pipeline(db, settings, embed_model=embed_model, today=TODAY)


@pytest.mark.parametrize("question,number", [
    ("What's the fax number for prior auth?", PA_FAX),
    # The detector alone gives this number to the members named before it; post-flight lets it through
    # because the cited contacts page holds it verbatim (tests/test_postflight.py has the rule both ways).
    ("What number do members who are deaf or hard of hearing call?", TTY_LINE),
])
def test_an_answer_quoting_the_plans_number_from_its_source_is_shown(contacts_pipeline, question, number):
    result = contacts_pipeline.ask(AskRequest("ct_rep", question))
    assert not result.refused and not result.abstained, (result.refusal_message, result.abstain_reason)
    assert number in result.answer, result.answer
    assert any(c.doc_id == "CT-CONTACTS" for c in result.citations)
