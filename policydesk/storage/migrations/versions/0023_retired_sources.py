"""A source retired by `policydesk sync DIR --retire ID`: `documents.retired_at`, `retired_by`.

Retiring deletes the document's chunks (so no search, version swap or topic gate reads its text
again) and keeps its `documents` and `document_versions` rows: what earlier answers cited (the
version, its window, who may read the text stored in the trace) stays checkable, and a copy of
its text listed later at a lower level is still recognised. NULL for a source in service. Only the
owner writes documents; the application login reads these with the rest of the table (SELECT
was granted on the table in 0001).

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE documents ADD COLUMN retired_at timestamptz, ADD COLUMN retired_by text")


def downgrade() -> None:
    op.execute("ALTER TABLE documents DROP COLUMN retired_at, DROP COLUMN retired_by")
