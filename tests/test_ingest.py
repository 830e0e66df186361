"""Ingestion of the demo corpus and refusal of bad input, against the embedded Postgres."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from sqlalchemy import text

from policydesk.ingest import IngestError, check_staleness, ingest_directory
from tests.conftest import CORPUS, table_counts

DEMO_CHUNKS = 143  # 115 policy chunks (114 sections in 30 files), 18 wiki sections, 10 call notes (corpus/README.md)


def _entries(*files: str) -> list[dict]:
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text())
    by_file = {e["file"]: e for e in manifest["sources"]}
    return [dict(by_file[f]) for f in files]


def _corpus(tmp_path: Path, entries: list[dict], copy: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "c"
    for e in entries:
        src = CORPUS / e["file"]
        if src.exists():
            (root / e["file"]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, root / e["file"])
    root.mkdir(exist_ok=True)
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    return root


def test_demo_corpus_ingests_expected_chunks_with_full_metadata(demo_db):
    with demo_db.owner.connect() as conn:
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
        missing = conn.execute(text(
            "SELECT count(*) FROM data_chunks WHERE metadata_->>'version' IS NULL "
            "OR metadata_->>'effective_from' IS NULL OR metadata_->>'effective_to' IS NULL "
            "OR metadata_->>'access_level' IS NULL OR metadata_->>'text_sha256' IS NULL "
            "OR metadata_->>'section' IS NULL OR embedding IS NULL"
        )).scalar_one()
        by_type = dict(conn.execute(text(
            "SELECT metadata_->>'source_type', count(*) FROM data_chunks GROUP BY 1"
        )).all())
        versions = conn.execute(text("SELECT count(*) FROM document_versions")).scalar_one()
    assert total == DEMO_CHUNKS
    assert missing == 0
    assert by_type == {"policy": 115, "wiki": 18, "call_note": 10}
    assert versions == 47


def test_superseded_version_window_is_closed_and_current_is_open(demo_db):
    with demo_db.owner.connect() as conn:
        rows = conn.execute(text(
            "SELECT version, effective_from::text, effective_to::text, superseded_by FROM document_versions "
            "WHERE doc_id = 'POL-TF' ORDER BY version"
        )).all()
        chunk_windows = set(conn.execute(text(
            "SELECT metadata_->>'version', metadata_->>'effective_to', metadata_->>'superseded_by' "
            "FROM data_chunks WHERE metadata_->>'doc_id' = 'POL-TF'"
        )).all())
        null_ends = conn.execute(text("SELECT count(*) FROM document_versions WHERE effective_to IS NULL")).scalar_one()
    assert rows == [(1, "2024-01-01", "2026-01-01", 2), (2, "2026-01-01", "9999-12-31", None)]
    assert chunk_windows == {("1", "2026-01-01", "2"), ("2", "9999-12-31", None)}
    assert null_ends == 0


def test_reingest_unchanged_corpus_writes_nothing(make_db, embed_model, settings):
    db = make_db()
    first = ingest_directory(db, CORPUS, embed_model, settings)
    assert first.chunks_written == DEMO_CHUNKS
    snapshot_sql = text("SELECT node_id, xmin::text, md5(embedding::text), md5(metadata_::text) FROM data_chunks ORDER BY node_id")
    with db.owner.connect() as conn:
        before = conn.execute(snapshot_sql).all()
        versions_before = conn.execute(text("SELECT id, xmin::text FROM document_versions ORDER BY id")).all()
    counts = table_counts(db)
    again = ingest_directory(db, CORPUS, embed_model, settings)
    with db.owner.connect() as conn:
        after = conn.execute(snapshot_sql).all()
        versions_after = conn.execute(text("SELECT id, xmin::text FROM document_versions ORDER BY id")).all()
    assert again.chunks_written == 0 and again.unchanged == 47
    assert table_counts(db) == counts
    assert after == before  # same rows, same transaction ids: nothing was rewritten
    assert versions_after == versions_before


def test_new_version_closes_window_of_the_one_it_supersedes(make_db, embed_model, settings, tmp_path):
    db = make_db()
    v1 = _entries("policies/pol-tf-v1.pdf")
    ingest_directory(db, _corpus(tmp_path / "a", v1), embed_model, settings)
    report = ingest_directory(db, _corpus(tmp_path / "b", _entries("policies/pol-tf-v2.pdf")), embed_model, settings)
    assert report.windows_closed == ["POL-TF v1 -> 2026-01-01"]
    with db.owner.connect() as conn:
        windows = conn.execute(text(
            "SELECT DISTINCT metadata_->>'version', metadata_->>'effective_to' FROM data_chunks ORDER BY 1"
        )).all()
    assert windows == [("1", "2026-01-01"), ("2", "9999-12-31")]


def test_changed_source_replaces_its_chunks_and_staleness_check_finds_edits(make_db, embed_model, settings, tmp_path):
    db = make_db()
    entries = _entries("wiki/claims-desk-quick-reference.md")
    root = _corpus(tmp_path, entries)
    ingest_directory(db, root, embed_model, settings)
    assert check_staleness(db, root) == []
    page = root / "wiki/claims-desk-quick-reference.md"
    page.write_text(page.read_text().replace("180 days", "120 days"))
    stale = check_staleness(db, root)
    assert [(s.doc_id, s.version, s.reason) for s in stale] == [("WIKI-CLAIMS", 1, "changed")]
    ingest_directory(db, root, embed_model, settings)
    assert check_staleness(db, root) == []
    with db.owner.connect() as conn:
        texts = " ".join(conn.execute(text("SELECT text FROM data_chunks")).scalars())
    assert "120 days" in texts and "180 days" not in texts


def test_an_unchanged_file_is_hashed_not_read_again(make_db, embed_model, settings, tmp_path, monkeypatch):
    """Re-ingesting a folder reads (parses, OCRs) only the files whose bytes changed."""
    from policydesk.ingest import plan

    db = make_db()
    root = _corpus(tmp_path, _entries("wiki/claims-desk-quick-reference.md", "policies/pol-tf-v1.pdf"))
    ingest_directory(db, root, embed_model, settings)
    read, real = [], plan.read_layout
    monkeypatch.setattr(plan, "read_layout", lambda path, file, **kw: read.append(file) or real(path, file, **kw))
    again = ingest_directory(db, root, embed_model, settings)
    assert read == [] and again.unchanged == 2 and again.chunks_written == 0
    page = root / "wiki/claims-desk-quick-reference.md"
    page.write_text(page.read_text().replace("180 days", "120 days"))
    third = ingest_directory(db, root, embed_model, settings)
    assert read == ["wiki/claims-desk-quick-reference.md"]
    assert third.written_versions == ["WIKI-CLAIMS v1"] and third.unchanged == 1


def _bad_cases():
    tf1 = "policies/pol-tf-v1.pdf"
    return {
        "missing field": (lambda e: e[0].pop("owner"), [tf1], "owner: missing required field"),
        "unknown field": (lambda e: e[0].update(colour="red"), [tf1], "colour: unknown field"),
        "unknown access level": (lambda e: e[0].update(access_level="secret"), [tf1], "access_level: unknown access level 'secret'"),
        "missing file": (lambda e: e[0].update(file="policies/nope.pdf"), [tf1], "policies/nope.pdf: file: file not found"),
        "path escapes DIR": (lambda e: e[0].update(file="../../etc/passwd"), [tf1], "file: path escapes the corpus directory"),
        "bad date": (lambda e: e[0].update(effective_from="2024-13-45"), [tf1], "effective_from: '2024-13-45' is not a date"),
        "out-of-order windows": (
            lambda e: e[1].update(effective_from="2023-06-01"), [tf1, "policies/pol-tf-v2.pdf"],
            "effective_from: POL-TF version 2 takes effect 2023-06-01, not after version 1",
        ),
        "overlapping duplicate version": (
            lambda e: e[1].update(version=1), [tf1, "policies/pol-tf-v2.pdf"], "POL-TF version 1 is listed twice",
        ),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_bad_manifest_is_refused_and_writes_nothing(case, demo_db, embed_model, settings, tmp_path):
    mutate, files, message = _bad_cases()[case]
    entries = _entries(*files)
    root = _corpus(tmp_path, entries)
    mutate(entries)
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ingest_directory(demo_db, root, embed_model, settings)
    assert table_counts(demo_db) == before


def test_manifest_that_is_not_yaml_is_refused_naming_the_line(demo_db, embed_model, settings, tmp_path):
    # The manifest is parsed by libyaml; its messages do not show the line, so a bad file is
    # parsed again by the pure-Python parser for the message.
    root = _corpus(tmp_path, _entries("policies/pol-tf-v1.pdf"))
    body = (root / "manifest.yaml").read_text()
    (root / "manifest.yaml").write_text(body.replace("title: ", "title: [unclosed ", 1))
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match=r"manifest.yaml: -: not valid YAML: (?s:.*)line \d+, column \d+:\n\s+title: \[unclosed"):
        ingest_directory(demo_db, root, embed_model, settings)
    assert table_counts(demo_db) == before


@pytest.mark.parametrize("case,content,message", [
    ("not a pdf", b"this is plain text pretending to be a PDF", "not a PDF"),
    ("truncated pdf", b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n", "not a readable PDF|empty document"),
])
def test_unreadable_pdf_is_refused_and_writes_nothing(case, content, message, demo_db, embed_model, settings, tmp_path):
    entries = _entries("policies/pol-tf-v1.pdf", "policies/pol-idc-v1.pdf")
    root = _corpus(tmp_path, entries)
    (root / "policies/pol-idc-v1.pdf").write_bytes(content)
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match=f"policies/pol-idc-v1.pdf: file: ({message})"):
        ingest_directory(demo_db, root, embed_model, settings)
    assert table_counts(demo_db) == before


def test_empty_document_is_refused(demo_db, embed_model, settings, tmp_path):
    entries = _entries("wiki/appeals-faq.md")
    root = _corpus(tmp_path, entries)
    (root / "wiki/appeals-faq.md").write_text("# Appeals FAQ\n\n")
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match="wiki/appeals-faq.md: file: empty document"):
        ingest_directory(demo_db, root, embed_model, settings)
    assert table_counts(demo_db) == before


@pytest.mark.parametrize("identifier,kind", [
    ("The caller gave SSN 123-45-6789 by mistake.", "ssn"),
    ("Member CVM12345678 asked about filing.", "member_id"),
])
def test_call_note_with_member_identifier_is_refused(identifier, kind, demo_db, embed_model, settings, tmp_path):
    entries = _entries("call_notes/cn-01.txt", "policies/pol-tf-v1.pdf")
    root = _corpus(tmp_path, entries)
    note = root / "call_notes/cn-01.txt"
    note.write_text(note.read_text() + "\n" + identifier + "\n")
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match=f"call_notes/cn-01.txt: file: contains what looks like member PHI - line 5: .* \\({kind}\\)"):
        ingest_directory(demo_db, root, embed_model, settings)
    assert table_counts(demo_db) == before


def test_oversized_and_too_many_pages_pdf_are_refused(make_db, embed_model, settings, tmp_path):
    db = make_db()  # the file is not indexed yet: an indexed file with the same bytes is not read again
    entries = _entries("policies/pol-tf-v1.pdf")
    root = _corpus(tmp_path, entries)
    small = settings.model_copy(update={"MAX_SOURCE_BYTES": 100})
    with pytest.raises(IngestError, match="policies/pol-tf-v1.pdf: file: file is .* bytes; the limit is 100"):
        ingest_directory(db, root, embed_model, small)
    one_page = settings.model_copy(update={"MAX_PDF_PAGES": 0})
    with pytest.raises(IngestError, match="PDF has 1 pages; the limit is 0"):
        ingest_directory(db, root, embed_model, one_page)


def test_error_midway_rolls_back_everything(make_db, embed_model, settings, tmp_path):
    """One transaction per ingest: a failure while writing leaves no partial document."""
    db = make_db()
    entries = _entries("policies/pol-tf-v1.pdf", "policies/pol-idc-v1.pdf")
    root = _corpus(tmp_path, entries)

    class FailingSecondBatch:
        embed_batch_size = 5

        def __init__(self):
            self.calls = 0

        def get_text_embedding_batch(self, texts):
            self.calls += 1
            if self.calls == 2:
                raise TimeoutError("embedding provider timed out")
            return embed_model.get_text_embedding_batch(texts)

    with pytest.raises(TimeoutError):
        ingest_directory(db, root, FailingSecondBatch(), settings)
    assert table_counts(db) == {k: 0 for k in table_counts(db)}


def test_a_first_load_leaves_statistics_over_every_chunk_it_wrote(make_db, embed_model, settings, tmp_path):
    # Regression: with the writes batched, ANALYZE once ran before the chunks were flushed, leaving
    # the planner an empty table (it chooses between the HNSW index and an exact scan from these).
    db = make_db()
    root = _corpus(tmp_path, _entries("policies/pol-tf-v1.pdf", "policies/pol-tf-v2.pdf", "wiki/appeals-faq.md"))
    report = ingest_directory(db, root, embed_model, settings)
    with db.owner.connect() as conn:
        counted = conn.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'data_chunks'")).scalar_one()
        rows = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
    assert report.chunks_written == rows > 3
    assert counted == rows


def test_demo_corpus_word_policy_and_long_policy_are_chunked(demo_db):
    # Issue 14: `make demo` exercises the Word reader, plain bold PDF headings and a long section.
    with demo_db.owner.connect() as conn:
        rows = dict(conn.execute(text(
            "SELECT node_id, metadata_->>'section' FROM data_chunks "
            "WHERE metadata_->>'doc_id' IN ('POL-NEMT', 'POL-HOS')"
        )).all())
    assert rows["POL-NEMT:v1:scheduling-rides"] == "Scheduling Rides"
    assert rows["POL-HOS:v1:covered-hospice-services"] == rows["POL-HOS:v1:covered-hospice-services:2"] \
        == "Covered Hospice Services"
    assert not any("Version 1 - Effective" in section for section in rows.values())
