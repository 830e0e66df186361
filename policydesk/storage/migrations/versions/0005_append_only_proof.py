"""Proof that can't be edited: append-only, hash-chained traces and audit log, RLS on both.

- The app role keeps INSERT and SELECT only on `traces` and `audit_log` (no UPDATE, DELETE,
  TRUNCATE). Retention purge runs as the owner (`policydesk traces purge`) and records the chain
  head it cut at in `chain_cuts`, so the chain still verifies afterwards.
- A BEFORE INSERT trigger (SECURITY DEFINER, so it sees every row whatever the caller's RLS
  scope) takes a per-table advisory lock, reads the chain head and sets `seq`, `prev_hash` and
  `row_hash = sha256(prev_hash || canonical row)`. Two workers inserting at once queue on the
  lock, so the chain never forks; the unique index on `seq` makes a fork an error, not silence.
- The canonical row is `to_jsonb(row)` without the hash and the generated search column, with
  the time zone and float output pinned: the same bytes whoever reads it later.
- `traces.replay_of` loses its ON DELETE SET NULL foreign key: a purge must not rewrite the
  newer rows that point at a purged one (the link stays as recorded).
- RLS: staff read their own traces, compliance all; only compliance reads the audit log.

Revision ID: 0005
Revises: 0004
"""

from alembic import context, op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

GENESIS = "0" * 64
CHAINED = {"traces": "created_at, id", "audit_log": "at, id"}
_USER = "current_setting('policydesk.user', true)"
_ALL_TRACES = "current_setting('policydesk.all_traces', true) = 'on'"


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        ALTER TABLE traces DROP CONSTRAINT IF EXISTS traces_replay_of_fkey;
        CREATE TABLE chain_cuts (
          id serial PRIMARY KEY,
          table_name text NOT NULL,
          at timestamptz NOT NULL DEFAULT now(),
          actor text NOT NULL,
          cutoff timestamptz NOT NULL,
          last_seq bigint NOT NULL,
          last_hash char(64) NOT NULL,
          rows_removed integer NOT NULL
        );
        CREATE FUNCTION policydesk_row_digest(prev text, content jsonb) RETURNS text
          LANGUAGE sql IMMUTABLE PARALLEL SAFE
          AS $$ SELECT encode(sha256(convert_to(prev || content::text, 'UTF8')), 'hex') $$;

        CREATE FUNCTION policydesk_chain_append() RETURNS trigger
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
          NEW.row_hash := policydesk_row_digest(NEW.prev_hash, to_jsonb(NEW) - 'search_tsv' - 'row_hash');
          RETURN NEW;
        END $$;
        """
    )
    for table, order in CHAINED.items():
        op.execute(
            f"""
            ALTER TABLE {table} ADD COLUMN seq bigint, ADD COLUMN prev_hash char(64), ADD COLUMN row_hash char(64);
            DO $$
            DECLARE r record; prev text := '{GENESIS}'; n bigint := 0;
            BEGIN
              PERFORM set_config('timezone', 'UTC', true);
              PERFORM set_config('extra_float_digits', '1', true);
              FOR r IN SELECT id FROM {table} ORDER BY {order} LOOP
                n := n + 1;
                UPDATE {table} SET seq = n, prev_hash = prev WHERE id = r.id;
                UPDATE {table} t SET row_hash = policydesk_row_digest(prev, to_jsonb(t) - 'search_tsv' - 'row_hash')
                  WHERE id = r.id RETURNING row_hash INTO prev;
              END LOOP;
            END $$;
            ALTER TABLE {table} ALTER COLUMN seq SET NOT NULL, ALTER COLUMN prev_hash SET NOT NULL,
              ALTER COLUMN row_hash SET NOT NULL;
            CREATE UNIQUE INDEX {table}_seq ON {table} (seq);
            CREATE TRIGGER {table}_chain BEFORE INSERT ON {table}
              FOR EACH ROW EXECUTE FUNCTION policydesk_chain_append();
            REVOKE ALL ON {table} FROM {role};
            GRANT SELECT, INSERT ON {table} TO {role};
            ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
            ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
            CREATE POLICY {table}_owner ON {table} TO CURRENT_USER USING (true) WITH CHECK (true);
            CREATE POLICY {table}_append ON {table} FOR INSERT TO {role} WITH CHECK (true);
            """
        )
    op.execute(
        f"""
        CREATE POLICY traces_scoped_read ON traces FOR SELECT TO {role}
          USING (user_name = {_USER} OR {_ALL_TRACES});
        CREATE POLICY audit_log_scoped_read ON audit_log FOR SELECT TO {role} USING ({_ALL_TRACES});
        GRANT SELECT ON chain_cuts TO {role};
        """
    )


def downgrade() -> None:
    role = context.config.attributes["app_role"]
    for table in CHAINED:
        op.execute(
            f"""
            DROP POLICY IF EXISTS {table}_scoped_read ON {table};
            DROP POLICY IF EXISTS {table}_append ON {table};
            DROP POLICY IF EXISTS {table}_owner ON {table};
            ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;
            ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;
            DROP TRIGGER IF EXISTS {table}_chain ON {table};
            ALTER TABLE {table} DROP COLUMN seq, DROP COLUMN prev_hash, DROP COLUMN row_hash;
            """
        )
    op.execute(
        f"""
        GRANT UPDATE ON traces TO {role};
        DROP FUNCTION IF EXISTS policydesk_chain_append();
        DROP FUNCTION IF EXISTS policydesk_row_digest(text, jsonb);
        DROP TABLE IF EXISTS chain_cuts;
        ALTER TABLE traces ADD CONSTRAINT traces_replay_of_fkey
          FOREIGN KEY (replay_of) REFERENCES traces(id) ON DELETE SET NULL;
        """
    )
