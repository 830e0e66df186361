"""Rollback of the latest migration keeps the data (issue 52, item 4): on a database with the demo
corpus ingested and traces written, `policydesk migrate --down 1` undoes whatever migration is the
head now (read from the migrations directory, never named here), and `policydesk migrate` brings it
back; chunks, traces, feedback and both hash chains are as before and verify, an export taken
before is what one taken after gives, and the application login is still bound by row-level
security."""

from __future__ import annotations

import json
import os
import uuid
from datetime import date, datetime, timezone

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user
from policydesk.contract.answer import AskRequest
from policydesk.proof.exports import export_traces, render, verify_export_lines
from policydesk.proof.feedback import record_feedback
from policydesk.storage.backup import read_contents
from policydesk.storage.chain import CHAINED_TABLES, verify_chain
from policydesk.storage.migrate import MIGRATIONS, current_revision
from policydesk.storage.security import database_problems
from tests.cli_helpers import run_cli

TODAY = datetime.now(timezone.utc).date()


def _scripts() -> ScriptDirectory:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg)


def _export(db) -> list[dict]:
    return [json.loads(line) for line in render(export_traces(db, reviewer="auditor-rollback", start=TODAY, end=TODAY),
                                                "jsonl")]


def test_rolling_back_the_latest_migration_and_upgrading_again_keeps_the_data(make_db, settings, embed_model):
    from policydesk.pipeline import build_pipeline

    db = make_db(demo=True)
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    rep = f"rb-rep-{uuid.uuid4().hex[:6]}"
    with Session(db.owner) as session, session.begin():
        add_user(session, name=rep, role="rep", password="x" * 16)
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=date(2026, 11, 29))
    for question in ("What is the timely filing limit?", "How are appeals handled?"):
        pipeline.ask(AskRequest(user_name=rep, question=question))
    with db.owner.connect() as conn:
        first = conn.execute(text("SELECT id FROM traces WHERE user_name = :u ORDER BY seq"), {"u": rep}).scalars().first()
    record_feedback(db, user_name=rep, trace_id=first, verdict="wrong", reason="unclear_wording")
    exported = _export(db)
    with db.owner.connect() as conn:
        before = read_contents(conn)

    head = _scripts().get_current_head()
    previous = _scripts().get_revision(head).down_revision
    assert current_revision(db.owner) == head and previous is not None

    down = run_cli("migrate", "--down", "1", env=env)
    assert down.returncode == 0, down.stdout + down.stderr
    assert f"{head} -> {previous}" in down.stdout
    assert current_revision(db.owner) == previous
    with db.owner.connect() as conn:
        at_previous = read_contents(conn)
    # Every table the previous schema has keeps its rows, and the chains verify on it.
    kept = {t for t in at_previous.rows if t != "alembic_version"}
    assert kept and {"data_chunks", "traces", "audit_log", "feedback"} <= kept
    assert {t: at_previous.rows[t] for t in kept} == {t: before.rows[t] for t in kept}
    assert at_previous.chain_heads == before.chain_heads
    assert all(verify_chain(db.owner, t).ok for t in CHAINED_TABLES)

    up = run_cli("migrate", env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    assert current_revision(db.owner) == head
    with db.owner.connect() as conn:
        after = read_contents(conn)
    assert {t: after.rows[t] for t in kept} == {t: before.rows[t] for t in kept}
    assert after.chain_heads == before.chain_heads
    verified = run_cli("traces", "verify", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"traces: {before.rows['traces']} rows verify" in verified.stdout
    assert database_problems(db.app) == []
    again = _export(db)
    assert again == exported and verify_export_lines([json.dumps(r) for r in again], whole_period=True) == []


def test_a_rollback_past_the_first_migration_is_refused_and_changes_nothing(make_db):
    db = make_db()
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    head = current_revision(db.owner)
    steps = len(list(_scripts().walk_revisions())) + 1
    done = run_cli("migrate", "--down", str(steps), env=env)
    assert done.returncode == 2 and f"the schema is unchanged at {head}" in done.stderr, done.stdout + done.stderr
    assert current_revision(db.owner) == head
