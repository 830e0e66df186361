"""Bound the full-text side path's work: candidates by the question's rarest words, then rank.

Why: the arm ORs every word of the question (PGVectorStore's semantics), so words such as
"member" or "claim" make `policydesk_text_search` rank thousands of rows (18 ms of 31 ms of
retrieval at 10^4 chunks; docs/performance.md). Dropping common words from the query was tried
and reverted: it changed results on the demo corpus and lowered the golden set.

Now the function first picks candidate rows: the question's lexemes are taken rarest first, by
their document frequency among the chunks the caller's clearance admits, while the sum of those
frequencies stays within `candidates` (an argument, 8,000 by default); only rows containing one
of those lexemes are read. The candidates are then matched and ranked with the full OR query,
exactly as before. When every lexeme fits, or the caller may read no more than `candidates`
chunks at all, the full query is the candidate query and results are identical to the uncapped
path (the demo corpus always is: tests/test_text_search.py). When the cap binds, a row that
matches only common words is not ranked; docs/performance.md gives recall@k against the
uncapped ranking at 10^4 and 10^5.

The frequencies live in `chunk_search_df (lexeme, access_level, sensitive, ndoc)`, one row per
lexeme and clearance bucket, plus lexeme '' holding the bucket's row count. Counts are summed only
over the buckets the caller's clearance admits, so content above their clearance never shapes
which candidates they get. Like `chunk_search`, the table has no grant to the application role;
it is kept in step with `data_chunks` in the writing transaction. The row-level sync trigger of
migration 0010 becomes statement-level triggers with transition tables, so a bulk insert (COPY
of 10^5 rows) updates the counts with one aggregate statement instead of one per row.

Revision ID: 0016
Revises: 0015
"""

from alembic import context, op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

DEFAULT_CANDIDATES = 8000

_COUNT = """
          INSERT INTO public.chunk_search_df AS d (lexeme, access_level, sensitive, ndoc)
          SELECT l.lexeme, r.access_level, r.sensitive, {sign}count(*)
          FROM {rows} r, unnest(array_append(tsvector_to_array(r.text_search_tsv), '')) AS l(lexeme)
          GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
          ON CONFLICT (lexeme, access_level, sensitive) DO UPDATE SET ndoc = d.ndoc + excluded.ndoc;
"""
_ADD = _COUNT.format(sign="", rows="new_rows")
_SUBTRACT = _COUNT.format(sign="-", rows="old_rows") + """
          DELETE FROM public.chunk_search_df WHERE ndoc <= 0;
"""
_INSERT = """
          INSERT INTO public.chunk_search (node_id, access_level, sensitive, tsv, line_of_business)
            SELECT node_id, access_level, sensitive, text_search_tsv, line_of_business FROM new_rows;
"""
_DELETE = """
          DELETE FROM public.chunk_search s USING old_rows o WHERE s.node_id = o.node_id;
"""


def _sync_function(name: str, body: str) -> str:
    return f"""
        CREATE FUNCTION {name}() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        BEGIN
          {body}
          RETURN NULL;
        END $$;
        REVOKE ALL ON FUNCTION {name}() FROM PUBLIC;
    """


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        CREATE TABLE chunk_search_df (
          lexeme text NOT NULL,
          access_level text NOT NULL,
          sensitive boolean NOT NULL,
          ndoc integer NOT NULL,
          PRIMARY KEY (lexeme, access_level, sensitive)
        );
        REVOKE ALL ON chunk_search_df FROM PUBLIC;
        INSERT INTO chunk_search_df
          SELECT l.lexeme, s.access_level, s.sensitive, count(*)
          FROM chunk_search s, unnest(array_append(tsvector_to_array(s.tsv), '')) AS l(lexeme)
          GROUP BY 1, 2, 3;

        DROP TRIGGER data_chunks_search_sync ON data_chunks;
        DROP FUNCTION policydesk_chunk_search_sync();
        {_sync_function("policydesk_chunk_search_insert", _INSERT + _ADD)}
        {_sync_function("policydesk_chunk_search_update", _DELETE + _SUBTRACT + _INSERT + _ADD)}
        {_sync_function("policydesk_chunk_search_delete", _DELETE + _SUBTRACT)}
        CREATE TRIGGER data_chunks_search_insert AFTER INSERT ON data_chunks
          REFERENCING NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION policydesk_chunk_search_insert();
        CREATE TRIGGER data_chunks_search_update AFTER UPDATE ON data_chunks
          REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION policydesk_chunk_search_update();
        CREATE TRIGGER data_chunks_search_delete AFTER DELETE ON data_chunks
          REFERENCING OLD TABLE AS old_rows
          FOR EACH STATEMENT EXECUTE FUNCTION policydesk_chunk_search_delete();

        CREATE OR REPLACE FUNCTION policydesk_chunk_search_truncate() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ BEGIN TRUNCATE public.chunk_search, public.chunk_search_df; RETURN NULL; END $$;

        -- The narrowed candidate query for `query` (an OR of words, to_tsquery syntax) under the
        -- transaction's clearance, or NULL when the full query is within bounds: when the caller
        -- may read at most `candidates` chunks, or the frequencies of all the query's lexemes sum
        -- to at most `candidates`. Otherwise an OR of the rarest lexemes whose frequencies sum to
        -- at most `candidates` (at least the rarest one). Frequencies count only the buckets the
        -- clearance admits. Called by policydesk_text_search (no grant to the application role).
        CREATE FUNCTION policydesk_text_candidates(query text, candidates integer)
          RETURNS tsquery
          LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
        AS $$
          WITH scope AS (
            SELECT string_to_array(current_setting('policydesk.levels', true), ',') AS levels,
                   current_setting('policydesk.sensitive', true) = 'on' AS cleared
          ), total AS (
            SELECT coalesce(sum(d.ndoc), 0) AS n FROM public.chunk_search_df d, scope
            WHERE d.lexeme = '' AND d.access_level = ANY (scope.levels) AND (NOT d.sensitive OR scope.cleared)
          ), words AS (
            SELECT d.lexeme, sum(d.ndoc) AS ndoc FROM public.chunk_search_df d, scope
            WHERE d.lexeme = ANY (tsvector_to_array(to_tsvector('english'::regconfig, query)))
              AND d.lexeme <> '' AND d.access_level = ANY (scope.levels) AND (NOT d.sensitive OR scope.cleared)
            GROUP BY d.lexeme
          ), running AS (
            SELECT lexeme, sum(ndoc) OVER (ORDER BY ndoc, lexeme) AS upto,
                   row_number() OVER (ORDER BY ndoc, lexeme) AS n
            FROM words
          )
          SELECT CASE WHEN (SELECT n FROM total) <= candidates OR coalesce(max(upto), 0) <= candidates THEN NULL
            ELSE (string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | ')
                  FILTER (WHERE upto <= candidates OR n = 1))::tsquery
          END
          FROM running
        $$;
        REVOKE ALL ON FUNCTION policydesk_text_candidates(text, integer) FROM PUBLIC;

        -- Ids and ranks of the chunks matching `query` (an OR of lexemes, to_tsquery syntax) that
        -- the transaction's clearance may read (the same settings and rule as the RLS policy on
        -- data_chunks; no settings -> no rows), ranked by the full query; when the query is
        -- narrowed, only among the rows holding the narrowed query's lexemes. PL/pgSQL so that
        -- the statements' plans are cached in the session (a SQL function is planned per call).
        DROP FUNCTION policydesk_text_search(text, integer);
        CREATE FUNCTION policydesk_text_search(query text, k integer, candidates integer DEFAULT {DEFAULT_CANDIDATES})
          RETURNS TABLE (node_id varchar, rank real)
          LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
          ROWS 20
        AS $$
        #variable_conflict use_column
        DECLARE
          levels text[] := string_to_array(current_setting('policydesk.levels', true), ',');
          cleared boolean := current_setting('policydesk.sensitive', true) = 'on';
          -- migration 0014: no product chosen, a source for every product, or one naming it
          product text := coalesce(current_setting('policydesk.line_of_business', true), '');
          q tsquery := to_tsquery('english'::regconfig, query);
          narrowed tsquery := public.policydesk_text_candidates(query, candidates);
          n integer := greatest(least(k, 200), 0);
        BEGIN
          IF narrowed IS NULL THEN
            RETURN QUERY
              SELECT s.node_id, ts_rank(s.tsv, q) AS rank
              FROM public.chunk_search s
              WHERE s.tsv @@ q AND s.access_level = ANY (levels) AND (NOT s.sensitive OR cleared)
                AND (product = '' OR s.line_of_business IS NULL OR s.line_of_business ? product)
              ORDER BY rank DESC, s.node_id
              LIMIT n;
          ELSE
            RETURN QUERY
              SELECT c.node_id, ts_rank(c.tsv, q) AS rank
              FROM (SELECT s.node_id, s.tsv FROM public.chunk_search s
                    WHERE s.tsv @@ narrowed AND s.access_level = ANY (levels) AND (NOT s.sensitive OR cleared)
                      AND (product = '' OR s.line_of_business IS NULL OR s.line_of_business ? product)
                    OFFSET 0) c
              WHERE c.tsv @@ q
              ORDER BY rank DESC, c.node_id
              LIMIT n;
          END IF;
        END $$;
        REVOKE ALL ON FUNCTION policydesk_text_search(text, integer, integer) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION policydesk_text_search(text, integer, integer) TO {role};
        """
    )


def downgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        DROP FUNCTION policydesk_text_search(text, integer, integer);
        DROP FUNCTION policydesk_text_candidates(text, integer);
        CREATE FUNCTION policydesk_text_search(query text, k integer)
          RETURNS TABLE (node_id varchar, rank real)
          LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
          ROWS 20
        AS $$
          SELECT s.node_id, ts_rank(s.tsv, q) AS rank
          FROM public.chunk_search s, to_tsquery('english'::regconfig, query) q
          WHERE s.tsv @@ q
            AND s.access_level = ANY (string_to_array(current_setting('policydesk.levels', true), ','))
            AND (NOT s.sensitive OR current_setting('policydesk.sensitive', true) = 'on')
            AND (coalesce(current_setting('policydesk.line_of_business', true), '') = ''
                 OR s.line_of_business IS NULL
                 OR s.line_of_business ? coalesce(current_setting('policydesk.line_of_business', true), ''))
          ORDER BY rank DESC, s.node_id
          LIMIT greatest(least(k, 200), 0)
        $$;
        REVOKE ALL ON FUNCTION policydesk_text_search(text, integer) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION policydesk_text_search(text, integer) TO {role};

        DROP TRIGGER data_chunks_search_insert ON data_chunks;
        DROP TRIGGER data_chunks_search_update ON data_chunks;
        DROP TRIGGER data_chunks_search_delete ON data_chunks;
        DROP FUNCTION policydesk_chunk_search_insert();
        DROP FUNCTION policydesk_chunk_search_update();
        DROP FUNCTION policydesk_chunk_search_delete();
        CREATE FUNCTION policydesk_chunk_search_sync() RETURNS trigger
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
        REVOKE ALL ON FUNCTION policydesk_chunk_search_sync() FROM PUBLIC;
        CREATE TRIGGER data_chunks_search_sync AFTER INSERT OR UPDATE OR DELETE ON data_chunks
          FOR EACH ROW EXECUTE FUNCTION policydesk_chunk_search_sync();
        CREATE OR REPLACE FUNCTION policydesk_chunk_search_truncate() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ BEGIN TRUNCATE public.chunk_search; RETURN NULL; END $$;
        DROP TABLE chunk_search_df;
        """
    )
