"""Sign in (argon2 via policydesk.accounts.users.authenticate, throttled via policydesk.accounts.throttle) and sign out."""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from policydesk.accounts.throttle import Lock, ThrottlePolicy, active_lock, record_attempt, serialize_account
from policydesk.accounts.users import authenticate
from policydesk.web.deps import SIGNED_OUT_KEY, SIGNED_OUT_REASONS, DbDep, end_session, now, start_session
from policydesk.web.templating import render

router = APIRouter(tags=["auth"])


def safe_next(target: str | None) -> str:
    """Only same-site paths: never an absolute URL or a scheme-relative '//host'."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/ask"
    return target


def client_addr(request: Request) -> str:
    """The address the per-address throttle counts: the connection's own, unless `serve
    --forwarded-allow-ips` names the proxy it came through, whose X-Forwarded-For uvicorn then
    applies. Behind an unnamed proxy every user shares the proxy's counter."""
    return request.client.host if request.client else "unknown"


def locked_message(lock: Lock, at) -> str:
    minutes = max(1, math.ceil((lock.until - at).total_seconds() / 60))
    who = "this account" if lock.scope == "account" else "this network address"
    return (f"Too many failed sign-in attempts for {who}. Sign-in is paused: try again in "
            f"{minutes} minute{'s' if minutes != 1 else ''}. Your password was not checked.")


@router.get("/login")
def show_login(request: Request, next: str | None = None):
    reason = request.session.pop(SIGNED_OUT_KEY, None)
    return render(request, "login.html", {"next": safe_next(next), "name": "", "error": None,
                                          "notice": SIGNED_OUT_REASONS.get(reason)})


@router.post("/login")
def sign_in(request: Request, db: DbDep, name: Annotated[str, Form()] = "", password: Annotated[str, Form()] = "",
            next: Annotated[str, Form()] = "/ask"):
    name = name.strip()
    if not request.app.state.settings.LOCAL_PASSWORDS:  # switched off: single sign-on only
        return render(request, "login.html", {"next": safe_next(next), "name": "", "notice": None,
                                              "error": "Password sign-in is switched off. Use single sign-on."},
                      status_code=403)
    error, status, headers = "That name and password did not match.", 401, None
    signed_in = None
    if name:
        at, addr = now(request), client_addr(request)
        policy = ThrottlePolicy.from_settings(request.app.state.settings)
        with Session(db.app) as session, session.begin():
            serialize_account(session, user_name=name)
            lock = active_lock(session, user_name=name, client_addr=addr, policy=policy, now=at)
            if lock is not None:  # refused before the password is checked
                record_attempt(session, user_name=name, client_addr=addr, succeeded=False, throttled=True, now=at)
                error, status = locked_message(lock, at), 429
                headers = {"Retry-After": str(max(1, math.ceil((lock.until - at).total_seconds())))}
            else:
                user = authenticate(session, name=name, password=password)
                record_attempt(session, user_name=name, client_addr=addr, succeeded=user is not None, now=at)
                if user is not None:
                    signed_in = user.name
    if signed_in is None:
        return render(request, "login.html", {"next": safe_next(next), "name": name, "error": error, "notice": None},
                      status_code=status, headers=headers)
    start_session(request, db, name=signed_in)
    return RedirectResponse(safe_next(next), status_code=303)


@router.post("/logout")
def sign_out(request: Request, db: DbDep):
    end_session(request, db)
    return RedirectResponse("/login", status_code=303)
