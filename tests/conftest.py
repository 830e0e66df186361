"""Shared fixtures: one embedded Postgres per test session, fresh databases, the offline embedder.

Never a mock: every test that touches data runs against real Postgres with pgvector.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
import uuid
from datetime import date
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.config import Settings
from policydesk.storage.engine import create_database, stop_embedded_servers
from policydesk.accounts.users import add_user
from tests.web_helpers import PASSWORD, sign_in

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"
_db_counter = itertools.count(1)

# One ONNX export of the local model per test session (providers/onnx_local.py), shared by the
# session's settings and by every `policydesk` process a test starts (they inherit the
# environment), instead of one per data directory or under the checkout's .policydesk. Set it
# yourself to keep the file between sessions.
_MODELS_DIR = None if "POLICYDESK_EMBED_MODELS_DIR" in os.environ else tempfile.mkdtemp(prefix="policydesk-models-")
if _MODELS_DIR:
    os.environ["POLICYDESK_EMBED_MODELS_DIR"] = _MODELS_DIR


def _cheap_password_hashing() -> None:
    """Argon2 at test cost. The product hashes with argon2's defaults (64 MiB, 3 passes, 4 lanes:
    0.1-0.3 s a hash or a check on two shared cores), and the suite hashes and checks passwords
    thousands of times (every user a fixture adds, every sign-in, every deliberate bad sign-in of
    the lockout, fuzz and hostile tests). Here the same argon2id runs with 1 pass over 1 MiB, the
    decoy hash for unknown names included (users.authenticate), so known and unknown names still
    cost the same. A hash records its parameters, so a `serve` process checks these cheaply too.
    POLICYDESK_TEST_ARGON2=default keeps the product's cost."""
    if os.environ.get("POLICYDESK_TEST_ARGON2") == "default":
        return
    from argon2 import PasswordHasher

    from policydesk.accounts import users

    if not hasattr(users, "_hasher") or not hasattr(users, "_DUMMY_HASH"):
        return  # users.py changed shape: run at the product's cost rather than guess
    users._hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    users._DUMMY_HASH = users._hasher.hash("not-a-real-password")


_cheap_password_hashing()


@pytest.fixture(scope="session")
def settings(tmp_path_factory) -> Settings:
    # Every TestClient signs in from the one address "testclient", so the suite's deliberate bad
    # sign-ins on the shared demo database (fuzz, hostile input) would add up to the per-address
    # lock. tests/test_sessions.py checks the default thresholds on a database of its own.
    return Settings(DATA_DIR=tmp_path_factory.mktemp("policydesk"), ENVIRONMENT="test", _env_file=None,
                    LOGIN_ADDRESS_MAX_FAILURES=1000)


@pytest.fixture(scope="session", autouse=True)
def _stop_server():
    yield
    stop_embedded_servers()
    if _MODELS_DIR:
        shutil.rmtree(_MODELS_DIR, ignore_errors=True)


def _session_model(settings):
    from policydesk.providers import local_embedding
    from tests.embed_helpers import share_vectors

    model = local_embedding(settings)  # one instance per process and configuration (offline_embedding)
    share_vectors(model)
    return model


@pytest.fixture(scope="session")
def embed_model(settings):
    """The session's offline model (the same instance the in-process CLI and the pipeline get from
    `offline_embedding`), its vectors shared by every test database (tests/embed_helpers.py)."""
    return _session_model(settings)


_opened_dbs: list = []  # every database make_db opened this session
_shared_dbs: set[int] = set()  # ids of those used by most tests (demo_db): their pools stay warm


# Two template databases, each built once per session and copied by `CREATE DATABASE … TEMPLATE`
# (a file copy of a few MB, ~0.1 s): the migrated schema, and the same with the demo corpus
# ingested. Nothing connects to a template after it is built (a copy needs it idle).
MIGRATED_TEMPLATE = "policydesk_test_template"
DEMO_TEMPLATE = "policydesk_test_template_demo"
_templates: set[str] = set()


def _clone(settings, name: str, template: str) -> None:
    from sqlalchemy import create_engine

    from policydesk.storage.engine import owner_url

    url = owner_url(settings.database_url, settings.DATA_DIR, "postgres",
                    shared_buffers=settings.EMBEDDED_SHARED_BUFFERS)
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        for attempt in range(50):
            try:
                with engine.connect() as conn:
                    conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                return
            except Exception as exc:  # a backend of the template's last user still exiting
                if "is being accessed by other users" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.1)
    finally:
        engine.dispose()


def _no_flush_to_disk(settings) -> None:
    """The session's server keeps what it writes in the OS cache instead of flushing it to disk at
    every commit and checkpoint (fsync, synchronous_commit, full_page_writes off): a throwaway
    cluster in a temporary directory, never recovered after a machine crash. Servers that tests
    start in data directories of their own (restarts, replicas, `serve`) keep the defaults."""
    if settings.database_url or os.environ.get("POLICYDESK_TEST_FSYNC") == "on":
        return
    from sqlalchemy import create_engine

    from policydesk.storage.engine import owner_url

    engine = create_engine(owner_url(None, settings.DATA_DIR, "postgres",
                                     shared_buffers=settings.EMBEDDED_SHARED_BUFFERS), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.exec_driver_sql(f"ALTER SYSTEM SET {setting} = off")
        conn.exec_driver_sql("SELECT pg_reload_conf()")
    engine.dispose()


def _template(settings, name: str, embed_model=None) -> str:
    """Build the template `name` once per session: migrated, or (DEMO_TEMPLATE) with the demo corpus."""
    from policydesk.ops.runtime import open_migrated

    if name in _templates:
        return name
    if name == MIGRATED_TEMPLATE:
        _no_flush_to_disk(settings)
        create_database(settings, name)
        db = open_migrated(settings, name)
    else:
        from policydesk.ingest import ingest_directory

        _clone(settings, name, _template(settings, MIGRATED_TEMPLATE))
        db = open_migrated(settings, name)
        ingest_directory(db, CORPUS, embed_model, settings)
    db.dispose()
    _templates.add(name)
    return name


@pytest.fixture(scope="session")
def make_db(settings):
    """Factory: a new, migrated, empty database on the session's server, copied from a migrated
    template. `make_db(demo=True)`: one holding the demo corpus, ingested (as `demo_db`), that the
    test may change."""
    from policydesk.ops.runtime import open_migrated

    def _make(*, demo: bool = False):
        name = f"policydesk_test_{next(_db_counter)}"
        if demo:
            template = _template(settings, DEMO_TEMPLATE, _session_model(settings))
        else:
            template = _template(settings, MIGRATED_TEMPLATE)
        _clone(settings, name, template)
        db = open_migrated(settings, name)  # a no-op upgrade and catch-up: the start-up path as before
        _opened_dbs.append(db)
        return db

    yield _make
    for db in _opened_dbs:
        db.dispose()


@pytest.fixture(autouse=True)
def _release_idle_connections():
    # Each database keeps a pool of idle connections until the session ends; with a few dozen
    # databases they filled the embedded server's 100 slots late in a full run. After each test,
    # the pools of all but the shared demo database are emptied (the engines stay usable and
    # reconnect on demand; a connection still checked out is closed when it is returned).
    yield
    for db in _opened_dbs:
        if id(db) not in _shared_dbs and not getattr(db, "_closed", False):
            db.owner.dispose()
            db.app.dispose()


@pytest.fixture(scope="session")
def demo_db(make_db, embed_model, settings):
    """A database with the demo corpus ingested. Read-only for tests: don't mutate it."""
    db = make_db(demo=True)
    _shared_dbs.add(id(db))
    return db


@pytest.fixture(scope="session")
def shared_serve(tmp_path_factory, embed_model):
    """The session's real `policydesk serve --workers 2` (tests/serve_helpers.py), started on first
    use: `shared_serve.get()` -> url, db, proc, log, data_dir, role, settings."""
    from tests.serve_helpers import SharedServe

    handle = SharedServe(tmp_path_factory.mktemp("serve"), tmp_path_factory.mktemp("serve-corpus"), embed_model)
    yield handle
    handle.close()


@pytest.fixture
def corpus_copy(tmp_path) -> Path:
    dest = tmp_path / "corpus"
    shutil.copytree(CORPUS, dest)
    return dest


def table_counts(db) -> dict[str, int]:
    tables = ("users", "documents", "document_versions", "data_chunks", "traces", "audit_log")
    with db.owner.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}


# -- the web app on the demo database (shared by the web, faults, hostile and page-leak tests) --

WEB_TODAY = date(2026, 11, 29)


@pytest.fixture(scope="session")
def pipeline(demo_db, settings, embed_model):
    from policydesk.pipeline import build_pipeline

    return build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY)


@pytest.fixture(scope="session")
def web_app(settings, demo_db, pipeline):
    from policydesk.web.app import create_app

    return create_app(settings, db=demo_db, pipeline=pipeline)


@pytest.fixture(scope="session")
def staff(demo_db) -> dict[str, str]:
    """One user per role, with names unique to this test session."""
    tag = uuid.uuid4().hex[:6]
    names = {"rep": f"web-rep-{tag}", "rep2": f"web-rep2-{tag}", "supervisor": f"web-sup-{tag}",
             "compliance": f"web-comp-{tag}", "mover": f"web-mover-{tag}"}
    with Session(demo_db.owner) as session, session.begin():
        for key, name in names.items():
            role = {"rep2": "rep", "mover": "rep"}.get(key, key)
            add_user(session, name=name, role=role, password=PASSWORD)
    return names


@pytest.fixture(scope="session")
def clients(web_app, staff) -> dict[str, TestClient]:
    return {key: sign_in(web_app, name) for key, name in staff.items()}


def pytest_terminal_summary(terminalreporter):
    from tests.embed_helpers import stats

    done = stats()
    if done["hits"] or done["misses"]:
        terminalreporter.write_line(f"session embedding memo (tests/embed_helpers.py): {done['misses']} model calls "
                                    f"computed, {done['hits']} repeated calls answered from the memo")
