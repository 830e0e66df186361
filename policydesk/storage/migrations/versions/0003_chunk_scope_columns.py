"""Stored columns for the chunk scope and section keys, and an RLS policy on them.

Why: under row-level security Postgres will not use a query's own non-LEAKPROOF quals
(`metadata_->>'…'`, `@@`) as index conditions ahead of the policy, so at 10^4+ chunks the
version lookup by (doc, version, section) fell back to scanning every permitted row
(docs/performance.md). Plain-column comparisons (`text = text`) are leakproof: the policy and
the version lookup can use btree indexes on these columns.

Revision ID: 0003
Revises: 0002
"""

from alembic import context, op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_LEVELS = "string_to_array(current_setting('policydesk.levels', true), ',')"
_SENSITIVE_OK = "current_setting('policydesk.sensitive', true) = 'on'"


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        ALTER TABLE data_chunks
          ADD COLUMN access_level text GENERATED ALWAYS AS (metadata_->>'access_level') STORED,
          ADD COLUMN sensitive boolean GENERATED ALWAYS AS ((metadata_->>'sensitive')::boolean) STORED,
          ADD COLUMN doc_id text GENERATED ALWAYS AS (metadata_->>'doc_id') STORED,
          ADD COLUMN version integer GENERATED ALWAYS AS ((metadata_->>'version')::integer) STORED,
          ADD COLUMN section_id text GENERATED ALWAYS AS (metadata_->>'section_id') STORED;
        CREATE INDEX data_chunks_scope ON data_chunks (access_level, sensitive);
        CREATE INDEX data_chunks_doc_version_section ON data_chunks (doc_id, version, section_id);
        DROP POLICY data_chunks_scoped_read ON data_chunks;
        CREATE POLICY data_chunks_scoped_read ON data_chunks FOR SELECT TO {role}
          USING (access_level = ANY ({_LEVELS}) AND (NOT sensitive OR {_SENSITIVE_OK}));
        """
    )


def downgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        DROP POLICY data_chunks_scoped_read ON data_chunks;
        CREATE POLICY data_chunks_scoped_read ON data_chunks FOR SELECT TO {role}
          USING (metadata_->>'access_level' = ANY ({_LEVELS})
                 AND (NOT (metadata_->>'sensitive')::boolean OR {_SENSITIVE_OK}));
        ALTER TABLE data_chunks DROP COLUMN access_level, DROP COLUMN sensitive, DROP COLUMN doc_id,
          DROP COLUMN version, DROP COLUMN section_id;
        """
    )
