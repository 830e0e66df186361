"""The caller's permitted scope, set per transaction for Postgres row-level security.

The SQL predicate built by the retrievers is the first layer; this is the second, independent
one. Every transaction on the application engine sets `policydesk.levels` and
`policydesk.sensitive` with `set_config(..., is_local => true)` from the scope active in the
current context. With no scope active nothing is set, and the RLS policies return no rows.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from sqlalchemy import event
from sqlalchemy.engine import Engine


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


_current: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("policydesk_scope", default=None)


@contextmanager
def permitted_scope(levels: tuple[str, ...] | list[str], sensitive: bool, *, user_name: str | None = None,
                    all_traces: bool = False, report: bool = False) -> Iterator[Scope]:
    """Run the block with these access levels bound to every application-engine transaction."""
    scope = Scope(tuple(levels), bool(sensitive), user_name, bool(all_traces), bool(report))
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)


def current_scope() -> Scope | None:
    return _current.get()


def install_scope_hook(engine: Engine, *, ef_search: int, max_scan_tuples: int) -> None:
    """Bind the active scope and the filtered-ANN settings to each transaction on `engine`."""

    @event.listens_for(engine, "begin")
    def _set_scope(conn) -> None:  # noqa: ANN001 - SQLAlchemy Connection
        scope = _current.get()
        # Iterative scans (pgvector >= 0.8) keep walking the HNSW graph until LIMIT rows pass
        # the WHERE clause, so a filtered top-k is not cut short by rows the caller can't see.
        params = {"ef": str(ef_search), "mst": str(max_scan_tuples)}
        sql = (
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', %(ef)s, true), "
            "set_config('hnsw.max_scan_tuples', %(mst)s, true)"
        )
        if scope is not None:
            params["levels"] = ",".join(scope.levels)
            params["sensitive"] = "on" if scope.sensitive else "off"
            params["user"] = scope.user_name or ""
            params["all_traces"] = "on" if scope.all_traces else "off"
            params["report"] = "on" if scope.report else "off"
            sql += (
                ", set_config('policydesk.levels', %(levels)s, true), "
                "set_config('policydesk.sensitive', %(sensitive)s, true), "
                "set_config('policydesk.user', %(user)s, true), "
                "set_config('policydesk.all_traces', %(all_traces)s, true), "
                "set_config('policydesk.report', %(report)s, true)"
            )
        conn.exec_driver_sql(sql, params)
