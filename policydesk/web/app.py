"""The FastAPI app. Settings (and, in tests, the database and pipeline) go into the constructor,
so each caller builds the app it needs (Datasette's `make_app_client` habit)."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from policydesk.config import Settings
from policydesk.ops.telemetry import telemetry_for
from policydesk.web.deps import CSRF_FIELD, CSRF_HEADER, NotSignedIn, csrf_protect, is_htmx, reject_nul_bytes, utc_now
from policydesk.web import api
from policydesk.web.api.deps import field_errors
from policydesk.web.api.problems import ApiProblem, is_api, kind_for_status, problem_response
from policydesk.web.headers import SecurityHeaders
from policydesk.web.limits import BoundedBody, form_body_limit
from policydesk.web.observe import RequestObservation
from policydesk.web.routes import admin, ask, auth, disputes, feedback, ops, reports, sources, sso
from policydesk.web.templating import TEMPLATES

log = logging.getLogger(__name__)
STATIC_DIR = Path(__file__).parent / "static"
SESSION_COOKIE = "policydesk_session"


def create_app(settings: Settings, *, db=None, pipeline=None, clock=None, telemetry=None) -> FastAPI:
    """`clock`: a callable returning an aware datetime (default: the real UTC time); it times
    sessions and sign-in throttling, so tests move it instead of sleeping. `telemetry`: where the
    request spans go (ops/telemetry.py); default the pipeline's, else one the app makes from the
    settings, owns and shuts down."""
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        owned = None
        if app.state.db is None:
            from policydesk.ops.runtime import open_migrated

            from policydesk.storage.security import check_secure_start

            owned = app.state.db = open_migrated(settings)
            check_secure_start(owned, settings)  # InsecureStartError: uvicorn exits, nothing served
            if settings.PREWARM_ON_START and owned.replica is not None:
                log.info("no cache warm-up: retrieval reads the replica, whose cache is its own server's")
            elif settings.PREWARM_ON_START:
                from policydesk.ops.cache_warmup import CacheWarmer

                app.state.warmer = CacheWarmer(owned.owner).start()
        if app.state.pipeline is None:
            from policydesk.pipeline import build_pipeline

            app.state.pipeline = build_pipeline(app.state.db, settings, telemetry=app.state.telemetry)
        try:
            yield
        finally:
            if owns_telemetry:
                app.state.telemetry.shutdown()  # exports what is still queued
            if owned is not None:
                owned.dispose()
                if app.state.release_embedded_server and not settings.DATABASE_URL:
                    # A `serve --workers N` worker gives back its handle on the embedded Postgres
                    # itself: its exit skips the handle's atexit, and the server would outlive `serve`.
                    from policydesk.storage.engine import stop_embedded_server

                    stop_embedded_server(settings.DATA_DIR)

    app = FastAPI(title="PolicyDesk", lifespan=lifespan, dependencies=[Depends(csrf_protect), Depends(reject_nul_bytes)],
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.state.db = db
    app.state.pipeline = pipeline
    owns_telemetry = telemetry is None and pipeline is None
    app.state.telemetry = telemetry or getattr(pipeline, "telemetry", None) or telemetry_for(settings)
    app.state.warmer = None  # the start-up cache warm-up, when this app opened its own database
    app.state.clock = clock or utc_now
    app.state.release_embedded_server = False  # set by app_from_settings, for worker processes
    # Starlette always sets HttpOnly. The cookie's own lifetime is the absolute limit; the idle
    # and absolute limits themselves are enforced server-side from the session's timestamps
    # (deps.current_user), since a browser may keep a cookie as long as it likes.
    app.add_middleware(SessionMiddleware, secret_key=settings.SECRET_KEY.get_secret_value(), session_cookie=SESSION_COOKIE,
                       max_age=settings.SESSION_MAX_HOURS * 60 * 60, same_site="lax",
                       https_only=settings.session_cookie_secure)
    # A page's form body past its limit is never read (web/limits.py); the API caps its own.
    app.add_middleware(BoundedBody, limit=form_body_limit(settings.MAX_QUESTION_CHARS))
    app.add_middleware(SecurityHeaders)  # CSP, frame, sniffing and referrer headers on every response
    app.add_middleware(RequestObservation)  # outermost: request id and latency for everything below
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    for module in (auth, ask, feedback, disputes, reports, sources, ops, admin):
        app.include_router(module.router)
    app.include_router(api.router)
    if settings.sso_enabled:
        app.state.oidc = sso.oidc_client(settings)
        app.include_router(sso.router)

    @app.get("/openapi.json", include_in_schema=False)
    def read_openapi() -> JSONResponse:
        return JSONResponse(api.api_schema())

    @app.get("/", include_in_schema=False)
    def show_home() -> RedirectResponse:
        return RedirectResponse("/ask", status_code=303)

    _install_error_handlers(app)
    return app


def app_from_settings() -> FastAPI:
    """The app as each worker of `policydesk serve --workers N` builds it (uvicorn's factory):
    settings from the environment the workers inherit, its own engines and pipeline."""
    from policydesk.config import get_settings

    app = create_app(get_settings())
    app.state.release_embedded_server = True
    return app


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _error_page(request: Request, status: int, title: str, message: str) -> HTMLResponse:
    # Rendered without the session helpers: an error page must render even when the database is down.
    body = TEMPLATES.get_template("error.html").render({
        "request": request, "status": status, "title": title, "message": message, "fragment": is_htmx(request),
        "user": getattr(request.state, "user", None), "csrf_token": request.session.get("csrf"),
        "csrf_field": CSRF_FIELD, "csrf_header": CSRF_HEADER, "severe": status >= 500,
    })
    return HTMLResponse(body, status_code=status)


_TITLES = {400: "Bad request", 401: "Sign in", 403: "Not allowed", 404: "Not found", 405: "Method not allowed",
           413: "Too large", 422: "Check the form", 503: "Unavailable"}


def _install_error_handlers(app: FastAPI) -> None:
    # Under /api/ every error is problem+json (web/api/problems.py), never a page or a redirect.
    @app.exception_handler(ApiProblem)
    async def show_problem(request: Request, exc: ApiProblem):
        return await problem_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def show_invalid_request(request: Request, exc: RequestValidationError):
        if not is_api(request):
            return await request_validation_exception_handler(request, exc)
        errors = field_errors(exc.errors())
        return await problem_response(request, ApiProblem(
            "invalid_request", "; ".join(f"{e['field']}: {e['message']}" for e in errors), errors=errors))

    @app.exception_handler(NotSignedIn)
    async def redirect_to_sign_in(request: Request, exc: NotSignedIn):
        target = "/login?next=" + quote(request.url.path, safe="/")
        if is_htmx(request):  # htmx follows HX-Redirect with a full page load
            return HTMLResponse("", status_code=401, headers={"HX-Redirect": target})
        if _wants_json(request):
            return JSONResponse({"detail": "Sign in first."}, status_code=401)
        return RedirectResponse(target, status_code=303)

    @app.exception_handler(StarletteHTTPException)
    async def show_http_error(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "Something was wrong with that request."
        if is_api(request):
            return await problem_response(request, ApiProblem(kind_for_status(exc.status_code), detail,
                                                              headers=exc.headers))
        if _wants_json(request):
            return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)
        return _error_page(request, exc.status_code, _TITLES.get(exc.status_code, "Error"), detail)

    @app.exception_handler(DBAPIError)  # OperationalError is a DBAPIError; both land here
    async def show_database_down(request: Request, exc: DBAPIError):
        log.error("database error: %s", exc.__class__.__name__, exc_info=exc)
        if isinstance(exc, OperationalError):
            message = "The PolicyDesk database is not reachable right now. Nothing was answered or recorded; try again in a minute."
        else:
            message = "The PolicyDesk database could not complete this request. Nothing was answered or recorded; try again."
        if is_api(request):
            return await problem_response(request, ApiProblem("unavailable", message, headers={"Retry-After": "60"}))
        if _wants_json(request):
            return JSONResponse({"detail": message, "status": "database_unavailable"}, status_code=503)
        return _error_page(request, 503, "PolicyDesk is unavailable", message)

