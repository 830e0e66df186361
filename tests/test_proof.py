"""Proof that can't be edited (issue 12): append-only traces and audit log, the hash chain,
retention purge that keeps the chain verifiable, and row-level security on traces."""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError

from policydesk.accounts.access import clearance_for
from policydesk.storage.chain import verify_chain
from policydesk.storage.scope import permitted_scope
from policydesk.proof.tracing import purge_traces, write_trace
from tests.cli_helpers import run_cli

REP = clearance_for("rep")


def _row(user: str = "alice", question: str = "What is the timely filing limit?", **extra) -> dict:
    return {"id": uuid.uuid4(), "kind": "ask", "user_name": user, "user_role": "rep",
            "permitted_levels": ["public", "internal"], "sensitive_cleared": False, "question": question,
            "answer_text": "90 days", **extra}


def _cli(db, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    return run_cli(*args, env=env)


@pytest.fixture
def db(make_db):
    return make_db()


# -- append-only ----------------------------------------------------------------------------------

@pytest.mark.parametrize("statement", [
    "UPDATE traces SET answer_text = '180 days'", "DELETE FROM traces", "TRUNCATE traces",
    "UPDATE audit_log SET actor = 'someone else'", "DELETE FROM audit_log", "TRUNCATE audit_log",
])
def test_app_role_cannot_change_proof(db, statement):
    write_trace(db, _row())
    with db.owner.begin() as conn:
        conn.execute(text("INSERT INTO audit_log (actor, action) VALUES ('reviewer', 'open')"))
    with pytest.raises(ProgrammingError, match="permission denied"):
        with permitted_scope(REP, user_name="alice", all_traces=True), db.app.begin() as conn:
            conn.execute(text(statement))
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM traces WHERE answer_text = '90 days'")).scalar_one() == 1
        assert conn.execute(text("SELECT count(*) FROM audit_log WHERE actor = 'reviewer'")).scalar_one() == 1


def test_staff_read_their_own_traces_and_compliance_reads_all(db):
    write_trace(db, _row("alice"))
    write_trace(db, _row("bob"))

    def users_seen(**scope) -> list[str]:
        with permitted_scope(REP, **scope), db.app.connect() as conn:
            return sorted(conn.execute(text("SELECT user_name FROM traces")).scalars())

    assert users_seen(user_name="alice") == ["alice"]
    assert users_seen(user_name="bob") == ["bob"]
    assert users_seen(user_name="carol") == []
    assert users_seen() == []
    assert users_seen(user_name="carol", all_traces=True) == ["alice", "bob"]
    with db.app.connect() as conn:  # no scope at all: nothing
        assert conn.execute(text("SELECT count(*) FROM traces")).scalar_one() == 0


# -- the chain ------------------------------------------------------------------------------------

def test_chain_verifies_and_an_owner_edit_is_named(db):
    rows = [_row(question=f"question {i}") for i in range(4)]
    for r in rows:
        write_trace(db, r)
    report = verify_chain(db.owner)
    assert report.ok and report.rows == 4 and report.head_seq == 4
    with db.owner.begin() as conn:  # the owner can still edit; the chain must show it
        conn.execute(text("UPDATE traces SET answer_text = '180 days' WHERE id = :i"), {"i": rows[2]["id"]})
    report = verify_chain(db.owner)
    assert not report.ok and report.broken.row_id == str(rows[2]["id"]) and report.rows == 2
    assert "edited" in report.broken.reason
    out = _cli(db, "traces", "verify")
    assert out.returncode == 1, out.stdout + out.stderr
    assert str(rows[2]["id"]) in out.stdout and "BROKEN" in out.stdout


def test_chain_names_a_row_deleted_outside_a_purge(db):
    rows = [_row(question=f"q{i}") for i in range(3)]
    for r in rows:
        write_trace(db, r)
    with db.owner.begin() as conn:
        conn.execute(text("DELETE FROM traces WHERE id = :i"), {"i": rows[1]["id"]})
    report = verify_chain(db.owner)
    assert report.broken.row_id == str(rows[2]["id"]) and "missing" in report.broken.reason


def test_verify_cli_passes_on_an_intact_chain(db):
    write_trace(db, _row())
    out = _cli(db, "traces", "verify")
    assert out.returncode == 0, out.stderr
    assert "traces: 1 rows verify" in out.stdout


def test_purge_keeps_the_chain_verifiable_and_is_audited(db):
    old = datetime(2020, 1, 1, tzinfo=timezone.utc)
    for i in range(3):
        write_trace(db, _row(question=f"old {i}", created_at=old + timedelta(days=i)))
    new = _row(question="new")
    write_trace(db, new)
    now = datetime.now(timezone.utc)
    assert purge_traces(db, older_than_days=365, actor="ops-anna", now=now) == 3
    assert verify_chain(db.owner).ok
    write_trace(db, _row(question="after the purge"))
    report = verify_chain(db.owner)
    assert report.ok and report.rows == 2 and report.head_seq == 5
    with db.owner.connect() as conn:
        entry = conn.execute(text("SELECT actor, details FROM audit_log WHERE action = 'purge'")).one()
        left = conn.execute(text("SELECT question FROM traces ORDER BY seq")).scalars().all()
    assert entry.actor == "ops-anna" and entry.details["rows_removed"] == 3 and entry.details["cut_seq"] == 3
    assert left == ["new", "after the purge"]
    # Purging everything, then writing again, still links to the recorded cut.
    assert purge_traces(db, older_than_days=1, actor="ops-anna", now=now + timedelta(days=30)) == 2
    write_trace(db, _row(question="fresh start"))
    assert verify_chain(db.owner).ok
    assert verify_chain(db.owner, "audit_log").ok


def test_two_workers_append_one_unbroken_chain(db, settings):
    from policydesk.storage.engine import open_database

    second = open_database(settings, db.owner_url.database)  # a second worker: its own engines and pool
    errors = []

    def work(database, user):
        try:
            for i in range(15):
                write_trace(database, _row(user, question=f"{user} {i}"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d, u)) for d, u in ((db, "w1"), (second, "w2"), (db, "w3"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    second.dispose()
    assert errors == []
    report = verify_chain(db.owner)
    assert report.ok and report.rows == 45 and report.head_seq == 45


def test_existing_traces_are_chained_by_the_migration(make_db, settings):
    # Upgrading a database that already holds traces (written before 0005) must chain them too.
    from policydesk.storage.engine import create_database, open_database
    from policydesk.storage.migrate import upgrade

    name = f"policydesk_premigrate_{uuid.uuid4().hex[:6]}"
    create_database(settings, name)
    db = open_database(settings, name)
    try:
        upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value(), revision="0004")
        with db.owner.begin() as conn:
            for i in range(3):
                conn.execute(text(
                    "INSERT INTO traces (id, kind, user_name, user_role, permitted_levels, sensitive_cleared, question) "
                    "VALUES (gen_random_uuid(), 'ask', 'old', 'rep', ARRAY['public'], false, :q)"), {"q": f"q{i}"})
        upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value())
        write_trace(db, _row())
        report = verify_chain(db.owner)
        assert report.ok and report.rows == 4
    finally:
        db.dispose()


def test_answer_page_says_whether_the_trace_verifies(db, settings, embed_model):
    from sqlalchemy.orm import Session

    from policydesk.pipeline import build_pipeline
    from policydesk.accounts.users import add_user
    from policydesk.web.app import create_app
    from tests.web_helpers import PASSWORD, by_class, sign_in

    with Session(db.owner) as session, session.begin():
        add_user(session, name="proof-reviewer", role="compliance", password=PASSWORD)
    app = create_app(settings, db=db, pipeline=build_pipeline(db, settings, embed_model=embed_model))
    reviewer = sign_in(app, "proof-reviewer")
    first, second = _row(question="first"), _row(question="second")
    write_trace(db, first)
    write_trace(db, second)

    def record_line(row) -> str:
        page = reviewer.get(f"/disputes/{row['id']}")
        assert page.status_code == 200
        return " ".join(e["text"] for e in by_class(page.text, "proof"))

    assert record_line(second).startswith("verifies")
    with db.owner.begin() as conn:
        conn.execute(text("UPDATE traces SET answer_text = '180 days' WHERE id = :i"), {"i": second["id"]})
    assert record_line(second).startswith("DOES NOT VERIFY: this answer was changed after it was recorded")
    assert record_line(first).startswith("verifies")
