"""What every `policydesk` command shares: a clear error and exit code, the migrated database."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import date
from typing import Optional

import typer
from sqlalchemy.exc import DBAPIError

from policydesk.config import get_settings


def _fail(message: str, code: int = 2) -> None:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


@contextmanager
def _database(*, serving: bool = False):
    """The migrated database for one command; an outage becomes a clear error, not a traceback.

    Commands that answer or serve (`serving=True`) first check that the security layers are on
    and refuse to start, one line per problem, if they are not.
    """
    from policydesk.ops.runtime import open_migrated
    from policydesk.storage.security import InsecureStartError, check_secure_start

    db = None
    try:
        settings = get_settings()
        db = open_migrated(settings)
        if serving:
            try:
                check_secure_start(db, settings)
            except InsecureStartError as exc:
                _fail("refusing to start, the security layers are not all on:\n  - "
                      + "\n  - ".join(exc.problems), code=4)
        yield db
    except DBAPIError as exc:
        _fail(f"the database is unavailable ({exc.orig.__class__.__name__ if exc.orig else 'error'}); "
              "nothing was changed. Check that Postgres is running and try again.", code=3)
    finally:
        if db is not None:
            db.dispose()


def _parse_date(value: Optional[str], label: str) -> Optional[date]:
    from policydesk.versions.dates import DateInputError, parse_input_date

    try:
        return parse_input_date(value, label)
    except DateInputError as exc:
        _fail(str(exc))
