"""Storage: SQLAlchemy models, Alembic migrations, engines, and the row-level-security scope."""

from policydesk.storage.engine import Database, open_database
from policydesk.storage.scope import permitted_scope

__all__ = ["Database", "open_database", "permitted_scope"]
