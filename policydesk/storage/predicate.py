"""The access predicate, built in one place for every scoped read.

Two renderings of one rule (`access_level` in the caller's levels, and nothing sensitive unless
cleared), both from `Clearance.checked_levels()`:

- `access_clause(clearance, Model)`: a SQLAlchemy expression on the plain stored columns
  `access_level` / `sensitive` (real columns on `document_versions`; generated ones on
  `data_chunks`, migration 0003). Under row-level security only leakproof comparisons like
  these can be served from the btree indexes, so no statement of ours filters on
  `metadata_->>'access_level'`.
- `access_filters(clearance)`: LlamaIndex `MetadataFilters`, because PGVectorStore builds its own
  statements and can only filter on the JSONB metadata. It renders
  `metadata_->>'access_level' IN ('public', 'internal') AND metadata_->>'sensitive' = 'false'`.

Row-level security (`scope.py`) is the second, independent layer behind both.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters
from sqlalchemy import ColumnElement, and_, bindparam, not_

from policydesk.storage.clearance import Clearance

LEVEL_KEY = "access_level"
SENSITIVE_KEY = "sensitive"


def access_clause(clearance: Clearance, model: Any) -> ColumnElement[bool]:
    """WHERE clause for a model (or table) with plain `access_level` and `sensitive` columns."""
    columns = getattr(model, "c", model)
    # The levels are rendered into the statement as literals (checked against ACCESS_LEVELS
    # first), as PGVectorStore renders its filters: the planner sees the constants, and a
    # statement log shows exactly which levels a read was limited to.
    levels = bindparam(None, list(clearance.checked_levels()), expanding=True, literal_execute=True)
    level_ok = getattr(columns, LEVEL_KEY).in_(levels)
    if clearance.sensitive:
        return level_ok
    return and_(level_ok, not_(getattr(columns, SENSITIVE_KEY)))


def access_filters(clearance: Clearance, extra: MetadataFilters | None = None) -> MetadataFilters:
    """The same predicate as metadata filters, for statements PGVectorStore builds."""
    filters: list = [MetadataFilter(key=LEVEL_KEY, value=list(clearance.checked_levels()), operator=FilterOperator.IN)]
    if not clearance.sensitive:
        filters.append(MetadataFilter(key=SENSITIVE_KEY, value="false", operator=FilterOperator.EQ))
    if extra is not None:
        filters.append(extra)
    return MetadataFilters(filters=filters, condition=FilterCondition.AND)
