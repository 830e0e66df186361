"""Staff accounts: keyword-only data-access functions that take a session."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.accounts.access import clearance_for
from policydesk.accounts.sessions import DISABLED, PASSWORD_CHANGED, ROLE_CHANGED, end_user_sessions
from policydesk.storage.models import User

_hasher = PasswordHasher()

# OWASP ASVS 4.0, 2.1.1: user-set passwords are at least 12 characters.
PASSWORD_MIN_LENGTH = 12


class UserError(ValueError):
    pass


def check_password_policy(*, name: str, password: str) -> None:
    """Refuse a password the policy does not allow, saying why (raises UserError)."""
    if len(password) < PASSWORD_MIN_LENGTH:
        raise UserError(f"the password must be at least {PASSWORD_MIN_LENGTH} characters long "
                        f"(this one has {len(password)})")
    if password.casefold() == name.casefold():
        raise UserError("the password must not be the user name")


def generate_password() -> str:
    """16 URL-safe characters (96 random bits): always passes the policy."""
    return secrets.token_urlsafe(12)


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


# Never a valid argon2 hash, so no password signs in to an account created by single sign-on
# (verify_password returns False on InvalidHashError) until `users set-password` gives it one.
NO_PASSWORD = "!sso"


def check_user_name(name: str) -> None:
    # '@' because identity providers often name users by e-mail address.
    if not name or len(name) > 64 or not name.replace("-", "").replace("_", "").replace(".", "").replace("@", "").isalnum():
        raise UserError(f"user name {name!r} must be 1-64 letters, digits, '.', '-', '_' or '@'")


def add_user(session: Session, *, name: str, role: str, password: str | None = None) -> tuple[User, str]:
    clearance_for(role)  # raises UnknownRoleError with the allowed roles
    check_user_name(name)
    if session.scalar(select(User).where(User.name == name)):
        raise UserError(f"user {name!r} already exists")
    password = password or generate_password()
    check_password_policy(name=name, password=password)
    user = User(name=name, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    return user, password


def set_role(session: Session, *, name: str, role: str) -> User:
    """Change the role; the user's sessions end, so the next request signs in under the new one."""
    clearance_for(role)
    user = existing_user(session, name)
    if user.role != role:
        user.role = role
        user.updated_at = func.now()
        end_user_sessions(session, user_id=user.id, reason=ROLE_CHANGED)
    return user


def set_password(session: Session, *, name: str, password: str | None = None) -> tuple[User, str]:
    """Set a new password (random when none is given); sessions signed in with the old one end."""
    user = existing_user(session, name)
    password = password or generate_password()
    check_password_policy(name=name, password=password)
    user.password_hash = hash_password(password)
    user.updated_at = func.now()
    end_user_sessions(session, user_id=user.id, reason=PASSWORD_CHANGED)
    return user, password


def disable_user(session: Session, *, name: str) -> User:
    """A disabled user cannot sign in, is signed out at once and cannot ask."""
    user = existing_user(session, name)
    if user.disabled_at is None:
        user.disabled_at = user.updated_at = func.now()
    end_user_sessions(session, user_id=user.id, reason=DISABLED)
    return user


def enable_user(session: Session, *, name: str) -> User:
    user = existing_user(session, name)
    if user.disabled_at is not None:
        user.disabled_at = None
        user.updated_at = func.now()
    return user


def existing_user(session: Session, name: str) -> User:
    """The user named `name`; UserError when there is none."""
    user = get_user(session, name=name)
    if user is None:
        raise UserError(f"no user named {name!r}")
    return user


def get_user(session: Session, *, name: str) -> User | None:
    return session.scalar(select(User).where(User.name == name))


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.name)))


def get_active_user(session: Session, *, name: str) -> User | None:
    """The user if they exist and are not disabled: who may sign in, stay signed in, or ask."""
    user = get_user(session, name=name)
    return user if user is not None and user.disabled_at is None else None


def authenticate(session: Session, *, name: str, password: str) -> User | None:
    user = get_active_user(session, name=name)
    # Verify against a dummy hash for unknown (or disabled) names so timing does not reveal
    # which names exist.
    if user is None:
        verify_password(_DUMMY_HASH, password)
        return None
    return user if verify_password(user.password_hash, password) else None


_DUMMY_HASH = _hasher.hash("not-a-real-password")
