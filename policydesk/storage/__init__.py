"""Storage: SQLAlchemy models, Alembic migrations, engines, the access predicate and the row-level-security scope.

The predicate builder is imported from `policydesk.storage.predicate` where it is used, not
re-exported here: its LlamaIndex rendering pulls in llama_index, and `policydesk.accounts.access`
(imported by every CLI command) reaches this package through `Clearance`.
"""

from policydesk.storage.clearance import ACCESS_LEVELS, Clearance
from policydesk.storage.engine import Database, open_database
from policydesk.storage.scope import permitted_scope, scoped_session

__all__ = ["ACCESS_LEVELS", "Clearance", "Database", "open_database", "permitted_scope", "scoped_session"]
