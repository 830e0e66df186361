"""Who is calling the JSON API: a bearer token, re-checked on every request.

No session and no cookie: the token alone says who is asking, and the user's role is read from
the database on each request (a demoted user's token acts with the new role on its very next
call; a disabled user's token stops working). CSRF does not apply (web/deps.py skips /api/):
a browser never attaches an Authorization header on its own.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from policydesk.accounts import tokens
from policydesk.storage.storable import echoable, screened
from policydesk.accounts.ratelimit import RatePolicy, admit
from policydesk.web.api.problems import ApiProblem
from policydesk.web.deps import DbDep, Staff, now

bearer = HTTPBearer(auto_error=False, scheme_name="token",
                    description="A token from `policydesk tokens create USER`, sent as `Authorization: Bearer pdk_...`.")
_CHALLENGE = 'Bearer realm="policydesk"'


def _unauthorized(detail: str, error: str | None = None) -> ApiProblem:
    challenge = _CHALLENGE + (f', error="{error}"' if error else "")
    return ApiProblem("unauthorized", detail, headers={"WWW-Authenticate": challenge})


def check_text(**fields: Any) -> None:
    """Postgres text holds neither a NUL nor a lone surrogate: refuse either up front, naming the field."""
    for name, value in fields.items():
        if not isinstance(value, str):
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiProblem.field("invalid_request", name, "contains a character that is not valid Unicode") from None
        if "\x00" in value:
            raise ApiProblem.field("invalid_request", name, "contains a NUL character")


def api_user(request: Request, db: DbDep,
             credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Staff:
    if credentials is None:
        raise _unauthorized("Send an API token: Authorization: Bearer <token> (policydesk tokens create USER).")
    at = now(request)
    settings = request.app.state.settings
    with Session(db.app) as session, session.begin():
        owner = tokens.authenticate(session, token=credentials.credentials, now=at)
        limited = None if owner is None else admit(session, token_id=owner.token_id,
                                                    policy=RatePolicy.from_settings(settings), now=at)
    if owner is None:
        raise _unauthorized("The API token is not valid: unknown, expired or revoked, or its user is disabled.",
                            "invalid_token")
    if limited is not None:
        raise ApiProblem("rate_limited", (
            f"This token made {settings.API_RATE_LIMIT} requests in the last {settings.API_RATE_WINDOW_SECONDS} "
            f"seconds. Try again in {limited.retry_after_seconds} s."),
            headers={"Retry-After": str(limited.retry_after_seconds)})
    user = Staff(owner.user_name, owner.role)
    request.state.api_user = user  # problems answered to a known user are recorded
    check_text(**{**request.query_params, **request.path_params})
    return user


ApiUser = Annotated[Staff, Depends(api_user)]


def api_reviewer(user: ApiUser) -> Staff:
    if not user.is_compliance:
        raise ApiProblem("forbidden", "Trace search and checks are for compliance reviewers only.")
    return user


ApiReviewer = Annotated[Staff, Depends(api_reviewer)]


# -- bodies -------------------------------------------------------------------------------------

async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (422, field `body`) once it passes `limit` bytes, without
    reading the rest. Read only after the token is checked, so no anonymous caller makes the
    server buffer anything."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> ApiProblem:
    return ApiProblem.field("invalid_request", "body", f"the request body is larger than {limit} bytes")


def parse_body(raw: bytes, model: type[BaseModel]) -> BaseModel:
    """The body as `model`, or 422 `invalid_request` naming each field at fault."""
    try:
        data = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        raise ApiProblem.field("invalid_request", "body", "is not valid JSON") from None
    if not isinstance(data, dict):
        raise ApiProblem.field("invalid_request", "body", "must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiProblem("invalid_request", "The request body is not valid: " + "; ".join(
            f"{e['field']}: {e['message']}" for e in field_errors(exc.errors())), errors=field_errors(exc.errors()))


def field_errors(errors) -> list[dict[str, str]]:
    """Each error's field and message. The message is stored with the request's trace, so a
    field name the caller chose (an unknown key) is repeated only when `echoable`."""
    out = []
    for e in errors:
        loc = ".".join(str(part) for part in e.get("loc", ()) if part not in ("body", "query", "path"))
        if e.get("type") == "extra_forbidden":
            field, message = (loc, "unknown field") if echoable(loc) else ("body", "has an unknown field")
        else:
            field, message = loc if echoable(loc) else "body", e.get("msg", "is not valid")
        out.append({"field": field or "body", "message": screened(message)})
    return out


def body_schema(model: type[BaseModel]) -> dict:
    """`openapi_extra` for a route that reads its body itself (after the token check)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}
