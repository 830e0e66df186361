"""Single sign-on through OpenID Connect: who a verified ID token names, and with which role.

The identity provider (IdP) proves who signed in and lists their groups in one claim
(`OIDC_GROUPS_CLAIM`); `OIDC_ROLE_MAP` maps groups to PolicyDesk roles. At each sign-in:
- a user in no mapped group is refused, and nothing is written;
- the first sign-in creates the user with the mapped role, linked to the IdP account
  (`users.oidc_subject` = `iss|sub`), with no usable password;
- later sign-ins find the user by that link (never by name alone, so an IdP account cannot take
  over a local account that happens to share its name) and refresh the role from the claim; a
  changed role ends the user's other sessions, as `policydesk users set-role` does.
Between sign-ins the role in the database stays the source of truth on every request, exactly
as for local users (`policydesk users set-role` applies on the next request).

Accounts are written on the owner login, as `policydesk users ...` does: the application login
may only read `users` (start-up refuses otherwise, storage/security.py). The token exchange and
ID-token checks (signature, issuer, audience, expiry, nonce) are Authlib's (web/routes/sso.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.accounts.access import ROLES
from policydesk.accounts.sessions import ROLE_CHANGED, end_user_sessions
from policydesk.storage.models import User
from policydesk.accounts.users import NO_PASSWORD, UserError, check_user_name, get_user

REFUSED_NO_ROLE = ("Your account at the identity provider is not in any group that has a PolicyDesk role. "
                   "Ask IT to add you to the PolicyDesk group for your job.")
REFUSED_NAME_TAKEN = ("A PolicyDesk account named {name!r} already exists and is not linked to single sign-on. "
                      "Ask an administrator to link or rename it.")
REFUSED_DISABLED = "This PolicyDesk account is disabled. Ask an administrator."
REFUSED_NO_NAME = "The identity provider did not send a usable user name ({claim}). Ask IT to check the PolicyDesk set-up."


class SsoRefused(Exception):
    """The sign-in is refused; the message is safe to show the person signing in."""


def groups_of(claims: Mapping[str, Any], claim: str) -> list[str]:
    """The groups in a claim: a JSON list, or one string of space- or comma-separated names."""
    value = claims.get(claim)
    if isinstance(value, str):
        return [g for g in value.replace(",", " ").split() if g]
    if isinstance(value, (list, tuple)):
        return [str(g) for g in value]
    return []


def role_for_groups(groups: Iterable[str], role_map: Mapping[str, str]) -> str | None:
    """The most cleared role any of the groups maps to (ROLES is ordered least to most), or None."""
    roles = {role_map[g] for g in groups if g in role_map}
    return max(roles, key=ROLES.index) if roles else None


def sign_in(session: Session, *, issuer: str, claims: Mapping[str, Any], settings) -> User:
    """The user a verified ID token signs in, created or with the role refreshed; SsoRefused if not.
    Run in a transaction on the owner login."""
    role = role_for_groups(groups_of(claims, settings.OIDC_GROUPS_CLAIM), settings.OIDC_ROLE_MAP)
    if role is None:
        raise SsoRefused(REFUSED_NO_ROLE)
    subject = f"{issuer.rstrip('/')}|{claims['sub']}"
    user = session.scalar(select(User).where(User.oidc_subject == subject))
    if user is None:
        name = str(claims.get(settings.OIDC_USERNAME_CLAIM) or "")
        try:
            check_user_name(name)
        except UserError:
            raise SsoRefused(REFUSED_NO_NAME.format(claim=settings.OIDC_USERNAME_CLAIM)) from None
        if get_user(session, name=name) is not None:
            raise SsoRefused(REFUSED_NAME_TAKEN.format(name=name))
        user = User(name=name, role=role, password_hash=NO_PASSWORD, oidc_subject=subject)
        session.add(user)
    elif user.disabled_at is not None:
        raise SsoRefused(REFUSED_DISABLED)
    elif user.role != role:  # the provider's groups changed: sessions under the old role end
        user.role = role
        user.updated_at = func.now()
        end_user_sessions(session, user_id=user.id, reason=ROLE_CHANGED)
    session.flush()
    return user
