"""A chunk's vector and metadata stay in its row (`STORAGE MAIN`); its text goes out of line.

Why: the dense arm reads `embedding` (the distance) and `metadata_` (the access predicate, as
PGVectorStore's metadata filters) for every row it visits, and returns the text of only the top
k. With the types' defaults a 384-d vector (1.5 kB) is stored out of line, so each visited row
costs a TOAST look-up. The exact plan of a narrow filter visits every row the filter admits: at
10^4 chunks the restricted filter's scan of 1,123 rows read 3,789 buffers; with both columns in
the row (metadata compressed, about 0.9 kB) it read 514, and the text went to the TOAST table
instead (docs/performance.md, "Near-duplicates and 10^6").

Rows written before this keep their layout until the table is rewritten: `VACUUM FULL
data_chunks` (it rebuilds every index, the HNSW one too, so it is a maintenance-window job on a
large table; docs/deploy.md). New rows, from ingest or COPY, are laid out this way.

Revision ID: 0020
Revises: 0019
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE data_chunks ALTER COLUMN embedding SET STORAGE MAIN, "
               "ALTER COLUMN metadata_ SET STORAGE MAIN")


def downgrade() -> None:
    # pgvector's type stores out of line uncompressed; jsonb compresses, then goes out of line.
    op.execute("ALTER TABLE data_chunks ALTER COLUMN embedding SET STORAGE EXTERNAL, "
               "ALTER COLUMN metadata_ SET STORAGE EXTENDED")
