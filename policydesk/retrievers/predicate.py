"""The access predicate as LlamaIndex metadata filters.

PGVectorStore renders these into the WHERE clause of each statement it runs, next to the
ranking, so rows above the caller's clearance are never ranked and never leave Postgres:

    metadata_->>'access_level' IN ('public', 'internal') AND metadata_->>'sensitive' = 'false'
"""

from __future__ import annotations

from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from policydesk.access import ACCESS_LEVELS


def access_filters(levels: tuple[str, ...], sensitive: bool, extra: MetadataFilters | None = None) -> MetadataFilters:
    # Levels come from code (access.py), never from the request; check anyway because
    # PGVectorStore interpolates filter values into SQL text.
    unknown = set(levels) - set(ACCESS_LEVELS)
    if unknown or not levels:
        raise ValueError(f"refusing to build a predicate for access levels {levels!r}")
    filters: list = [MetadataFilter(key="access_level", value=list(levels), operator=FilterOperator.IN)]
    if not sensitive:
        filters.append(MetadataFilter(key="sensitive", value="false", operator=FilterOperator.EQ))
    if extra is not None:
        filters.append(extra)
    return MetadataFilters(filters=filters, condition=FilterCondition.AND)
