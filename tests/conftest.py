"""Shared fixtures: one embedded Postgres per test session, fresh databases, the offline embedder.

Never a mock: every test that touches data runs against real Postgres with pgvector.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from policydesk.config import Settings
from policydesk.storage.engine import create_database, stop_embedded_servers

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"
_db_counter = itertools.count(1)


@pytest.fixture(scope="session")
def settings(tmp_path_factory) -> Settings:
    return Settings(DATA_DIR=tmp_path_factory.mktemp("policydesk"), ENVIRONMENT="test", _env_file=None)


@pytest.fixture(scope="session", autouse=True)
def _stop_server():
    yield
    stop_embedded_servers()


@pytest.fixture(scope="session")
def embed_model(settings):
    from policydesk.providers import offline_embedding

    return offline_embedding(settings.EMBED_BATCH_SIZE, settings.EMBED_TORCH_THREADS)


@pytest.fixture(scope="session")
def make_db(settings):
    """Factory: a new, migrated, empty database on the session's server."""
    from policydesk.runtime import open_migrated

    opened = []

    def _make():
        name = f"policydesk_test_{next(_db_counter)}"
        create_database(settings, name)
        db = open_migrated(settings, name)
        opened.append(db)
        return db

    yield _make
    for db in opened:
        db.dispose()


@pytest.fixture(scope="session")
def demo_db(make_db, embed_model, settings):
    """A database with the demo corpus ingested. Read-only for tests: don't mutate it."""
    from policydesk.ingest import ingest_directory

    db = make_db()
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
