"""Full-text search on an indexed side path that works under row-level security, no superuser.

Why: under RLS Postgres applies the policy before any non-LEAKPROOF qual, and `@@` is not
LEAKPROOF, so the full-text arm never used its GIN index (p95 121 ms at 10^4 chunks, 664 ms at
10^5; docs/performance.md). Marking `@@` LEAKPROOF needs a superuser, which managed Postgres does
not give.

The side path: `chunk_search` holds only (node_id, access_level, sensitive, tsv), with its own
GIN index, no RLS and NO grant to the application role. It is kept in step with `data_chunks` by
triggers, inside the same transaction as ingest. The application reads it only through
`policydesk_text_search(query, k)`, a SECURITY DEFINER function that applies the same clearance
settings the RLS policies read and returns ids and ranks only; the caller then reads the chunk
text through the usual predicate and RLS. Its search_path is pinned and EXECUTE is revoked from
PUBLIC.

Revision ID: 0010
Revises: 0009
"""

from alembic import context, op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        CREATE TABLE chunk_search (
          node_id varchar PRIMARY KEY,
          access_level text NOT NULL,
          sensitive boolean NOT NULL,
          tsv tsvector NOT NULL
        );
        CREATE INDEX chunk_search_tsv ON chunk_search USING gin (tsv);
        CREATE INDEX chunk_search_scope ON chunk_search (access_level, sensitive);
        REVOKE ALL ON chunk_search FROM PUBLIC;
        INSERT INTO chunk_search SELECT node_id, access_level, sensitive, text_search_tsv FROM data_chunks;

        CREATE FUNCTION policydesk_chunk_search_sync() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        BEGIN
          IF TG_OP IN ('DELETE', 'UPDATE') THEN
            DELETE FROM public.chunk_search WHERE node_id = OLD.node_id;
          END IF;
          IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO public.chunk_search VALUES (NEW.node_id, NEW.access_level, NEW.sensitive, NEW.text_search_tsv);
          END IF;
          RETURN NULL;
        END $$;
        CREATE TRIGGER data_chunks_search_sync AFTER INSERT OR UPDATE OR DELETE ON data_chunks
          FOR EACH ROW EXECUTE FUNCTION policydesk_chunk_search_sync();

        CREATE FUNCTION policydesk_chunk_search_truncate() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ BEGIN TRUNCATE public.chunk_search; RETURN NULL; END $$;
        CREATE TRIGGER data_chunks_search_truncate AFTER TRUNCATE ON data_chunks
          FOR EACH STATEMENT EXECUTE FUNCTION policydesk_chunk_search_truncate();

        -- Ids and ranks of the chunks matching `query` (an OR of lexemes, to_tsquery syntax) that
        -- the transaction's clearance may read: the same settings and the same rule as the RLS
        -- policy on data_chunks (no settings -> no rows).
        CREATE FUNCTION policydesk_text_search(query text, k integer)
          RETURNS TABLE (node_id varchar, rank real)
          LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          SELECT s.node_id, ts_rank(s.tsv, q) AS rank
          FROM public.chunk_search s, to_tsquery('english'::regconfig, query) q
          WHERE s.tsv @@ q
            AND s.access_level = ANY (string_to_array(current_setting('policydesk.levels', true), ','))
            AND (NOT s.sensitive OR current_setting('policydesk.sensitive', true) = 'on')
          ORDER BY rank DESC, s.node_id
          LIMIT greatest(least(k, 200), 0)
        $$;
        REVOKE ALL ON FUNCTION policydesk_text_search(text, integer) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION policydesk_text_search(text, integer) TO {role};
        REVOKE ALL ON FUNCTION policydesk_chunk_search_sync() FROM PUBLIC;
        REVOKE ALL ON FUNCTION policydesk_chunk_search_truncate() FROM PUBLIC;
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP TRIGGER IF EXISTS data_chunks_search_truncate ON data_chunks;
        DROP TRIGGER IF EXISTS data_chunks_search_sync ON data_chunks;
        DROP FUNCTION IF EXISTS policydesk_text_search(text, integer);
        DROP FUNCTION IF EXISTS policydesk_chunk_search_truncate();
        DROP FUNCTION IF EXISTS policydesk_chunk_search_sync();
        DROP TABLE IF EXISTS chunk_search;
        """
    )
