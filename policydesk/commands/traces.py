"""`policydesk traces`: retention purge, chain verification, exports for auditors; `policydesk
bookkeeping purge`: retention for sign-in attempts and API request records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from policydesk.commands.common import _database, _fail, _parse_date
from policydesk.config import get_settings

traces_app = typer.Typer(help="Manage stored traces.", no_args_is_help=True)


@traces_app.command("purge")
def traces_purge(older_than: Annotated[Optional[int], typer.Option("--older-than", help="Days.")] = None,
                 by: Annotated[Optional[str], typer.Option("--by", help="Who runs the purge (default: OS user).")] = None,
                 ) -> None:
    """Delete traces older than DAYS (default from settings) as the owner; the chain cut and an
    audit entry are recorded, so `traces verify` still holds."""
    import getpass

    from policydesk.proof.tracing import purge_traces

    days = older_than if older_than is not None else get_settings().TRACE_RETENTION_DAYS
    if days <= 0:
        _fail("--older-than must be a positive number of days")
    with _database() as db:
        n = purge_traces(db, older_than_days=days, actor=by or getpass.getuser())
    typer.echo(f"deleted {n} traces older than {days} days")


@traces_app.command("export")
def traces_export(
        date_from: Annotated[str, typer.Option("--from", help="First day asked (YYYY-MM-DD).")],
        date_to: Annotated[str, typer.Option("--to", help="Last day asked (YYYY-MM-DD).")],
        user: Annotated[Optional[str], typer.Option("--user", help="Only this staff member's traces.")] = None,
        fmt: Annotated[str, typer.Option("--format", help="jsonl or csv.")] = "jsonl",
        out: Annotated[Optional[Path], typer.Option("--out", help="File to write (default: stdout).")] = None,
        by: Annotated[Optional[str], typer.Option("--by", help="Who exports, for the audit log (default: OS user).")] = None,
) -> None:
    """Export traces for auditors, each with its hash-chain link (verify offline: docs/security.md)."""
    import getpass

    from policydesk.proof.exports import FORMATS, export_traces, render

    if fmt not in FORMATS:
        _fail(f"--format must be one of: {', '.join(FORMATS)}")
    start, end = _parse_date(date_from, "--from"), _parse_date(date_to, "--to")
    if end < start:
        _fail(f"--to ({end}) is before --from ({start})")
    with _database() as db:
        records = export_traces(db, reviewer=by or getpass.getuser(), start=start, end=end, user=user)
    body = "".join(render(records, fmt))
    if out is None:
        typer.echo(body, nl=False)
    else:
        out.write_text(body, encoding="utf-8")
        typer.echo(f"wrote {len(records)} traces to {out}", err=True)


@traces_app.command("verify")
def traces_verify() -> None:
    """Walk the trace and audit-log hash chains; exit 1 naming the first broken row."""
    from policydesk.storage.chain import CHAINED_TABLES, verify_chain

    with _database() as db:
        reports = [verify_chain(db.owner, table) for table in CHAINED_TABLES]
    for r in reports:
        if r.ok:
            typer.echo(f"{r.table}: {r.rows} rows verify (chain head seq {r.head_seq if r.head_seq else '-'})")
        else:
            typer.secho(f"{r.table}: BROKEN at {r.broken}; {r.rows} rows before it verify", fg=typer.colors.RED)
    if not all(r.ok for r in reports):
        raise typer.Exit(1)


bookkeeping_app = typer.Typer(help="Manage sign-in attempts and API request records.", no_args_is_help=True)


@bookkeeping_app.command("purge")
def bookkeeping_purge(older_than: Annotated[Optional[int], typer.Option("--older-than", help="Days.")] = None,
                      by: Annotated[Optional[str], typer.Option("--by", help="Who runs the purge (default: OS user).")] = None,
                      ) -> None:
    """Delete sign-in attempts and API request records older than DAYS (default from settings) as the
    owner, with an audit entry; rows the throttles still read are never deleted."""
    import getpass

    from policydesk.storage.retention import purge_bookkeeping

    settings = get_settings()
    days = older_than if older_than is not None else settings.BOOKKEEPING_RETENTION_DAYS
    with _database() as db:
        try:
            removed = purge_bookkeeping(db.owner, settings, older_than_days=days, actor=by or getpass.getuser())
        except ValueError as exc:
            _fail(f"--older-than: {exc}")
    typer.echo(", ".join(f"deleted {n} {table} rows" for table, n in removed.items()) + f" older than {days} days")
