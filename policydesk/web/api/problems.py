"""RFC 9457 problem details for the JSON API: one exception, one renderer, stable `type` values.

Every error under /api/ is `application/problem+json`, never a page or a redirect: the app's
error handlers (web/app.py) hand API requests to `problem_response`. A problem answered to a
known user is recorded: rejected questions as a failed trace (by the ask route, through the
pipeline), anything else refused with 403 or 422 as an audit_log row (`api_problem`).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from policydesk.proof import disputes
from policydesk.storage.storable import screened, screened_param
from policydesk.web.api.schemas import Problem

log = logging.getLogger(__name__)

API_PREFIX = "/api/"
MEDIA_TYPE = "application/problem+json"

# type -> (status, title). `type` is a relative URI reference (RFC 9457 3.1.1): compare it as a string.
PROBLEM_TYPES: dict[str, tuple[int, str]] = {
    "refused": (422, "The question was refused"),
    "invalid_date": (422, "A date is not valid"),
    "unknown_line_of_business": (422, "Unknown line of business"),
    "invalid_request": (422, "The request is not valid"),
    "unauthorized": (401, "A valid API token is required"),
    "forbidden": (403, "Not allowed for your role"),
    "not_found": (404, "Not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "rate_limited": (429, "Too many requests for this token"),
    "unavailable": (503, "PolicyDesk is unavailable"),
}
_BY_STATUS = {status: kind for kind, (status, _) in PROBLEM_TYPES.items() if kind not in (
    "refused", "invalid_date", "unknown_line_of_business")}
_AUDITED_STATUSES = (403, 422)


class ApiProblem(Exception):
    def __init__(self, kind: str, detail: str, *, errors: list[dict[str, str]] | None = None,
                 headers: dict[str, str] | None = None, extra: dict[str, Any] | None = None,
                 trace_id: str | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        self.status, self.title = PROBLEM_TYPES[kind]
        self.detail = detail
        self.errors = errors
        self.headers = headers
        self.extra = extra or {}
        self.trace_id = trace_id

    @classmethod
    def field(cls, kind: str, field: str, message: str, **kwargs) -> "ApiProblem":
        return cls(kind, f"{field}: {message}", errors=[{"field": field, "message": message}], **kwargs)


def problems(*statuses: int) -> dict:
    """`responses=` for a route: the problem statuses it may answer (401, 422 and 429 always)."""
    schema = {"$ref": "#/components/schemas/Problem"}
    return {s: {"model": Problem, "content": {MEDIA_TYPE: {"schema": schema}}}
            for s in sorted({401, 422, 429, *statuses})}


def is_api(request: Request) -> bool:
    return request.url.path.startswith(API_PREFIX)


def kind_for_status(status: int) -> str:
    return _BY_STATUS.get(status, "invalid_request" if 400 <= status < 500 else "unavailable")


def _body(request: Request, problem: ApiProblem) -> dict[str, Any]:
    body: dict[str, Any] = dict(problem.extra)  # a refusal carries the whole answer object
    body.update({"type": problem.kind, "title": problem.title, "status": problem.status, "detail": problem.detail,
                 "instance": request.url.path})
    if problem.errors:
        body["errors"] = problem.errors
    if problem.trace_id:
        body["trace_id"] = problem.trace_id
    return body


async def problem_response(request: Request, problem: ApiProblem) -> JSONResponse:
    user = getattr(request.state, "api_user", None)
    if user is not None and problem.status in _AUDITED_STATUSES and not problem.trace_id and not problem.extra:
        await run_in_threadpool(_audit, request, user.name, problem)
    return JSONResponse(_body(request, problem), status_code=problem.status, headers=problem.headers,
                        media_type=MEDIA_TYPE)


def route_template(request: Request) -> str | None:
    """The matched route's path with its parameters as `{name}` (`/api/v1/traces/{trace_id}/check`):
    the route stores its path relative to the router it was included in, so the prefix is what
    the request path has before the route's own part."""
    route = request.scope.get("route")
    template = getattr(route, "path_format", None)
    if not template:
        return None
    try:
        own = template.format(**request.path_params)
    except (KeyError, IndexError, ValueError):
        return None
    path = request.url.path
    return path[: len(path) - len(own)] + template if path.endswith(own) else None


def _audit(request: Request, actor: str, problem: ApiProblem) -> None:
    """The route's template as the target (no caller-chosen text), the values the caller put in
    the path screened like a question, so an identifier typed into a path is never stored."""
    patterns = request.app.state.settings.PLAN_ID_PATTERNS
    details = {"method": request.method, "status": problem.status, "type": problem.kind,
               "detail": screened(problem.detail[:500], patterns),
               "path_params": {k: screened_param(str(v)[:200], patterns) for k, v in request.path_params.items()}}
    try:
        disputes.audit(request.app.state.db, actor=actor, action="api_problem",
                       target=route_template(request) or screened(request.url.path[:500], patterns),
                       details=details)
    except Exception:  # the refusal itself must still reach the caller
        log.exception("could not record the API problem in the audit log")
