"""Remember what the staleness check saw on disk, so answers can warn where a source is cited.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE document_versions ADD COLUMN disk_sha256 varchar(64), ADD COLUMN checked_at timestamptz"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE document_versions DROP COLUMN disk_sha256, DROP COLUMN checked_at")
