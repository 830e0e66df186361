"""Sign in (argon2 via policydesk.users.authenticate) and sign out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from policydesk.users import authenticate
from policydesk.web.deps import DbDep, rotate_csrf
from policydesk.web.templating import render

router = APIRouter(tags=["auth"])


def safe_next(target: str | None) -> str:
    """Only same-site paths: never an absolute URL or a scheme-relative '//host'."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/ask"
    return target


@router.get("/login")
def show_login(request: Request, next: str | None = None):
    return render(request, "login.html", {"next": safe_next(next), "name": "", "error": None})


@router.post("/login")
def sign_in(request: Request, db: DbDep, name: Annotated[str, Form()] = "", password: Annotated[str, Form()] = "",
            next: Annotated[str, Form()] = "/ask"):
    with Session(db.app) as session:
        user = authenticate(session, name=name.strip(), password=password) if name.strip() else None
        signed_in = user.name if user is not None else None
    if signed_in is None:
        return render(request, "login.html", {"next": safe_next(next), "name": name,
                                              "error": "That name and password did not match."}, status_code=401)
    request.session.clear()
    request.session["user"] = signed_in
    rotate_csrf(request)
    return RedirectResponse(safe_next(next), status_code=303)


@router.post("/logout")
def sign_out(request: Request):
    request.session.clear()
    return RedirectResponse("/login", status_code=303)
