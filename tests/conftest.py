"""Shared fixtures: one embedded Postgres per test session, fresh databases, the offline embedder.

Never a mock: every test that touches data runs against real Postgres with pgvector.
"""

from __future__ import annotations

import itertools
import os
import tempfile
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
from policydesk.users import add_user
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


@pytest.fixture(scope="session")
def embed_model(settings):
    from policydesk.providers import local_embedding

    return local_embedding(settings)


_opened_dbs: list = []  # every database make_db opened this session
_shared_dbs: set[int] = set()  # ids of those used by most tests (demo_db): their pools stay warm


@pytest.fixture(scope="session")
def make_db(settings):
    """Factory: a new, migrated, empty database on the session's server."""
    from policydesk.runtime import open_migrated

    def _make():
        name = f"policydesk_test_{next(_db_counter)}"
        create_database(settings, name)
        db = open_migrated(settings, name)
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
    from policydesk.ingest import ingest_directory

    db = make_db()
    _shared_dbs.add(id(db))
    ingest_directory(db, CORPUS, embed_model, settings)
    return db


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
