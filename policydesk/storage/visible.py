"""Which cited source versions the caller may read *now*.

A trace stores the cited text as it was shown. Showing it again is a new read, so it follows the
caller's current clearance: the (doc_id, version) pair must be readable through the same
predicate and row-level-security scope as retrieval. A version the caller lost access to looks
exactly like one that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import text

from policydesk.storage.scope import permitted_scope

_READABLE_SQL = text(
    "SELECT doc_id, version FROM document_versions "
    "WHERE doc_id = ANY(:docs) AND access_level = ANY(:levels) AND (:sensitive OR NOT sensitive)"
)


def readable_versions(db, keys: Iterable[tuple[str, int]], levels: tuple[str, ...], sensitive: bool) -> set[tuple[str, int]]:
    """The subset of (doc_id, version) keys readable under this clearance."""
    wanted = {(str(d), int(v)) for d, v in keys}
    if not wanted:
        return set()
    params = {"docs": sorted({d for d, _ in wanted}), "levels": list(levels), "sensitive": bool(sensitive)}
    with permitted_scope(levels, sensitive), db.app.connect() as conn:
        rows = conn.execute(_READABLE_SQL, params).all()
    return {(r.doc_id, int(r.version)) for r in rows} & wanted
