"""Backup and restore keep the proof verifiable (issue 52, item 3). Real databases on the session's
Postgres, the console script's commands in process: the demo corpus ingested, questions asked
(traces written, one marked wrong), an export taken; `policydesk backup`; `policydesk restore`
into a fresh database; then on the restored database the chains verify, the earlier export is
what a fresh one gives, every cited chunk re-reads with its SHA-256, a rep still cannot read
restricted text through the application login, and syncing the same corpus writes nothing. A
restore that fails (damaged archive, non-empty target) changes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from datetime import date, datetime, timezone

import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.orm import Session

from policydesk.accounts.access import clearance_for
from policydesk.accounts.users import add_user
from policydesk.contract.answer import AskRequest
from policydesk.storage.chunk_ids import sha256_text
from policydesk.ingest.sync import sync_directory
from policydesk.proof.citations import own_citation
from policydesk.proof.exports import export_traces, render, verify_export_lines
from policydesk.proof.feedback import record_feedback
from policydesk.storage import sources
from policydesk.storage.backup import read_contents, what_it_holds
from policydesk.storage.engine import open_database
from policydesk.storage.scope import permitted_scope, scoped_session
from policydesk.storage.source_files import cited_file
from tests.cli_helpers import run_cli
from tests.conftest import CORPUS

TODAY = datetime.now(timezone.utc).date()
QUESTIONS = ("What is the timely filing limit?", "How are appeals handled?",
             "How many days of supply can a pharmacy dispense at once?")


def _env(url) -> dict:
    return dict(os.environ, DATABASE_URL=url.render_as_string(hide_password=False))


def _fresh_name() -> str:
    return f"policydesk_restore_{uuid.uuid4().hex[:8]}"


def _export_lines(db) -> list[str]:
    return list(render(export_traces(db, reviewer="auditor-backup", start=TODAY, end=TODAY), "jsonl"))


@pytest.fixture(scope="module")
def source(make_db, settings, embed_model, tmp_path_factory):
    """The demo corpus, a rep's and a supervisor's answers (one marked wrong), an export, a backup."""
    from policydesk.pipeline import build_pipeline

    db = make_db(demo=True)
    rep, sup = f"bk-rep-{uuid.uuid4().hex[:6]}", f"bk-sup-{uuid.uuid4().hex[:6]}"
    with Session(db.owner) as session, session.begin():
        add_user(session, name=rep, role="rep", password="x" * 16)
        add_user(session, name=sup, role="supervisor", password="x" * 16)
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=date(2026, 11, 29))
    results = [pipeline.ask(AskRequest(user_name=name, question=q))
               for name, q in ((rep, QUESTIONS[0]), (sup, QUESTIONS[1]), (rep, QUESTIONS[2]))]
    assert any(r.citations for r in results), [r.to_json() for r in results]
    with db.owner.connect() as conn:
        rep_traces = conn.execute(text("SELECT id FROM traces WHERE user_name = :u ORDER BY seq"), {"u": rep}).scalars().all()
    record_feedback(db, user_name=rep, trace_id=rep_traces[0], verdict="wrong", reason="unclear_wording")
    lines = _export_lines(db)
    assert verify_export_lines(lines, whole_period=True) == []
    folder = tmp_path_factory.mktemp("backup")
    dump = folder / "policydesk.dump"
    done = run_cli("backup", str(dump), env=_env(db.owner_url))
    assert done.returncode == 0, done.stderr
    with db.owner.connect() as conn:
        contents = read_contents(conn)
    return {"db": db, "rep": rep, "sup": sup, "lines": lines, "dump": dump, "contents": contents,
            "backup_out": done.stdout}


@pytest.fixture(scope="module")
def restored(source, settings):
    name = _fresh_name()
    url = source["db"].owner_url.set(database=name)
    done = run_cli("restore", str(source["dump"]), env=_env(url))
    assert done.returncode == 0, done.stdout + done.stderr
    db = open_database(settings, name)
    yield {"db": db, "out": done.stdout, "name": name}
    db.dispose()


def test_backup_writes_the_archive_and_what_it_holds(source):
    manifest = json.loads(source["dump"].with_name("policydesk.dump.json").read_text())
    assert manifest["rows"]["traces"] == source["contents"].rows["traces"] >= len(QUESTIONS)
    assert manifest["chain_heads"]["traces"][0] == source["contents"].rows["traces"]
    assert manifest["sha256"] in source["backup_out"]
    again = run_cli("backup", str(source["dump"]), env=_env(source["db"].owner_url))
    assert again.returncode == 2 and "never overwrites" in again.stderr


def test_the_restored_database_holds_exactly_what_was_backed_up(source, restored):
    with restored["db"].owner.connect() as conn:
        assert read_contents(conn) == source["contents"]
    assert "into new database" in restored["out"] and "both chains hold" in restored["out"]


def test_traces_verify_passes_on_the_restored_database(source, restored):
    done = run_cli("traces", "verify", env=_env(restored["db"].owner_url))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"traces: {source['contents'].rows['traces']} rows verify" in done.stdout


def test_the_earlier_export_verifies_against_the_restored_database(source, restored):
    earlier = source["lines"]
    assert verify_export_lines(earlier, whole_period=True) == []
    fresh = _export_lines(restored["db"])
    assert verify_export_lines(fresh, whole_period=True) == []
    assert [json.loads(line) for line in fresh] == [json.loads(line) for line in earlier]
    assert any(f["verdict"] == "wrong" for line in fresh for f in json.loads(line)["feedback"])


def test_every_cited_chunk_rereads_with_its_hash_and_its_owner_still_sees_it(source, restored):
    db = restored["db"]
    with db.owner.connect() as conn:
        traces = conn.execute(text("SELECT id, user_name, user_role, citations FROM traces WHERE citations <> '[]'")).all()
    cited = [(t, c) for t in traces for c in t.citations]
    assert cited
    compliance = clearance_for("compliance")
    for t, c in cited:
        with scoped_session(db.app, compliance) as session:
            stored = sources.chunk_text(session, chunk_id=c["chunk_id"], clearance=compliance)
        assert stored is not None and sha256_text(stored) == c["text_sha256"], c["chunk_id"]
        shown = own_citation(db, user_name=t.user_name, clearance=clearance_for(t.user_role), trace_id=str(t.id),
                             chunk_id=c["chunk_id"])
        assert shown is not None and shown.citation["text_sha256"] == c["text_sha256"]


def test_every_citation_still_opens_its_source_file_as_ingested(source, restored):
    # The page a citation links to ("Open the source") reads the kept file through the cited chunk,
    # under the caller's clearance; after a restore it is the same file, by the version's hash.
    db = restored["db"]
    with db.owner.connect() as conn:
        cited = conn.execute(text(
            "SELECT DISTINCT c->>'chunk_id', t.user_role FROM traces t, jsonb_array_elements(t.citations) c")).all()
        hashes = {(d, v): h for d, v, h in conn.execute(text(
            "SELECT doc_id, version, source_sha256 FROM document_versions")).all()}
    assert cited
    for chunk_id, role in cited:
        with scoped_session(db.app, clearance_for(role)) as session:
            found = cited_file(session, chunk_id=chunk_id, clearance=clearance_for(role))
        assert found is not None, chunk_id
        place, content = found
        assert hashlib.sha256(content).hexdigest() == hashes[(place.doc_id, place.version)], chunk_id


def test_row_level_security_still_binds_the_application_login(source, restored):
    def visible(db, role: str | None) -> tuple[int, set[str]]:
        sql = text("SELECT count(*), coalesce(array_agg(DISTINCT metadata_->>'access_level'), '{}') FROM data_chunks")
        if role is None:
            with db.app.connect() as conn:
                return tuple(conn.execute(sql).one())
        with permitted_scope(clearance_for(role)), db.app.connect() as conn:
            n, levels = conn.execute(sql).one()
            return n, set(levels)

    src, dst = source["db"], restored["db"]
    rep, everything = visible(dst, "rep"), visible(dst, "compliance")
    assert rep == visible(src, "rep") and everything == visible(src, "compliance")
    assert 0 < rep[0] < everything[0]
    assert rep[1] <= set(clearance_for("rep").levels) and everything[1] - rep[1]
    assert visible(dst, None)[0] == 0  # no scope: no rows
    with dst.app.connect() as conn:
        login = conn.execute(text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")).one()
        forced = conn.execute(text("SELECT bool_and(relforcerowsecurity) FROM pg_class WHERE relname = ANY(:t)"),
                              {"t": ["data_chunks", "document_versions", "traces", "audit_log"]}).scalar_one()
    assert tuple(login) == (False, False) and forced


def test_the_restored_database_keeps_its_append_only_proof(restored):
    with restored["db"].app.connect() as conn:
        for statement in ("UPDATE traces SET answer_text = 'x'", "DELETE FROM traces", "TRUNCATE audit_log"):
            with pytest.raises(Exception, match="permission denied"):
                with conn.begin():
                    conn.execute(text(statement))


def test_syncing_the_same_corpus_after_a_restore_writes_nothing(restored, settings, embed_model):
    db = restored["db"]
    counted = ("documents", "document_versions", "data_chunks", "embedding_cache")
    with db.owner.connect() as conn:
        before = {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in counted}
    report = sync_directory(db, CORPUS, embed_model, settings)
    assert report.ok and report.written == [] and report.unchanged == report.considered > 0
    with db.owner.connect() as conn:
        assert {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in counted} == before


# -- restores that must change nothing ------------------------------------------------------------

def _holds(url) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return what_it_holds(conn)
    finally:
        engine.dispose()


def test_a_truncated_archive_is_refused_and_the_target_stays_empty(source, tmp_path):
    data = source["dump"].read_bytes()
    cut = tmp_path / "cut.dump"
    cut.write_bytes(data[: len(data) * 2 // 3])
    url = source["db"].owner_url.set(database=_fresh_name())
    done = run_cli("restore", str(cut), env=_env(url))
    assert done.returncode == 2, done.stdout + done.stderr
    # its table of contents reads, so the restore ran until the data ran out, and was rolled back
    assert "could not be read to its end" in done.stderr and "rolled back, nothing was changed" in done.stderr
    assert _holds(url) == []


def test_a_file_that_is_not_an_archive_is_refused_before_anything_is_touched(source, tmp_path):
    junk = tmp_path / "notes.sql"
    junk.write_text("SELECT 1;\n")
    url = source["db"].owner_url.set(database=_fresh_name())
    done = run_cli("restore", str(junk), env=_env(url))
    assert done.returncode == 2 and "not a readable pg_dump archive" in done.stderr
    assert _holds(url) == []


def test_a_non_empty_target_is_refused_unless_replaced(source, make_db, tmp_path):
    target = make_db()  # migrated, a user of its own
    with Session(target.owner) as session, session.begin():
        add_user(session, name="kept-user", role="rep", password="x" * 16)
    with target.owner.connect() as conn:
        before = read_contents(conn)
    refused = run_cli("restore", str(source["dump"]), env=_env(target.owner_url))
    assert refused.returncode == 2 and "is not empty" in refused.stderr and "--replace" in refused.stderr
    with target.owner.connect() as conn:
        assert read_contents(conn) == before
    # --replace with a damaged archive: the drop is rolled back with it
    data = source["dump"].read_bytes()
    cut = tmp_path / "cut.dump"
    cut.write_bytes(data[: len(data) * 2 // 3])
    failed = run_cli("restore", str(cut), "--replace", env=_env(target.owner_url))
    assert failed.returncode == 2 and "rolled back" in failed.stderr, failed.stdout + failed.stderr
    with target.owner.connect() as conn:
        assert read_contents(conn) == before
    replaced = run_cli("restore", str(source["dump"]), "--replace", env=_env(target.owner_url))
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    with target.owner.connect() as conn:
        assert read_contents(conn) == source["contents"]
        assert conn.execute(text("SELECT count(*) FROM users WHERE name = 'kept-user'")).scalar_one() == 0


def test_a_restore_by_another_login_than_the_tables_owner_is_refused(source):
    """The owner policies name the login that owned the tables; under another owner, forced row-level
    security would hide every row from it, so the restore stops before anything is written."""
    role = f"bk_other_{uuid.uuid4().hex[:6]}"
    with source["db"].owner.begin() as conn:
        owner = conn.execute(text("SELECT current_user")).scalar_one()
        conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN CREATEDB")
    url = source["db"].owner_url.set(database=_fresh_name(), username=role, password=None)
    done = run_cli("restore", str(source["dump"]), env=_env(url))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"belong to the login {owner}" in done.stderr and "Nothing was changed" in done.stderr
    assert _holds(url) == []


# -- managed-shaped clusters: an owner login without superuser, `vector` made by the administrator --

def _visible_chunks(db, role: str) -> int:
    with permitted_scope(clearance_for(role)), db.app.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()


@pytest.fixture(scope="module")
def managed_source(tmp_path_factory, embed_model):
    """The demo corpus and a trace on a managed-shaped cluster (policydesk/storage/managed.py), backed up."""
    from policydesk.config import Settings
    from policydesk.ingest import ingest_directory
    from policydesk.ops.runtime import open_migrated
    from policydesk.pipeline import build_pipeline
    from policydesk.storage.managed import start_managed_cluster

    cluster = start_managed_cluster(tmp_path_factory.mktemp("managed-a"))
    settings = Settings(DATA_DIR=tmp_path_factory.mktemp("managed-a-data"), ENVIRONMENT="test", _env_file=None,
                        DATABASE_URL=cluster.database_url)
    db = open_migrated(settings)
    ingest_directory(db, CORPUS, embed_model, settings)
    with Session(db.owner) as session, session.begin():
        add_user(session, name="m-rep", role="rep", password="x" * 16)
    build_pipeline(db, settings, embed_model=embed_model, today=date(2026, 11, 29)).ask(
        AskRequest(user_name="m-rep", question=QUESTIONS[0]))
    dump = tmp_path_factory.mktemp("managed-dump") / "managed.dump"
    env = dict(os.environ, DATABASE_URL=cluster.database_url, POLICYDESK_DATA_DIR=str(settings.DATA_DIR))
    done = run_cli("backup", str(dump), env=env)
    assert done.returncode == 0, done.stderr
    with db.owner.connect() as conn:
        contents = read_contents(conn)
    yield {"cluster": cluster, "db": db, "dump": dump, "contents": contents, "env": env}
    db.dispose()
    cluster.stop()


def test_a_managed_backup_restores_on_another_managed_cluster_without_its_app_login(managed_source, tmp_path):
    """A second cluster as a new managed service gives it: the owner login, `vector` in template1, no
    application login yet. The restore creates the login NOBYPASSRLS, the chains verify, RLS binds."""
    from policydesk.storage.managed import start_managed_cluster

    other = start_managed_cluster(tmp_path / "managed-b")
    try:
        admin = create_engine(other.admin_url)
        with admin.connect() as conn:
            assert conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = 'policydesk_app'")).first() is None
        env = dict(managed_source["env"], DATABASE_URL=other.database_url, POLICYDESK_DATA_DIR=str(tmp_path / "data"))
        done = run_cli("restore", str(managed_source["dump"]), env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "both chains hold" in done.stdout
        with admin.connect() as conn:
            login = conn.execute(text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = 'policydesk_app'")).one()
        admin.dispose()
        assert tuple(login) == (False, False)
        from policydesk.config import Settings

        db = open_database(Settings(DATA_DIR=tmp_path / "data", ENVIRONMENT="test", _env_file=None,
                                    DATABASE_URL=other.database_url))
        try:
            with db.owner.connect() as conn:
                assert read_contents(conn) == managed_source["contents"]
            assert 0 < _visible_chunks(db, "rep") == _visible_chunks(managed_source["db"], "rep") \
                < _visible_chunks(db, "compliance")
        finally:
            db.dispose()
    finally:
        other.stop()


def test_replace_works_for_an_owner_login_without_superuser(managed_source):
    """--replace over the managed database itself: its own objects are dropped (the administrator's
    `vector` stays) and the backup comes back, all in one transaction."""
    done = run_cli("restore", str(managed_source["dump"]), "--replace", env=managed_source["env"])
    assert done.returncode == 0, done.stdout + done.stderr
    with managed_source["db"].owner.connect() as conn:
        assert read_contents(conn) == managed_source["contents"]
        assert conn.execute(text("SELECT extowner::regrole::text FROM pg_extension WHERE extname = 'vector'")
                            ).scalar_one() == "postgres"


def test_a_restore_whose_app_login_cannot_connect_says_so(managed_source):
    """Restored, but the configured password is not the existing login's: exit 1 naming the setting
    (the login is left as the server has it), not a database outage."""
    url = make_url(managed_source["cluster"].database_url).set(database=_fresh_name())
    env = dict(managed_source["env"], DATABASE_URL=url.render_as_string(hide_password=False),
               POLICYDESK_APP_DB_PASSWORD="not-the-app-password")
    done = run_cli("restore", str(managed_source["dump"]), env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "restored" in done.stdout and "POLICYDESK_APP_DB_PASSWORD" in done.stderr


def test_a_restore_onto_a_new_embedded_server_needs_no_database_url(source, tmp_path):
    """No DATABASE_URL: the embedded Postgres under a new POLICYDESK_DATA_DIR (a new machine) is
    started, its default database restored into, and `traces verify` then passes there."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["POLICYDESK_DATA_DIR"] = str(tmp_path / "new-machine")
    done = run_cli("restore", str(source["dump"]), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "both chains hold" in done.stdout
    verified = run_cli("traces", "verify", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"traces: {source['contents'].rows['traces']} rows verify" in verified.stdout
