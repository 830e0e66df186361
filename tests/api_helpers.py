"""Helpers for the JSON API tests: tokens made on the owner login, bearer headers."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.orm import Session

from policydesk.accounts.tokens import create_token
from policydesk.accounts.users import set_role


def make_token(db, user_name: str, *, days: int = 30, now: datetime | None = None) -> str:
    with Session(db.owner) as session, session.begin():
        token, _ = create_token(session, user_name=user_name, days=days, now=now or datetime.now(timezone.utc))
    return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def change_role(db, name: str, role: str) -> None:
    with Session(db.owner) as session, session.begin():
        set_role(session, name=name, role=role)


def is_problem(response, status: int, kind: str) -> dict:
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers["content-type"]
    body = response.json()
    assert body["type"] == kind and body["status"] == status, body
    return body
