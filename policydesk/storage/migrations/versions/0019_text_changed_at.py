"""When a version's indexed text last changed in place: `document_versions.text_changed_at`.

Set by ingest when a version already indexed is re-ingested and its sections' text differs (a
wiki page edited in the folder, then synced); NULL for a version whose text is as first
indexed. Answers citing text changed within RECENT_CHANGE_DAYS say so, and the owners report
counts it as a review. The application login reads it with the rest of the table (SELECT was
granted on the table in 0001); only the owner writes versions.

Revision ID: 0019
Revises: 0018
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE document_versions ADD COLUMN text_changed_at timestamptz")


def downgrade() -> None:
    op.execute("ALTER TABLE document_versions DROP COLUMN text_changed_at")
