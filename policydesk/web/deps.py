"""Request dependencies as `Annotated` aliases: the database, the pipeline, who is asking, and a
session already scoped to the caller's clearance.

The signed session cookie holds a random session id and the CSRF token; never the user's name
or role. The session itself is a row in Postgres (`policydesk.accounts.sessions`), read on every request
together with the user's current role: sign-out, a new password, a role change or disabling the
account end it for every copy of the cookie on every worker, and the idle and absolute limits
are checked against the row (OWASP ASVS 4.0, 3.3.1-3.3.3; docs/design.md, step 1).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from policydesk.accounts import sessions
from policydesk.accounts.access import Clearance, clearance_for
from policydesk.pipeline import AskPipeline
from policydesk.storage.engine import Database
from policydesk.storage.scope import scoped_session
from policydesk.web.limits import TOO_LARGE_MESSAGE, body_too_large

ASK_PATH = "/ask"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SESSION_ID_KEY = "sid"
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


def start_session(request: Request, db: Database, *, name: str) -> None:
    """A fresh session for a user who just signed in: a new row and id, nothing carried over."""
    with Session(db.app) as session, session.begin():
        session_id = sessions.open_session(session, user_name=name, now=now(request))
    request.session.clear()
    if session_id is None:  # disabled between the password check and now
        raise NotSignedIn()
    request.session[SESSION_ID_KEY] = session_id
    rotate_csrf(request)


def end_session(request: Request, db: Database) -> None:
    """Sign-out: the row ends (for every copy of the cookie), then the cookie is cleared."""
    session_id = request.session.get(SESSION_ID_KEY)
    if isinstance(session_id, str):
        with Session(db.app) as session, session.begin():
            sessions.end(session, session_id=session_id, now=now(request))
    request.session.clear()


def _signed_out(request: Request, reason: str | None = None) -> None:
    request.session.clear()
    if reason:
        request.session[SIGNED_OUT_KEY] = reason


def current_user(request: Request, db: DbDep) -> Staff:
    session_id = request.session.get(SESSION_ID_KEY)
    if not isinstance(session_id, str):
        raise NotSignedIn()
    limits = sessions.SessionLimits.from_settings(request.app.state.settings)
    with Session(db.app) as session, session.begin():
        found = sessions.touch(session, session_id=session_id, now=now(request), limits=limits)
    if found.user_name is None:  # ended, expired, unknown, or its user disabled or deleted
        _signed_out(request, found.ended)
        raise NotSignedIn()
    staff = Staff(found.user_name, found.role)
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
    if not sent and body_too_large(request):  # its form was never read: no token to check, nothing done
        raise too_large(request)
    if not sent:
        form = await request.form()  # Starlette caches the parsed form for the route
        sent = form.get(CSRF_FIELD)
    if not expected or not isinstance(sent, str) or not secrets.compare_digest(sent, expected):
        raise HTTPException(status_code=403, detail="The form expired or did not come from this site. Reload the page and try again.")


def too_large(request: Request) -> HTTPException:
    max_chars = request.app.state.settings.MAX_QUESTION_CHARS
    return HTTPException(status_code=413, detail=TOO_LARGE_MESSAGE.format(max_chars=max_chars))


def checks_its_own_input(request: Request) -> bool:
    """The ask form refuses bad input itself, and traces it, like the API (web/routes/ask.py)."""
    return request.method == "POST" and request.url.path == ASK_PATH


async def reject_nul_bytes(request: Request) -> None:
    """App-wide: Postgres text cannot hold a NUL byte, so one in any field is refused up front
    (found by tests/test_fuzz.py: it reached the database as a 503 instead of a clear message),
    and so is a form body past its limit (web/limits.py). The JSON API checks its own input after
    the token, as problem+json (web/api/deps.py); the ask form checks its own and traces it."""
    if request.url.path.startswith("/api/") or checks_its_own_input(request):
        return
    if body_too_large(request):
        raise too_large(request)
    values = [*request.query_params.values(), *map(str, request.path_params.values())]
    if request.method in UNSAFE_METHODS:
        values += [v for v in (await request.form()).values() if isinstance(v, str)]
    if any("\x00" in v for v in values):
        raise HTTPException(status_code=422, detail="The request contains a NUL character, which PolicyDesk does not accept. Remove it and try again.")


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"
