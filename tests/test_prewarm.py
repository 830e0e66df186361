"""The start-up warm-up of Postgres's cache (policydesk/storage/prewarm.py, policydesk/ops/cache_warmup.py): after a restart it
puts the dense index in shared buffers; a second worker waits for the first instead of reading it
again; /readyz holds traffic while it reads and only notes a warm-up that failed or had nothing to do.

The restart runs on an embedded server of its own, in a data directory of its own."""

from __future__ import annotations

import re

import psycopg
import pytest
from sqlalchemy import create_engine, make_url, text

from policydesk.ops import metrics
from policydesk.ops.cache_warmup import CacheWarmer
from policydesk.config import Settings
from policydesk.ingest import ingest_directory
from policydesk.ops.readiness import readiness
from policydesk.ops.runtime import open_migrated
from policydesk.storage.buffers import DENSE_INDEX
from policydesk.storage.engine import embedded_server, stop_embedded_server
from policydesk.storage.prewarm import PREWARM_LOCK, warm_dense_index
from tests.conftest import CORPUS


@pytest.fixture(scope="module")
def own(tmp_path_factory, embed_model):
    settings = Settings(DATA_DIR=tmp_path_factory.mktemp("prewarm"), _env_file=None)
    db = open_migrated(settings)
    ingest_directory(db, CORPUS, embed_model, settings)
    yield db, embedded_server(settings.DATA_DIR)
    db.dispose()
    stop_embedded_server(settings.DATA_DIR, force=True)


def _restart(db, server) -> None:
    db.owner.dispose()
    db.app.dispose()
    server.stop()
    with server._lock:
        server.ensure_postgres_running()


def _pages_read_by_a_search(db) -> int:
    """Pages a dense search copied into shared buffers (not found there) while it ran."""
    with db.owner.connect() as conn:
        vector = conn.execute(text("SELECT embedding::text FROM data_chunks ORDER BY id OFFSET 3 LIMIT 1")).scalar_one()
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        plan = [r[0] for r in conn.execute(text(
            "EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM data_chunks ORDER BY embedding <=> CAST(:v AS vector) LIMIT 5"),
            {"v": vector})]
        conn.rollback()
    execution = plan[:next(i for i, line in enumerate(plan) if line.startswith("Planning"))]
    assert any(DENSE_INDEX in line for line in execution), plan
    return sum(int(n) for line in execution for n in re.findall(r"read=(\d+)", line))


def test_after_a_restart_the_warm_up_puts_the_dense_index_in_the_cache(own):
    db, server = own
    _restart(db, server)
    assert _pages_read_by_a_search(db) > 0  # an empty cache: the search reads pages in
    _restart(db, server)
    result = warm_dense_index(db.owner)
    assert result.outcome == "read"
    assert _pages_read_by_a_search(db) == 0  # every page it touches was already there


def test_the_pooled_connection_keeps_its_settings_and_no_lock_is_left(own):
    db, _ = own
    with db.owner.connect() as conn:
        before = conn.execute(text("SELECT current_setting('hnsw.ef_search'), current_setting('statement_timeout'), "
                                   "current_setting('enable_seqscan')")).one()
    db.owner.dispose()
    assert warm_dense_index(db.owner).outcome == "read"
    assert db.owner.pool.checkedin() == 1  # the walk's connection went back to the pool, and is the one read next
    with db.owner.connect() as conn:
        after = conn.execute(text("SELECT current_setting('hnsw.ef_search'), current_setting('statement_timeout'), "
                                  "current_setting('enable_seqscan')")).one()
        held = conn.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar_one()
    assert after == before and held == 0


def test_a_second_worker_waits_for_the_first_and_readyz_holds_traffic_meanwhile(own):
    db, _ = own
    first_worker = psycopg.connect(make_url(db.owner_url).set(drivername="postgresql").render_as_string(hide_password=False),
                                   autocommit=True)
    try:
        first_worker.execute("SELECT pg_advisory_lock(hashtext(%s))", (PREWARM_LOCK,))
        warmer = CacheWarmer(db.owner).start()
        assert warmer.join(timeout=1.0) is None
        state = readiness(db, None, warmer)
        assert not state.ready and "dense_cache" in state.failing
        assert state.checks["dense_cache"].startswith("warming the dense index")
        first_worker.execute("SELECT pg_advisory_unlock(hashtext(%s))", (PREWARM_LOCK,))
        result = warmer.join(timeout=60)
    finally:
        first_worker.close()
    assert result is not None and result.outcome == "waited"
    state = readiness(db, None, warmer)
    assert state.checks["dense_cache"] == "ok" and state.notes == {}


def test_a_database_without_the_dense_index_is_skipped_and_noted(make_db):
    db = make_db()
    with db.owner.begin() as conn:
        conn.execute(text(f"DROP INDEX IF EXISTS {DENSE_INDEX}"))
    warmer = CacheWarmer(db.owner).start()
    assert warmer.join(timeout=60).outcome == "skipped"
    state = readiness(db, None, warmer)
    assert state.checks["dense_cache"] == "ok"
    assert state.notes == {"dense_cache": "skipped: no dense index in this database"}


def _warmups(outcome: str) -> float:
    return metrics.REGISTRY.get_sample_value("policydesk_cache_warmups_total", {"outcome": outcome}) or 0.0


def test_a_failed_warm_up_is_noted_counted_and_logged_and_does_not_hold_traffic(demo_db, caplog):
    gone = create_engine(make_url(demo_db.owner_url).set(database="policydesk_no_such_database"))
    failed_before = _warmups("failed")
    warmer = CacheWarmer(gone).start()
    result = warmer.join(timeout=60)
    gone.dispose()
    assert result.outcome == "failed" and result.detail == "OperationalError"
    assert _warmups("failed") == failed_before + 1
    assert "warming the dense index failed" in caplog.text
    state = readiness(demo_db, None, warmer)
    assert state.checks["dense_cache"] == "ok"
    assert state.notes == {"dense_cache": "failed: OperationalError"}
