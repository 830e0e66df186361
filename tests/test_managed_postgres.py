"""Managed Postgres (no superuser) as a tested shape (issue 17).

A second cluster, started from the embedded binaries, shaped like RDS / Cloud SQL / Azure: the
administrator created `vector` in template1 and a login that is NOSUPERUSER and NOBYPASSRLS with
CREATEDB and CREATEROLE; every other login needs its password. PolicyDesk is given only that
login as DATABASE_URL, and creates its database, runs every migration, passes its start-up
checks, ingests the demo corpus, retrieves exactly what the embedded (superuser-owned) database
retrieves for every role, answers the walkthrough and keeps its trace chain.
"""

from __future__ import annotations

import pytest
import yaml
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.config import Settings
from policydesk.ingest import ingest_directory
from policydesk.pipeline import build_pipeline
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from policydesk.ops.runtime import open_migrated
from policydesk.storage.chain import verify_chain
from policydesk.storage.engine import create_database
from policydesk.storage.managed import start_managed_cluster
from policydesk.storage.migrate import MIGRATIONS, current_revision
from policydesk.storage.security import check_secure_start, database_problems
from policydesk.accounts.users import add_user
from tests.conftest import CORPUS, REPO, WEB_TODAY

QUESTIONS = [q["question"] for q in yaml.safe_load((REPO / "evals" / "golden_dev.yaml").read_text())["items"]][:12]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_managed_cluster(tmp_path_factory.mktemp("managed"))
    yield c
    c.stop()


@pytest.fixture(scope="module")
def managed(cluster, tmp_path_factory, embed_model):
    settings = Settings(DATA_DIR=tmp_path_factory.mktemp("managed-data"), ENVIRONMENT="test", _env_file=None,
                        DATABASE_URL=cluster.database_url)
    create_database(settings, "policydesk_managed")
    db = open_migrated(settings, "policydesk_managed")
    report = ingest_directory(db, CORPUS, embed_model, settings)
    assert report.chunks_written > 100
    with Session(db.owner) as s, s.begin():
        for role in ROLES:
            add_user(s, name=f"m_{role}", role=role, password=f"managed-pw-{role}")
    yield settings, db
    db.dispose()


def test_the_login_policydesk_gets_is_no_superuser(cluster, managed):
    _, db = managed
    with db.owner.connect() as conn:
        me = conn.execute(text("SELECT rolname, rolsuper, rolbypassrls, rolcreatedb, rolcreaterole "
                               "FROM pg_roles WHERE rolname = current_user")).one()
        assert (me.rolsuper, me.rolbypassrls, me.rolcreatedb, me.rolcreaterole) == (False, False, True, True)
        # the administrator made the extension; the owner could not have
        assert conn.execute(text("SELECT extowner::regrole::text FROM pg_extension WHERE extname = 'vector'")
                            ).scalar_one() == "postgres"
    with pytest.raises(ProgrammingError, match="permission denied|must be superuser|only roles with"):
        with db.owner.begin() as conn:
            conn.execute(text("ALTER ROLE policydesk_app BYPASSRLS"))
    # the password is checked (only the administrator connects without one)
    wrong = make_url(cluster.database_url).set(drivername="postgresql+psycopg", password="not-the-password")
    engine = create_engine(wrong)
    with pytest.raises(OperationalError, match="password authentication failed"):
        engine.connect()
    engine.dispose()


def test_every_migration_runs_and_the_start_up_checks_pass(managed):
    settings, db = managed
    heads = sorted(p.name.split("_")[0] for p in (MIGRATIONS / "versions").glob("[0-9]*.py"))
    assert current_revision(db.owner) == heads[-1]
    assert database_problems(db.app) == []
    check_secure_start(db, settings)


def test_the_start_up_checks_still_catch_a_bad_grant_without_superuser(managed):
    _, db = managed
    with db.owner.begin() as conn:
        conn.execute(text("GRANT UPDATE ON traces TO policydesk_app"))
    try:
        assert database_problems(db.app) == [
            "the application login may UPDATE traces, so a record it must only append to could be changed: "
            "REVOKE UPDATE ON traces FROM policydesk_app"]
    finally:
        with db.owner.begin() as conn:
            conn.execute(text("REVOKE UPDATE ON traces FROM policydesk_app"))
    assert database_problems(db.app) == []


@pytest.mark.parametrize("role", ROLES)
def test_retrieval_on_managed_equals_the_embedded_database(role, managed, demo_db, embed_model):
    _, db = managed
    got, want = (HybridRetriever(chunk_vector_store(d), embed_model, clearance=clearance_for(role))
                 for d in (db, demo_db))
    for q in QUESTIONS:
        ids = [n.node.node_id for n in got.search(q).nodes]
        assert ids == [n.node.node_id for n in want.search(q).nodes], q
        assert ids, q
    with db.owner.connect() as conn:  # the side table was filled through the triggers, as the owner
        assert conn.execute(text("SELECT sum(cardinality(node_ids)) FROM chunk_search")).scalar_one() == \
            conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()


def test_walkthrough_answers_and_traces_on_managed(managed, embed_model):
    settings, db = managed
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=WEB_TODAY)
    now = pipeline.ask(AskRequest("m_rep", "What is the timely filing limit?"))
    assert "90 days" in now.answer and {c.version for c in now.citations if c.doc_id == "POL-TF"} == {2}
    then = pipeline.ask(AskRequest("m_rep", "What is the timely filing limit?",
                                   dates={"date_of_service": "2025-11-03"}))
    assert "180 days" in then.answer and {c.version for c in then.citations if c.doc_id == "POL-TF"} == {1}
    with db.owner.connect() as conn:
        levels = {r.access_level for r in conn.execute(
            text("SELECT access_level FROM data_chunks WHERE node_id = ANY(:i)"),
            {"i": now.context_ids + then.context_ids})}
        assert levels <= {"public", "internal"}
        assert conn.execute(text("SELECT count(*) FROM traces WHERE user_name = 'm_rep'")).scalar_one() == 2
    report = verify_chain(db.owner)
    assert report.rows >= 2 and report.broken is None
