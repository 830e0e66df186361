"""Embedding cache: re-ingest embeds only text it has not embedded before with the same model.

Why: ingest is bound by the embedding model (26 chunks/s on 2 cores, docs/performance.md), and a
re-ingest after one file changed, a new version that repeats most sections of the old one, or a
rebuild of the chunks re-embedded every chunk. Rows are keyed by (embedding model, SHA-256 of the
exact text embedded); the vector has no fixed dimension so another model's vectors fit. Only the
owner login (ingest) reads or writes it: the application role has no grant (checked at start-up).

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE embedding_cache (
          model text NOT NULL,
          text_sha256 varchar(64) NOT NULL,
          embedding vector NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (model, text_sha256)
        );
        REVOKE ALL ON embedding_cache FROM PUBLIC;
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS embedding_cache")
