"""Server-side sessions: the cookie names a session, this table says whether it is still on.

`sessions`: one row per sign-in (password or single sign-on). The signed cookie carries only a
random session id; the row, found by the id's SHA-256 (the id itself is never stored), holds
whose session it is, when it began and was last used, and when and why it ended. Every request
reads the row, so every worker agrees at once: sign-out ends a session for a copied cookie too,
and `policydesk users set-password|set-role|disable` end the user's sessions on their next
request. The idle and absolute limits are checked against the row's timestamps.

The application login signs in, touches and signs out (SELECT, INSERT, UPDATE of the three
columns that move); it can neither re-point a session at another user nor delete one, and a
trigger keeps an ended session ended. Purging old rows is the owner's (`policydesk users
purge-sessions`).

Revision ID: 0018
Revises: 0017
"""

import re

from alembic import context, op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def _app_role() -> str:
    role = context.config.attributes["app_role"]
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
        raise ValueError(f"APP_DB_ROLE {role!r} is not a plain lower-case identifier")
    return role


def upgrade() -> None:
    role = _app_role()
    op.execute(
        f"""
        CREATE TABLE sessions (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          secret_sha256 char(64) NOT NULL UNIQUE,
          user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          started_at timestamptz NOT NULL,
          seen_at timestamptz NOT NULL,
          ended_at timestamptz,
          end_reason text,
          CHECK (secret_sha256 ~ '^[a-f0-9]{{64}}$'),
          CHECK ((ended_at IS NULL) = (end_reason IS NULL)),
          CHECK (end_reason IN ('signed_out', 'idle', 'expired', 'password_changed', 'role_changed', 'disabled'))
        );
        CREATE INDEX sessions_open_by_user ON sessions (user_id) WHERE ended_at IS NULL;
        CREATE INDEX sessions_seen ON sessions (seen_at);

        CREATE FUNCTION sessions_stay_ended() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF OLD.ended_at IS NOT NULL THEN
            RAISE EXCEPTION 'session % has ended and cannot change', OLD.id;
          END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER sessions_stay_ended BEFORE UPDATE ON sessions
          FOR EACH ROW EXECUTE FUNCTION sessions_stay_ended();

        REVOKE ALL ON sessions FROM {role};
        GRANT SELECT, INSERT ON sessions TO {role};
        GRANT UPDATE (seen_at, ended_at, end_reason) ON sessions TO {role};
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS sessions")
    op.execute("DROP FUNCTION IF EXISTS sessions_stay_ended()")
