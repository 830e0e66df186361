"""Answer feedback from staff: append-only, tied to a trace, read under the traces' RLS rule.

One row per "helpful" / "wrong or unclear" with an optional reason and a note. The note is
screened by the question's identifier detectors before it is stored (policydesk/proof/feedback.py),
so no member identifier is ever written here. The app role may insert and read, never change or
delete; staff read their own feedback, compliance all (the same settings as `traces`).

Revision ID: 0007
Revises: 0006
"""

from alembic import context, op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

VERDICTS = ("helpful", "wrong")
REASONS = ("wrong_version", "wrong_policy", "missing_information", "unclear_wording", "other")


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        CREATE TABLE feedback (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          at timestamptz NOT NULL DEFAULT now(),
          trace_id uuid NOT NULL,
          user_name varchar(64) NOT NULL,
          verdict varchar(16) NOT NULL CHECK (verdict IN ({_quoted(VERDICTS)})),
          reason varchar(32) CHECK (reason IN ({_quoted(REASONS)})),
          note text NOT NULL DEFAULT ''
        );
        CREATE INDEX feedback_trace ON feedback (trace_id, id);
        CREATE INDEX feedback_at ON feedback (at);
        ALTER TABLE feedback ENABLE ROW LEVEL SECURITY;
        ALTER TABLE feedback FORCE ROW LEVEL SECURITY;
        CREATE POLICY feedback_owner ON feedback TO CURRENT_USER USING (true) WITH CHECK (true);
        CREATE POLICY feedback_append ON feedback FOR INSERT TO {role}
          WITH CHECK (user_name = current_setting('policydesk.user', true));
        CREATE POLICY feedback_scoped_read ON feedback FOR SELECT TO {role}
          USING (user_name = current_setting('policydesk.user', true)
                 OR current_setting('policydesk.all_traces', true) = 'on');
        GRANT SELECT, INSERT ON feedback TO {role};
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS feedback")
