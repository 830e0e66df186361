"""Open the configured database with migrations applied: the one start-up path for CLI and web."""

from __future__ import annotations

import logging

from policydesk.config import Settings
from policydesk.storage.buffers import cache_shortfall
from policydesk.storage.engine import Database, open_database
from policydesk.storage.migrate import upgrade
from policydesk.screening.topic_terms import catch_up_database

log = logging.getLogger(__name__)


def open_migrated(settings: Settings, database: str | None = None) -> Database:
    db = open_database(settings, database)
    upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value())
    # Chunks written since the last catch-up (a bulk load, or every chunk of a database the
    # topic-terms migration just reached) are counted before the first question.
    done = catch_up_database(db)
    if done.chunks:
        log.info("topic terms: counted %d chunk changes over %d versions in %.1f s", done.chunks, done.versions,
                 done.seconds)
    shortfall = cache_shortfall(db.owner)
    if shortfall:
        log.warning("retrieval will read slower than it could: %s", shortfall)
    return db
