"""Apply Alembic migrations with the owner connection."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(connection, app_role: str, app_password: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    cfg.attributes["app_role"] = app_role
    cfg.attributes["app_password"] = app_password
    return cfg


def upgrade(owner: Engine, app_role: str, app_password: str, revision: str = "head") -> None:
    with owner.begin() as conn:
        command.upgrade(alembic_config(conn, app_role, app_password), revision)


def current_revision(owner: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with owner.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
