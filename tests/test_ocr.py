"""Scanned policies (issue 53): pages with no text layer are read by OCR at ingest, their confidence
travels with their chunks, low-confidence pages are flagged, unreadable ones refused, and an answer
citing OCR'd text says so.

The scans are made here: a two-page policy written with fpdf2, rendered and faxed by
scripts/make_scans.py (200 dpi, 1-bit, skew, speckles, a stamp), rebuilt as an image-only PDF
and as a mixed one (page 1 keeps its text layer). Tesseract is a system dependency that .ci/run
installs: these tests fail, not skip, without it."""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
from datetime import date
from pathlib import Path

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user
from policydesk.config import Settings
from policydesk.ingest import IngestError, ingest_directory
from policydesk.ingest.dryrun import inspect_file
from policydesk.ingest.sync import sync_directory
from policydesk.pipeline import AskRequest, build_pipeline
from tests.cli_helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
TODAY = date(2026, 11, 29)
DOC = "OCR-SLEEP"
HSAT_FACT = "An ordering provider attestation dated within the previous 45 days is required for a home sleep apnea test."
LAB_FACT = "Requests for in-lab polysomnography are faxed on form SL-200 and decided within 9 business days."


def _make_scans():
    spec = importlib.util.spec_from_file_location("make_scans", REPO / "scripts" / "make_scans.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _policy_pdf(path: Path) -> None:
    """Two pages: bold 12 pt headings over 11 pt body text, a 16 pt title, a letterhead line."""
    from fpdf import FPDF
    from fpdf.enums import XPos, YPos

    pdf = FPDF(format="Letter")
    pdf.set_margins(25, 25, 25)
    pdf.set_auto_page_break(auto=False)

    def put(style: str, size: int, line: str, height: float) -> None:
        pdf.set_font("Helvetica", style, size)
        pdf.multi_cell(0, height, line, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(3)

    pdf.add_page()
    put("B", 16, "Sleep Study Coverage", 9)
    put("", 10, "Policy SLP-1 - Version 1 - Effective 2024-01-01", 5)
    put("B", 12, "Purpose", 7)
    put("", 11, "This policy explains when the plan covers sleep studies for members with suspected "
                "obstructive sleep apnea, and what the ordering provider sends with a request.", 5.5)
    put("B", 12, "Home Sleep Apnea Tests", 7)
    put("", 11, "A home sleep apnea test is the first study for most adults. " + HSAT_FACT, 5.5)
    pdf.add_page()
    put("B", 12, "In-Lab Polysomnography", 7)
    put("", 11, "An attended study in a sleep laboratory is covered when a home test is not suitable or was "
                "inconclusive. " + LAB_FACT, 5.5)
    pdf.output(str(path))


def _corpus(root: Path, pdf_bytes: bytes) -> Path:
    (root / "policies").mkdir(parents=True, exist_ok=True)
    (root / "policies/sleep.pdf").write_bytes(pdf_bytes)
    entry = {"file": "policies/sleep.pdf", "id": DOC, "title": "Sleep Study Coverage", "type": "policy",
             "version": 1, "effective_from": "2024-01-01", "date_basis": "date_of_service",
             "access_level": "public", "sensitive": False, "owner": "Utilization Management"}
    (root / "wiki").mkdir(exist_ok=True)
    (root / "wiki/hearing.md").write_text("# Hearing Aid Replacement\n\n## Replacement\n\n"
                                          "Hearing aids are replaced once every 36 months per ear.\n")
    wiki = {"file": "wiki/hearing.md", "id": "OCR-HEAR", "title": "Hearing Aid Replacement", "type": "wiki",
            "version": 1, "effective_from": "2024-01-01", "date_basis": "none", "access_level": "public",
            "sensitive": False, "owner": "Member Services"}
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": [entry, wiki]}, sort_keys=False))
    return root


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory) -> dict[str, Path]:
    assert shutil.which("tesseract"), "tesseract is not installed (.ci/run installs tesseract-ocr)"
    scans = _make_scans()
    root = tmp_path_factory.mktemp("ocr")
    original = root / "original.pdf"
    _policy_pdf(original)
    out = {"original": original}
    for name, keep in (("scanned", ()), ("mixed", (1,))):
        out[name] = root / f"{name}.pdf"
        out[name].write_bytes(scans.scan_pdf(original, seed=3, keep_text_pages=keep))
    return out


@pytest.fixture(scope="module")
def scanned_db(pdfs, make_db, embed_model, settings, tmp_path_factory):
    root = _corpus(tmp_path_factory.mktemp("scanned-corpus"), pdfs["scanned"].read_bytes())
    db = make_db()
    # Every page under the flag threshold, so the flag's paths (warning, report) are exercised.
    flagging = settings.model_copy(update={"OCR_FLAG_BELOW": 99.9})
    report = ingest_directory(db, root, embed_model, flagging)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="ocr_rep", role="rep", password="ocr-rep-password")
    return db, root, report


def _chunks(db) -> dict[str, tuple[str, dict]]:
    with db.owner.connect() as conn:
        rows = conn.execute(text("SELECT node_id, text, metadata_ FROM data_chunks ORDER BY node_id")).all()
    return {r.node_id: (r.text, r.metadata_) for r in rows}


def test_the_scans_have_no_text_layer_but_the_mixed_pdf_keeps_page_one(pdfs):
    import pypdfium2 as pdfium

    def chars(path: Path) -> list[int]:
        pdf = pdfium.PdfDocument(str(path))
        return [pdf[n].get_textpage().count_chars() for n in range(len(pdf))]

    assert chars(pdfs["scanned"]) == [0, 0]
    assert chars(pdfs["mixed"])[0] > 100 and chars(pdfs["mixed"])[1] == 0


def test_a_scanned_policy_is_found_and_the_answer_cites_it_with_an_ocr_warning(scanned_db, embed_model, settings):
    db, _, report = scanned_db
    assert report.written_versions == [f"{DOC} v1", "OCR-HEAR v1"]
    chunks = _chunks(db)
    key = f"{DOC}:v1:home-sleep-apnea-tests"
    assert key in chunks and f"{DOC}:v1:in-lab-polysomnography" in chunks, sorted(chunks)
    assert "45 days" in chunks[key][0]
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=TODAY)
    result = pipeline.ask(AskRequest("ocr_rep", "How recent must the ordering provider attestation be for a home "
                                                "sleep apnea test?"))
    assert not result.refused and not result.abstained, (result.refusal_message, result.abstain_reason)
    assert "45 days" in result.answer, result.answer
    assert key in [c.chunk_id for c in result.citations]
    ocr = [w for w in result.warnings if w.kind == "ocr_text"]
    assert len(ocr) == 1 and DOC in ocr[0].message and "OCR confidence" in ocr[0].message, result.warnings
    assert "flagged at ingest as low confidence" in ocr[0].message
    assert any(w["kind"] == "ocr_text" for w in result.to_json()["warnings"])


def test_each_chunk_carries_its_pages_ocr_confidence(scanned_db):
    db, _, _ = scanned_db
    chunks = _chunks(db)
    first = chunks[f"{DOC}:v1:home-sleep-apnea-tests"][1]
    second = chunks[f"{DOC}:v1:in-lab-polysomnography"][1]
    assert set(first["ocr_pages"]) == {"1"} and set(second["ocr_pages"]) == {"2"}
    for meta in (first, second):
        assert 0 < meta["ocr_confidence"] <= 100
        assert meta["ocr_confidence"] == min(meta["ocr_pages"].values())
    assert first["ocr_flagged"] == [1] and second["ocr_flagged"] == [2]
    # A chunk from a text source carries no OCR keys.
    assert not [k for k in chunks["OCR-HEAR:v1:replacement"][1] if k.startswith("ocr")]


def test_the_owners_report_lists_the_flagged_pages(scanned_db):
    from policydesk.accounts.access import clearance_for
    from policydesk.reports.owners import owners_csv, owners_report

    db, _, _ = scanned_db
    report = owners_report(db, clearance_for("rep"), start=TODAY, end=TODAY, today=TODAY, recent_days=30)
    [owner] = [e for e in report.owners if e.owner == "Utilization Management"]
    [item] = owner.of("ocr_flagged")
    assert item.doc_id == DOC and "page 1 (" in item.detail and "page 2 (" in item.detail, item.detail
    assert ",ocr_flagged,OCR-SLEEP," in owners_csv(report)
    assert not [e for e in report.owners if e.owner == "Member Services" and e.of("ocr_flagged")]


def test_an_answer_citing_a_text_source_has_no_ocr_warning(scanned_db, embed_model, settings):
    db, _, _ = scanned_db
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=TODAY)
    result = pipeline.ask(AskRequest("ocr_rep", "How often are hearing aids replaced?"))
    assert [c.doc_id for c in result.citations] == ["OCR-HEAR"], (result.refusal_message, result.abstain_reason)
    assert not [w for w in result.warnings if w.kind == "ocr_text"], result.warnings


def test_mixed_pdf_keeps_its_text_layer_page_verbatim_and_ocrs_the_image_page(pdfs, settings):
    original = {c.key: c for c in inspect_file(pdfs["original"], settings, "policy").chunks}
    mixed = inspect_file(pdfs["mixed"], settings, "policy")
    assert not mixed.refused, mixed.problem
    got = {c.key: c for c in mixed.chunks}
    assert set(got) == set(original)
    assert list(mixed.ocr_pages) == [2]
    # Page 1 came from the text layer: the same text, byte for byte.
    for key in ("purpose", "home-sleep-apnea-tests"):
        assert got[key].text == original[key].text
    lab = got["in-lab-polysomnography"].text
    assert "SL-200" in lab and "9 business days" in lab, lab


def test_inspect_shows_each_pages_confidence_and_flags_a_low_one(pdfs, tmp_path):
    env = dict(os.environ, POLICYDESK_OCR_FLAG_BELOW="99.9", POLICYDESK_DATA_DIR=str(tmp_path))
    out = run_cli("inspect", str(pdfs["scanned"]), "--type", "policy", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    confidences = [ln for ln in out.stdout.splitlines() if ln.strip().startswith("read by OCR:")]
    assert len(confidences) == 1 and "page 1 confidence" in confidences[0] and "page 2 confidence" in confidences[0]
    flagged = [ln for ln in out.stdout.splitlines() if "low confidence" in ln and "flagged" in ln]
    assert [ln.split("page ")[1].split(":")[0] for ln in flagged] == ["1", "2"], out.stdout
    env["POLICYDESK_OCR_FLAG_BELOW"] = "1"
    out = run_cli("inspect", str(pdfs["scanned"]), "--type", "policy", env=env)
    assert "read by OCR:" in out.stdout and "flagged" not in out.stdout, out.stdout


def _ink_without_words(path: Path) -> None:
    """A one-page image-only PDF of scribbles: ink, but nothing to read."""
    from PIL import Image, ImageDraw

    rng = random.Random(5)
    img = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(img)
    for _ in range(400):
        x, y = rng.randrange(200, 1500), rng.randrange(200, 2000)
        draw.line([(x, y), (x + rng.randrange(-120, 120), y + rng.randrange(-120, 120))], fill=0, width=rng.randrange(2, 9))
    img.convert("1").save(path, "PDF", resolution=200.0)


def test_an_unreadable_page_is_refused_naming_file_and_page_and_nothing_is_written(tmp_path, make_db, embed_model, settings):
    page = tmp_path / "scribbles.pdf"
    _ink_without_words(page)
    root = _corpus(tmp_path / "corpus", page.read_bytes())
    db = make_db()
    with pytest.raises(IngestError) as exc:
        ingest_directory(db, root, embed_model, settings)
    assert str(exc.value).startswith("policies/sleep.pdf: page 1: scanned page unreadable by OCR"), str(exc.value)
    assert _chunks(db) == {}


def test_a_blank_scanned_page_is_a_warning_not_an_empty_chunk(pdfs, tmp_path, settings):
    from PIL import Image
    from pypdf import PdfReader, PdfWriter

    blank = tmp_path / "blank.pdf"
    Image.new("1", (1700, 2200), 1).save(blank, "PDF", resolution=200.0)
    writer = PdfWriter()
    for src in (pdfs["mixed"], blank):
        for p in PdfReader(str(src)).pages:
            writer.add_page(p)
    combined = tmp_path / "with-blank.pdf"
    with combined.open("wb") as fh:
        writer.write(fh)
    planned = inspect_file(combined, settings, "policy")
    assert not planned.refused, planned.problem
    assert "page 3: blank scanned page, nothing indexed from it" in planned.warnings
    assert 3 not in planned.ocr_pages and all(c.text.split("\n", 1)[1].strip() for c in planned.chunks)


def test_without_tesseract_a_scanned_page_is_refused_with_the_reason(pdfs, tmp_path):
    settings = Settings(DATA_DIR=tmp_path, ENVIRONMENT="test", _env_file=None, OCR_COMMAND="no-such-tesseract")
    planned = inspect_file(pdfs["scanned"], settings, "policy")
    assert planned.refused
    assert "page 1" in str(planned.problem) and "OCR is not available" in planned.problem.reason
    assert "no-such-tesseract" in planned.problem.reason


def test_reading_a_scan_twice_gives_the_same_chunks_and_a_resync_writes_nothing(pdfs, scanned_db, embed_model, settings):
    first = inspect_file(pdfs["mixed"], settings, "policy")
    again = inspect_file(pdfs["mixed"], settings, "policy")
    assert [(c.key, c.text) for c in first.chunks] == [(c.key, c.text) for c in again.chunks]
    assert first.ocr_pages == again.ocr_pages
    db, root, _ = scanned_db
    before = _chunks(db)
    report = sync_directory(db, root, embed_model, settings)
    assert report.written == [] and report.unchanged == 2 and not report.failed, report.summary()
    assert _chunks(db) == before


def test_an_ask_is_answered_while_a_scan_is_synced_in_the_background(pdfs, make_db, embed_model, settings, tmp_path):
    """`serve` syncs change notices on its worker thread (ingest/worker.py); OCR runs tesseract in a
    subprocess on one core, so an ask does not wait for the scan (docs/performance.md has the
    40-page figure, scripts/ocr_load.py)."""
    from policydesk.ingest.worker import Notice, SyncWorker

    root = _corpus(tmp_path / "corpus", pdfs["scanned"].read_bytes())
    manifest = yaml.safe_load((root / "manifest.yaml").read_text())
    scan_entry, wiki_entry = manifest["sources"]
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": [wiki_entry]}, sort_keys=False))
    db = make_db()
    ingest_directory(db, root, embed_model, settings)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="ocr_bg_rep", role="rep", password="ocr-bg-rep-password")
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=TODAY)
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": [wiki_entry, scan_entry]}, sort_keys=False))
    worker = SyncWorker(db, root, embed_model, settings)
    worker.submit(Notice(paths=("policies/sleep.pdf",)))
    result = pipeline.ask(AskRequest("ocr_bg_rep", "How often are hearing aids replaced?"))
    busy = not worker.wait_idle(0)
    assert [c.doc_id for c in result.citations] == ["OCR-HEAR"], (result.refusal_message, result.abstain_reason)
    assert busy, "the ask should be answered while the scan is still being read"
    assert worker.wait_idle(300)
    assert worker.results[-1].written == [f"{DOC} v1"], worker.results[-1]


def test_phi_on_a_scanned_page_is_refused_like_text(tmp_path, settings):
    """Screening reads the OCR'd text like any other: a member's SSN on a faxed page refuses the file."""
    from fpdf import FPDF
    from fpdf.enums import XPos, YPos

    pdf = FPDF(format="Letter")
    pdf.set_margins(25, 25, 25)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 9, "Appeal Intake", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_font("Helvetica", "", 12)
    pdf.multi_cell(0, 7, "Member SSN 123-45-6789 was given on the call to confirm the appeal request.",
                   new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    original = tmp_path / "intake.pdf"
    pdf.output(str(original))
    scanned = tmp_path / "intake-scan.pdf"
    scanned.write_bytes(_make_scans().scan_pdf(original, seed=4))
    planned = inspect_file(scanned, settings, "policy")
    assert planned.refused and "member PHI" in planned.problem.reason, planned.problem
    assert "123-45-6789" not in str(planned.problem)
