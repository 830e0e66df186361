"""Bad files, --skip-bad and the dry run (issue 14): each bad file is one clear line naming the
file and the reason; every bad file is listed at once; nothing partial is written."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from sqlalchemy import text

from policydesk.ingest import IngestError, IngestRefused, ingest_directory
from tests import ingest_fixtures as fx
from tests.conftest import table_counts
from tests.cli_helpers import run_cli



def _scanned_pdf(path: Path) -> None:
    from fpdf import FPDF
    from PIL import Image

    image = path.with_suffix(".png")
    Image.new("L", (200, 100), color=200).save(image)
    pdf = FPDF()
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=100)
    pdf.output(str(path))


BAD = {
    # An image with no ink and no text layer: OCR finds nothing to read (readers/ocr.py).
    "scanned PDF": ("policies/scan.pdf", "policy", _scanned_pdf, "scanned PDF with no ink on any page"),
    "password PDF": ("policies/locked.pdf", "policy",
                     lambda p: fx._pdf(p, "Locked", [("body", "Secret text.")], password="pw"),
                     "PDF is password-protected"),
    "corrupt DOCX": ("policies/broken.docx", "policy", lambda p: p.write_bytes(b"PK\x03\x04 not really a zip"),
                     "not a readable Word document"),
    "encrypted DOCX": ("policies/enc.docx", "policy", lambda p: p.write_bytes(b"\xd0\xcf\x11\xe0" + b"\0" * 600),
                       "password-protected or legacy Word file"),
    "0-byte file": ("wiki/empty.md", "wiki", lambda p: p.write_bytes(b""), r"empty file \(0 bytes\)"),
    "non-UTF-8 text": ("wiki/latin.md", "wiki", lambda p: p.write_bytes(b"# Caf\xe9\n\nMenu.\n"),
                       r"not UTF-8 text \(byte 0xe9 at offset 5\)"),
}


def _corpus_with(root: Path, bad: list[str]) -> Path:
    """The hearing-aid policy (good) plus the named bad files."""
    (root / "policies").mkdir(parents=True)
    (root / "wiki").mkdir()
    fx.numbered_pdf(root / "policies/hearing.pdf")
    entries = [fx._entry("policies/hearing.pdf", "FX-HEAR", "Hearing Aid Benefit", "policy")]
    for i, case in enumerate(bad):
        file, kind, make, _ = BAD[case]
        make(root / file)
        entries.append(fx._entry(file, f"FX-BAD-{i}", f"Bad {i}", kind))
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    return root


@pytest.mark.parametrize("case", list(BAD))
def test_bad_file_is_one_clear_line_and_nothing_is_written(case, demo_db, embed_model, settings, tmp_path):
    root = _corpus_with(tmp_path / "c", [case])
    file, _, _, reason = BAD[case]
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match=f"^{file}: file: {reason}") as refused:
        ingest_directory(demo_db, root, embed_model, settings)
    assert "\n" not in str(refused.value)
    assert table_counts(demo_db) == before


def test_file_over_the_size_limit_is_refused(demo_db, embed_model, settings, tmp_path):
    root = _corpus_with(tmp_path / "c", [])
    small = settings.model_copy(update={"MAX_SOURCE_BYTES": 200})
    with pytest.raises(IngestError, match=r"policies/hearing.pdf: file: file is \d+ bytes; the limit is 200"):
        ingest_directory(demo_db, root, embed_model, small)


def test_every_bad_file_is_listed_at_once(demo_db, embed_model, settings, tmp_path):
    cases = ["scanned PDF", "corrupt DOCX", "non-UTF-8 text"]
    root = _corpus_with(tmp_path / "c", cases)
    before = table_counts(demo_db)
    with pytest.raises(IngestRefused) as refused:
        ingest_directory(demo_db, root, embed_model, settings)
    lines = str(refused.value).splitlines()
    assert lines[0] == "3 files refused:"
    assert [ln.strip().split(":")[0] for ln in lines[1:]] == [BAD[c][0] for c in cases]
    assert table_counts(demo_db) == before


def test_skip_bad_ingests_the_rest_in_one_transaction(make_db, embed_model, settings, tmp_path):
    db = make_db()
    root = _corpus_with(tmp_path / "c", ["password PDF", "0-byte file"])
    report = ingest_directory(db, root, embed_model, settings, skip_bad=True)
    assert report.written_versions == ["FX-HEAR v1"]
    assert [s.split(":")[0] for s in report.skipped] == ["policies/locked.pdf", "wiki/empty.md"]
    assert "refused and skipped" in report.summary()
    with db.owner.connect() as conn:
        docs = conn.execute(text("SELECT doc_id FROM document_versions")).scalars().all()
    assert docs == ["FX-HEAR"]


def test_call_note_with_phi_is_refused_and_skip_bad_leaves_only_it_out(make_db, embed_model, settings, tmp_path):
    root = fx.build(tmp_path / "c")
    (root / "notes/dental.txt").write_text(fx.NOTE_TXT + "\nMember ID 483920174 was read back.\n")
    db = make_db()
    with pytest.raises(IngestError, match=r"^notes/dental.txt: file: contains what looks like member PHI - "
                                          r"line 5: a member identifier \(member_id\)"):
        ingest_directory(db, root, embed_model, settings)
    assert table_counts(db)["data_chunks"] == 0
    report = ingest_directory(db, root, embed_model, settings, skip_bad=True)
    assert len(report.written_versions) == 8 and len(report.skipped) == 1


def _cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, POLICYDESK_DATA_DIR=str(tmp_path / "data"))
    return run_cli(*args, env=env)


def test_dry_run_prints_sections_chunks_and_warnings_and_writes_nothing(tmp_path):
    root = fx.build(tmp_path / "c")
    out = _cli("ingest", str(root), "--dry-run", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "policies/imaging.pdf  FX-IMG v1 (policy)  title 'Imaging Prior Authorization': 5 sections, 13 chunks" \
        in out.stdout
    assert "exceptions-2" in out.stdout and "Appeals \u203a Exceptions" in out.stdout
    assert re.search(r"clinical-criteria:2 +Clinical criteria part 2/9 \(\d+ tokens, page \d\): The", out.stdout)
    assert "warning: no headings found; split by paragraphs" in out.stdout
    assert "nothing written (dry run)" in out.stdout
    assert not (tmp_path / "data").exists()  # no database was even started


def test_dry_run_lists_refused_files_and_exits_1(tmp_path):
    root = _corpus_with(tmp_path / "c", ["scanned PDF", "non-UTF-8 text"])
    out = _cli("ingest", str(root), "--dry-run", tmp_path=tmp_path)
    assert out.returncode == 1
    assert "policies/scan.pdf  FX-BAD-0 v1 (policy): REFUSED: scanned PDF with no ink on any page" in out.stdout
    assert "wiki/latin.md  FX-BAD-1 v1 (wiki): REFUSED: not UTF-8 text" in out.stdout
    assert "2 refused" in out.stdout
    assert _cli("ingest", str(root), "--dry-run", "--skip-bad", tmp_path=tmp_path).returncode == 0


def test_inspect_one_file(tmp_path):
    fx.sleep_docx(tmp_path / "sleep.docx")
    out = _cli("inspect", str(tmp_path / "sleep.docx"), tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert re.search("repeat-testing +Coverage \u203a Home sleep tests \u203a Repeat testing \\(", out.stdout)
