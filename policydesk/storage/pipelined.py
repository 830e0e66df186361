"""Scoped reads in one round trip: BEGIN, the scope's `set_config`, the SELECTs and ROLLBACK go
out as one psycopg pipeline and come back in one wait (docs/performance.md, "Clearance guard").

Through a SQLAlchemy connection each of those is a wait of its own. The reads on every request
(the clearance guard, version resolution and the conflict check's sections, the sync full-text
arm) use this instead; nothing about what they read changes:

- each statement carries `access_clause` in its WHERE, compiled by SQLAlchemy once per
  clearance (`compiled`), with ids as array parameters (`= ANY(...)`);
- the scope is set with the same `set_config` calls the engine's scope hook makes, in the same
  transaction, so row-level security filters the reads exactly as it filters every other one;
- the transaction is rolled back (it only reads) before the connection goes back to the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Dialect, Engine

from policydesk.storage.clearance import Clearance
from policydesk.storage.scope import Scope, _scope_sql


def compiled(stmt: Select, dialect: Dialect, *, keep: Sequence[str] = ()) -> tuple[str, dict[str, Any]]:
    """SQL text and fixed parameters of `stmt`: render_postcompile writes the clearance's levels and
    product in as the literals `access_clause` asks for; the parameters named in `keep` are
    left for each call to bind."""
    out = stmt.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    return out.string, {k: v for k, v in out.params.items() if k not in keep}


def scoped_reads(engine: Engine, clearance: Clearance,
                 statements: Sequence[tuple[str, dict[str, Any]]]) -> list[list[tuple]]:
    """Rows of each (sql, params) statement, read in one transaction under the caller's scope."""
    scope_sql, scope_params = _scope_sql(Scope.of(clearance))
    with engine.connect() as conn:  # a pooled connection (the pool's ping still guards a restart)
        driver = conn.connection.driver_connection
        if not hasattr(driver, "pipeline"):  # pragma: no cover - the app engine is psycopg 3
            raise TypeError(f"a pipelined read needs a psycopg 3 connection, got {type(driver).__name__}")
        sent = [("SELECT " + scope_sql, scope_params), *statements]
        _announce(conn, sent)
        with driver.pipeline():
            # psycopg opens the transaction itself (BEGIN) before the first statement.
            cursors = [driver.execute(sql, params) for sql, params in sent]
            driver.execute("ROLLBACK")
        return [cursor.fetchall() for cursor in cursors[1:]]


def _announce(conn, statements: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Fire the engine's `before_cursor_execute` listeners for statements sent past SQLAlchemy, so
    whatever watches the application's SQL (statement logs, the tests' access-predicate spies)
    sees these reads too. No cursor or execution context exists for them: both are None."""
    if not conn._has_events and not conn.engine._has_events:
        return
    for sql, params in statements:
        conn.dispatch.before_cursor_execute(conn, None, sql, params, None, False)
