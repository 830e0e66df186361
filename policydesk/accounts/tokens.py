"""Bearer tokens for the JSON API: keyword-only data-access functions that take a session.

A token reads `pdk_<key id>_<secret>`. The key id (12 hex characters) is public: it names the
token in `policydesk tokens list/revoke` and finds its row. The secret is 256 random bits; only
its SHA-256 is stored and it is compared in constant time. A token is printed once, by
`policydesk tokens create`, and cannot be shown again.

Creating and revoking run on the owner login (the CLI); the application login may only read
`api_tokens` (migration 0009), so no request can mint, extend or un-revoke a token. A token
carries no role: `authenticate` returns the user's CURRENT role and refuses a disabled user,
so a role change or a disable applies on the token's very next request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.storage.models import ApiRequest, ApiToken, User
from policydesk.accounts.users import UserError, get_user

PREFIX = "pdk"
_TOKEN = re.compile(rf"^{PREFIX}_([a-f0-9]{{12}})_([A-Za-z0-9_-]{{43}})$")
_DUMMY_DIGEST = "0" * 64


class TokenError(ValueError):
    pass


@dataclass(frozen=True)
class TokenOwner:
    """Who a valid token acts for, as the database says now."""

    token_id: int
    key_id: str
    user_name: str
    role: str


@dataclass(frozen=True)
class TokenInfo:
    key_id: str
    user_name: str
    label: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(session: Session, *, user_name: str, days: int, now: datetime, label: str = "") -> tuple[str, TokenInfo]:
    """A new token for an existing user, valid for `days`; returns (the token, shown once; its info)."""
    if days <= 0:
        raise TokenError("--expires must be a positive number of days")
    user = get_user(session, name=user_name)
    if user is None:
        raise UserError(f"no user named {user_name!r}")
    key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    row = ApiToken(key_id=key_id, secret_sha256=_digest(secret), user_id=user.id, label=label,
                   created_at=now, expires_at=now + timedelta(days=days))
    session.add(row)
    session.flush()
    info = TokenInfo(key_id, user.name, label, row.created_at, row.expires_at, None, None)
    return f"{PREFIX}_{key_id}_{secret}", info


def revoke_token(session: Session, *, key_id: str, now: datetime) -> TokenInfo:
    """Revoke a token by its key id (idempotent: a revoked token keeps its first revocation time)."""
    row = session.scalar(select(ApiToken).where(ApiToken.key_id == key_id.strip().lower()))
    if row is None:
        raise TokenError(f"no token with key id {key_id!r} (see `policydesk tokens list`)")
    if row.revoked_at is None:
        row.revoked_at = now
    session.flush()
    return next(t for t in list_tokens(session) if t.key_id == row.key_id)


def list_tokens(session: Session, *, user_name: str | None = None) -> list[TokenInfo]:
    last_used = (select(ApiRequest.token_id, func.max(ApiRequest.at).label("at"))
                 .group_by(ApiRequest.token_id).subquery())
    stmt = (select(ApiToken, User.name, last_used.c.at).join(User, User.id == ApiToken.user_id)
            .outerjoin(last_used, last_used.c.token_id == ApiToken.id)
            .order_by(User.name, ApiToken.created_at))
    if user_name is not None:
        stmt = stmt.where(User.name == user_name)
    return [TokenInfo(t.key_id, name, t.label, t.created_at, t.expires_at, t.revoked_at, at)
            for t, name, at in session.execute(stmt).all()]


def authenticate(session: Session, *, token: str, now: datetime) -> TokenOwner | None:
    """The token's user and their current role, or None if the token is malformed, unknown,
    expired or revoked, or its user is disabled. Every refusal looks the same to the caller."""
    match = _TOKEN.match(token or "")
    key_id, secret = match.groups() if match else ("", "")
    row = session.execute(
        select(ApiToken.id, ApiToken.secret_sha256, ApiToken.expires_at, ApiToken.revoked_at,
               User.name, User.role, User.disabled_at)
        .join(User, User.id == ApiToken.user_id).where(ApiToken.key_id == key_id)).first() if match else None
    # Compare even when there is no row, so a known key id with a wrong secret takes the same time.
    same = hmac.compare_digest(_digest(secret), row.secret_sha256 if row else _DUMMY_DIGEST)
    if row is None or not same or row.revoked_at is not None or row.expires_at <= now or row.disabled_at is not None:
        return None
    return TokenOwner(row.id, key_id, row.name, row.role)
