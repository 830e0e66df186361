"""Request dependencies as `Annotated` aliases: the database, the pipeline, who is asking.

The session cookie holds only the user name (and the CSRF token). The role is re-read from
the database on every request, so a role change applies on the next request, not the next
sign-in (DESIGN.md, step 1).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from policydesk.access import Clearance, clearance_for
from policydesk.users import get_user

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class NotSignedIn(Exception):
    """No valid session: the app redirects to the sign-in page."""


@dataclass(frozen=True)
class Staff:
    name: str
    role: str

    @property
    def clearance(self) -> Clearance:
        return clearance_for(self.role)

    @property
    def is_compliance(self) -> bool:
        return self.role == "compliance"


def get_db(request: Request):
    return request.app.state.db


def get_pipeline(request: Request):
    return request.app.state.pipeline


DbDep = Annotated[object, Depends(get_db)]
PipelineDep = Annotated[object, Depends(get_pipeline)]


def current_user(request: Request, db: DbDep) -> Staff:
    name = request.session.get("user")
    if not name:
        raise NotSignedIn()
    with Session(db.app) as session:
        user = get_user(session, name=name)
        staff = Staff(user.name, user.role) if user is not None else None
    if staff is None:  # deleted since sign-in
        request.session.pop("user", None)
        raise NotSignedIn()
    request.state.user = staff  # for the page header
    return staff


CurrentUser = Annotated[Staff, Depends(current_user)]


def require_compliance(user: CurrentUser) -> Staff:
    if not user.is_compliance:
        raise HTTPException(status_code=403, detail="Disputes are for compliance reviewers only.")
    return user


ComplianceUser = Annotated[Staff, Depends(require_compliance)]


def csrf_token(request: Request) -> str:
    """The session's CSRF token, created on first use."""
    token = request.session.get("csrf")
    if not token:
        token = request.session["csrf"] = secrets.token_urlsafe(32)
    return token


def rotate_csrf(request: Request) -> str:
    request.session["csrf"] = secrets.token_urlsafe(32)
    return request.session["csrf"]


async def csrf_protect(request: Request) -> None:
    """App-wide: every unsafe request carries the session's token (form field or htmx header)."""
    if request.method not in UNSAFE_METHODS:
        return
    expected = request.session.get("csrf")
    sent = request.headers.get(CSRF_HEADER)
    if not sent:
        form = await request.form()  # Starlette caches the parsed form for the route
        sent = form.get(CSRF_FIELD)
    if not expected or not isinstance(sent, str) or not secrets.compare_digest(sent, expected):
        raise HTTPException(status_code=403, detail="The form expired or did not come from this site. Reload the page and try again.")


async def reject_nul_bytes(request: Request) -> None:
    """App-wide: Postgres text cannot hold a NUL byte, so one in any field is refused up front
    (found by tests/test_fuzz.py: it reached the database as a 503 instead of a clear message)."""
    values = [*request.query_params.values(), *map(str, request.path_params.values())]
    if request.method in UNSAFE_METHODS:
        values += [v for v in (await request.form()).values() if isinstance(v, str)]
    if any("\x00" in v for v in values):
        raise HTTPException(status_code=422, detail="The request contains a NUL character, which PolicyDesk does not accept. Remove it and try again.")


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"
