"""Single sign-on (OpenID Connect, authorization code flow) through Authlib's Starlette client.

/login/sso sends the browser to the identity provider with a fresh state and nonce (kept in
the signed session); /login/sso/callback exchanges the code, has Authlib verify the ID token,
and hands its claims to `policydesk.accounts.sso.sign_in`. Present only when POLICYDESK_OIDC_ISSUER is set.
"""

from __future__ import annotations

import logging

from authlib.integrations.base_client import OAuthError
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from policydesk.accounts import sso
from policydesk.web.deps import DbDep, start_session
from policydesk.web.routes.auth import safe_next
from policydesk.web.templating import render

log = logging.getLogger(__name__)
router = APIRouter(tags=["auth"])
NEXT_KEY = "sso_next"


def oidc_client(settings):
    """Authlib's client for the configured issuer (discovery document, JWKS and all)."""
    from authlib.integrations.starlette_client import OAuth

    oauth = OAuth()
    return oauth.register(
        name="idp", client_id=settings.OIDC_CLIENT_ID, client_secret=settings.OIDC_CLIENT_SECRET.get_secret_value() if settings.OIDC_CLIENT_SECRET else None,
        server_metadata_url=settings.OIDC_ISSUER.rstrip("/") + "/.well-known/openid-configuration",
        client_kwargs={"scope": settings.OIDC_SCOPES})


def _client(request: Request):
    client = getattr(request.app.state, "oidc", None)
    if client is None:
        raise HTTPException(status_code=404, detail="Single sign-on is not set up.")
    return client


@router.get("/login/sso")
async def start_sso(request: Request, next: str | None = None):
    client = _client(request)
    request.session[NEXT_KEY] = safe_next(next)
    settings = request.app.state.settings
    redirect_uri = settings.OIDC_REDIRECT_URL or str(request.url_for("finish_sso"))
    return await client.authorize_redirect(request, redirect_uri)


def _refused(request: Request, message: str, status: int):
    return render(request, "login.html", {"next": "/ask", "name": "", "error": message, "notice": None},
                  status_code=status)


@router.get("/login/sso/callback", name="finish_sso")
async def finish_sso(request: Request, db: DbDep):
    client = _client(request)
    try:
        token = await client.authorize_access_token(request)
    except OAuthError as exc:
        log.warning("single sign-on failed: %s", exc.error, extra={"event": "sso_failed"})
        return _refused(request, "Single sign-on did not complete. Try again from the sign-in page.", 401)
    claims = token.get("userinfo") or {}
    settings = request.app.state.settings
    try:
        user = await run_in_threadpool(_sign_in, db, claims, settings)
    except sso.SsoRefused as exc:
        log.warning("single sign-on refused for subject %s: %s", claims.get("sub"), exc, extra={"event": "sso_refused"})
        return _refused(request, str(exc), 403)
    target = request.session.get(NEXT_KEY)
    await run_in_threadpool(start_session, request, db, name=user)  # the same server-side session as a password sign-in
    return RedirectResponse(safe_next(target), status_code=303)


def _sign_in(db, claims, settings) -> str:
    with Session(db.owner) as session, session.begin():
        user = sso.sign_in(session, issuer=claims.get("iss") or settings.OIDC_ISSUER, claims=claims, settings=settings)
        return user.name
