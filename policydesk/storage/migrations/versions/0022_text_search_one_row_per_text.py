"""The full-text side path ranks each distinct text once: one `chunk_search` row per text and bucket.

Why: a plan's corpus repeats itself word for word. A new version keeps most sections as they
were, and product and state editions share most of theirs. Every copy matched the query and was
ranked on its own, so the text arm's cost grew with the copies, not with the texts. On the
bench's near-duplicate filler at 10^4 chunks (519 distinct texts per bucket), the side path's
statement took 20.4 ms p50; ranking each text once, 1.5 ms, with the same ids and ranks for all
90 questions checked (docs/performance.md).

Now `chunk_search` holds one row per (text, access level, sensitive, products) with the ids of
the chunks that carry it (`node_ids`, in id order); the key is the md5 of the tsvector's text
form, since a tsvector can be longer than a btree entry. Identical tsvectors rank identically,
so the function ranks the rows, keeps the top k rows and any tied with the last (`WITH TIES`),
and expands their ids: the same top k (rank, then node id) as ranking every chunk. The
per-chunk lexeme counts (`chunk_search_df`, migration 0016) are unchanged, so the candidate
narrowing picks the same rows.

Revision ID: 0022
Revises: 0021
"""

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# A chunk row's bucket in chunk_search: its text's key, access level, sensitivity and products.
_KEY = ("md5({r}.text_search_tsv::text), {r}.access_level, {r}.sensitive, "
        "coalesce({r}.line_of_business::text, '')")
_ADD_IDS = f"""
          INSERT INTO public.chunk_search AS s (text_key, access_level, sensitive, product_key, line_of_business, tsv,
                                                node_ids)
          SELECT {_KEY.format(r='n')}, (array_agg(n.line_of_business))[1], (array_agg(n.text_search_tsv))[1],
                 array_agg(n.node_id::text ORDER BY n.node_id)
          FROM new_rows n GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
          ON CONFLICT (text_key, access_level, sensitive, product_key) DO UPDATE
            SET node_ids = ARRAY(SELECT i FROM unnest(s.node_ids || excluded.node_ids) AS i ORDER BY i);
"""
_KEYED = ("md5({r}.text_search_tsv::text) AS text_key, {r}.access_level, {r}.sensitive, "
          "coalesce({r}.line_of_business::text, '') AS product_key")
_SAME_KEY = ("s.text_key = gone.text_key AND s.access_level = gone.access_level AND s.sensitive = gone.sensitive "
             "AND s.product_key = gone.product_key")
_DROP_IDS = f"""
          UPDATE public.chunk_search s SET node_ids = ARRAY(SELECT i FROM unnest(s.node_ids) AS i WHERE i <> ALL (gone.ids))
          FROM (SELECT {_KEYED.format(r='o')}, array_agg(o.node_id::text) AS ids FROM old_rows o GROUP BY 1, 2, 3, 4) AS gone
          WHERE {_SAME_KEY};
          DELETE FROM public.chunk_search s USING (SELECT DISTINCT {_KEYED.format(r='o')} FROM old_rows o) AS gone
          WHERE {_SAME_KEY} AND cardinality(s.node_ids) = 0;
"""
# The per-chunk lexeme counts, as migration 0016 keeps them.
_COUNT = """
          INSERT INTO public.chunk_search_df AS d (lexeme, access_level, sensitive, ndoc)
          SELECT l.lexeme, r.access_level, r.sensitive, {sign}count(*)
          FROM {rows} r, unnest(array_append(tsvector_to_array(r.text_search_tsv), '')) AS l(lexeme)
          GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
          ON CONFLICT (lexeme, access_level, sensitive) DO UPDATE SET ndoc = d.ndoc + excluded.ndoc;
"""
_ADD_COUNTS = _COUNT.format(sign="", rows="new_rows")
_SUBTRACT_COUNTS = _COUNT.format(sign="-", rows="old_rows") + """
          DELETE FROM public.chunk_search_df WHERE ndoc <= 0;
"""

_SCOPE = ("s.access_level = ANY (levels) AND (NOT s.sensitive OR cleared) "
          "AND (product = '' OR s.line_of_business IS NULL OR s.line_of_business ? product)")


def _search_function(statement: str) -> str:
    """`policydesk_text_search` running this statement on its variables (levels, cleared,
    product, q, narrowed, n)."""
    return f"""
        CREATE OR REPLACE FUNCTION policydesk_text_search(query text, k integer, candidates integer DEFAULT 8000)
          RETURNS TABLE (node_id varchar, rank real)
          LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
          ROWS 20
        AS $$
        #variable_conflict use_column
        DECLARE
          levels text[] := string_to_array(current_setting('policydesk.levels', true), ',');
          cleared boolean := current_setting('policydesk.sensitive', true) = 'on';
          product text := coalesce(current_setting('policydesk.line_of_business', true), '');
          q tsquery := to_tsquery('english'::regconfig, query);
          narrowed tsquery := public.policydesk_text_candidates(query, candidates);
          n integer := greatest(least(k, 200), 0);
        BEGIN
          RETURN QUERY
{statement}
        END $$;
    """


_DISTINCT_TEXT_STATEMENT = f"""
            SELECT u.id::varchar, t.rank
            FROM (SELECT c.node_ids, ts_rank(c.tsv, q) AS rank
                  FROM (SELECT s.node_ids, s.tsv FROM public.chunk_search s
                        WHERE s.tsv @@ coalesce(narrowed, q) AND {_SCOPE}
                        OFFSET 0) c
                  WHERE c.tsv @@ q
                  ORDER BY rank DESC
                  FETCH FIRST (n) ROWS WITH TIES) t,
                 unnest(t.node_ids) AS u(id)
            ORDER BY t.rank DESC, u.id
            LIMIT n;
"""
_PER_CHUNK_STATEMENT = f"""
            SELECT c.node_id, ts_rank(c.tsv, q) AS rank
            FROM (SELECT s.node_id, s.tsv FROM public.chunk_search s
                  WHERE s.tsv @@ coalesce(narrowed, q) AND {_SCOPE}
                  OFFSET 0) c
            WHERE c.tsv @@ q
            ORDER BY rank DESC, c.node_id
            LIMIT n;
"""


def _sync_function(name: str, body: str) -> str:
    return f"""
        CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
          LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        BEGIN
          {body}
          RETURN NULL;
        END $$;
    """


def upgrade() -> None:
    op.execute(
        f"""
        DROP TABLE chunk_search;
        CREATE TABLE chunk_search (
          text_key text NOT NULL,
          access_level text NOT NULL,
          sensitive boolean NOT NULL,
          product_key text NOT NULL,
          line_of_business jsonb,
          tsv tsvector NOT NULL,
          node_ids text[] NOT NULL,
          PRIMARY KEY (text_key, access_level, sensitive, product_key)
        );
        CREATE INDEX chunk_search_tsv ON chunk_search USING gin (tsv) WITH (fastupdate = off);
        REVOKE ALL ON chunk_search FROM PUBLIC;
        INSERT INTO chunk_search (text_key, access_level, sensitive, product_key, line_of_business, tsv, node_ids)
          SELECT {_KEY.format(r='c')}, (array_agg(c.line_of_business))[1], (array_agg(c.text_search_tsv))[1],
                 array_agg(c.node_id::text ORDER BY c.node_id)
          FROM data_chunks c GROUP BY 1, 2, 3, 4;

        {_sync_function("policydesk_chunk_search_insert", _ADD_IDS + _ADD_COUNTS)}
        {_sync_function("policydesk_chunk_search_update", _DROP_IDS + _SUBTRACT_COUNTS + _ADD_IDS + _ADD_COUNTS)}
        {_sync_function("policydesk_chunk_search_delete", _DROP_IDS + _SUBTRACT_COUNTS)}

{_search_function(_DISTINCT_TEXT_STATEMENT)}
        """
    )


_PER_CHUNK_INSERT = """
          INSERT INTO public.chunk_search (node_id, access_level, sensitive, tsv, line_of_business)
            SELECT node_id, access_level, sensitive, text_search_tsv, line_of_business FROM new_rows;
"""
_PER_CHUNK_DELETE = """
          DELETE FROM public.chunk_search s USING old_rows o WHERE s.node_id = o.node_id;
"""


def downgrade() -> None:
    # One row per chunk again, with the functions of migration 0016.
    op.execute(
        f"""
        DROP TABLE chunk_search;
        CREATE TABLE chunk_search (
          node_id varchar PRIMARY KEY,
          access_level text NOT NULL,
          sensitive boolean NOT NULL,
          tsv tsvector NOT NULL,
          line_of_business jsonb
        );
        CREATE INDEX chunk_search_tsv ON chunk_search USING gin (tsv) WITH (fastupdate = off);
        CREATE INDEX chunk_search_scope ON chunk_search (access_level, sensitive);
        REVOKE ALL ON chunk_search FROM PUBLIC;
        INSERT INTO chunk_search SELECT node_id, access_level, sensitive, text_search_tsv, line_of_business FROM data_chunks;
        {_sync_function("policydesk_chunk_search_insert", _PER_CHUNK_INSERT + _ADD_COUNTS)}
        {_sync_function("policydesk_chunk_search_update",
                        _PER_CHUNK_DELETE + _SUBTRACT_COUNTS + _PER_CHUNK_INSERT + _ADD_COUNTS)}
        {_sync_function("policydesk_chunk_search_delete", _PER_CHUNK_DELETE + _SUBTRACT_COUNTS)}
{_search_function(_PER_CHUNK_STATEMENT)}
        """
    )

