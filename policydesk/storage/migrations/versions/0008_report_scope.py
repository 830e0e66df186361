"""A report scope: read traces (and their feedback) of staff at or below the reader's clearance.

The gaps report counts questions across staff, which the per-user trace policy (0005) does not
allow for anyone but compliance. Under `policydesk.report = on`, a transaction may also read the
traces of people whose recorded clearance is within its own (their levels a subset of the
scope's, and sensitive only if the scope is cleared for it), so a supervisor's report never
includes what a compliance officer asked, and nothing above the reader's clearance. Only the
report service sets this flag (policydesk/reports/gaps.py), read-only.

Revision ID: 0008
Revises: 0007
"""

from alembic import context, op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_REPORT = "current_setting('policydesk.report', true) = 'on'"
_LEVELS = "string_to_array(current_setting('policydesk.levels', true), ',')"
_SENSITIVE_OK = "current_setting('policydesk.sensitive', true) = 'on'"


def upgrade() -> None:
    role = context.config.attributes["app_role"]
    op.execute(
        f"""
        CREATE POLICY traces_report_read ON traces FOR SELECT TO {role}
          USING ({_REPORT} AND permitted_levels::text[] <@ {_LEVELS} AND (NOT sensitive_cleared OR {_SENSITIVE_OK}));
        CREATE POLICY feedback_report_read ON feedback FOR SELECT TO {role}
          USING ({_REPORT} AND EXISTS (SELECT 1 FROM traces t WHERE t.id = feedback.trace_id));
        """
    )


def downgrade() -> None:
    op.execute("DROP POLICY IF EXISTS feedback_report_read ON feedback; DROP POLICY IF EXISTS traces_report_read ON traces")
