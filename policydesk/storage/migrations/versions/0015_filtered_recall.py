"""Filtered dense recall at 10^4 and 10^5 (issue 17, point 2): the HNSW index is m = 32,
ef_construction = 400, and the product predicate gets expression statistics.

Measured with `benchmarks/hnsw_sweep.py` on the bench's realistic filler (templated policy-like
sections embedded by the local model), recall@10 of the production dense arm against an exact
scan under the same predicate, every role's filter and the selectivity cases, two builds each
(docs/performance.md, "Filtered dense recall on realistic embeddings"):

- Index: m = 32 / ef_construction = 400 (as migration 0013 built it) with ef_search 200 kept
  the minimum above 0 for every filter at both scales; m = 16 / ef_construction = 64 scored 0
  on some questions at 10^5 at every ef_search up to 200, and m = 48 did no better than 32.
  This migration records the parameters: it rebuilds the index only where it has others.
- ef_search 100 -> 200 is a setting (POLICYDESK_HNSW_EF_SEARCH), not part of the schema.
- Statistics on `metadata_->>'line_of_business'`: without them the planner took the product
  clause of the dense arm's filter (`IS NULL OR @> [product]`) as selective (135 of 8,041
  matching rows estimated at 10^4 chunks) and answered a rep who chose a product with an exact
  scan (60-120 ms) where the same filter without a product took the HNSW index (3-15 ms).
  Same fix as migration 0004 for the sensitivity predicate.

A rebuild reads every row: on a large table run it in a maintenance window.

Revision ID: 0015
Revises: 0014
"""

import re

from alembic import op
from sqlalchemy import text

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

M = 32
EF_CONSTRUCTION = 400
_INDEX = "data_chunks_embedding_hnsw"


def upgrade() -> None:
    bind = op.get_bind()
    indexdef = bind.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :i"), {"i": _INDEX}).scalar()
    built = dict(re.findall(r"(m|ef_construction)='(\d+)'", indexdef or ""))
    if built != {"m": str(M), "ef_construction": str(EF_CONSTRUCTION)}:
        op.execute(f"DROP INDEX IF EXISTS {_INDEX}")
        op.execute(f"CREATE INDEX {_INDEX} ON data_chunks USING hnsw (embedding vector_cosine_ops) "
                   f"WITH (m = {M}, ef_construction = {EF_CONSTRUCTION})")
    op.execute("CREATE STATISTICS data_chunks_product_expr ON ((metadata_->>'line_of_business')) FROM data_chunks")
    op.execute("ANALYZE data_chunks")


def downgrade() -> None:
    # the index stays as 0013 built it (the same parameters)
    op.execute("DROP STATISTICS IF EXISTS data_chunks_product_expr")
