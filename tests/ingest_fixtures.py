"""Source files in every format and heading style ingest supports, made by the libraries people
author them with (fpdf2, python-docx) or as text. Each file carries facts found nowhere else, so
a question can be checked against the citation that answers it.

`FACTS` lists (file, question, words the answer must hold, chunk key that must be cited).
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

WORDS = (
    "reviewer clinical record imaging request ordering provider documentation guideline study "
    "symptom history finding referral schedule facility contrast radiologist summary evidence "
    "treatment response plan outcome measure criteria notes specialist report"
).split()


def filler(words: int, seed: int) -> list[str]:
    """Plausible policy prose that states no rule anyone will ask about: paragraphs of ~120 words."""
    rng = random.Random(seed)
    paragraphs, sentence, para, count = [], [], [], 0
    while count < words:
        sentence = rng.sample(WORDS, 9)
        text = f"The {sentence[0]} reviews the {sentence[1]} and the {sentence[2]} with the {sentence[3]}, " \
               f"then records the {sentence[4]} for the {sentence[5]} {sentence[6]} and the {sentence[7]} {sentence[8]}."
        para.append(text)
        count += len(text.split())
        if len(para) == 6:
            paragraphs.append(" ".join(para))
            para = []
    if para:
        paragraphs.append(" ".join(para))
    return paragraphs


KEY_SENTENCE = "Cardiac PET scans require a treadmill stress test completed within the previous 45 days."


def _pdf(path: Path, title: str, blocks: list[tuple[str, str]], *, footer: bool = False,
         password: str | None = None) -> None:
    """blocks: (style, text) with style in title/h1/h2/caps/numbered/body."""
    from fpdf import FPDF
    from fpdf.enums import XPos, YPos

    class Doc(FPDF):
        def footer(self):
            if footer:
                self.set_y(-15)
                self.set_font("Helvetica", "", 8)
                self.cell(0, 10, f"Imaging policy - Page {self.page_no()}", align="C")

    pdf = Doc(format="Letter")
    if password:
        pdf.set_encryption(owner_password="owner-" + password, user_password=password)
    pdf.set_margins(20, 20, 20)
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_page()
    styles = {"title": ("B", 16, 9), "h1": ("B", 14, 8), "h2": ("B", 12, 7), "caps": ("", 11, 6),
              "numbered": ("B", 12, 7), "body": ("", 11, 5.5)}
    for style, text in [("title", title)] + blocks:
        weight, size, height = styles[style]
        pdf.set_font("Helvetica", weight, size)
        if style != "body":
            pdf.ln(2)
        pdf.multi_cell(0, height, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(2 if style == "body" else 1)
    pdf.output(str(path))


def imaging_pdf(path: Path) -> None:
    """Bold unnumbered headings in two sizes, a preamble, "Exceptions" twice, a long section whose
    key sentence is its last, several pages with a running footer."""
    long = filler(1600, seed=14)
    long[-1] = long[-1] + " " + KEY_SENTENCE
    _pdf(path, "Imaging Prior Authorization", [
        ("body", "This policy sets the rules for advanced imaging requests. The imaging review program "
                 "is administered by the Radiology Benefit Office."),
        ("h1", "Decision timeframe"),
        ("body", "Standard imaging requests are decided within 7 calendar days of receipt."),
        ("h1", "Coordination"),
        ("h2", "Exceptions"),
        ("body", "Imaging ordered during an inpatient stay needs no separate authorization."),
        ("h1", "Appeals"),
        ("h2", "Exceptions"),
        ("body", "A peer-to-peer review of an imaging denial may be requested within 14 days of the denial."),
        ("h1", "Clinical criteria"),
        *[("body", p) for p in long],
    ], footer=True)


def numbered_pdf(path: Path) -> None:
    _pdf(path, "Hearing Aid Benefit", [
        ("numbered", "1. Purpose"),
        ("body", "This policy describes the hearing aid benefit."),
        ("numbered", "2. Replacement frequency"),
        ("body", "Hearing aids are replaced once every 36 months per ear."),
    ])


def caps_pdf(path: Path) -> None:
    _pdf(path, "Ambulance Transport", [
        ("caps", "EMERGENCY TRANSPORT"),
        ("body", "Emergency ambulance transport to the nearest appropriate hospital needs no authorization."),
        ("caps", "NON-EMERGENCY TRANSPORT"),
        ("body", "Non-emergency ambulance trips need a physician certification signed within 60 days before the trip."),
    ])


def plain_pdf(path: Path) -> None:
    """No headings at all: a title-sized first line is all there is."""
    from fpdf import FPDF

    pdf = FPDF(format="Letter")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    for para in ("The vision benefit covers routine eye care for members of every plan.",
                 "Members receive one routine eye exam every 12 months at a participating optometrist.",
                 "Frames and lenses are covered up to a 150 dollar allowance every 24 months."):
        pdf.multi_cell(0, 5.5, para)
        pdf.ln(4)
    pdf.output(str(path))


def sleep_docx(path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.add_paragraph("Sleep Study Coverage", style="Title")
    doc.add_paragraph("This policy covers diagnostic sleep studies for adult members.")
    doc.add_heading("Coverage", level=1)
    doc.add_heading("Home sleep tests", level=2)
    doc.add_paragraph("A home sleep apnea test is the first test for members with suspected obstructive sleep apnea.")
    doc.add_heading("Repeat testing", level=3)
    doc.add_paragraph("A repeat home sleep test is covered once every 5 years unless symptoms change.")
    doc.add_heading("In-lab studies", level=2)
    doc.add_paragraph("An in-lab polysomnography study requires a failed or inconclusive home test.")
    table = doc.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Study", "Authorization"
    table.cell(1, 0).text, table.cell(1, 1).text = "Titration study", "Required"
    doc.save(str(path))


NURSE_MD = """# Nurse Line Guide

The nurse line answers clinical questions from members.

## Hours

### Weekday coverage

On weekdays the nurse line is staffed around the clock.

### Weekend coverage

On weekends the nurse line is staffed from 8 a.m. to 4 p.m. and calls after hours roll to the on-call nurse.

## Transfers

Warm transfer members with chest pain to the nurse line before ending the call.
"""

TRANSPORT_HTML = """<!doctype html>
<html><head><title>Transportation Benefit FAQ</title><style>p { color: red }</style></head>
<body>
<h1>Transportation Benefit FAQ</h1>
<div>Members with no other way to reach covered appointments can use the ride benefit.</div>
<h3>Ride scheduling</h3>
<p>Rides must be scheduled at least <b>2 business days</b> before the appointment.</p>
<h3>Mileage reimbursement</h3>
<ul><li>Members who drive themselves are reimbursed 22 cents per mile.</li></ul>
</body></html>
"""

CONTACTS_MD = """# Provider Contacts

## Provider Services

Provider offices reach provider services at (503) 555-0142, Monday to Friday.
Fax prior authorization requests to 503-555-0199; include the ordering NPI 1234567893.
Paper claims go to PO Box 4410, and appeals cite the policy number 20250117.

## Credentialing

Credentialing questions go to the network management team, who answer within 3 business days.
"""

NOTE_TXT = """Call note - Questions about dental cleanings

A member asked how many dental cleanings are covered. The representative explained that two routine cleanings are covered each calendar year. No action was needed.
"""


def build(root: Path) -> Path:
    """Every fixture under `root`, with a manifest that lists them."""
    (root / "policies").mkdir(parents=True, exist_ok=True)
    (root / "wiki").mkdir(exist_ok=True)
    (root / "notes").mkdir(exist_ok=True)
    imaging_pdf(root / "policies/imaging.pdf")
    numbered_pdf(root / "policies/hearing.pdf")
    caps_pdf(root / "policies/ambulance.pdf")
    plain_pdf(root / "policies/vision.pdf")
    sleep_docx(root / "policies/sleep.docx")
    (root / "wiki/nurse-line.md").write_text(NURSE_MD)
    (root / "wiki/transport.html").write_text(TRANSPORT_HTML)
    (root / "wiki/contacts.md").write_text(CONTACTS_MD)
    (root / "notes/dental.txt").write_text(NOTE_TXT)
    entries = [
        _entry("policies/imaging.pdf", "FX-IMG", "Imaging Prior Authorization", "policy"),
        _entry("policies/hearing.pdf", "FX-HEAR", "Hearing Aid Benefit", "policy"),
        _entry("policies/ambulance.pdf", "FX-AMB", "Ambulance Transport", "policy"),
        _entry("policies/vision.pdf", "FX-VIS", "Vision Benefit", "policy"),
        _entry("policies/sleep.docx", "FX-SLEEP", "Sleep Study Coverage", "policy"),
        _entry("wiki/nurse-line.md", "FX-NURSE", "Nurse Line Guide", "wiki"),
        _entry("wiki/transport.html", "FX-RIDE", "Transportation Benefit FAQ", "wiki"),
        _entry("wiki/contacts.md", "FX-CONTACTS", "Provider Contacts", "wiki"),
        _entry("notes/dental.txt", "FX-NOTE", "Questions about dental cleanings", "call_note"),
    ]
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    return root


def _entry(file: str, doc_id: str, title: str, kind: str) -> dict:
    return {
        "file": file, "id": doc_id, "title": title, "type": kind, "version": 1,
        "effective_from": "2024-01-01", "date_basis": "date_of_service" if kind == "policy" else "none",
        "access_level": "public", "sensitive": False, "owner": "Fixture Owner",
    }


# (doc, question, words the answer must contain, chunk key that must be cited)
FACTS = [
    ("FX-IMG", "Who administers the imaging review program?", "Radiology Benefit Office",
     "imaging-prior-authorization"),
    ("FX-IMG", "How many days does the plan have to decide a standard imaging request?", "7 calendar days",
     "decision-timeframe"),
    ("FX-IMG", "Does imaging ordered during an inpatient stay need a separate authorization?",
     "inpatient stay", "exceptions"),
    ("FX-IMG", "Within how many days can a peer-to-peer review of an imaging denial be requested?", "14 days",
     "exceptions-2"),
    ("FX-IMG", "What test must be completed before a cardiac PET scan is approved?", "45 days", None),
    ("FX-HEAR", "How often are hearing aids replaced?", "36 months", "replacement-frequency"),
    ("FX-AMB", "What certification does a non-emergency ambulance trip need?", "60 days",
     "non-emergency-transport"),
    ("FX-VIS", "How often is a routine eye exam covered by the vision benefit?", "12 months", None),
    ("FX-SLEEP", "How often is a repeat home sleep test covered?", "5 years", "repeat-testing"),
    ("FX-NURSE", "What are the nurse line hours on weekends?", "8 a.m. to 4 p.m.", "weekend-coverage"),
    ("FX-RIDE", "How far ahead must transportation benefit rides be scheduled?", "2 business days",
     "ride-scheduling"),
    ("FX-CONTACTS", "How quickly does the network management team answer credentialing questions?",
     "3 business days", "credentialing"),
    ("FX-NOTE", "How many routine dental cleanings are covered each year?", "two routine cleanings", None),
]
