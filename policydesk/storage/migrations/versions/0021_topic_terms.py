"""The topic gate's terms, counted when chunks are written instead of derived from every chunk.

Why: the topic gate (`policydesk/screening/topics.py`) refuses a question that names a subject only sources
above the caller's clearance talk about, and the answer layer needs the words the caller's
sources use (`policydesk/screening/vocabulary.py`). Both were derived in memory from the text of every
chunk whenever the corpus changed: a pass over the whole corpus in Python, which at 10^6 chunks
kept the first question after an ingest from finishing. Now they are kept the way
`chunk_search_df` keeps lexemes, per clearance bucket (access level, sensitive):

- `topic_terms (kind, term, access_level, sensitive, chunks)`: what each chunk's title, heading
  and text say, with the number of chunks that say it: `word` (folded words), `part` (parts of
  hyphenated words), `phrase` (2-3 word phrases), `initials` (of runs of content words) and
  `label` (a name written with its label, "Name (label)");
- `topic_candidates (doc_id, version, term, access_level, sensitive)`: the subjects a version
  names: the phrases of its title and headings, and phrases its text repeats (call notes name
  no subject). A version's rows are recomputed from its chunks whenever one of them changes.

The terms come from the gate's own tokenizer in Python, so a trigger cannot compute them.
Statement-level triggers on `data_chunks` queue each written, rewritten or deleted chunk's
text in `topic_terms_pending`; `policydesk.screening.topic_terms.catch_up` counts the queue on the owner
login, inside ingest's transaction, after a bulk load and at start-up. The last is how a database
migrated here gets its terms: every chunk it holds is queued below.

Access: a bucket's vocabulary says as much as its text. The application role reads the terms
only through row-level security with the same predicate as the chunks (the gate reads under its
all-levels scope, as it read the chunks), never the queue; `policydesk_topic_terms_pending()`
tells it how many chunks wait to be counted.

Revision ID: 0021
Revises: 0020
"""

from alembic import context, op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_LEVELS = "string_to_array(current_setting('policydesk.levels', true), ',')"
_SENSITIVE_OK = "current_setting('policydesk.sensitive', true) = 'on'"

# What the gate reads of a chunk: its own row only, so a queued deletion carries what to subtract.
_QUEUED = """
  {sign}::smallint, {r}.doc_id, {r}.version, coalesce({r}.access_level, ''), coalesce({r}.sensitive, true),
  coalesce({r}.metadata_->>'source_type', ''), coalesce({r}.metadata_->>'title', ''),
  coalesce({r}.metadata_->>'section', ''), coalesce({r}.text, '')"""
_COLUMNS = "(sign, doc_id, version, access_level, sensitive, source_type, title, heading, body)"
_READ = ("(o.doc_id, o.version, o.access_level, o.sensitive, o.metadata_->>'source_type', o.metadata_->>'title', "
         "o.metadata_->>'section', o.text)")


def _queue_function(name: str, body: str) -> str:
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
    inserted = (f"INSERT INTO public.topic_terms_pending {_COLUMNS} SELECT {_QUEUED.format(sign=1, r='n')} "
                "FROM new_rows n ORDER BY n.id;")
    deleted = (f"INSERT INTO public.topic_terms_pending {_COLUMNS} SELECT {_QUEUED.format(sign=-1, r='o')} "
               "FROM old_rows o ORDER BY o.id;")
    # A metadata rewrite (a version's window closing) changes nothing the gate reads: not queued.
    updated = (f"INSERT INTO public.topic_terms_pending {_COLUMNS} "
               f"SELECT {_QUEUED.format(sign=-1, r='o')} FROM old_rows o JOIN new_rows n ON n.id = o.id "
               f"WHERE {_READ} IS DISTINCT FROM {_READ.replace('o.', 'n.')} "
               f"UNION ALL SELECT {_QUEUED.format(sign=1, r='n')} FROM old_rows o JOIN new_rows n ON n.id = o.id "
               f"WHERE {_READ} IS DISTINCT FROM {_READ.replace('o.', 'n.')};")
    op.execute(
        f"""
        CREATE TABLE topic_terms (
          kind text NOT NULL,
          term text NOT NULL,
          access_level text NOT NULL,
          sensitive boolean NOT NULL,
          chunks integer NOT NULL,
          PRIMARY KEY (kind, term, access_level, sensitive)
        );
        CREATE TABLE topic_candidates (
          doc_id text NOT NULL,
          version integer NOT NULL,
          term text NOT NULL,
          access_level text NOT NULL,
          sensitive boolean NOT NULL,
          PRIMARY KEY (doc_id, version, term)
        );
        CREATE INDEX topic_candidates_term ON topic_candidates (term);
        CREATE TABLE topic_terms_pending (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          sign smallint NOT NULL,
          doc_id text,
          version integer,
          access_level text NOT NULL,
          sensitive boolean NOT NULL,
          source_type text NOT NULL,
          title text NOT NULL,
          heading text NOT NULL,
          body text NOT NULL
        );

        ALTER TABLE topic_terms ENABLE ROW LEVEL SECURITY;
        CREATE POLICY topic_terms_scoped_read ON topic_terms FOR SELECT TO {role}
          USING (access_level = ANY ({_LEVELS}) AND (NOT sensitive OR {_SENSITIVE_OK}));
        ALTER TABLE topic_candidates ENABLE ROW LEVEL SECURITY;
        CREATE POLICY topic_candidates_scoped_read ON topic_candidates FOR SELECT TO {role}
          USING (access_level = ANY ({_LEVELS}) AND (NOT sensitive OR {_SENSITIVE_OK}));
        GRANT SELECT ON topic_terms, topic_candidates TO {role};

        CREATE FUNCTION policydesk_topic_terms_pending() RETURNS bigint
          LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT count(*) FROM public.topic_terms_pending $$;
        REVOKE ALL ON FUNCTION policydesk_topic_terms_pending() FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION policydesk_topic_terms_pending() TO {role};

        {_queue_function("policydesk_topic_terms_inserted", inserted)}
        {_queue_function("policydesk_topic_terms_deleted", deleted)}
        {_queue_function("policydesk_topic_terms_updated", updated)}
        CREATE TRIGGER data_chunks_topic_terms_insert AFTER INSERT ON data_chunks
          REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION policydesk_topic_terms_inserted();
        CREATE TRIGGER data_chunks_topic_terms_delete AFTER DELETE ON data_chunks
          REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION policydesk_topic_terms_deleted();
        CREATE TRIGGER data_chunks_topic_terms_update AFTER UPDATE ON data_chunks
          REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
          FOR EACH STATEMENT EXECUTE FUNCTION policydesk_topic_terms_updated();
        {_queue_function("policydesk_topic_terms_truncated",
                         "TRUNCATE public.topic_terms, public.topic_candidates, public.topic_terms_pending;")}
        CREATE TRIGGER data_chunks_topic_terms_truncate AFTER TRUNCATE ON data_chunks
          FOR EACH STATEMENT EXECUTE FUNCTION policydesk_topic_terms_truncated();

        INSERT INTO topic_terms_pending {_COLUMNS} SELECT {_QUEUED.format(sign=1, r='c')} FROM data_chunks c ORDER BY c.id;
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP TRIGGER data_chunks_topic_terms_insert ON data_chunks;
        DROP TRIGGER data_chunks_topic_terms_delete ON data_chunks;
        DROP TRIGGER data_chunks_topic_terms_update ON data_chunks;
        DROP TRIGGER data_chunks_topic_terms_truncate ON data_chunks;
        DROP FUNCTION policydesk_topic_terms_truncated();
        DROP FUNCTION policydesk_topic_terms_inserted();
        DROP FUNCTION policydesk_topic_terms_deleted();
        DROP FUNCTION policydesk_topic_terms_updated();
        DROP FUNCTION policydesk_topic_terms_pending();
        DROP TABLE topic_terms_pending;
        DROP TABLE topic_candidates;
        DROP TABLE topic_terms;
        """
    )
