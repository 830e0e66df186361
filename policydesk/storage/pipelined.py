"""Scoped reads in one round trip: BEGIN, the transaction's `set_config`, the SELECTs and ROLLBACK
go out as one psycopg pipeline and come back in one wait (docs/performance.md, "Clearance guard").

Through a SQLAlchemy connection each of those is a wait of its own. The reads on every request
(both retrieval arms, the clearance guard, version resolution and the conflict check's sections)
use this instead; nothing about what they read changes:

- each statement carries the access predicate in its WHERE, compiled by SQLAlchemy once per
  clearance (`compiled`), with ids as array parameters (`= ANY(...)`);
- the transaction starts with the same `set_config` statement the engine's begin hook runs
  (`scope.transaction_settings`: the scope, and the filtered-ANN settings), so row-level security
  and the HNSW scan behave exactly as on every other read;
- the transaction is rolled back (it only reads) before the connection goes back to the pool.

`scoped_pipeline` keeps the pipeline open while the caller works: each `send` reaches the server
at once and Postgres starts on it, and rows are read when the block ends. Two such pipelines
run their statements side by side in two backends (the hybrid retriever's arms).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Dialect, Engine

from policydesk.storage.clearance import Clearance
from policydesk.storage.scope import Scope, transaction_settings
from policydesk.storage.upstream import has_listeners


def compiled(stmt: Select, dialect: Dialect, *, keep: Sequence[str] = ()) -> tuple[str, dict[str, Any]]:
    """SQL text and fixed parameters of `stmt`: render_postcompile writes the clearance's levels and
    product in as the literals `access_clause` asks for; the parameters named in `keep` are
    left for each call to bind."""
    out = stmt.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    return out.string, {k: v for k, v in out.params.items() if k not in keep}


class ScopedPipeline:
    """Statements on one pooled connection in pipeline mode, inside one scoped transaction."""

    def __init__(self, conn, driver) -> None:  # noqa: ANN001 - SQLAlchemy and psycopg connections
        self._conn, self._driver = conn, driver

    def send(self, sql: str, params: dict[str, Any]):
        """Send one statement now; its rows are the returned cursor's `fetchall()` once the
        pipeline's block has ended."""
        _announce(self._conn, [(sql, params)])
        return self._driver.execute(sql, params)


@contextmanager
def scoped_pipeline(engine: Engine, clearance: Clearance) -> Iterator[ScopedPipeline]:
    """A pipeline whose transaction is scoped to `clearance`; rolled back when the block ends."""
    with engine.connect() as conn:  # a pooled connection (the pool's ping still guards a restart)
        driver = conn.connection.driver_connection
        if not hasattr(driver, "pipeline"):  # pragma: no cover - the app engine is psycopg 3
            raise TypeError(f"a pipelined read needs a psycopg 3 connection, got {type(driver).__name__}")
        with driver.pipeline():
            # psycopg opens the transaction itself (BEGIN) before the first statement.
            pipe = ScopedPipeline(conn, driver)
            pipe.send(*transaction_settings(engine, Scope.of(clearance)))
            try:
                yield pipe
            finally:
                driver.execute("ROLLBACK")


def scoped_reads(engine: Engine, clearance: Clearance,
                 statements: Sequence[tuple[str, dict[str, Any]]]) -> list[list[tuple]]:
    """Rows of each (sql, params) statement, read in one transaction under the caller's scope."""
    with scoped_pipeline(engine, clearance) as pipe:
        cursors = [pipe.send(sql, params) for sql, params in statements]
    return [cursor.fetchall() for cursor in cursors]


def _announce(conn, statements: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Fire the engine's `before_cursor_execute` listeners for statements sent past SQLAlchemy, so
    whatever watches the application's SQL (statement logs, the tests' access-predicate spies)
    sees these reads too. No cursor or execution context exists for them: both are None."""
    if not has_listeners(conn):
        return
    for sql, params in statements:
        conn.dispatch.before_cursor_execute(conn, None, sql, params, None, False)
