"""PolicyDesk through PgBouncer in transaction mode (Debian's `pgbouncer`, started here on a free
port in front of the embedded Postgres): the whole ask path for every role, row-level security's
per-transaction scope on shared server connections, the trace chain under concurrent writers, the
disputes check and replay, migrations and ingest.

In transaction mode each transaction may run on a different server connection and one server
connection serves many clients in turn. What PolicyDesk sets is per transaction (set_config(...,
true), pg_advisory_xact_lock), which holds there; psycopg's prepared statements do not, so
POLICYDESK_DB_PREPARED_STATEMENTS=false turns them off (the positive control below shows why).
"""

from __future__ import annotations

import threading
import uuid
from datetime import date

import psycopg
import pytest
import yaml
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from policydesk.proof import disputes
from policydesk.accounts.access import ROLES
from policydesk.contract.answer import AskRequest
from policydesk.config import Settings
from policydesk.ingest import ingest_directory
from policydesk.pipeline import build_pipeline
from policydesk.ops.runtime import open_migrated
from policydesk.storage.chain import verify_chain
from policydesk.storage.engine import create_database, embedded_server
from policydesk.storage.models import Trace
from policydesk.storage.security import check_secure_start
from policydesk.proof.tracing import write_trace
from policydesk.accounts.users import add_user
from tests.conftest import REPO, WEB_TODAY
from tests.db_helpers import distinct_clearances, visible_levels
from tests.pooler import start_pgbouncer
from tests.test_ingest import _corpus, _entries
from tests.web_helpers import PASSWORD, csrf_from, sign_in, text_of

pytestmark = pytest.mark.slow

QUESTIONS = [q["question"] for q in yaml.safe_load((REPO / "evals" / "golden_dev.yaml").read_text())["items"]][:6]
TAG = uuid.uuid4().hex[:6]
USERS = {role: f"pgb-{role}-{TAG}" for role in ROLES}


@pytest.fixture(scope="module")
def demo_name(demo_db) -> str:
    with Session(demo_db.owner) as s, s.begin():
        for role, name in USERS.items():
            add_user(s, name=name, role=role, password=PASSWORD)
    return demo_db.owner_url.database


@pytest.fixture(scope="module")
def bouncer(settings, demo_name, tmp_path_factory):
    b = start_pgbouncer(embedded_server(settings.DATA_DIR), tmp_path_factory.mktemp("pgbouncer"), narrow=demo_name)
    yield b
    b.stop()


def _pooled_settings(settings, bouncer, database: str) -> Settings:
    return Settings(DATA_DIR=settings.DATA_DIR, ENVIRONMENT="test", _env_file=None, LOGIN_ADDRESS_MAX_FAILURES=1000,
                    DATABASE_URL=bouncer.url(database), DB_PREPARED_STATEMENTS=False)


@pytest.fixture(scope="module")
def pooled(settings, bouncer, demo_name):
    pooled_settings = _pooled_settings(settings, bouncer, demo_name)
    db = open_migrated(pooled_settings, demo_name)  # migrations (at head: a no-op) through the pooler
    yield pooled_settings, db
    db.dispose()


@pytest.fixture(scope="module")
def pooled_pipeline(pooled, embed_model):
    pooled_settings, db = pooled
    return build_pipeline(db, pooled_settings, embed_model=embed_model, today=WEB_TODAY)


@pytest.fixture(scope="module")
def direct_pipeline(demo_db, settings, embed_model, demo_name):
    return build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY)


def _answer(result) -> tuple:
    return (result.answer, [(c.chunk_id, c.version) for c in result.citations], result.refused, result.abstained,
            result.degraded, result.error)


def test_the_connections_really_go_through_pgbouncer(pooled, bouncer, demo_name):
    _, db = pooled
    assert db.app.url.port == bouncer.port and db.owner.url.port == bouncer.port
    with db.app.connect() as conn:
        conn.execute(text("SELECT 1"))
    log = bouncer.log()
    assert f"login attempt: db={demo_name} user=policydesk_app" in log, log[-1500:]
    assert f"login attempt: db={demo_name} user=postgres" in log  # the owner login too


@pytest.mark.parametrize("role", ROLES)
def test_every_roles_answers_through_pgbouncer_equal_the_direct_ones(role, pooled, pooled_pipeline, direct_pipeline):
    _, db = pooled
    check_secure_start(db, pooled[0])  # the start-up checks read the catalog through the pooler too
    for question in QUESTIONS:
        through = pooled_pipeline.ask(AskRequest(USERS[role], question))
        direct = direct_pipeline.ask(AskRequest(USERS[role], question))
        assert through.error is None, (question, through.error)
        assert _answer(through) == _answer(direct), question


def test_the_web_ask_path_signs_in_asks_and_records_through_pgbouncer(pooled, pooled_pipeline):
    from policydesk.web.app import create_app

    pooled_settings, db = pooled
    client = sign_in(create_app(pooled_settings, db=db, pipeline=pooled_pipeline), USERS["rep"])
    token = csrf_from(client.get("/ask").text)
    r = client.post("/ask", data={"question": "What is the timely filing limit?", "csrf_token": token})
    assert r.status_code == 200 and "90 days" in text_of(r.text, "answer-text")
    with db.owner.connect() as conn:
        attempts = conn.execute(text("SELECT count(*) FROM login_attempts WHERE user_name = :u AND succeeded"),
                                {"u": USERS["rep"]}).scalar_one()
    assert attempts >= 1


def test_rls_scope_is_per_transaction_on_one_shared_server_connection(demo_db, bouncer, demo_name):
    """Through the alias with one server connection, every client's transactions run on the same
    backend, one after another: each must see exactly its role's rows, and a transaction with no
    scope must see none, right after a compliance reviewer's on that backend."""
    narrow = create_engine(f"postgresql+psycopg://policydesk_app@127.0.0.1:{bouncer.port}/narrow",
                           connect_args={"prepare_threshold": None}, pool_size=8)
    try:
        pids = []
        with narrow.connect() as a, narrow.connect() as b:  # two clients, one backend, in turn
            for conn in (a, b, a):
                pids.append(conn.execute(text("SELECT pg_backend_pid()")).scalar())
                conn.commit()
        assert len(set(pids)) == 1
        want = {role: visible_levels(demo_db.app, role) for role in ROLES}
        # the roles' clearances really differ (admin reads as a rep does)
        assert len({tuple(sorted(w.items())) for w in want.values()}) == distinct_clearances()
        errors: list = []

        def reader(role: str) -> None:
            for _ in range(15):
                got = visible_levels(narrow, role)
                if got != want[role]:
                    errors.append((role, got))
                with narrow.connect() as conn:  # no scope: RLS returns nothing
                    n = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
                    if n:
                        errors.append((role, "unscoped", n))

        threads = [threading.Thread(target=reader, args=(role,)) for role in ROLES for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    finally:
        narrow.dispose()


def test_psycopg_prepared_statements_break_under_transaction_pooling_and_are_off(bouncer):
    """Positive control: with psycopg's default (prepare after 5 runs) two clients sharing a backend
    collide on the statement name; with prepare_threshold=None (DB_PREPARED_STATEMENTS=false) they do not."""
    query = "SELECT count(*) FROM documents WHERE doc_id <> %s"

    def run(prepare_threshold) -> None:
        kwargs = {} if prepare_threshold == "default" else {"prepare_threshold": prepare_threshold}
        with psycopg.connect(bouncer.url("narrow"), **kwargs) as a, psycopg.connect(bouncer.url("narrow"), **kwargs) as b:
            for i in range(8):
                for conn in (a, b):
                    conn.execute(query, (f"x{i}",)).fetchone()
                    conn.commit()

    with pytest.raises(psycopg.Error) as raised:
        run("default")
    assert isinstance(raised.value, (psycopg.errors.DuplicatePreparedStatement, psycopg.errors.InvalidSqlStatementName)), raised.value
    run(None)


def test_the_trace_chain_stays_one_chain_under_concurrent_writers(pooled):
    _, db = pooled
    writer_names = [f"pgb-writer-{TAG}-{i}" for i in range(8)]

    def write(name: str) -> None:
        for i in range(6):
            write_trace(db, {"id": uuid.uuid4(), "kind": "ask", "user_name": name, "user_role": "rep",
                             "permitted_levels": ["public", "internal"], "sensitive_cleared": False,
                             "question": f"chain {i}", "answer_text": "90 days"})

    threads = [threading.Thread(target=write, args=(n,)) for n in writer_names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.owner.connect() as conn:
        written = conn.execute(text("SELECT count(*) FROM traces WHERE user_name = ANY(:n)"),
                               {"n": writer_names}).scalar_one()
        forks = conn.execute(text("SELECT count(*) - count(DISTINCT prev_hash) FROM traces")).scalar_one()
    assert written == 48 and forks == 0
    report = verify_chain(db.owner)
    assert report.ok, str(report.broken)


def test_disputes_check_and_replay_through_pgbouncer(pooled, pooled_pipeline, demo_db, direct_pipeline):
    _, db = pooled
    result = pooled_pipeline.ask(AskRequest(USERS["rep"], "What is the timely filing limit?"))
    assert "90 days" in result.answer
    with Session(db.owner) as s:
        trace = s.get(Trace, result.trace_id)
        s.expunge(trace)
    then = date(2025, 11, 3)
    verdicts = disputes.check(db, trace, then, reviewer=USERS["compliance"])
    assert [(v.kind, v.text) for v in verdicts] == [
        (v.kind, v.text) for v in disputes.check(demo_db, trace, then, reviewer=USERS["compliance"])]
    replayed = disputes.replay(pooled_pipeline, trace, then, reviewer=USERS["compliance"])
    assert "180 days" in replayed.answer
    assert disputes.replays_of(db, trace.id, reviewer=USERS["compliance"])


def test_migrations_and_ingest_on_a_new_database_through_pgbouncer(settings, bouncer, embed_model, tmp_path):
    name = f"policydesk_pgb_{TAG}"
    create_database(settings, name)
    pooled_settings = _pooled_settings(settings, bouncer, name)
    db = open_migrated(pooled_settings, name)  # every migration, from nothing, through the pooler
    try:
        corpus = _corpus(tmp_path, _entries("policies/pol-tf-v1.pdf", "policies/pol-tf-v2.pdf"))
        report = ingest_directory(db, corpus, embed_model, pooled_settings)
        assert report.chunks_written > 0
        with Session(db.owner) as s, s.begin():
            add_user(s, name="pgb-new-rep", role="rep", password=PASSWORD)
        answer = build_pipeline(db, pooled_settings, embed_model=embed_model, today=WEB_TODAY).ask(
            AskRequest("pgb-new-rep", "What is the timely filing limit?"))
        assert "90 days" in answer.answer and verify_chain(db.owner).ok
    finally:
        db.dispose()
