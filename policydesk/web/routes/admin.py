"""The admin pages (role `admin` only): staff accounts, API tokens, and the sources with their sync.

The whole router depends on `require_admin`: every other role gets 403 on every URL here, and a
signed-out request is sent to sign in, decided on each request from the role re-read from the
database (web/deps.py). Forms carry the session's CSRF token (checked app-wide). The routes only
read the form and render; what an action does, and its audit row, is `accounts.admin` and
`ingest.sync`. A password or token secret is in the one response to the action that made it
(never stored, logged or cached: `no-store`); every later page shows only the token's key id.
"""

from __future__ import annotations

import threading
from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import RedirectResponse

from policydesk.accounts import admin
from policydesk.accounts.access import ADMIN_ROLE, ROLES
from policydesk.ingest.errors import IngestError
from policydesk.ingest.overview import sources_overview
from policydesk.ingest.sync import sync_directory
from policydesk.web.deps import CurrentUser, DbDep, Staff, now
from policydesk.web.templating import render

NO_STORE = {"Cache-Control": "no-store"}
# One admin sync at a time in this process: a second click while one runs is told so.
_SYNC_RUNNING = threading.Lock()


def require_admin(user: CurrentUser) -> Staff:
    if user.role != ADMIN_ROLE:
        raise HTTPException(status_code=403, detail="The admin pages are for administrators only.")
    return user


AdminUser = Annotated[Staff, Depends(require_admin)]
router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


@router.get("")
def show_admin() -> RedirectResponse:
    return RedirectResponse("/admin/users", status_code=303)


# -- accounts -----------------------------------------------------------------------------------

def _users_page(request: Request, db, me: Staff, *, status: int = 200, **shown):
    ctx = {"accounts": admin.accounts(db), "roles": ROLES, "me": me.name, "section": "users",
           "form": {"name": "", "role": ROLES[0]}, "done": None, "problem": None, "secret": None, **shown}
    return render(request, "admin/users.html", ctx, block="body", status_code=status, headers=NO_STORE)


def _run(request: Request, db, me: Staff, page, action, *, done: str, form: dict | None = None, secret=None):
    """Run an action; render the page with what was done (or why nothing was, 422)."""
    try:
        result = action()
    except admin.AdminError as exc:
        extra = {"form": form} if form else {}
        return page(request, db, me, status=422, problem=str(exc), **extra)
    return page(request, db, me, done=done, secret=secret(result) if secret else None)


@router.get("/users")
def show_users(request: Request, me: AdminUser, db: DbDep):
    return _users_page(request, db, me)


@router.post("/users")
def add_user(request: Request, me: AdminUser, db: DbDep, name: Annotated[str, Form()] = "",
             role: Annotated[str, Form()] = "", password: Annotated[str, Form()] = ""):
    name = name.strip()
    return _run(request, db, me, _users_page,
                lambda: admin.add_account(db, actor=me.name, name=name, role=role, password=password),
                done=f"Added {name} ({role}).", form={"name": name, "role": role},
                secret=lambda pw: None if password else {"label": f"Password for {name}", "value": pw})


@router.post("/users/{name}/role")
def change_role(request: Request, me: AdminUser, db: DbDep, name: str, role: Annotated[str, Form()] = ""):
    return _run(request, db, me, _users_page, lambda: admin.change_role(db, actor=me.name, name=name, role=role),
                done=f"{name} is now {role}; their sessions were ended, and their API tokens act as {role}.")


@router.post("/users/{name}/disable")
def disable_user(request: Request, me: AdminUser, db: DbDep, name: str):
    return _run(request, db, me, _users_page,
                lambda: admin.set_enabled(db, actor=me.name, name=name, enabled=False),
                done=f"{name} is disabled: signed out, and neither sign-in nor their API tokens work.")


@router.post("/users/{name}/enable")
def enable_user(request: Request, me: AdminUser, db: DbDep, name: str):
    return _run(request, db, me, _users_page,
                lambda: admin.set_enabled(db, actor=me.name, name=name, enabled=True),
                done=f"{name} is enabled again (same password as before).")


@router.post("/users/{name}/password")
def reset_password(request: Request, me: AdminUser, db: DbDep, name: str):
    return _run(request, db, me, _users_page, lambda: admin.reset_password(db, actor=me.name, name=name),
                done=f"{name} has a new password; their sessions were ended.",
                secret=lambda pw: {"label": f"New password for {name}", "value": pw})


# -- API tokens ---------------------------------------------------------------------------------

def _tokens_page(request: Request, db, me: Staff, *, status: int = 200, **shown):
    settings = request.app.state.settings
    ctx = {"tokens": admin.api_tokens(db), "accounts": [a for a in admin.accounts(db) if a.disabled_at is None],
           "now": now(request), "section": "tokens", "max_days": admin.MAX_TOKEN_DAYS,
           "form": {"user": "", "days": settings.API_TOKEN_DEFAULT_DAYS, "label": ""},
           "done": None, "problem": None, "secret": None, **shown}
    return render(request, "admin/tokens.html", ctx, block="body", status_code=status, headers=NO_STORE)


@router.get("/tokens")
def show_tokens(request: Request, me: AdminUser, db: DbDep):
    return _tokens_page(request, db, me)


@router.post("/tokens")
def create_token(request: Request, me: AdminUser, db: DbDep, user: Annotated[str, Form()] = "",
                 days: Annotated[str, Form()] = "", label: Annotated[str, Form()] = ""):
    form = {"user": user, "days": days, "label": label}
    try:
        lifetime = int(days.strip())
    except ValueError:
        return _tokens_page(request, db, me, status=422, form=form,
                            problem=f"Enter how many days the token lasts (1 to {admin.MAX_TOKEN_DAYS}).")
    return _run(request, db, me, _tokens_page,
                lambda: admin.create_api_token(db, actor=me.name, user_name=user, days=lifetime, label=label,
                                               now=now(request)),
                done=f"Created a token for {user}.", form=form,
                secret=lambda made: {"label": f"API token {made[1].key_id} for {made[1].user_name}", "value": made[0]})


@router.post("/tokens/{key_id}/revoke")
def revoke_token(request: Request, me: AdminUser, db: DbDep, key_id: str):
    return _run(request, db, me, _tokens_page,
                lambda: admin.revoke_api_token(db, actor=me.name, key_id=key_id, now=now(request)),
                done=f"Token {key_id} is revoked: its next request is refused.")


# -- sources ------------------------------------------------------------------------------------

def _sources_page(request: Request, db, me: Staff, *, status: int = 200, **shown):
    state = request.app.state
    ctx = {"overview": sources_overview(db, today=state.pipeline.today), "directory": state.settings.SYNC_DIR,
           "section": "sources", "done": None, "incomplete": False, "problem": None, "report": None, **shown}
    return render(request, "admin/sources.html", ctx, block="body", status_code=status)


@router.get("/sources")
def show_sources(request: Request, me: AdminUser, db: DbDep):
    return _sources_page(request, db, me)


@router.post("/sources/sync")
def sync_now(request: Request, me: AdminUser, db: DbDep):
    """The sync `policydesk sync` and the change notices run, on the configured folder, now."""
    state = request.app.state
    directory = state.settings.SYNC_DIR
    if directory is None:
        return _sources_page(request, db, me, status=422, problem=(
            "This server syncs no document folder (POLICYDESK_SYNC_DIR is not set): nothing was run."))
    if not _SYNC_RUNNING.acquire(blocking=False):
        return _sources_page(request, db, me, status=422, problem="A sync started here is still running; "
                             "wait for it to finish, then reload this page.")
    try:
        report = sync_directory(db, directory, state.pipeline.embed_model, state.settings, actor=me.name)
    except IngestError as exc:
        return _sources_page(request, db, me, problem=f"The sync was refused, nothing was written: {exc}")
    finally:
        _SYNC_RUNNING.release()
    # A sync that refused a file says so as a warning, not as plain success.
    return _sources_page(request, db, me, done=report.summary(), report=report, incomplete=not report.ok)
