"""Tell the planner how many rows the full-text side function returns (at most k, 20 by default).

Why: a set-returning function is estimated at 1,000 rows unless it says otherwise, so the
full-text arm's join to `data_chunks` (migration 0010) was planned as a hash join over a
sequential scan of every permitted chunk (8,838 rows for a rep at 10^4 chunks, about half the
arm's time) instead of 20 look-ups on the unique node_id index. Same rows, same order, same
ranks; only the plan changes (docs/performance.md, docs/explain/scale10000_text_join_rep.txt).
A migration that replaces `policydesk_text_search` should keep a ROWS clause.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER FUNCTION policydesk_text_search(text, integer) ROWS 20")


def downgrade() -> None:
    op.execute("ALTER FUNCTION policydesk_text_search(text, integer) ROWS 1000")
