"""Line of business (product): a second filter-first attribute beside the access level (issue 18).

- `documents.line_of_business`, `document_versions.line_of_business` (jsonb list of product
  names; NULL = the source applies to every product) and a generated `data_chunks`
  column with the same meaning, read from the chunk metadata, so the product predicate is a
  plain-column comparison like the access predicate (migration 0003).
- Row-level security on `data_chunks` and `document_versions` also applies the product the
  transaction asked for (`policydesk.line_of_business`; empty = no product chosen, every row the
  clearance admits).
- The full-text side table (migration 0010) carries the products too, and
  `policydesk_text_search` applies the same setting.
- `traces.line_of_business`: the product the answer was given for. The hash chain's canonical
  row drops this key while it is NULL, so every row written before this migration (where it
  reads NULL) hashes exactly as it did; a product set on a row, or set later on an old row,
  is covered by the hash (`storage/chain.py`).
- `product_choices`: the product each user last chose on the ask page, append-only (the latest
  row wins); a user reads and adds only their own.

Revision ID: 0014
Revises: 0013
"""

from alembic import context, op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_LEVELS = "string_to_array(current_setting('policydesk.levels', true), ',')"
_SENSITIVE_OK = "current_setting('policydesk.sensitive', true) = 'on'"
_PRODUCT = "coalesce(current_setting('policydesk.line_of_business', true), '')"
# No product chosen, a source for every product, or a source naming the chosen one.
_PRODUCT_OK = f"({_PRODUCT} = '' OR {{col}} IS NULL OR {{col}} ? {_PRODUCT})"
_CANONICAL = """
  CREATE OR REPLACE FUNCTION policydesk_canonical_row(r jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT r - 'search_tsv' - 'row_hash'
                   - (CASE WHEN r -> 'line_of_business' = 'null'::jsonb THEN 'line_of_business' ELSE '' END) $$;
"""
GENESIS = "0" * 64


def _chain_function(canonical: str) -> str:
    return f"""
        CREATE OR REPLACE FUNCTION policydesk_chain_append() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER
          SET search_path = public, pg_temp SET timezone = 'UTC' SET extra_float_digits = 1
        AS $$
        DECLARE head_seq bigint; head_hash text;
        BEGIN
          PERFORM pg_advisory_xact_lock(hashtext('policydesk_chain_' || TG_TABLE_NAME));
          EXECUTE format('SELECT seq, row_hash FROM %I ORDER BY seq DESC LIMIT 1', TG_TABLE_NAME)
            INTO head_seq, head_hash;
          IF head_seq IS NULL THEN
            SELECT last_seq, last_hash INTO head_seq, head_hash FROM chain_cuts
              WHERE table_name = TG_TABLE_NAME ORDER BY last_seq DESC LIMIT 1;
          END IF;
          NEW.seq := coalesce(head_seq, 0) + 1;
          NEW.prev_hash := coalesce(head_hash, '{GENESIS}');
          NEW.row_hash := NULL;
          NEW.row_hash := policydesk_row_digest(NEW.prev_hash, {canonical});
          RETURN NEW;
        END $$;
    """


def _search_function(product_clause: str) -> str:
    return f"""
        CREATE OR REPLACE FUNCTION policydesk_text_search(query text, k integer)
          RETURNS TABLE (node_id varchar, rank real)
          LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
          ROWS 20  -- migration 0012: at most k rows, so the join is node_id look-ups
        AS $$
          SELECT s.node_id, ts_rank(s.tsv, q) AS rank
          FROM public.chunk_search s, to_tsquery('english'::regconfig, query) q
          WHERE s.tsv @@ q
            AND s.access_level = ANY ({_LEVELS})
            AND (NOT s.sensitive OR {_SENSITIVE_OK})
            {product_clause}
          ORDER BY rank DESC, s.node_id
          LIMIT greatest(least(k, 200), 0)
        $$;
    """


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        ALTER TABLE documents ADD COLUMN line_of_business jsonb;
        ALTER TABLE document_versions ADD COLUMN line_of_business jsonb;
        ALTER TABLE data_chunks ADD COLUMN line_of_business jsonb
          GENERATED ALWAYS AS (nullif(metadata_ -> 'line_of_business', 'null'::jsonb)) STORED;

        DROP POLICY data_chunks_scoped_read ON data_chunks;
        CREATE POLICY data_chunks_scoped_read ON data_chunks FOR SELECT TO {role}
          USING (access_level = ANY ({_LEVELS}) AND (NOT sensitive OR {_SENSITIVE_OK})
                 AND {_PRODUCT_OK.format(col='line_of_business')});
        DROP POLICY document_versions_scoped_read ON document_versions;
        CREATE POLICY document_versions_scoped_read ON document_versions FOR SELECT TO {role}
          USING (access_level = ANY ({_LEVELS}) AND (NOT sensitive OR {_SENSITIVE_OK})
                 AND {_PRODUCT_OK.format(col='line_of_business')});

        ALTER TABLE chunk_search ADD COLUMN line_of_business jsonb;
        UPDATE chunk_search s SET line_of_business = c.line_of_business FROM data_chunks c WHERE c.node_id = s.node_id;
        CREATE OR REPLACE FUNCTION policydesk_chunk_search_sync() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        BEGIN
          IF TG_OP IN ('DELETE', 'UPDATE') THEN
            DELETE FROM public.chunk_search WHERE node_id = OLD.node_id;
          END IF;
          IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO public.chunk_search (node_id, access_level, sensitive, tsv, line_of_business)
              VALUES (NEW.node_id, NEW.access_level, NEW.sensitive, NEW.text_search_tsv, NEW.line_of_business);
          END IF;
          RETURN NULL;
        END $$;
        {_search_function("AND " + _PRODUCT_OK.format(col='s.line_of_business'))}

        ALTER TABLE traces ADD COLUMN line_of_business text;
        {_CANONICAL}
        {_chain_function("policydesk_canonical_row(to_jsonb(NEW))")}

        CREATE TABLE product_choices (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          at timestamptz NOT NULL DEFAULT now(),
          user_name varchar(64) NOT NULL,
          line_of_business text
        );
        CREATE INDEX product_choices_user ON product_choices (user_name, id);
        ALTER TABLE product_choices ENABLE ROW LEVEL SECURITY;
        ALTER TABLE product_choices FORCE ROW LEVEL SECURITY;
        CREATE POLICY product_choices_owner ON product_choices TO CURRENT_USER USING (true) WITH CHECK (true);
        CREATE POLICY product_choices_append ON product_choices FOR INSERT TO {role}
          WITH CHECK (user_name = current_setting('policydesk.user', true));
        CREATE POLICY product_choices_read ON product_choices FOR SELECT TO {role}
          USING (user_name = current_setting('policydesk.user', true));
        GRANT SELECT, INSERT ON product_choices TO {role};
        """
    )


def downgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        DROP TABLE IF EXISTS product_choices;
        {_chain_function("to_jsonb(NEW) - 'search_tsv' - 'row_hash'")}
        DROP FUNCTION IF EXISTS policydesk_canonical_row(jsonb);
        ALTER TABLE traces DROP COLUMN line_of_business;
        {_search_function("")}
        CREATE OR REPLACE FUNCTION policydesk_chunk_search_sync() RETURNS trigger
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
        ALTER TABLE chunk_search DROP COLUMN line_of_business;
        DROP POLICY document_versions_scoped_read ON document_versions;
        CREATE POLICY document_versions_scoped_read ON document_versions FOR SELECT TO {role}
          USING (access_level = ANY ({_LEVELS}) AND (NOT sensitive OR {_SENSITIVE_OK}));
        DROP POLICY data_chunks_scoped_read ON data_chunks;
        CREATE POLICY data_chunks_scoped_read ON data_chunks FOR SELECT TO {role}
          USING (access_level = ANY ({_LEVELS}) AND (NOT sensitive OR {_SENSITIVE_OK}));
        ALTER TABLE data_chunks DROP COLUMN line_of_business;
        ALTER TABLE document_versions DROP COLUMN line_of_business;
        ALTER TABLE documents DROP COLUMN line_of_business;
        """
    )
