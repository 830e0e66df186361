"""The JSON API, /api/v1 (docs/api.md): bearer tokens, pydantic models, problem+json errors."""

from __future__ import annotations

from functools import lru_cache

from fastapi import APIRouter, FastAPI

from policydesk.web.api import ask, feedback, sources, traces

VERSION = "1"
router = APIRouter(prefix="/api/v1")
router.include_router(ask.router)
router.include_router(traces.router)
router.include_router(feedback.router)
router.include_router(sources.router)


@lru_cache(maxsize=1)
def api_schema() -> dict:
    """The OpenAPI document of /api/v1 only (the HTML pages are not an API), built once: it
    depends on the code alone."""
    only_api = FastAPI(title="PolicyDesk API", version=VERSION, description=(
        "Policy answers with the rule that applied, for staff tools (docs/api.md). Every error is "
        "application/problem+json (RFC 9457) with a stable `type`."))
    only_api.include_router(router)
    return only_api.openapi()
