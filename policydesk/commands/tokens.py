"""`policydesk tokens create|list|revoke`: API tokens, managed on the owner login (docs/api.md)."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Annotated, Optional

import typer
from sqlalchemy.orm import Session

from policydesk.commands.common import _database, _fail

tokens_app = typer.Typer(help="Manage API tokens (docs/api.md).", no_args_is_help=True)


@contextmanager
def _owner_session():
    with _database() as db, Session(db.owner) as session, session.begin():
        yield session


def _when(at: datetime | None) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if at else "-"


@tokens_app.command("create")
def tokens_create(user: str,
                  expires: Annotated[Optional[int], typer.Option("--expires", help="Days until it expires (default POLICYDESK_API_TOKEN_DEFAULT_DAYS, 90).")] = None,
                  label: Annotated[str, typer.Option("--label", help="What the token is for, e.g. the tool using it.")] = "") -> None:
    """Create a token for USER. It is printed once and cannot be shown again (only its hash is kept)."""
    from policydesk.config import get_settings
    from policydesk.accounts.tokens import TokenError, create_token
    from policydesk.accounts.users import UserError

    days = expires if expires is not None else get_settings().API_TOKEN_DEFAULT_DAYS
    try:
        with _owner_session() as session:
            token, info = create_token(session, user_name=user, days=days, now=datetime.now(timezone.utc), label=label)
    except (TokenError, UserError) as exc:
        _fail(str(exc))
    typer.echo(f"token {info.key_id} for {info.user_name}, expires {_when(info.expires_at)}; shown once, keep it secret:")
    typer.echo(token)


@tokens_app.command("list")
def tokens_list(user: Annotated[Optional[str], typer.Argument(help="Only this user's tokens.")] = None) -> None:
    """Key id, user, label, created, expires, revoked and last used of each token (never the token)."""
    from policydesk.accounts.tokens import list_tokens

    now = datetime.now(timezone.utc)
    with _owner_session() as session:
        rows = list_tokens(session, user_name=user)
    for t in rows:
        state = "revoked" if t.revoked_at else "expired" if t.expires_at <= now else "active"
        typer.echo(f"{t.key_id}\t{t.user_name}\t{state}\tcreated {_when(t.created_at)}\texpires {_when(t.expires_at)}"
                   f"\trevoked {_when(t.revoked_at)}\tlast used {_when(t.last_used_at)}\t{t.label}")


@tokens_app.command("revoke")
def tokens_revoke(key_id: str) -> None:
    """Revoke a token by its key id (from `tokens list`); its next request is refused."""
    from policydesk.accounts.tokens import TokenError, revoke_token

    try:
        with _owner_session() as session:
            info = revoke_token(session, key_id=key_id, now=datetime.now(timezone.utc))
    except TokenError as exc:
        _fail(str(exc))
    typer.echo(f"token {info.key_id} of {info.user_name} is revoked (since {_when(info.revoked_at)})")
