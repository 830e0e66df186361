"""Initial schema: users, documents, versions, chunks (PGVectorStore layout), traces, audit, RLS.

Revision ID: 0001
Revises:
"""

import re

from alembic import context, op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# One predicate text for every table that holds policy text or its existence, so the RLS layer
# and the retrievers' SQL predicate say the same thing. A missing setting gives NULL -> no rows.
_LEVELS = "string_to_array(current_setting('policydesk.levels', true), ',')"
_SENSITIVE_OK = "current_setting('policydesk.sensitive', true) = 'on'"


def _role() -> tuple[str, str]:
    role = context.config.attributes["app_role"]
    password = context.config.attributes["app_password"]
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
        raise ValueError(f"APP_DB_ROLE {role!r} is not a plain lower-case identifier")
    return role, password


def upgrade() -> None:
    role, password = _role()
    quoted_password = password.replace("'", "''")
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        f"""
        DO $$ BEGIN
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
            CREATE ROLE {role} LOGIN PASSWORD '{quoted_password}' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
          END IF;
        END $$;
        """
    )
    op.execute(
        """
        CREATE TABLE users (
          id serial PRIMARY KEY,
          name varchar(64) NOT NULL UNIQUE,
          role varchar(32) NOT NULL,
          password_hash text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE documents (
          doc_id varchar(64) PRIMARY KEY,
          title text NOT NULL,
          source_type varchar(16) NOT NULL CHECK (source_type IN ('policy', 'wiki', 'call_note')),
          date_basis varchar(32) NOT NULL,
          access_level varchar(16) NOT NULL,
          owner text NOT NULL,
          related_policies jsonb NOT NULL DEFAULT '[]',
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE document_versions (
          id serial PRIMARY KEY,
          doc_id varchar(64) NOT NULL REFERENCES documents(doc_id),
          version integer NOT NULL CHECK (version > 0),
          title text NOT NULL,
          source_type varchar(16) NOT NULL,
          effective_from date NOT NULL,
          effective_to date NOT NULL DEFAULT '9999-12-31',
          supersedes integer,
          superseded_by integer,
          date_basis varchar(32) NOT NULL,
          access_level varchar(16) NOT NULL,
          sensitive boolean NOT NULL,
          owner text NOT NULL,
          source_file text NOT NULL,
          source_sha256 varchar(64) NOT NULL,
          ingested_at timestamptz NOT NULL DEFAULT now(),
          UNIQUE (doc_id, version),
          CHECK (effective_from < effective_to)
        );
        CREATE INDEX document_versions_window ON document_versions (doc_id, effective_from, effective_to);

        CREATE TABLE data_chunks (
          id bigserial PRIMARY KEY,
          text varchar NOT NULL,
          metadata_ jsonb NOT NULL,
          node_id varchar NOT NULL UNIQUE,
          embedding vector(384),
          text_search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
        );
        CREATE INDEX data_chunks_idx ON data_chunks USING gin (text_search_tsv);
        CREATE INDEX data_chunks_idx_1 ON data_chunks ((metadata_->>'ref_doc_id'));
        CREATE INDEX data_chunks_access_level ON data_chunks ((metadata_->>'access_level'));
        CREATE INDEX data_chunks_doc_section ON data_chunks ((metadata_->>'doc_id'), (metadata_->>'section_id'));
        CREATE INDEX data_chunks_metadata ON data_chunks USING gin (metadata_ jsonb_path_ops);
        CREATE INDEX data_chunks_embedding_hnsw ON data_chunks
          USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);

        CREATE TABLE traces (
          id uuid PRIMARY KEY,
          created_at timestamptz NOT NULL DEFAULT now(),
          kind varchar(16) NOT NULL CHECK (kind IN ('ask', 'replay', 'eval')),
          replay_of uuid REFERENCES traces(id) ON DELETE SET NULL,
          user_name varchar(64) NOT NULL,
          user_role varchar(32) NOT NULL,
          permitted_levels varchar[] NOT NULL,
          sensitive_cleared boolean NOT NULL,
          question text NOT NULL,
          dates jsonb NOT NULL DEFAULT '{}',
          versions_applied jsonb NOT NULL DEFAULT '[]',
          chunk_ids jsonb NOT NULL DEFAULT '[]',
          answer jsonb,
          answer_text text NOT NULL DEFAULT '',
          citations jsonb NOT NULL DEFAULT '[]',
          warnings jsonb NOT NULL DEFAULT '[]',
          refused boolean NOT NULL DEFAULT false,
          refusal_reason text,
          abstained boolean NOT NULL DEFAULT false,
          degraded boolean NOT NULL DEFAULT false,
          status varchar(16) NOT NULL DEFAULT 'ok',
          error text,
          attempts jsonb NOT NULL DEFAULT '[]',
          stage_ms jsonb NOT NULL DEFAULT '{}',
          latency_ms double precision NOT NULL DEFAULT 0,
          model text NOT NULL DEFAULT '',
          tokens_in integer NOT NULL DEFAULT 0,
          tokens_out integer NOT NULL DEFAULT 0,
          cost_usd double precision NOT NULL DEFAULT 0,
          search_tsv tsvector GENERATED ALWAYS AS
            (to_tsvector('english', coalesce(question, '') || ' ' || coalesce(answer_text, ''))) STORED
        );
        CREATE INDEX traces_search ON traces USING gin (search_tsv);
        CREATE INDEX traces_created ON traces (created_at);
        CREATE INDEX traces_user ON traces (user_name, created_at);

        CREATE TABLE audit_log (
          id bigserial PRIMARY KEY,
          at timestamptz NOT NULL DEFAULT now(),
          actor varchar(64) NOT NULL,
          action varchar(32) NOT NULL,
          target text NOT NULL DEFAULT '',
          details jsonb NOT NULL DEFAULT '{}'
        );
        CREATE INDEX audit_log_at ON audit_log (at);
        """
    )
    # Row-level security: the app role sees policy text only inside its permitted scope;
    # the owner (migrations, ingest) keeps full access through its own policy.
    for table, level_col, sensitive_col in (
        ("data_chunks", "metadata_->>'access_level'", "(metadata_->>'sensitive')::boolean"),
        ("document_versions", "access_level", "sensitive"),
        ("documents", "access_level", "false"),
    ):
        op.execute(
            f"""
            ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
            ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
            CREATE POLICY {table}_owner ON {table} TO CURRENT_USER USING (true) WITH CHECK (true);
            CREATE POLICY {table}_scoped_read ON {table} FOR SELECT TO {role}
              USING ({level_col} = ANY ({_LEVELS}) AND (NOT {sensitive_col} OR {_SENSITIVE_OK}));
            """
        )
    op.execute(
        f"""
        GRANT USAGE ON SCHEMA public TO {role};
        GRANT SELECT ON users, documents, document_versions, data_chunks TO {role};
        GRANT SELECT, INSERT, UPDATE ON traces TO {role};
        GRANT SELECT, INSERT ON audit_log TO {role};
        GRANT USAGE ON SEQUENCE audit_log_id_seq TO {role};
        """
    )


def downgrade() -> None:
    op.execute(
        "DROP TABLE IF EXISTS audit_log, traces, data_chunks, document_versions, documents, users CASCADE"
    )
