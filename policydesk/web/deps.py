"""Request dependencies as `Annotated` aliases: the database, the pipeline, who is asking, and a
session already scoped to the caller's clearance.

The session cookie holds the user name, the CSRF token, when the session began and was last
used, and a fingerprint of the password hash; never the role. The role is re-read from the
database on every request, so a role change applies on the next request, not the next sign-in
(docs/design.md, step 1). The same read ends the session of a user who was disabled, deleted or
given a new password since signing in, and the timestamps end idle and over-long sessions
(OWASP ASVS 4.0, 3.3.2 and 3.3.3).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from policydesk.access import Clearance, clearance_for
from policydesk.pipeline import AskPipeline
from policydesk.storage.engine import Database
from policydesk.storage.scope import scoped_session
from policydesk.users import get_active_user, password_fingerprint

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Why the last session ended, kept in the otherwise empty session for the sign-in page to say.
SIGNED_OUT_KEY = "signed_out"
SIGNED_OUT_REASONS = {
    "idle": "You were signed out after a period of inactivity. Sign in again to continue.",
    "expired": "Your session reached its time limit. Sign in again to continue.",
}


class NotSignedIn(Exception):
    """No valid session: the app redirects to the sign-in page."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def now(request: Request) -> datetime:
    """The app's clock (`app.state.clock`): tests inject one instead of sleeping."""
    return request.app.state.clock()


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


def get_db(request: Request) -> Database:
    return request.app.state.db


def get_pipeline(request: Request) -> AskPipeline:
    return request.app.state.pipeline


DbDep = Annotated[Database, Depends(get_db)]
PipelineDep = Annotated[AskPipeline, Depends(get_pipeline)]


def start_session(request: Request, *, name: str, password_hash: str) -> None:
    """A fresh session for a user who just signed in (nothing carried over from before)."""
    at = int(now(request).timestamp())
    request.session.clear()
    request.session.update({"user": name, "signed_in_at": at, "seen_at": at,
                            "pw": password_fingerprint(password_hash)})
    rotate_csrf(request)


def _end_session(request: Request, reason: str | None = None) -> None:
    request.session.clear()
    if reason:
        request.session[SIGNED_OUT_KEY] = reason


def _expiry(request: Request, at: datetime) -> str | None:
    """Why this session is over by time, or None. A session without timestamps (signed before
    they existed, or tampered with) is over."""
    settings = request.app.state.settings
    signed_in_at, seen_at = request.session.get("signed_in_at"), request.session.get("seen_at")
    if not isinstance(signed_in_at, int) or not isinstance(seen_at, int):
        return "expired"
    if at - datetime.fromtimestamp(signed_in_at, timezone.utc) >= timedelta(hours=settings.SESSION_MAX_HOURS):
        return "expired"
    if at - datetime.fromtimestamp(seen_at, timezone.utc) >= timedelta(minutes=settings.SESSION_IDLE_MINUTES):
        return "idle"
    return None


def current_user(request: Request, db: DbDep) -> Staff:
    name = request.session.get("user")
    if not name:
        raise NotSignedIn()
    at = now(request)
    reason = _expiry(request, at)
    if reason:
        _end_session(request, reason)
        raise NotSignedIn()
    with Session(db.app) as session:
        user = get_active_user(session, name=name)
        staff = Staff(user.name, user.role) if user is not None else None
        same_password = user is not None and request.session.get("pw") == password_fingerprint(user.password_hash)
    if staff is None or not same_password:  # deleted, disabled or given a new password since sign-in
        _end_session(request)
        raise NotSignedIn()
    request.session["seen_at"] = int(at.timestamp())
    request.state.user = staff  # for the page header
    return staff


CurrentUser = Annotated[Staff, Depends(current_user)]


def require_compliance(user: CurrentUser) -> Staff:
    if not user.is_compliance:
        raise HTTPException(status_code=403, detail="Disputes are for compliance reviewers only.")
    return user


ComplianceUser = Annotated[Staff, Depends(require_compliance)]


def get_scoped_session(user: CurrentUser, db: DbDep) -> Iterator[Session]:
    """A session on the application engine bound to the caller's clearance and name (row-level
    security: policy text up to the clearance, and the caller's own traces)."""
    with scoped_session(db.app, user.clearance, user_name=user.name) as session:
        yield session


ScopedSession = Annotated[Session, Depends(get_scoped_session)]


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
    """App-wide: every unsafe request carries the session's token (form field or htmx header).
    Not the JSON API: it authenticates by bearer token only, never by cookie (web/api/deps.py)."""
    if request.method not in UNSAFE_METHODS or request.url.path.startswith("/api/"):
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
    (found by tests/test_fuzz.py: it reached the database as a 503 instead of a clear message).
    The JSON API checks its own input after the token, as problem+json (web/api/deps.py)."""
    if request.url.path.startswith("/api/"):
        return
    values = [*request.query_params.values(), *map(str, request.path_params.values())]
    if request.method in UNSAFE_METHODS:
        values += [v for v in (await request.form()).values() if isinstance(v, str)]
    if any("\x00" in v for v in values):
        raise HTTPException(status_code=422, detail="The request contains a NUL character, which PolicyDesk does not accept. Remove it and try again.")


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"
