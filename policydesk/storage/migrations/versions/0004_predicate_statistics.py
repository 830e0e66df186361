"""Expression statistics for the sensitivity predicate, so the planner estimates it.

Why: `metadata_->>'sensitive' = 'false'` (the retrievers' predicate for roles not cleared for
sensitive sources) had no statistics, so Postgres assumed the default 0.5% selectivity and
estimated 38 of 8,827 matching rows at 10^4 chunks; it then chose a full scan and sort (94 ms)
over the HNSW index (2.7 ms). See docs/performance.md.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE STATISTICS data_chunks_sensitive_expr ON ((metadata_->>'sensitive')) FROM data_chunks")
    op.execute("ANALYZE data_chunks")


def downgrade() -> None:
    op.execute("DROP STATISTICS data_chunks_sensitive_expr")
