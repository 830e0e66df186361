"""The owners report on a small folder: per owner, sources changed but not synced, past their
`review_every`, with a recent version, and with unanswered questions; never a source above the
viewer's clearance; CSV, page and command line."""

from __future__ import annotations

import csv
import io
import os
import uuid
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from sqlalchemy.orm import Session

from policydesk.accounts.access import clearance_for
from policydesk.ingest import IngestError, check_staleness, ingest_directory
from policydesk.ingest.manifest import load_manifest
from policydesk.reports.owners import owners_report
from policydesk.proof.tracing import write_trace
from policydesk.accounts.users import add_user
from tests.web_helpers import PASSWORD, find, sign_in
from tests.cli_helpers import run_cli

TODAY = date(2026, 11, 29)
RECENT = TODAY - timedelta(days=10)


def _page(title: str, fact: str) -> str:
    return f"# {title}\n\n## Hours\n\n{fact}\n"


def _entry(file, doc_id, title, owner, *, version=1, effective="2025-01-01", level="public", **extra) -> dict:
    return {"file": file, "id": doc_id, "title": title, "type": "wiki", "version": version,
            "effective_from": effective, "date_basis": "none", "access_level": level, "sensitive": False,
            "owner": owner, **extra}


def _folder(root: Path) -> Path:
    root.mkdir(parents=True)
    pages = {
        "alpha.md": _page("Alpha Desk Guide", "The alpha desk opens at seven."),
        "beta.md": _page("Beta Desk Guide", "The beta desk opens at eight."),
        "delta.md": _page("Delta Desk Guide", "The delta desk opens at nine."),
        "delta-v2.md": _page("Delta Desk Guide", "The delta desk opens at ten."),
        "secret.md": _page("Regulator Liaison Guide", "The liaison files within two days."),
    }
    for file, body in pages.items():
        (root / file).write_text(body)
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": [
        _entry("alpha.md", "WIKI-ALPHA", "Alpha Desk Guide", "Desk Training", review_every=30),
        _entry("beta.md", "WIKI-BETA", "Beta Desk Guide", "Desk Training"),  # no review_every: never due
        _entry("delta.md", "WIKI-DELTA", "Delta Desk Guide", "Front Office", review_every=3650),
        _entry("delta-v2.md", "WIKI-DELTA", "Delta Desk Guide", "Front Office", version=2,
               effective=RECENT.isoformat(), review_every=3650),
        _entry("secret.md", "WIKI-SECRET", "Regulator Liaison Guide", "Regulatory Affairs", level="compliance",
               review_every=30),
    ]}, sort_keys=False))
    return root


def _ask(db, question: str, doc_id: str, role: str, levels: list[str]) -> None:
    write_trace(db, {
        "id": uuid.uuid4(), "kind": "ask", "user_name": f"owners-{role}", "user_role": role,
        "permitted_levels": levels, "sensitive_cleared": role != "rep", "question": question,
        "created_at": datetime.now(timezone.utc), "citations": [], "chunk_ids": [f"{doc_id}:v1:hours"],
        "refused": False, "abstained": True, "answer_text": "", "answer": {"abstain_code": "weak_match"},
    })


@pytest.fixture(scope="module")
def world(make_db, embed_model, settings, tmp_path_factory):
    root = _folder(tmp_path_factory.mktemp("owners") / "docs")
    db = make_db()
    ingest_directory(db, root, embed_model, settings)
    (root / "beta.md").write_text(_page("Beta Desk Guide", "The beta desk opens at noon."))
    check_staleness(db, root)  # what a sync records for a file it could not or did not yet sync
    _ask(db, "When does the alpha desk close on holidays?", "WIKI-ALPHA", "rep", ["public", "internal"])
    _ask(db, "When does the liaison call the regulator back?", "WIKI-SECRET", "compliance",
         ["public", "internal", "restricted", "compliance"])
    return root, db


def _items(report) -> set[tuple[str, str, str]]:
    return {(e.owner, i.kind, i.doc_id) for e in report.owners for i in e.items}


def _report(world, role: str, **kwargs):
    root, db = world
    today = datetime.now(timezone.utc).date()
    return owners_report(db, clearance_for(role), start=today - timedelta(days=1), end=today, today=TODAY,
                         recent_days=30, directory=root, **kwargs)


def test_each_owner_gets_what_to_act_on(world):
    assert _items(_report(world, "compliance")) == {
        ("Desk Training", "not_synced", "WIKI-BETA"),
        ("Desk Training", "past_review", "WIKI-ALPHA"),
        ("Desk Training", "unanswered", "WIKI-ALPHA"),
        ("Front Office", "version_change", "WIKI-DELTA"),
        ("Regulatory Affairs", "past_review", "WIKI-SECRET"),
        ("Regulatory Affairs", "unanswered", "WIKI-SECRET"),
    }


def test_a_supervisor_never_sees_a_source_above_their_clearance(world):
    items = _items(_report(world, "supervisor"))
    assert not any(doc == "WIKI-SECRET" or owner == "Regulatory Affairs" for owner, _, doc in items)
    assert ("Desk Training", "past_review", "WIKI-ALPHA") in items


def test_without_the_folder_no_review_is_due_and_the_report_says_so(world):
    root, db = world
    today = datetime.now(timezone.utc).date()
    report = owners_report(db, clearance_for("compliance"), start=today, end=today, today=TODAY, recent_days=30)
    assert not report.review_known and not any(k == "past_review" for _, k, _ in _items(report))


def test_owner_filter_and_csv_from_the_command_line(world):
    root, db = world
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False),
               POLICYDESK_TODAY=TODAY.isoformat(), POLICYDESK_RECENT_CHANGE_DAYS="30")
    out = run_cli("report", "owners", "--owner", "Desk Training", "--dir", str(root), env=env)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert {(r["owner"], r["kind"], r["doc_id"]) for r in rows} == {
        ("Desk Training", "not_synced", "WIKI-BETA"), ("Desk Training", "past_review", "WIKI-ALPHA"),
        ("Desk Training", "unanswered", "WIKI-ALPHA")}
    page = root.parent / "owners.html"
    out = run_cli("report", "owners", "--dir", str(root), "--format", "html", "--out", str(page), env=env)
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    assert 'data-owner="Front Office"' in html and "version 2 took effect" in html and "<style>" in html


def test_the_page_for_supervisors_and_compliance_only(world, settings, embed_model):
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    root, db = world
    local = settings.model_copy(update={"SYNC_DIR": root, "RECENT_CHANGE_DAYS": 30})
    app = create_app(local, db=db, pipeline=build_pipeline(db, local, embed_model=embed_model, today=TODAY))
    tag = uuid.uuid4().hex[:6]
    with Session(db.owner) as session, session.begin():
        for role in ("rep", "supervisor", "compliance"):
            add_user(session, name=f"owners-web-{role}-{tag}", role=role, password=PASSWORD)
    clients = {role: sign_in(app, f"owners-web-{role}-{tag}") for role in ("rep", "supervisor", "compliance")}
    assert clients["rep"].get("/reports/owners").status_code == 403
    sup = clients["supervisor"].get("/reports/owners")
    assert sup.status_code == 200 and "Alpha Desk Guide" in sup.text
    assert "Regulator Liaison Guide" not in sup.text and "Regulatory Affairs" not in sup.text
    comp = clients["compliance"].get("/reports/owners")
    owners = {s["attrs"]["data-owner"] for s in find(comp.text, "section") if "data-owner" in s["attrs"]}
    assert owners == {"Desk Training", "Front Office", "Regulatory Affairs"}
    body = clients["compliance"].get("/reports/owners", params={"format": "csv", "owner": "Front Office"}).text
    assert [r["doc_id"] for r in csv.DictReader(io.StringIO(body))] == ["WIKI-DELTA"]


def test_review_every_must_be_a_positive_number_of_days(tmp_path):
    root = _folder(tmp_path / "docs")
    manifest = yaml.safe_load((root / "manifest.yaml").read_text())
    for bad in (0, -5, "monthly", True):
        manifest["sources"][1]["review_every"] = bad
        (root / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
        with pytest.raises(IngestError, match="beta.md: review_every: must be a positive whole number of days"):
            load_manifest(root)


def test_on_the_demo_some_reviews_are_due_and_some_are_not(demo_db):
    """The demo manifest sets `review_every` on a few sources: on the demo date the owners report
    lists those past it under their owners, and not those whose review is still to come."""
    from tests.conftest import CORPUS, WEB_TODAY

    review = {s.doc_id: s.review_every for s in load_manifest(CORPUS) if s.review_every}
    assert len(review) >= 4
    for role in ("supervisor", "compliance"):
        report = owners_report(demo_db, clearance_for(role), start=WEB_TODAY, end=WEB_TODAY, today=WEB_TODAY,
                               recent_days=30, directory=CORPUS)
        due = {(e.owner, i.doc_id) for e in report.owners for i in e.of("past_review")}
        assert due == {("Member Services Training", "WIKI-CLAIMS"), ("Member Services Training", "WIKI-GLOSSARY"),
                       ("Member Services", "POL-INT")}, role
        assert not {"POL-TF", "WIKI-TH", "WIKI-APPEALS"} & {doc for _, doc in due}  # set, but not yet due
        assert {"POL-TF", "WIKI-TH", "WIKI-APPEALS"} <= set(review)
        detail = next(i.detail for e in report.owners for i in e.of("past_review") if i.doc_id == "WIKI-GLOSSARY")
        assert detail == "review every 365 days; last reviewed 2025-01-20, due 2026-01-20"
