"""A streaming read replica (a hot standby cloned with the bundled pg_basebackup, started here):
with DATABASE_REPLICA_URL, retrieval and version reads go to the replica and every write to the
primary; answers are the primary's for every role; row-level security holds on the replica; a read
that must be current (a citation re-check, the disputes check against the text indexed now) goes
to the primary even while the replica lags.

The standby is read-only, so a write sent there would fail the request: every ask, sign-in and
feedback below succeeding is itself evidence that writes go to the primary.
"""

from __future__ import annotations

import uuid
from datetime import date

import pytest
import yaml
from sqlalchemy import event, text
from sqlalchemy.orm import Session

from policydesk.proof import disputes
from policydesk.accounts.access import ROLES, clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.proof.citations import own_citation
from policydesk.config import Settings
from policydesk.proof.feedback import record_feedback
from policydesk.ingest import ingest_directory
from policydesk.pipeline import build_pipeline
from policydesk.ops.readiness import readiness
from policydesk.storage.engine import embedded_server, open_database
from policydesk.storage.models import Trace
from policydesk.storage.scope import scoped_session
from policydesk.accounts.users import add_user
from tests.conftest import REPO, WEB_TODAY
from tests.db_helpers import distinct_clearances, visible_levels
from tests.replica import start_standby, wait_replayed
from tests.test_ingest import _corpus, _entries
from tests.web_helpers import PASSWORD, csrf_from, sign_in, text_of

pytestmark = pytest.mark.slow

QUESTIONS = [q["question"] for q in yaml.safe_load((REPO / "evals" / "golden_dev.yaml").read_text())["items"]][:6]
TAG = uuid.uuid4().hex[:6]
USERS = {role: f"rr-{role}-{TAG}" for role in ROLES}
WIKI = "wiki/claims-desk-quick-reference.md"
QUESTION = "How long do providers have to get an initial claim to us?"


@pytest.fixture(scope="module")
def demo_name(demo_db) -> str:
    with Session(demo_db.owner) as s, s.begin():
        for role, name in USERS.items():
            add_user(s, name=name, role=role, password=PASSWORD)
    return demo_db.owner_url.database


@pytest.fixture(scope="module")
def editable(make_db, embed_model, settings, tmp_path_factory):
    """A database of its own with one wiki page, edited by the currency test."""
    db = make_db()
    root = _corpus(tmp_path_factory.mktemp("rr-corpus"), _entries(WIKI))
    ingest_directory(db, root, embed_model, settings)
    with Session(db.owner) as s, s.begin():
        for role, name in USERS.items():
            add_user(s, name=name, role=role, password=PASSWORD)
    return db, root


@pytest.fixture(scope="module")
def standby(settings, demo_name, editable, tmp_path_factory):
    s = start_standby(embedded_server(settings.DATA_DIR), tmp_path_factory.mktemp("replica"))
    yield s
    s.stop()


def _replicated(settings, primary_db, standby):
    name = primary_db.owner_url.database
    rs = Settings(DATA_DIR=settings.DATA_DIR, ENVIRONMENT="test", _env_file=None, LOGIN_ADDRESS_MAX_FAILURES=1000,
                  DATABASE_URL=primary_db.owner_url.render_as_string(hide_password=False),
                  DATABASE_REPLICA_URL=standby.url(name))
    return rs, open_database(rs, name)


@pytest.fixture(scope="module")
def replicated(settings, demo_db, demo_name, standby):
    wait_replayed(demo_db.owner, standby)
    rs, db = _replicated(settings, demo_db, standby)
    yield rs, db
    db.dispose()


@pytest.fixture(scope="module")
def pipelines(replicated, demo_db, settings, embed_model):
    rs, db = replicated
    return (build_pipeline(db, rs, embed_model=embed_model, today=WEB_TODAY),
            build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY))


class Statements:
    """Every statement an engine (and its async twin) sends."""

    def __init__(self, *engines) -> None:
        self.sql: list[str] = []
        for engine in engines:
            event.listen(engine, "before_cursor_execute", self._seen)
        self.engines = engines

    def _seen(self, conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        self.sql.append(" ".join(statement.split()))

    def close(self) -> None:
        for engine in self.engines:
            event.remove(engine, "before_cursor_execute", self._seen)


def _answer(result) -> tuple:
    return (result.answer, [(c.chunk_id, c.version) for c in result.citations], result.refused, result.abstained,
            result.degraded, result.error)


def test_the_replica_is_a_read_only_standby_and_ready(replicated, standby):
    _, db = replicated
    with db.replica.app.connect() as conn:
        assert conn.execute(text("SELECT pg_is_in_recovery()")).scalar() is True
    with db.app.connect() as conn:
        assert conn.execute(text("SELECT pg_is_in_recovery()")).scalar() is False
    state = readiness(db, object())
    assert state.checks["replica"] == "ok" and state.checks["database"] == "ok"


@pytest.mark.parametrize("role", ROLES)
def test_answers_through_the_replica_equal_the_primarys_for_every_role(role, pipelines, replicated):
    through, direct = pipelines
    _, db = replicated
    replica_sql = Statements(db.replica.app, db.replica.app_async.sync_engine)
    primary_sql = Statements(db.app, db.app_async.sync_engine)
    try:
        for question in QUESTIONS:
            got, want = through.ask(AskRequest(USERS[role], question)), direct.ask(AskRequest(USERS[role], question))
            assert got.error is None and got.trace_id is not None, (question, got.error)
            assert _answer(got) == _answer(want), question
    finally:
        replica_sql.close()
        primary_sql.close()
    vector_search = [s for s in replica_sql.sql if "<=>" in s]
    assert vector_search and any("document_versions" in s for s in replica_sql.sql)  # retrieval, versions
    assert not any(s.split(" ", 1)[0].upper() in ("INSERT", "UPDATE", "DELETE") for s in replica_sql.sql)
    assert not any("<=>" in s for s in primary_sql.sql)  # no retrieval on the primary
    assert sum(s.startswith("INSERT INTO traces") for s in primary_sql.sql) == len(QUESTIONS)


def test_row_level_security_holds_on_the_replica(replicated, demo_db):
    _, db = replicated
    want = {role: visible_levels(demo_db.app, role) for role in ROLES}
    # the roles' clearances really differ (admin reads as a rep does)
    assert len({tuple(sorted(w.items())) for w in want.values()}) == distinct_clearances()
    assert {role: visible_levels(db.replica.app, role) for role in ROLES} == want
    with db.replica.app.connect() as conn:  # no scope: nothing
        assert conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM traces")).scalar_one() == 0


def test_the_web_paths_write_to_the_primary(replicated, pipelines):
    from policydesk.web.app import create_app

    rs, db = replicated
    client = sign_in(create_app(rs, db=db, pipeline=pipelines[0]), USERS["rep"])  # login_attempts, session
    token = csrf_from(client.get("/ask").text)
    r = client.post("/ask", data={"question": "What is the timely filing limit?", "csrf_token": token})
    assert r.status_code == 200 and "90 days" in text_of(r.text, "answer-text")
    with db.owner.connect() as conn:
        trace_id = conn.execute(text("SELECT id FROM traces WHERE user_name = :u ORDER BY created_at DESC LIMIT 1"),
                                {"u": USERS["rep"]}).scalar_one()
    record_feedback(db, user_name=USERS["rep"], trace_id=trace_id, verdict="helpful")
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM feedback WHERE trace_id = :t"), {"t": trace_id}).scalar_one() == 1


def test_reads_that_must_be_current_go_to_the_primary_while_the_replica_lags(
        settings, editable, standby, embed_model):
    primary, root = editable
    wait_replayed(primary.owner, standby)
    rs, db = _replicated(settings, primary, standby)
    admin = standby.superuser()
    try:
        pipeline = build_pipeline(db, rs, embed_model=embed_model, today=WEB_TODAY)
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_wal_replay_pause()"))
        # With the replica frozen, an answer still lands: its trace is written to the primary only.
        first = pipeline.ask(AskRequest(USERS["rep"], QUESTION))
        assert first.citations and {c.doc_id for c in first.citations} == {"WIKI-CLAIMS"}
        cited = first.citations[0]
        # The citation re-check reads the trace, which only the primary has yet.
        shown = own_citation(db, user_name=USERS["rep"], clearance=clearance_for("rep"),
                             trace_id=str(first.trace_id), chunk_id=cited.chunk_id)
        assert shown is not None and shown.citation["chunk_id"] == cited.chunk_id

        page = root / WIKI
        page.write_text(page.read_text().replace("180 days", "120 days"))
        ingest_directory(primary, root, embed_model, settings)  # indexed now, on the primary
        with Session(primary.owner) as s:
            trace = s.get(Trace, first.trace_id)
            s.expunge(trace)
        # Positive control: the frozen replica still holds the text as it was cited.
        with scoped_session(db.replica.app, clearance_for("compliance")) as session:
            old = session.execute(text("SELECT text FROM data_chunks WHERE node_id = :n"), {"n": cited.chunk_id}).scalar()
        assert old is not None and "180 days" in old
        verdicts = disputes.check(db, trace, date(2026, 1, 5), reviewer=USERS["compliance"])
        assert {v.kind for v in verdicts} == {disputes.EDITED}  # checked against the primary's text
    finally:
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_wal_replay_resume()"))
        admin.dispose()
        db.dispose()
