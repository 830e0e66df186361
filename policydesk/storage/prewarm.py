"""Reading the dense index into Postgres's cache when a server starts.

After a restart shared_buffers is empty, and at 10^6 chunks a question's first read copies
thousands of HNSW pages in from the operating system (docs/performance.md, "10^6 chunks"). A
warm-up reads the whole graph once instead, before traffic: one filtered HNSW scan whose filter no
row passes, left to iterate over every element, which brings the index and the rows it points at
into shared buffers. That is what pg_prewarm would do; the embedded server does not ship it, and
this works on any Postgres with pgvector's iterative scans. The text arm's and the versions'
tables are then read whole (small next to the cache; Postgres reads a table larger than a quarter
of shared_buffers through a small ring instead, so those are left to the questions).

Every worker of `serve` runs one (policydesk/ops/cache_warmup.py); a session advisory lock makes the
first do the reading and the others wait for it, so /readyz turns ready in all of them when the
cache is warm.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Engine

from policydesk.storage.buffers import DENSE_INDEX, index_and_cache
from policydesk.storage.models import CHUNK_TABLE

# The advisory lock key: one warm-up per database at a time.
PREWARM_LOCK = "policydesk_prewarm_dense_index"
# Read whole after the graph: the text arm's rows and the version windows every answer resolves.
SMALL_TABLES = ("chunk_search", "document_versions", "documents")
# Settings of the walk, for its transaction only (the connection goes back to the owner's pool):
# the index even on a table small enough for a sequential scan, the widest candidate list, and no
# limit on how far the iterative scan goes.
_WALK_SETTINGS = {"statement_timeout": "0", "enable_seqscan": "off", "hnsw.ef_search": "1000",
                  "hnsw.iterative_scan": "relaxed_order", "hnsw.max_scan_tuples": "2147483647",
                  "hnsw.scan_mem_multiplier": "20", "work_mem": "256MB"}


@dataclass(frozen=True)
class WarmUp:
    outcome: str  # "read" (this process read it), "waited" (another did), "skipped", "failed"
    seconds: float
    detail: str = ""


def _skip_reason(conn) -> str | None:
    index_bytes, cache_bytes, _ = index_and_cache(conn)
    if index_bytes is None:
        return "no dense index in this database"
    if index_bytes > cache_bytes:  # each page read would evict an earlier one (start-up warns)
        return "the dense index is larger than shared_buffers"
    return None


def _read_graph(conn) -> None:
    for name, value in _WALK_SETTINGS.items():
        conn.execute(text("SELECT set_config(:name, :value, true)"), {"name": name, "value": value})
    plan = [row[0] for row in conn.exec_driver_sql(
        f"EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM {CHUNK_TABLE} WHERE length(node_id) < 0 "
        f"ORDER BY embedding <=> (SELECT embedding FROM {CHUNK_TABLE} LIMIT 1) LIMIT 1")]
    if not any(DENSE_INDEX in line for line in plan):
        raise RuntimeError("the planner did not use the dense index for the warm-up walk")
    for table in SMALL_TABLES:
        conn.execute(text(f"SELECT count(*) FROM {table}"))  # names from this module, not from input


def warm_dense_index(owner: Engine) -> WarmUp:
    """Read the dense index and the tables retrieval reads into shared buffers, unless another
    process holds the warm-up lock: then wait for it to end and take its word for it (reading the
    graph again, from the cache, would cost each worker seconds of CPU at 10^6). Runs as the owner
    login, whose own row policy shows it every row."""
    t0 = time.perf_counter()
    with owner.connect() as conn:
        reason = _skip_reason(conn)
        if reason:
            return WarmUp("skipped", 0.0, reason)
        key = {"key": PREWARM_LOCK}
        if conn.execute(text("SELECT pg_try_advisory_lock(hashtext(:key))"), key).scalar_one():
            outcome = "read"
            try:
                _read_graph(conn)
            finally:
                conn.rollback()  # ends the walk's settings
                conn.execute(text("SELECT pg_advisory_unlock(hashtext(:key))"), key)
        else:
            outcome = "waited"
            conn.execute(text("SELECT pg_advisory_lock(hashtext(:key))"), key)
            conn.execute(text("SELECT pg_advisory_unlock(hashtext(:key))"), key)
        conn.rollback()
    return WarmUp(outcome, round(time.perf_counter() - t0, 1))
