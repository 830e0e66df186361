"""The clearance guard's read of stored chunk rows, in one round trip.

The guard runs on every request, between retrieval and version resolution (issue 21: it must
cost under 1 ms p95 at top-k 8). Through a SQLAlchemy connection a scoped read is four waits on
the server after the pool's liveness ping: BEGIN, the scope's `set_config`, the SELECT and the
ROLLBACK. Here the same four go out as one psycopg pipeline and come back in one wait
(docs/performance.md, "Clearance guard"). Nothing else changes:

- the statement is `sources.chunk_clearance_rows`'s: `access_clause` in the WHERE, compiled by
  SQLAlchemy once per clearance (the ids are one array parameter, `= ANY(...)`);
- the scope is set with the same `set_config` calls the engine's scope hook makes, in the same
  transaction, so row-level security filters the read exactly as it filters every other one;
- the transaction is rolled back (it only reads) before the connection goes back to the pool.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import ARRAY, Text, any_, bindparam, select
from sqlalchemy.engine import Dialect, Engine

from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause
from policydesk.storage.scope import Scope, _scope_sql


class StoredChunk(NamedTuple):
    """What the guard judges a node by: the stored columns, never the node's own metadata."""

    node_id: str
    access_level: str
    sensitive: bool
    text: str
    line_of_business: Any  # the JSONB list as ingest stored it, or None (every product)


def stored_chunks(engine: Engine, *, chunk_ids: Iterable[str], clearance: Clearance) -> dict[str, StoredChunk]:
    """The stored rows of these chunk ids that the caller may read, keyed by id."""
    ids = sorted(set(chunk_ids))
    if not ids:
        return {}
    scope_sql, scope_params, select_sql, select_params = _statements(engine.dialect, clearance)
    with engine.connect() as conn:  # a pooled connection (the pool's ping still guards a restart)
        driver = conn.connection.driver_connection
        if not hasattr(driver, "pipeline"):  # pragma: no cover - the app engine is psycopg 3
            raise TypeError(f"the guard's read needs a psycopg 3 connection, got {type(driver).__name__}")
        with driver.pipeline():
            # psycopg opens the transaction itself (BEGIN) before the first statement.
            driver.execute(scope_sql, scope_params)
            cursor = driver.execute(select_sql, select_params | {"ids": ids})
            driver.execute("ROLLBACK")
        rows = cursor.fetchall()
    return {r[0]: StoredChunk(*r) for r in rows}


@lru_cache(maxsize=256)
def _statements(dialect: Dialect, clearance: Clearance) -> tuple[str, dict, str, dict]:
    scope_sql, scope_params = _scope_sql(Scope.of(clearance))
    stmt = select(
        Chunk.node_id, Chunk.access_level, Chunk.sensitive, Chunk.text, Chunk.metadata_["line_of_business"],
    ).where(Chunk.node_id == any_(bindparam("ids", value=[], type_=ARRAY(Text))), access_clause(clearance, Chunk))
    # render_postcompile writes the clearance's levels and product in as the literals
    # access_clause asks for; only the ids stay a parameter.
    compiled = stmt.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    params = {k: v for k, v in compiled.params.items() if k != "ids"}
    return "SELECT " + scope_sql, scope_params, compiled.string, params
