"""Postgres's cache against the dense index: the embedded server's shared_buffers setting, and
the start-up warning when the index has outgrown the cache (policydesk/storage/buffers.py).

These start an embedded server of their own, in a data directory of their own, because changing
shared_buffers restarts it."""

from __future__ import annotations

import logging

import psycopg
import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, make_url

from policydesk.config import Settings
from policydesk.storage.buffers import apply_shared_buffers, cache_shortfall
from policydesk.storage.engine import embedded_server, stop_embedded_server


def _running(server) -> str:
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        return conn.execute("SHOW shared_buffers").fetchone()[0]


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("buffers")
    server = embedded_server(data_dir, "2MB")
    yield server
    stop_embedded_server(data_dir, force=True)


def test_the_embedded_server_starts_with_the_shared_buffers_set(own_server):
    assert _running(own_server) == "2MB"


def test_a_size_is_applied_only_when_no_other_process_is_connected(own_server, caplog):
    with psycopg.connect(own_server.get_uri(), autocommit=True) as other:
        with caplog.at_level(logging.WARNING, logger="policydesk.storage.buffers"):
            assert apply_shared_buffers(own_server, "4MB") == "2MB"
        assert other.execute("SELECT 1").fetchone() == (1,)  # the other connection was left alone
    assert "until its next start" in caplog.text and "1 other connection" in caplog.text
    assert _running(own_server) == "2MB"
    # With the other connection gone, the next start of a process applies it.
    assert apply_shared_buffers(own_server, "4MB") == "4MB"
    assert _running(own_server) == "4MB"
    assert apply_shared_buffers(own_server, None) == "4MB"  # None leaves the server's own
    assert apply_shared_buffers(own_server, "2MB") == "2MB"


def test_an_index_larger_than_the_cache_is_reported_and_a_smaller_one_is_not(own_server):
    engine = create_engine(make_url(own_server.get_uri()).set(drivername="postgresql+psycopg"),
                           isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql("DROP TABLE IF EXISTS cache_probe")
        conn.exec_driver_sql("CREATE TABLE cache_probe AS SELECT g FROM generate_series(1, 300000) g")
        conn.exec_driver_sql("CREATE INDEX cache_probe_big ON cache_probe (g)")  # about 6.5 MB
        conn.exec_driver_sql("CREATE INDEX cache_probe_small ON cache_probe (g) WHERE g < 100")
    try:
        warning = cache_shortfall(engine, index="cache_probe_big")
        assert warning is not None and "cache_probe_big" in warning and "shared_buffers (2MB)" in warning
        assert cache_shortfall(engine, index="cache_probe_small") is None
        assert cache_shortfall(engine) is None  # no dense index in this database: nothing to warn about
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql("DROP TABLE cache_probe")
        engine.dispose()


def test_the_demo_database_fits_the_default_cache(demo_db):
    assert cache_shortfall(demo_db.owner) is None


@pytest.mark.parametrize("size", ["4 GB", "4gb", "0MB", "4096", "4GB; DROP TABLE x", ""])
def test_a_size_postgres_would_not_read_is_refused_at_start_up(size):
    with pytest.raises(ValidationError, match="EMBEDDED_SHARED_BUFFERS"):
        Settings(EMBEDDED_SHARED_BUFFERS=size, _env_file=None)


def test_a_bad_size_never_reaches_the_server(own_server):
    with pytest.raises(ValueError, match="not a size"):
        apply_shared_buffers(own_server, "4GB'; SELECT 1; --")
    assert _running(own_server) == "2MB"
