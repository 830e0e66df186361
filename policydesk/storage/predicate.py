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

With a product chosen (`clearance.line_of_business`) both renderings add the product
rule beside the access rule: the source applies to every product (no `line_of_business`) or names
the chosen one. On stored columns that is `(line_of_business IS NULL OR line_of_business ? 'x')`
(jsonb, migration 0014); as metadata filters, `metadata_->>'line_of_business' IS NULL OR
metadata_::jsonb->'line_of_business' @> '["x"]'`. Without a product neither adds anything.

Row-level security (`scope.py`) is the second, independent layer behind both.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters
from sqlalchemy import ColumnElement, String, and_, bindparam, not_, or_

from policydesk.storage.clearance import Clearance

LEVEL_KEY = "access_level"
SENSITIVE_KEY = "sensitive"
PRODUCT_KEY = "line_of_business"


def access_clause(clearance: Clearance, model: Any) -> ColumnElement[bool]:
    """WHERE clause for a model (or table) with plain `access_level` and `sensitive` columns."""
    columns = getattr(model, "c", model)
    # The levels are rendered into the statement as literals (checked against ACCESS_LEVELS
    # first), as PGVectorStore renders its filters: the planner sees the constants, and a
    # statement log shows exactly which levels a read was limited to.
    levels = bindparam(None, list(clearance.checked_levels()), expanding=True, literal_execute=True)
    level_ok = getattr(columns, LEVEL_KEY).in_(levels)
    clauses = [level_ok]
    if not clearance.sensitive:
        clauses.append(not_(getattr(columns, SENSITIVE_KEY)))
    product = clearance.checked_product()
    if product is not None:
        products = getattr(columns, PRODUCT_KEY)
        name = bindparam(None, product, type_=String, literal_execute=True)
        clauses.append(or_(products.is_(None), products.op("?")(name)))
    return clauses[0] if len(clauses) == 1 else and_(*clauses)


def access_filters(clearance: Clearance, extra: MetadataFilters | None = None) -> MetadataFilters:
    """The same predicate as metadata filters, for statements PGVectorStore builds."""
    filters: list = [MetadataFilter(key=LEVEL_KEY, value=list(clearance.checked_levels()), operator=FilterOperator.IN)]
    if not clearance.sensitive:
        filters.append(MetadataFilter(key=SENSITIVE_KEY, value="false", operator=FilterOperator.EQ))
    product = clearance.checked_product()
    if product is not None:
        filters.append(MetadataFilters(filters=[
            MetadataFilter(key=PRODUCT_KEY, value=None, operator=FilterOperator.IS_EMPTY),
            MetadataFilter(key=PRODUCT_KEY, value=product, operator=FilterOperator.CONTAINS),
        ], condition=FilterCondition.OR))
    if extra is not None:
        filters.append(extra)
    return MetadataFilters(filters=filters, condition=FilterCondition.AND)
