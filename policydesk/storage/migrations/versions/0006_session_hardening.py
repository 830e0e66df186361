"""Session hardening: disabled accounts and a sign-in attempt log that every worker counts from.

`users.disabled_at`: a disabled account cannot sign in, its sessions end on their next request,
and the pipeline treats it as unknown. Set and cleared by `policydesk users disable|enable`.

`login_attempts`: one row per sign-in attempt, so throttling (5 failures per account, 20 per
client address, by default) is agreed by every app instance on the database, not per process.
The app role may insert and read it, never change or delete it. `throttled` marks an attempt
refused while locked, whose password was not checked: it is kept for the record but does not
count as a failure, so the lock ends on time.

Revision ID: 0006
Revises: 0005
"""

import re

from alembic import context, op

revision = "0006"
down_revision = "0005"
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
        ALTER TABLE users ADD COLUMN disabled_at timestamptz;

        CREATE TABLE login_attempts (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          at timestamptz NOT NULL,
          user_name text NOT NULL,
          client_addr text NOT NULL,
          succeeded boolean NOT NULL,
          throttled boolean NOT NULL DEFAULT false,
          CHECK (NOT (succeeded AND throttled))
        );
        CREATE INDEX login_attempts_user ON login_attempts (user_name, at);
        CREATE INDEX login_attempts_addr ON login_attempts (client_addr, at);

        GRANT SELECT, INSERT ON login_attempts TO {role};
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS login_attempts")
    op.execute("ALTER TABLE users DROP COLUMN IF EXISTS disabled_at")
