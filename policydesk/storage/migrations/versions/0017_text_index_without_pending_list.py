"""The full-text side path's GIN index writes straight into the index (`fastupdate = off`).

Why: with GIN's default fast update, rows written since the last vacuum sit in a pending list
that every search reads in full, unindexed. After an ingest or the bench's 10^4-chunk filler
the list held thousands of entries, and the side path's search (migration 0016) spent most of
its time there: at 10^4 chunks, cap 2,000, the candidate query took 4.5 ms p50 with the list
and 1.6 ms after `VACUUM` had merged it (EXPLAIN ANALYZE: the bitmap index scan alone went
from 2.4 ms to 0.14 ms; docs/performance.md, "Update (5)"). Autovacuum merges the list
eventually, but the search in between pays for it, and on a busy plan that is most of the time.

Writes are few (an ingest) and searches are many (every question), so the index is kept merged
on every write instead. The pending list left from before is merged now.

Revision ID: 0017
Revises: 0016
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER INDEX chunk_search_tsv SET (fastupdate = off)")
    op.execute("SELECT gin_clean_pending_list('chunk_search_tsv'::regclass)")


def downgrade() -> None:
    op.execute("ALTER INDEX chunk_search_tsv RESET (fastupdate)")
