"""Staff accounts: keyword-only data-access functions that take a session."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.access import clearance_for
from policydesk.storage.models import User

_hasher = PasswordHasher()


class UserError(ValueError):
    pass


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def add_user(session: Session, *, name: str, role: str, password: str | None = None) -> tuple[User, str]:
    clearance_for(role)  # raises UnknownRoleError with the allowed roles
    if not name or len(name) > 64 or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UserError(f"user name {name!r} must be 1-64 letters, digits, '.', '-' or '_'")
    if session.scalar(select(User).where(User.name == name)):
        raise UserError(f"user {name!r} already exists")
    password = password or secrets.token_urlsafe(12)
    user = User(name=name, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    return user, password


def set_role(session: Session, *, name: str, role: str) -> User:
    clearance_for(role)
    user = get_user(session, name=name)
    if user is None:
        raise UserError(f"no user named {name!r}")
    user.role = role
    user.updated_at = func.now()
    return user


def get_user(session: Session, *, name: str) -> User | None:
    return session.scalar(select(User).where(User.name == name))


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.name)))


def authenticate(session: Session, *, name: str, password: str) -> User | None:
    user = get_user(session, name=name)
    # Verify against a dummy hash for unknown names so timing does not reveal which names exist.
    if user is None:
        verify_password(_DUMMY_HASH, password)
        return None
    return user if verify_password(user.password_hash, password) else None


_DUMMY_HASH = _hasher.hash("not-a-real-password")
