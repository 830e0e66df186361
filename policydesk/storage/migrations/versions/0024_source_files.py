"""Source files kept as ingested: `source_files`, the bytes of each file ingest read, by SHA-256.

A citation opens its source at the cited place (issue 51). The file served must be the one the
citation was made from even after the file on disk changes, so ingest (the owner login) keeps the
bytes it read, keyed by their SHA-256 (`document_versions.source_sha256` names each version's).
The same bytes are stored once, whatever ids or versions list them; a CHECK makes every row's
bytes hash to its key, so no row can claim to be a file it is not.

The application login may read a row only under row-level security keyed to the versions it may
read: some document version in service (its document not retired) whose `source_sha256` is the
row's key and which `document_versions`' own scoped-read policy admits (levels, sensitivity,
product). The application's one read of the bytes goes further: it re-reads the cited chunk under
the caller's clearance and joins its version to the file (`storage/source_files.py`).

Revision ID: 0024
Revises: 0023
"""

from alembic import context, op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        CREATE TABLE source_files (
          sha256 varchar(64) PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{{64}}$'),
          content bytea NOT NULL CHECK (encode(sha256(content), 'hex') = sha256),
          stored_at timestamptz NOT NULL DEFAULT now()
        );
        REVOKE ALL ON source_files FROM PUBLIC;
        ALTER TABLE source_files ENABLE ROW LEVEL SECURITY;
        ALTER TABLE source_files FORCE ROW LEVEL SECURITY;
        CREATE POLICY source_files_owner ON source_files TO CURRENT_USER USING (true) WITH CHECK (true);
        CREATE POLICY source_files_scoped_read ON source_files FOR SELECT TO {role}
          USING (EXISTS (SELECT 1 FROM document_versions v JOIN documents d ON d.doc_id = v.doc_id
                         WHERE v.source_sha256 = source_files.sha256 AND d.retired_at IS NULL));
        GRANT SELECT ON source_files TO {role};
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS source_files")
