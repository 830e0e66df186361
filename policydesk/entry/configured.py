"""The configured database for an in-process entry point, opened the way `ask` and `serve` open it."""

from __future__ import annotations

from datetime import date
from collections.abc import Mapping

from sqlalchemy.orm import Session

from policydesk.accounts.access import Clearance, clearance_for
from policydesk.versions.dates import DateInputError
from policydesk.products import checked_product
from policydesk.storage.engine import Database
from policydesk.accounts.users import get_active_user
from policydesk.versions import entered_dates as checked_dates


class EntryError(ValueError):
    """An entry point that can't be built for this caller: unknown user, bad date, unknown product."""


def open_configured(settings) -> Database:
    """The migrated configured database, refused (`InsecureStartError`) unless every security layer is on."""
    from policydesk.ops.runtime import open_migrated
    from policydesk.storage.security import check_secure_start

    db = open_migrated(settings)
    try:
        check_secure_start(db, settings)
    except Exception:
        db.dispose()
        raise
    return db


def entered_dates(dates: Mapping[str, date | str | None] | None) -> dict[str, date]:
    """The entered dates by basis, checked by the pipeline's own check (`versions.entered_dates`)."""
    try:
        return checked_dates(dates)
    except DateInputError as exc:
        raise EntryError(str(exc)) from None


def user_clearance(db: Database, user: str, line_of_business: str | None = None) -> Clearance:
    """The active user's clearance as stored now, limited to a product when one is named."""
    with Session(db.app) as session:
        found = get_active_user(session, name=user)
        role = found.role if found is not None else None
    if role is None:
        raise EntryError(f"unknown user {user!r} (or disabled)")
    clearance = clearance_for(role)
    try:
        return clearance.for_product(checked_product(db, clearance, line_of_business))
    except ValueError as exc:  # UnknownLineOfBusiness names the products the caller may choose
        raise EntryError(str(exc)) from None
