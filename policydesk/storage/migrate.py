"""Apply Alembic migrations with the owner connection, one process at a time.

Several processes may start at once against one database (`serve` on several hosts, its workers,
a CLI command beside them). Each runs `upgrade`, which takes a transaction-level advisory lock
before Alembic reads the schema's revision: the first migrates and commits, the others wait on the
lock, then find the schema at head and change nothing. The lock is released with the transaction,
also when a migration fails (it then rolls back whole: Alembic runs inside that one transaction).
"""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"
MIGRATION_LOCK = 0x70644D47  # the advisory lock key every upgrade takes ("pdMG")


def alembic_config(connection, app_role: str, app_password: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    cfg.attributes["app_role"] = app_role
    cfg.attributes["app_password"] = app_password
    return cfg


def upgrade(owner: Engine, app_role: str, app_password: str, revision: str = "head") -> None:
    with owner.begin() as conn:
        if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK}).scalar_one():
            log.info("another process is migrating this database; waiting for it to finish",
                     extra={"event": "migration_wait"})
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        command.upgrade(alembic_config(conn, app_role, app_password), revision)


def downgrade(owner: Engine, app_role: str, app_password: str, steps: int) -> None:
    """Undo the latest `steps` migrations under the same lock as `upgrade`, in one transaction (a
    downgrade that fails leaves the schema where it was). Any start of this release upgrades it
    to head again, so stop every process first (docs/backup.md)."""
    if steps < 1:
        raise ValueError("steps must be at least 1")
    with owner.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        command.downgrade(alembic_config(conn, app_role, app_password), f"-{steps}")


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg).get_current_head()


def current_revision(owner: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with owner.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
