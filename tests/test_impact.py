"""The impact list on a copy of the full demo corpus: a rep's answer from the Appeals FAQ, the FAQ
edited in the folder, `policydesk sync` picking it up, and `report impact` listing that answer
(not an unrelated one from the same day), on the command line and on the page, per clearance;
then a new version whose window covers the day an answer was given.

The rep asks whether members can send an appeal by email: only the FAQ's "How to Send an Appeal"
section says (the Member Appeals policy lists mail, phone and the portal and is silent on email).
Its mail/phone/portal sentence restates the policy, so a question about those channels is
answered from the binding policy instead, by design."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import shutil
import uuid
from datetime import date, datetime, timedelta, timezone

import pytest
import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.contract.answer import AskRequest
from policydesk.ingest import ingest_directory
from policydesk.reports.impact import impact_rows
from policydesk.accounts.access import clearance_for
from policydesk.storage.models import AuditEntry
from policydesk.accounts.users import add_user
from tests.conftest import CORPUS, WEB_TODAY
from tests.web_helpers import PASSWORD, find, parse, sign_in
from tests.cli_helpers import run_cli

APPEAL_QUESTION = "Can members send an appeal by email?"
FAQ = "wiki/appeals-faq.md"
OLD_SENTENCE = "Members can send an appeal in writing by mail"
NEW_SENTENCE = "Members can send an appeal only through the secure member portal or by fax"


@pytest.fixture(scope="module")
def world(make_db, embed_model, settings, tmp_path_factory):
    corpus = tmp_path_factory.mktemp("impact") / "corpus"
    shutil.copytree(CORPUS, corpus)
    db = make_db()
    ingest_directory(db, corpus, embed_model, settings)
    tag = uuid.uuid4().hex[:6]
    names = {role: f"impact-{role}-{tag}" for role in ("rep", "supervisor", "compliance")}
    with Session(db.owner) as session, session.begin():
        for role, name in names.items():
            add_user(session, name=name, role=role, password=PASSWORD)
    from policydesk.pipeline import build_pipeline

    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=WEB_TODAY)
    asked = {
        "rep_appeal": pipeline.ask(AskRequest(user_name=names["rep"], question=APPEAL_QUESTION)),
        "rep_unrelated": pipeline.ask(AskRequest(user_name=names["rep"], question="What is the timely filing limit?")),
        "compliance_appeal": pipeline.ask(AskRequest(user_name=names["compliance"], question=APPEAL_QUESTION)),
    }
    return {"corpus": corpus, "db": db, "names": names, "pipeline": pipeline, "asked": asked}


def _cited(result) -> set[str]:
    return {c.doc_id for c in result.citations}


def _env(db) -> dict:
    return dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))


def _cli(db, *args: str):
    return run_cli(*args, env=_env(db))


@pytest.fixture(scope="module")
def edited(world):
    a = world["asked"]
    assert "WIKI-APPEALS" in _cited(a["rep_appeal"]) and "WIKI-APPEALS" in _cited(a["compliance_appeal"])
    assert {(c.doc_id, c.section) for c in a["rep_appeal"].citations} == {("WIKI-APPEALS", "How to Send an Appeal")}
    assert "WIKI-APPEALS" not in _cited(a["rep_unrelated"]) and _cited(a["rep_unrelated"])
    faq = world["corpus"] / FAQ
    body = faq.read_text()
    assert OLD_SENTENCE in body
    faq.write_text(body.replace(OLD_SENTENCE, NEW_SENTENCE))
    out = _cli(world["db"], "sync", str(world["corpus"]))
    assert out.returncode == 0, out.stderr
    assert "synced: WIKI-APPEALS v1" in out.stdout and "1 synced" in out.stdout, out.stdout
    return world


def test_sync_writes_only_the_edited_source_and_then_nothing(edited):
    again = _cli(edited["db"], "sync", str(edited["corpus"]))
    assert again.returncode == 0, again.stderr
    assert "0 synced" in again.stdout and "synced:" not in again.stdout, again.stdout


def test_after_the_sync_an_answer_citing_the_edited_text_says_so(edited):
    before = [w for w in edited["asked"]["rep_appeal"].warnings if w.kind == "recent_change"]
    assert not any("Appeals FAQ" in w.message for w in before)
    again = edited["pipeline"].ask(AskRequest(user_name=edited["names"]["rep"], question=APPEAL_QUESTION))
    assert "WIKI-APPEALS" in _cited(again)
    today = datetime.now(timezone.utc).date().isoformat()
    assert any(w.kind == "recent_change" and w.message.startswith(f"Appeals FAQ version 1 was edited on {today}")
               for w in again.warnings), again.warnings
    unrelated = edited["pipeline"].ask(AskRequest(user_name=edited["names"]["rep"],
                                                  question="What is the timely filing limit?"))
    assert not any("was edited on" in w.message for w in unrelated.warnings)


def test_report_impact_lists_the_appeal_answer_and_not_the_unrelated_one(edited):
    yesterday = (datetime.now(timezone.utc).date() - timedelta(days=1)).isoformat()
    out = _cli(edited["db"], "report", "impact", "--since", yesterday, "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    a = edited["asked"]
    ids = {r["trace_id"] for r in records}
    assert str(a["rep_appeal"].trace_id) in ids and str(a["compliance_appeal"].trace_id) in ids
    assert str(a["rep_unrelated"].trace_id) not in ids
    rep = next(r for r in records if r["trace_id"] == str(a["rep_appeal"].trace_id))
    assert rep["doc_id"] == "WIKI-APPEALS" and rep["version"] == 1 and rep["change"] == "edited"
    assert rep["asked_by"] == edited["names"]["rep"] and rep["role"] == "rep"
    assert rep["old_sha256"] != rep["new_sha256"] and len(rep["new_sha256"]) == 64
    assert f"-{OLD_SENTENCE}" in rep["diff"].replace("\n", " ") or OLD_SENTENCE in rep["diff"]
    assert NEW_SENTENCE in rep["diff"]
    assert rep["replay_url"] == f"/disputes/{rep['trace_id']}"


def test_report_impact_as_a_supervisor_and_as_html(edited, tmp_path):
    yesterday = (datetime.now(timezone.utc).date() - timedelta(days=1)).isoformat()
    a = edited["asked"]
    out = _cli(edited["db"], "report", "impact", "--since", yesterday, "--format", "csv",
               "--as", edited["names"]["supervisor"])
    assert out.returncode == 0, out.stderr
    ids = {r["trace_id"] for r in csv.DictReader(io.StringIO(out.stdout))}
    assert str(a["rep_appeal"].trace_id) in ids and str(a["compliance_appeal"].trace_id) not in ids
    page = tmp_path / "impact.html"
    out = _cli(edited["db"], "report", "impact", "--since", yesterday, "--format", "html", "--out", str(page))
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    assert str(a["rep_appeal"].trace_id) in html and NEW_SENTENCE in html and "<style>" in html
    assert "/replay" not in html  # a file has no session to replay from
    bad = _cli(edited["db"], "report", "impact", "--since", yesterday, "--format", "xml")
    assert bad.returncode == 2 and "--format must be one of jsonl, csv, html" in bad.stderr


def test_a_period_before_the_answers_lists_nothing(edited):
    rows = impact_rows(edited["db"], clearance_for("compliance"), start=date(2020, 1, 1), end=date(2020, 1, 31))
    assert rows == []


@pytest.fixture(scope="module")
def clients(edited, settings):
    from policydesk.web.app import create_app

    app = create_app(settings, db=edited["db"], pipeline=edited["pipeline"])
    return {role: sign_in(app, name) for role, name in edited["names"].items()}


def _listed(page) -> set[str]:
    return {row["attrs"]["data-trace-id"] for row in find(page.text, "tr") if "data-trace-id" in row["attrs"]}


def test_the_page_shows_compliance_every_row_and_a_supervisor_only_theirs(edited, clients):
    since = (datetime.now(timezone.utc).date() - timedelta(days=1)).isoformat()
    a = edited["asked"]
    rep_trace, comp_trace = str(a["rep_appeal"].trace_id), str(a["compliance_appeal"].trace_id)
    full = clients["compliance"].get("/reports/impact", params={"since": since})
    assert full.status_code == 200
    assert {rep_trace, comp_trace} <= _listed(full) and str(a["rep_unrelated"].trace_id) not in _listed(full)
    assert f'href="/disputes/{rep_trace}"' in full.text and NEW_SENTENCE in full.text
    sup = clients["supervisor"].get("/reports/impact", params={"since": since})
    assert sup.status_code == 200
    assert rep_trace in _listed(sup) and comp_trace not in _listed(sup)
    assert clients["rep"].get("/reports/impact", params={"since": since}).status_code == 403
    assert 'href="/reports/impact"' in sup.text and 'href="/reports/impact"' not in clients["rep"].get("/ask").text
    csv_body = clients["supervisor"].get("/reports/impact", params={"since": since, "format": "csv"})
    assert csv_body.status_code == 200 and rep_trace in csv_body.text and comp_trace not in csv_body.text


def test_the_replay_link_reruns_the_answer_as_its_own_trace(edited, clients):
    from policydesk.storage.models import Trace
    from tests.web_helpers import csrf_from

    since = (datetime.now(timezone.utc).date() - timedelta(days=1)).isoformat()
    page = clients["compliance"].get("/reports/impact", params={"since": since})
    rep_trace = str(edited["asked"]["rep_appeal"].trace_id)
    [form] = [f for f in find(page.text, "form") if f["attrs"].get("action") == f"/disputes/{rep_trace}/replay"]
    used = datetime.now(timezone.utc).date().isoformat()
    r = clients["compliance"].post(form["attrs"]["action"], data={"member_date": used, "csrf_token": csrf_from(page.text)})
    assert r.status_code == 200, r.text[:300]
    with Session(edited["db"].owner) as session:
        replays = list(session.scalars(select(Trace).where(Trace.replay_of == uuid.UUID(rep_trace))))
    assert len(replays) == 1 and replays[0].kind == "replay" and replays[0].user_role == "rep"
    assert any(c["doc_id"] == "WIKI-APPEALS" and NEW_SENTENCE in c["text"] for c in replays[0].citations)


def test_every_view_and_export_is_audit_logged(edited, clients):
    since = (datetime.now(timezone.utc).date() - timedelta(days=1)).isoformat()
    clients["supervisor"].get("/reports/impact", params={"since": since, "format": "jsonl"})
    with Session(edited["db"].owner) as session:
        rows = list(session.scalars(select(AuditEntry).where(
            AuditEntry.action == "impact_report", AuditEntry.actor == edited["names"]["supervisor"])))
    assert rows and rows[-1].details["format"] == "jsonl" and rows[-1].details["viewer_role"] == "supervisor"
    assert str(edited["asked"]["rep_appeal"].trace_id) in rows[-1].details["traces"]
    assert str(edited["asked"]["compliance_appeal"].trace_id) not in rows[-1].details["traces"]


def test_bad_period_is_a_clear_error(clients):
    r = clients["compliance"].get("/reports/impact", params={"since": "2026-03-31", "until": "2026-03-01"})
    assert r.status_code == 422 and "before it starts" in r.text


def test_a_new_version_covering_the_day_asked_lists_the_answers_it_replaces(edited, embed_model, settings):
    """The timely-filing answer was not listed; a version taking effect the day it was given is."""
    corpus = edited["corpus"]
    manifest = yaml.safe_load((corpus / "manifest.yaml").read_text())
    latest = max((s for s in manifest["sources"] if s["id"] == "POL-TF"), key=lambda s: s["version"])
    shutil.copy(corpus / latest["file"], corpus / "policies" / "pol-tf-next.pdf")
    asked_on = datetime.now(timezone.utc).date()
    manifest["sources"].append({**latest, "file": "policies/pol-tf-next.pdf", "version": latest["version"] + 1,
                                "effective_from": asked_on})
    (corpus / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    from policydesk.ingest.sync import sync_directory

    report = sync_directory(edited["db"], corpus, embed_model, settings)
    assert report.written == [f"POL-TF v{latest['version'] + 1}"] and report.ok
    rows = impact_rows(edited["db"], clearance_for("compliance"), start=asked_on, end=asked_on)
    tf = [r for r in rows if r.trace_id == str(edited["asked"]["rep_unrelated"].trace_id)]
    assert [(r.doc_id, r.version, r.change, r.applies_now) for r in tf] == [
        ("POL-TF", latest["version"], "wrong_version", latest["version"] + 1)]
    assert tf[0].diff is None and tf[0].old_sha256 == tf[0].new_sha256  # the text itself is unchanged


def test_a_citation_the_viewer_may_not_read_is_never_listed(edited):
    """A rep's answer (within a supervisor's clearance) that cited a compliance-level section,
    since changed: compliance sees the row, the supervisor does not, not even its hashes."""
    from sqlalchemy import text as sql

    from policydesk.proof.tracing import write_trace

    db = edited["db"]
    with db.owner.connect() as conn:
        chunk = conn.execute(sql("SELECT node_id, text, metadata_ FROM data_chunks "
                                 "WHERE metadata_->>'access_level' = 'compliance' ORDER BY id LIMIT 1")).one()
    meta = chunk.metadata_
    tid = uuid.uuid4()
    write_trace(db, {
        "id": tid, "kind": "ask", "user_name": edited["names"]["rep"], "user_role": "rep",
        "permitted_levels": ["public", "internal"], "sensitive_cleared": False, "question": "a question",
        "created_at": datetime.now(timezone.utc), "chunk_ids": [chunk.node_id], "answer_text": "x",
        "citations": [{"chunk_id": chunk.node_id, "doc_id": meta["doc_id"], "title": meta["title"],
                       "section": meta.get("section", "s"), "source_type": "policy", "version": meta["version"],
                       "effective_from": meta["effective_from"], "effective_to": None,
                       "text_sha256": "0" * 64, "text": "the text as it was"}],
    })
    today = datetime.now(timezone.utc).date()
    full = impact_rows(db, clearance_for("compliance"), start=today, end=today)
    assert [r.change for r in full if r.trace_id == str(tid)] == ["edited"]
    sup = impact_rows(db, clearance_for("supervisor"), start=today, end=today)
    assert str(tid) not in {r.trace_id for r in sup}
    assert str(edited["asked"]["rep_appeal"].trace_id) in {r.trace_id for r in sup}


def test_a_one_sentence_edit_shows_one_sentence_removed_one_added_and_the_rest_unchanged(edited, clients):
    """The FAQ edit changed one sentence of its section: the diff says so, sentence by sentence,
    in the JSON lines and on the page, instead of the whole paragraph replaced."""
    yesterday = (datetime.now(timezone.utc).date() - timedelta(days=1)).isoformat()
    out = _cli(edited["db"], "report", "impact", "--since", yesterday, "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    rep_trace = str(edited["asked"]["rep_appeal"].trace_id)
    record = next(json.loads(line) for line in out.stdout.splitlines() if json.loads(line)["trace_id"] == rep_trace)
    lines = record["diff"].splitlines()
    removed = [line[2:] for line in lines if line.startswith("- ")]
    added = [line[2:] for line in lines if line.startswith("+ ")]
    same = [line[2:] for line in lines if line.startswith("  ")]
    assert len(removed) == 1 and removed[0].startswith(OLD_SENTENCE)
    assert len(added) == 1 and added[0].startswith(NEW_SENTENCE)
    assert len(same) >= 2 and len(same) + 2 == len(lines)
    assert any(s.startswith("Members cannot send an appeal by email") for s in same)
    page = clients["compliance"].get("/reports/impact", params={"since": yesterday})
    elements = parse(page.text).elements
    start = next(i for i, e in enumerate(elements) if e["tag"] == "tr" and e["attrs"].get("data-trace-id") == rep_trace)
    row = list(itertools.takewhile(lambda e: e["tag"] != "tr", elements[start + 1:]))  # this answer's row only
    items = [e for e in row if e["tag"] == "li" and e["attrs"].get("class") in ("removed", "added", "same")]
    kinds = [li["attrs"]["class"] for li in items]
    assert kinds.count("removed") == 1 and kinds.count("added") == 1 and kinds.count("same") == len(same)
    assert OLD_SENTENCE in next(li["text"] for li in items if li["attrs"]["class"] == "removed")
    assert NEW_SENTENCE in next(li["text"] for li in items if li["attrs"]["class"] == "added")
