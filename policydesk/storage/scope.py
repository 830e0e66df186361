"""The caller's permitted scope, set per transaction for Postgres row-level security.

The SQL predicate (`predicate.py`) is the first layer; this is the second, independent one.
Every transaction on the application engine sets `policydesk.levels`, `policydesk.sensitive`,
`policydesk.user`, `policydesk.all_traces`, `policydesk.report` and `policydesk.line_of_business` with
`set_config(..., is_local => true)` from the scope active in the current context. With no scope active nothing is set, and the RLS policies
return no rows.

`scoped_session` binds a scope to one Session instead of the context: a FastAPI dependency
runs in a different worker thread from its route, so a context variable set there would not
reach the route's queries.
"""

from __future__ import annotations

import contextvars
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session

from policydesk.storage.clearance import Clearance


@dataclass(frozen=True)
class Scope:
    levels: tuple[str, ...]
    sensitive: bool
    # Whose traces the transaction may read (migration 0005): the caller's own, or every row
    # for a compliance reviewer. None reads no trace.
    user_name: str | None = None
    all_traces: bool = False
    # Report scope (migration 0008): also read traces of staff within this clearance.
    report: bool = False
    # The chosen product (migration 0014); "" = none chosen.
    line_of_business: str = ""

    @classmethod
    def of(cls, clearance: Clearance, *, user_name: str | None = None, all_traces: bool = False,
           report: bool = False) -> "Scope":
        return cls(tuple(clearance.levels), bool(clearance.sensitive), user_name, bool(all_traces), bool(report),
                   clearance.checked_product() or "")


_current: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("policydesk_scope", default=None)


@contextmanager
def permitted_scope(clearance: Clearance, *, user_name: str | None = None, all_traces: bool = False,
                    report: bool = False) -> Iterator[Scope]:
    """Run the block with this clearance bound to every application-engine transaction."""
    scope = Scope.of(clearance, user_name=user_name, all_traces=all_traces, report=report)
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)


def current_scope() -> Scope | None:
    return _current.get()


def _scope_sql(scope: Scope) -> tuple[str, dict[str, str]]:
    params = {"levels": ",".join(scope.levels), "sensitive": "on" if scope.sensitive else "off",
              "user": scope.user_name or "", "all_traces": "on" if scope.all_traces else "off",
              "report": "on" if scope.report else "off", "product": scope.line_of_business}
    sql = ("set_config('policydesk.levels', %(levels)s, true), "
           "set_config('policydesk.sensitive', %(sensitive)s, true), "
           "set_config('policydesk.user', %(user)s, true), "
           "set_config('policydesk.all_traces', %(all_traces)s, true), "
           "set_config('policydesk.report', %(report)s, true), "
           "set_config('policydesk.line_of_business', %(product)s, true)")
    return sql, params


# Engines whose every transaction already runs `install_scope_hook`'s one set_config statement,
# with the filtered-ANN settings that statement sets.
_HOOKED: "weakref.WeakKeyDictionary[Engine, dict[str, str]]" = weakref.WeakKeyDictionary()
_SCOPE_OPTION = "policydesk_scope"
# hnsw.ef_search by table size (the planner's row estimate, pg_class.reltuples; unknown, -1, before
# the first ANALYZE, counts as neither tier): below `small_rows` chunks it is `ef_small`, since the
# planner prices an HNSW scan by ef_search, and on a small table a large one can make a sequential
# scan look cheaper than the graph walk it is not (settings.HNSW_SMALL_BELOW_ROWS; 0, off, by
# default); from `large_rows` chunks on it is `ef_large`, since a larger graph needs a wider search
# to find the same share of the true neighbours (settings.HNSW_LARGE_FROM_ROWS; 0, off).
_ANN_SQL = ("set_config('hnsw.iterative_scan', %(scan)s, true), "
            "set_config('hnsw.ef_search', COALESCE((SELECT CASE "
            "WHEN reltuples >= 0 AND reltuples < %(small_rows)s::real THEN %(ef_small)s "
            "WHEN %(large_rows)s::real > 0 AND reltuples >= %(large_rows)s::real THEN %(ef_large)s END "
            "FROM pg_class WHERE oid = to_regclass('data_chunks')), %(ef)s), true), "
            "set_config('hnsw.max_scan_tuples', %(mst)s, true)")


def transaction_settings(engine: Engine, scope: Scope | None) -> tuple[str, dict[str, str]]:
    """The one `SELECT set_config(...)` that starts a transaction on `engine`: the filtered-ANN
    settings (when `install_scope_hook` gave the engine some) and the scope (when there is one).
    The engine's begin hook runs it; pipelined reads (`pipelined.py`) send it themselves."""
    parts, params = [], {}
    ann = _HOOKED.get(engine)
    if ann is not None:
        parts.append(_ANN_SQL)
        params |= ann
    if scope is not None:
        scope_sql, scope_params = _scope_sql(scope)
        parts.append(scope_sql)
        params |= scope_params
    return "SELECT " + ", ".join(parts), params


def scoped_session(engine: Engine, clearance: Clearance, *, user_name: str | None = None,
                   all_traces: bool = False, report: bool = False) -> Session:
    """A Session whose every transaction carries this scope for row-level security."""
    scope = Scope.of(clearance, user_name=user_name, all_traces=all_traces, report=report)
    if engine in _HOOKED:
        # The engine's own begin hook sets the scope it finds in the connection's options, in the
        # statement that sets the ANN settings: one round trip per transaction, not two.
        return Session(engine.execution_options(**{_SCOPE_OPTION: scope}))
    session = Session(engine)
    sql, params = transaction_settings(engine, scope)

    @event.listens_for(session, "after_begin")
    def _bind(session: Session, transaction, connection: Connection) -> None:  # noqa: ANN001
        connection.exec_driver_sql(sql, params)

    return session


def install_scope_hook(engine: Engine, *, ef_search: int, max_scan_tuples: int,
                       iterative_scan: str = "relaxed_order", small_rows: int = 0, ef_small: int | None = None,
                       large_rows: int = 0, ef_large: int | None = None) -> None:
    """Bind the active scope and the filtered-ANN settings to each transaction on `engine`."""
    # Iterative scans (pgvector >= 0.8) keep walking the HNSW graph until LIMIT rows pass
    # the WHERE clause, so a filtered top-k is not cut short by rows the caller can't see.
    _HOOKED[engine] = {"ef": str(ef_search), "mst": str(max_scan_tuples), "scan": iterative_scan,
                       "small_rows": str(small_rows), "ef_small": str(ef_small or ef_search),
                       "large_rows": str(large_rows), "ef_large": str(ef_large or ef_search)}

    @event.listens_for(engine, "begin")
    def _set_scope(conn) -> None:  # noqa: ANN001 - SQLAlchemy Connection
        # A scoped_session's scope (bound to its connections) wins over the context's.
        scope = conn.get_execution_options().get(_SCOPE_OPTION) or _current.get()
        conn.exec_driver_sql(*transaction_settings(engine, scope))
