"""A sync can never widen who reads indexed text, and can take a source out of service (issue 49,
items 1, 2, 7 and the second half of 11).

- lowering `sensitive` of an indexed source is refused like lowering `access_level`, and the
  manifest's versions of one document must agree on it;
- the same bytes (a copy or a symlink) already indexed or listed under another id at another
  clearance are refused, naming both sources;
- `policydesk sync DIR --retire ID` removes a source's text from retrieval, writes an audit_log
  row, and leaves the proof (traces and their hash chain, the disputes check) intact;
- a source file over the size limit is refused on its size, never read whole;
- one bad manifest entry is refused alone: the rest of a sync (or a change notice) goes ahead.

Every check goes through the public interface: the `policydesk` command (in process, or as a
subprocess where it must be the real console script), the change-notice endpoint over
TestClient, and `policydesk.retriever` as a developer would call it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tracemalloc
import uuid
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr
from sqlalchemy import select, text
from sqlalchemy.orm import Session
from typer.testing import CliRunner

import policydesk
from policydesk.cli import app
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.storage.models import AuditEntry, Chunk, Document, DocumentVersion
from policydesk.accounts.users import add_user
from tests.api_helpers import bearer, make_token

CLI = os.path.join(os.path.dirname(sys.executable), "policydesk")
PASSWORD = "widening-password-long"

ALPHA = "# Alpha Desk Guide\n\n## Hours\n\nThe alpha desk opens at seven.\n"
BETA = "# Beta Desk Guide\n\n## Hours\n\nThe beta desk opens at eight.\n"
SECRET = "# Fraud Referral Playbook\n\n## Thresholds\n\nRefer a provider to the SIU after three flagged claims.\n"
NOTE = "CALLER ASKED ABOUT A GRIEVANCE\n\nThe caller described a grievance about a provider's conduct.\n"


def entry(file: str, doc_id: str, *, type: str = "wiki", level: str = "public", sensitive: bool = False,
          version: int = 1, effective_from: str = "2025-01-01", title: str | None = None) -> dict:
    return {"file": file, "id": doc_id, "title": title or doc_id.title(), "type": type, "version": version,
            "effective_from": effective_from, "date_basis": "none", "access_level": level,
            "sensitive": sensitive, "owner": "Desk Training"}


def write_manifest(root: Path, entries: list[dict]) -> None:
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))


@pytest.fixture
def db(make_db):
    return make_db()


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


@pytest.fixture
def cli(db, settings, monkeypatch):
    """`policydesk ...` in process, on this test's database (the embedding model is loaded once)."""
    def run(*args: str):
        return CliRunner().invoke(app, [str(a) for a in args])

    def use(**updates) -> None:
        run.settings = settings.model_copy(update={
            "DATABASE_URL": SecretStr(db.owner_url.render_as_string(hide_password=False)), **updates})

    use()
    for module in ("policydesk.commands.sync", "policydesk.commands.common", "policydesk.cli"):
        monkeypatch.setattr(f"{module}.get_settings", lambda: run.settings, raising=False)
    run.use = use
    return run


def chunks_of(db, doc_id: str) -> list[tuple[str, str, bool]]:
    with Session(db.owner) as session:
        return [(r.text, r.access_level, r.sensitive) for r in session.execute(
            select(Chunk.text, Chunk.access_level, Chunk.sensitive).where(Chunk.doc_id == doc_id).order_by(Chunk.id))]


def rep_retrieves(db, embed_model, settings, question: str) -> set[str]:
    """The documents a rep's `policydesk.retriever` returns for the question."""
    with Session(db.owner) as session, session.begin():
        name = f"rep-{uuid.uuid4().hex[:6]}"
        add_user(session, name=name, role="rep", password=PASSWORD)
    retriever = policydesk.retriever(name, dates=None, db=db, embed_model=embed_model, settings=settings)
    return {doc_id_of(n.node) for n in retriever.retrieve(question)}


# -- item 1: sensitive ------------------------------------------------------------------------------

@pytest.mark.parametrize("edit_text", [True, False], ids=["file-edited", "only-the-manifest"])
def test_lowering_sensitive_of_an_indexed_source_is_refused_naming_it(db, root, cli, embed_model, edit_text):
    (root / "note.txt").write_text(NOTE)
    (root / "alpha.md").write_text(ALPHA)
    write_manifest(root, [entry("note.txt", "NOTE-GRIEVANCE", type="call_note", sensitive=True),
                          entry("alpha.md", "WIKI-ALPHA")])
    first = cli("ingest", root)
    assert first.exit_code == 0, first.output
    before = chunks_of(db, "NOTE-GRIEVANCE")
    assert before and all(sensitive for _, _, sensitive in before)

    if edit_text:
        (root / "note.txt").write_text(NOTE.replace("conduct", "conduct at the front desk"))
    (root / "alpha.md").write_text(ALPHA.replace("seven", "six"))
    write_manifest(root, [entry("note.txt", "NOTE-GRIEVANCE", type="call_note", sensitive=False),
                          entry("alpha.md", "WIKI-ALPHA")])
    synced = cli("sync", root)
    assert synced.exit_code == 1, synced.output
    assert "not synced: note.txt: sensitive: differs from the indexed NOTE-GRIEVANCE (True)" in synced.output
    assert "synced: WIKI-ALPHA v1" in synced.output  # the rest still syncs
    assert chunks_of(db, "NOTE-GRIEVANCE") == before  # still sensitive, still the indexed text
    assert "NOTE-GRIEVANCE" not in rep_retrieves(db, embed_model, cli.settings, "grievance about a provider's conduct")

    refused = cli("ingest", root)  # the one-transaction ingest refuses it the same way
    assert refused.exit_code != 0 and "sensitive: differs from the indexed NOTE-GRIEVANCE (True)" in refused.output


def test_versions_of_one_source_must_agree_on_sensitive(db, root, cli):
    (root / "note-v1.txt").write_text(NOTE)
    (root / "note-v2.txt").write_text(NOTE.replace("conduct", "billing"))
    write_manifest(root, [entry("note-v1.txt", "NOTE-GRIEVANCE", type="call_note", sensitive=True),
                          entry("note-v2.txt", "NOTE-GRIEVANCE", type="call_note", sensitive=False, version=2,
                                effective_from="2025-06-01")])
    result = cli("ingest", root)
    assert result.exit_code != 0
    assert "note-v2.txt: sensitive: differs from note-v1.txt; versions of NOTE-GRIEVANCE must agree" in result.output
    assert chunks_of(db, "NOTE-GRIEVANCE") == []


# -- item 2: the same bytes under another id ------------------------------------------------------

@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_restricted_bytes_listed_again_lower_are_refused_naming_both(db, root, cli, embed_model, how):
    (root / "secret.md").write_text(SECRET)
    (root / "alpha.md").write_text(ALPHA)
    write_manifest(root, [entry("secret.md", "WIKI-FRAUD", level="restricted"), entry("alpha.md", "WIKI-ALPHA")])
    assert cli("ingest", root).exit_code == 0

    if how == "copy":
        shutil.copyfile(root / "secret.md", root / "handy.md")
    else:
        (root / "handy.md").symlink_to(root / "secret.md")
    write_manifest(root, [entry("secret.md", "WIKI-FRAUD", level="restricted"), entry("alpha.md", "WIKI-ALPHA"),
                          entry("handy.md", "WIKI-HANDY", title="Handy Tips")])
    synced = cli("sync", root)
    assert synced.exit_code == 1, synced.output
    line = next(l for l in synced.output.splitlines() if "not synced: handy.md" in l)
    assert "access_level" in line and "WIKI-HANDY" in line and "WIKI-FRAUD" in line and "secret.md" in line, line
    assert chunks_of(db, "WIKI-HANDY") == []
    assert "WIKI-HANDY" not in rep_retrieves(db, embed_model, cli.settings, "When is a provider referred to the SIU?")


def test_a_copy_listed_beside_its_original_is_refused_and_an_indexed_one_is_named(db, root, cli):
    """Both new in one manifest: the lower copy is refused (nothing written). A copy indexed
    before its restricted original (listed first, or before this check existed) is named when
    the original comes: the original is refused, with how to retire the copy."""
    (root / "secret.md").write_text(SECRET)
    shutil.copyfile(root / "secret.md", root / "handy.md")
    write_manifest(root, [entry("handy.md", "WIKI-HANDY"), entry("secret.md", "WIKI-FRAUD", level="restricted")])
    both = cli("ingest", root)
    assert both.exit_code != 0 and "handy.md: access_level: same content" in both.output, both.output
    assert chunks_of(db, "WIKI-HANDY") == [] and chunks_of(db, "WIKI-FRAUD") == []

    write_manifest(root, [entry("handy.md", "WIKI-HANDY")])
    assert cli("sync", root).exit_code == 0  # alone, nothing says it is restricted
    write_manifest(root, [entry("handy.md", "WIKI-HANDY"), entry("secret.md", "WIKI-FRAUD", level="restricted")])
    synced = cli("sync", root)
    assert synced.exit_code == 1
    assert ("not synced: secret.md: access_level: same content" in synced.output
            and "as WIKI-HANDY v1 (handy.md), indexed at public" in synced.output
            and "policydesk sync DIR --retire WIKI-HANDY" in synced.output), synced.output

    # The fix the line names: drop the copy from the manifest and retire it; the original syncs.
    write_manifest(root, [entry("secret.md", "WIKI-FRAUD", level="restricted")])
    fixed = cli("sync", root, "--retire", "WIKI-HANDY", "--by", "desk-admin")
    assert fixed.exit_code == 0, fixed.output
    assert "retired: WIKI-HANDY (v1)" in fixed.output and "synced: WIKI-FRAUD v1" in fixed.output
    assert chunks_of(db, "WIKI-HANDY") == [] and chunks_of(db, "WIKI-FRAUD")


# -- retiring a source ----------------------------------------------------------------------------

def _cited_trace(db, doc_id: str) -> uuid.UUID:
    """A rep's answer citing the source, written as the pipeline writes traces (hash-chained)."""
    from policydesk.proof.tracing import write_trace

    with Session(db.owner) as session:
        chunk = session.scalars(select(Chunk).where(Chunk.doc_id == doc_id).order_by(Chunk.id)).first()
    meta = chunk.metadata_
    trace_id = uuid.uuid4()
    write_trace(db, {
        "id": trace_id, "kind": "ask", "user_name": "desk-rep", "user_role": "rep",
        "permitted_levels": ["public", "internal"], "sensitive_cleared": False,
        "question": "When does the alpha desk open?", "answer_text": "At seven.", "chunk_ids": [chunk.node_id],
        "citations": [{"chunk_id": chunk.node_id, "doc_id": doc_id, "title": meta["title"], "section": meta["section"],
                       "source_type": "wiki", "version": 1, "effective_from": meta["effective_from"],
                       "effective_to": None, "text_sha256": hashlib.sha256(chunk.text.encode()).hexdigest(),
                       "text": chunk.text}]})
    return trace_id


def test_sync_retire_takes_a_source_out_of_service_audited_and_the_proof_still_verifies(
        db, root, cli, embed_model):
    from datetime import date

    from policydesk.proof import disputes

    (root / "alpha.md").write_text(ALPHA)
    (root / "beta.md").write_text(BETA)
    write_manifest(root, [entry("alpha.md", "WIKI-ALPHA"), entry("beta.md", "WIKI-BETA")])
    assert cli("ingest", root).exit_code == 0
    assert "WIKI-ALPHA" in rep_retrieves(db, embed_model, cli.settings, "When does the alpha desk open?")
    trace_id = _cited_trace(db, "WIKI-ALPHA")

    still_listed = cli("sync", root, "--retire", "WIKI-ALPHA")
    assert still_listed.exit_code == 2 and "still listed in manifest.yaml (alpha.md)" in still_listed.output
    unknown = cli("sync", root, "--retire", "WIKI-NOWHERE")
    assert unknown.exit_code == 2 and "WIKI-NOWHERE: --retire: no indexed source has this id" in unknown.output
    assert chunks_of(db, "WIKI-ALPHA")  # nothing was retired by either

    write_manifest(root, [entry("beta.md", "WIKI-BETA")])
    retired = cli("sync", root, "--retire", "WIKI-ALPHA", "--by", "desk-admin")
    assert retired.exit_code == 0, retired.output
    assert "retired: WIKI-ALPHA (v1): 1 chunks removed" in retired.output

    # Out of service: nothing retrieves it, for any role.
    assert chunks_of(db, "WIKI-ALPHA") == []
    assert "WIKI-ALPHA" not in rep_retrieves(db, embed_model, cli.settings, "When does the alpha desk open?")
    with Session(db.owner) as session:
        doc = session.get(Document, "WIKI-ALPHA")
        assert doc.retired_at is not None and doc.retired_by == "desk-admin"
        assert session.scalar(select(DocumentVersion.source_file).where(DocumentVersion.doc_id == "WIKI-ALPHA")) \
            == "alpha.md"  # its history stays: what the trace cited is still described
        [audit] = session.scalars(select(AuditEntry).where(AuditEntry.action == "source_retired")).all()
    assert (audit.actor, audit.target, audit.details["chunks_removed"]) == ("desk-admin", "WIKI-ALPHA", 1)
    assert audit.details["versions"][0]["file"] == "alpha.md"

    # The proof holds: both chains verify (real console script), and the old answer still checks.
    verify = subprocess.run([CLI, "traces", "verify"], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False)))
    assert verify.returncode == 0 and "traces: 1 rows verify" in verify.stdout, verify.stdout + verify.stderr
    trace = disputes.load(db, trace_id, reviewer="desk-compliance")
    [verdict] = disputes.check(db, trace, date(2025, 11, 3), reviewer="desk-compliance")
    assert verdict.kind == "section_missing" and verdict.cited_version == 1
    assert ("WIKI-ALPHA", 1) in disputes.readable_citations(db, trace, policydesk.clearance_for("compliance"))

    again = cli("sync", root, "--retire", "WIKI-ALPHA")
    assert again.exit_code == 2 and "already retired" in again.output
    (root / "alpha.md").write_text(ALPHA)
    write_manifest(root, [entry("beta.md", "WIKI-BETA"), entry("alpha.md", "WIKI-ALPHA")])
    relisted = cli("sync", root)
    assert relisted.exit_code == 1 and "not synced: alpha.md: id: WIKI-ALPHA was retired on" in relisted.output
    assert chunks_of(db, "WIKI-ALPHA") == []
    with db.owner.connect() as conn:  # the chain covers the retirement's audit row too
        assert conn.execute(text("SELECT count(*) FROM audit_log WHERE action = 'source_retired'")).scalar_one() == 1


# -- item 7: size before hashing ------------------------------------------------------------------

def test_an_oversize_source_is_refused_on_its_size_without_being_read_whole(db, root, cli):
    limit, size = 64 * 1024, 48 * 1024 * 1024
    (root / "alpha.md").write_text(ALPHA)
    (root / "beta.md").write_text(BETA)
    write_manifest(root, [entry("alpha.md", "WIKI-ALPHA"), entry("beta.md", "WIKI-BETA")])
    cli.use(MAX_SOURCE_BYTES=limit)
    assert cli("ingest", root).exit_code == 0
    with open(root / "beta.md", "r+b") as fh:  # the page grows to 48 MiB (sparse: no disk used)
        fh.truncate(size)
    (root / "alpha.md").write_text(ALPHA.replace("seven", "six"))

    tracemalloc.start()
    try:
        synced = cli("sync", root)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert synced.exit_code == 1, synced.output
    assert f"not synced: beta.md: file: file is {size} bytes; the limit is {limit}" in synced.output
    assert "synced: WIKI-ALPHA v1" in synced.output
    assert peak < 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB traced while syncing a {size >> 20} MiB file"


# -- item 11, second half: one bad entry ------------------------------------------------------------

@pytest.fixture
def notices(db, root, settings, embed_model):
    from fastapi.testclient import TestClient

    from policydesk.ingest import ingest_directory
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    (root / "alpha.md").write_text(ALPHA)
    (root / "beta.md").write_text(BETA)
    write_manifest(root, [entry("alpha.md", "WIKI-ALPHA"), entry("beta.md", "WIKI-BETA")])
    ingest_directory(db, root, embed_model, settings)
    local = settings.model_copy(update={"SYNC_DIR": root})
    app = create_app(local, db=db, pipeline=build_pipeline(db, local, embed_model=embed_model))
    with Session(db.owner) as session, session.begin():
        add_user(session, name="widening-compliance", role="compliance", password=PASSWORD)
    return app, TestClient(app), make_token(db, "widening-compliance")


def test_one_bad_manifest_entry_is_refused_alone_by_change_notices_and_sync(db, root, notices, cli):
    app, client, token = notices
    (root / "alpha.md").write_text(ALPHA.replace("seven", "five"))
    write_manifest(root, [entry("alpha.md", "WIKI-ALPHA"), {**entry("beta.md", "WIKI-BETA"), "access_level": "secret"}])

    r = client.post("/api/v1/sources/changed", headers=bearer(token), json={"paths": ["alpha.md"]})
    assert r.status_code == 202 and r.json() == {"queued": ["alpha.md"]}, r.text
    assert app.state.sync_worker.wait_idle(120)
    assert [(x.written, x.failed) for x in app.state.sync_worker.results] == [(["WIKI-ALPHA v1"], [])]
    assert any("opens at five" in t for t, _, _ in chunks_of(db, "WIKI-ALPHA"))

    # Named, the bad entry is queued and refused alone, loudly, in the sync's report.
    r = client.post("/api/v1/sources/changed", headers=bearer(token), json={"ids": ["WIKI-BETA"]})
    assert r.status_code == 202 and r.json() == {"queued": ["beta.md"]}, r.text
    assert app.state.sync_worker.wait_idle(120)
    last = app.state.sync_worker.results[-1]
    assert last.written == [] and last.failed == [
        "beta.md: access_level: unknown access level 'secret' (allowed: public, internal, restricted, compliance)"]

    (root / "alpha.md").write_text(ALPHA.replace("seven", "four"))
    synced = cli("sync", root)
    assert synced.exit_code == 1
    assert "synced: WIKI-ALPHA v1" in synced.output and "not synced: beta.md: access_level" in synced.output
    assert "2 sources: 1 synced, 0 unchanged; 1 failed" in synced.output

    (root / "manifest.yaml").write_text("sources: [")  # a manifest that can't be read at all still stops
    r = client.post("/api/v1/sources/changed", headers=bearer(token), json={"paths": ["alpha.md"]})
    assert r.status_code == 503 and "manifest" in r.json()["detail"]
