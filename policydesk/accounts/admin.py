"""What the admin pages do to staff accounts and API tokens.

Each action is one transaction on the owner login (the application login may only read `users`
and `api_tokens`), and that transaction also writes the action's audit_log row (actor, action,
target), so a change is never made without its record or recorded without being made. A row
never holds a password or a token secret: it says only whether a password was generated or
given, and names a token by its public key id.

The account changes are `accounts.users` and `accounts.tokens`, as the CLI runs them: a role
change, a disable or a new password ends the user's sessions there. An admin may not change
their own role, disable themselves or reset their own password here: each would sign them out
of the page that shows the result (and the last admin could lock everyone out); another admin,
or the CLI on the server, can.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.accounts import tokens, users
from policydesk.accounts.access import UnknownRoleError
from policydesk.storage.audit import insert_audit
from policydesk.storage.models import User, WebSession
from policydesk.storage.storable import screened

# A token the admin page creates lives at most this long (the form's days; the CLI has no cap).
MAX_TOKEN_DAYS = 3650


class AdminError(ValueError):
    """The action was refused and nothing was changed; the message is safe to show the admin."""


@dataclass(frozen=True)
class Account:
    name: str
    role: str
    disabled_at: datetime | None
    last_sign_in: datetime | None  # the newest session's start; None when none is kept
    single_sign_on: bool


@contextmanager
def _owner(db) -> Iterator[Session]:
    try:
        with Session(db.owner) as session, session.begin():
            yield session
    except (users.UserError, UnknownRoleError, tokens.TokenError) as exc:
        raise AdminError(str(exc)) from None


def _audit(session: Session, *, actor: str, action: str, target: str, **details) -> None:
    insert_audit(session.connection(), actor=actor, action=action, target=target, details=details)


def _not_self(actor: str, name: str, what: str) -> None:
    if actor == name:
        raise AdminError(f"You cannot {what} yourself here: it would sign you out. "
                         "Another admin can, or `policydesk users` on the server.")


def accounts(db) -> list[Account]:
    last = (select(WebSession.user_id, func.max(WebSession.started_at).label("at"))
            .group_by(WebSession.user_id).subquery())
    with Session(db.owner) as session:
        rows = session.execute(select(User, last.c.at).outerjoin(last, last.c.user_id == User.id)
                               .order_by(User.name)).all()
    return [Account(u.name, u.role, u.disabled_at, at, u.oidc_subject is not None) for u, at in rows]


def add_account(db, *, actor: str, name: str, role: str, password: str | None = None) -> str:
    """A new user; returns the password (generated when none is given), to be shown once."""
    with _owner(db) as session:
        user, chosen = users.add_user(session, name=name.strip(), role=role, password=password or None)
        _audit(session, actor=actor, action="user_added", target=user.name, role=user.role,
               password="given" if password else "generated")
    return chosen


def change_role(db, *, actor: str, name: str, role: str) -> None:
    _not_self(actor, name, "change the role of")
    with _owner(db) as session:
        before = users.existing_user(session, name).role  # a UserError reads as an AdminError (_owner)
        user = users.set_role(session, name=name, role=role)
        _audit(session, actor=actor, action="user_role_changed", target=user.name, role_before=before,
               role=user.role)


def set_enabled(db, *, actor: str, name: str, enabled: bool) -> None:
    if not enabled:
        _not_self(actor, name, "disable")
    with _owner(db) as session:
        change: Callable[..., User] = users.enable_user if enabled else users.disable_user
        user = change(session, name=name)
        _audit(session, actor=actor, action="user_enabled" if enabled else "user_disabled", target=user.name)


def reset_password(db, *, actor: str, name: str, password: str | None = None) -> str:
    """A new password (generated when none is given), to be shown once; the user's sessions end."""
    _not_self(actor, name, "reset the password of")
    with _owner(db) as session:
        user, chosen = users.set_password(session, name=name, password=password or None)
        _audit(session, actor=actor, action="user_password_reset", target=user.name,
               password="given" if password else "generated")
    return chosen


def api_tokens(db) -> list[tokens.TokenInfo]:
    with Session(db.owner) as session:
        return tokens.list_tokens(session)


def create_api_token(db, *, actor: str, user_name: str, days: int, label: str, now: datetime
                     ) -> tuple[str, tokens.TokenInfo]:
    """A new token for an existing user: (the token, to be shown once; its info)."""
    if not 1 <= days <= MAX_TOKEN_DAYS:
        raise AdminError(f"a token lasts 1 to {MAX_TOKEN_DAYS} days")
    with _owner(db) as session:
        token, info = tokens.create_token(session, user_name=user_name, days=days, now=now, label=label.strip())
        _audit(session, actor=actor, action="api_token_created", target=info.key_id, user=info.user_name,
               label=screened(info.label), expires_at=info.expires_at.isoformat())
    return token, info


def revoke_api_token(db, *, actor: str, key_id: str, now: datetime) -> tokens.TokenInfo:
    with _owner(db) as session:
        info = tokens.revoke_token(session, key_id=key_id, now=now)
        _audit(session, actor=actor, action="api_token_revoked", target=info.key_id, user=info.user_name)
    return info
