"""Open the configured database with migrations applied: the one start-up path for CLI and web."""

from __future__ import annotations

from policydesk.config import Settings
from policydesk.storage.engine import Database, open_database
from policydesk.storage.migrate import upgrade


def open_migrated(settings: Settings, database: str | None = None) -> Database:
    db = open_database(settings, database)
    upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value())
    return db
