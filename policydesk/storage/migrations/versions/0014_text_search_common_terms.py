"""Full text: leave out of the query the words that match a large share of what the caller may read.

Why: the arm ORs every word of the question (PGVectorStore's semantics), and words such as
"member" or "claim" match about half of all chunks, so the side function (0010) ranked thousands
of rows per question whatever index it used (docs/performance.md). A word whose lexemes are all
in more than `max_fraction` of the chunks the caller's clearance admits is dropped before the
search, unless that would drop every word. Ranks are then over the remaining words.

The frequencies come from `chunk_lexeme_stats`, counted per (access level, sensitive) group by
`policydesk_refresh_lexeme_stats()` (run by ingest after it writes), and summed at query time
over the groups the transaction's clearance admits, with the same settings and rule as the RLS
policies. So what is dropped depends only on rows the caller may read; no statistic about
text above their clearance shapes their query. Neither table is granted to the application
role; `policydesk_prune_query` returns only the caller's own words, fewer of them.

Revision ID: 0014
Revises: 0013
"""

from alembic import context, op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_PERMITTED = """access_level = ANY (string_to_array(current_setting('policydesk.levels', true), ','))
      AND (NOT sensitive OR current_setting('policydesk.sensitive', true) = 'on')"""


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        CREATE TABLE chunk_search_groups (
          access_level text NOT NULL, sensitive boolean NOT NULL, nrows integer NOT NULL,
          PRIMARY KEY (access_level, sensitive));
        CREATE TABLE chunk_lexeme_stats (
          access_level text NOT NULL, sensitive boolean NOT NULL, lexeme text NOT NULL, ndoc integer NOT NULL,
          PRIMARY KEY (lexeme, access_level, sensitive));
        REVOKE ALL ON chunk_search_groups, chunk_lexeme_stats FROM PUBLIC;

        -- Lexemes in at least 5% of a group's chunks (rarer ones can never be dropped).
        CREATE FUNCTION policydesk_refresh_lexeme_stats() RETURNS void
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        DECLARE g record;
        BEGIN
          DELETE FROM public.chunk_lexeme_stats;
          DELETE FROM public.chunk_search_groups;
          INSERT INTO public.chunk_search_groups
            SELECT access_level, sensitive, count(*) FROM public.chunk_search GROUP BY 1, 2;
          FOR g IN SELECT * FROM public.chunk_search_groups LOOP
            INSERT INTO public.chunk_lexeme_stats
              SELECT g.access_level, g.sensitive, st.word, st.ndoc
              FROM ts_stat(format('SELECT tsv FROM public.chunk_search WHERE access_level = %L AND sensitive = %L',
                                  g.access_level, g.sensitive)) st
              WHERE st.ndoc * 20 >= g.nrows;
          END LOOP;
        END $$;
        REVOKE ALL ON FUNCTION policydesk_refresh_lexeme_stats() FROM PUBLIC;

        -- `query` is an OR of words (to_tsquery syntax, as the retriever builds it); the result is
        -- the same words minus those whose lexemes are all common among the permitted chunks.
        CREATE FUNCTION policydesk_prune_query(query text, max_fraction double precision) RETURNS text
          LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          WITH permitted AS (
            SELECT access_level, sensitive, nrows FROM public.chunk_search_groups WHERE {_PERMITTED}),
          common AS (
            SELECT l.lexeme FROM public.chunk_lexeme_stats l JOIN permitted p USING (access_level, sensitive)
            GROUP BY l.lexeme HAVING sum(l.ndoc) > max_fraction * (SELECT sum(nrows) FROM permitted)),
          words AS (
            SELECT w, ord, tsvector_to_array(to_tsvector('english'::regconfig, w)) AS lex
            FROM unnest(string_to_array(query, '|')) WITH ORDINALITY AS t(w, ord)),
          kept AS (
            SELECT w, ord FROM words
            WHERE cardinality(lex) > 0 AND NOT lex <@ ARRAY(SELECT lexeme FROM common))
          SELECT CASE WHEN EXISTS (SELECT 1 FROM kept) THEN (SELECT string_agg(w, '|' ORDER BY ord) FROM kept)
                      ELSE query END
        $$;
        REVOKE ALL ON FUNCTION policydesk_prune_query(text, double precision) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION policydesk_prune_query(text, double precision) TO {role};
        SELECT policydesk_refresh_lexeme_stats();
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP FUNCTION IF EXISTS policydesk_prune_query(text, double precision);
        DROP FUNCTION IF EXISTS policydesk_refresh_lexeme_stats();
        DROP TABLE IF EXISTS chunk_lexeme_stats;
        DROP TABLE IF EXISTS chunk_search_groups;
        """
    )
