"""API tokens, their per-request counter, and the subject a single-sign-on user is linked to.

`api_tokens`: one row per bearer token (`policydesk tokens create`). Only a SHA-256 of the
token's secret is stored; the token itself is printed once. Tokens are created, listed and
revoked by the owner login (the CLI); the application login may only read them, so a request
can never mint, extend or un-revoke a token.

`api_requests`: one row per API request that presented a valid token, so the per-token rate
limit is agreed by every worker. `limited` marks a request refused by the limit: kept for the
record, not counted, so a client that keeps retrying is let in again on time. The application
login may insert and read it, never change or delete it. Its latest row is a token's last use.

`users.oidc_subject`: the issuer and subject (`iss|sub`) of the identity-provider account a
single-sign-on user was created for; a sign-in is matched on it, never on the name alone.

Revision ID: 0009
Revises: 0008
"""

import re

from alembic import context, op

revision = "0009"
down_revision = "0008"
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
        ALTER TABLE users ADD COLUMN oidc_subject text UNIQUE;

        CREATE TABLE api_tokens (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          key_id text NOT NULL UNIQUE,
          secret_sha256 char(64) NOT NULL,
          user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          label text NOT NULL DEFAULT '',
          created_at timestamptz NOT NULL DEFAULT now(),
          expires_at timestamptz NOT NULL,
          revoked_at timestamptz,
          CHECK (key_id ~ '^[a-f0-9]{{12}}$'),
          CHECK (secret_sha256 ~ '^[a-f0-9]{{64}}$')
        );
        CREATE INDEX api_tokens_user ON api_tokens (user_id);

        CREATE TABLE api_requests (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          token_id bigint NOT NULL REFERENCES api_tokens(id) ON DELETE CASCADE,
          at timestamptz NOT NULL,
          limited boolean NOT NULL DEFAULT false
        );
        CREATE INDEX api_requests_token ON api_requests (token_id, at);

        REVOKE ALL ON api_tokens, api_requests FROM {role};
        GRANT SELECT ON api_tokens TO {role};
        GRANT SELECT, INSERT ON api_requests TO {role};
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS api_requests")
    op.execute("DROP TABLE IF EXISTS api_tokens")
    op.execute("ALTER TABLE users DROP COLUMN IF EXISTS oidc_subject")
