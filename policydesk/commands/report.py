"""`policydesk report`: reports for policy owners and compliance."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer
from sqlalchemy.orm import Session

from policydesk.commands.common import _database, _fail, _parse_date
from policydesk.config import get_settings

report_app = typer.Typer(help="Reports for policy owners and compliance.", no_args_is_help=True)


def _clearance_as(db, as_user: Optional[str]):
    """The clearance a report is computed with: that active user's, else compliance (the operator)."""
    from policydesk.accounts.access import clearance_for
    from policydesk.accounts.users import get_active_user

    if not as_user:
        return clearance_for("compliance")
    with Session(db.app) as session:
        user = get_active_user(session, name=as_user)
        if user is None:
            _fail(f"no active user named {as_user!r}")
        return clearance_for(user.role)


def _write(body: str, out: Optional[Path], what: str) -> None:
    if out is None:
        typer.echo(body, nl=False)
    else:
        out.write_text(body, encoding="utf-8")
        typer.echo(f"wrote the {what} to {out}", err=True)


def _standalone(template: str, **context) -> str:
    from policydesk.web.app import STATIC_DIR
    from policydesk.web.templating import TEMPLATES

    return TEMPLATES.get_template(template).render(
        **context, standalone=True, css=(STATIC_DIR / "app.css").read_text(encoding="utf-8"))


@report_app.command("gaps")
def report_gaps(
        since: Annotated[str, typer.Option("--since", help="First day (YYYY-MM-DD).")],
        until: Annotated[Optional[str], typer.Option("--until", help="Last day (default: today).")] = None,
        owner: Annotated[Optional[str], typer.Option("--owner", help="Only this source owner's sources.")] = None,
        fmt: Annotated[str, typer.Option("--format", help="csv or html.")] = "csv",
        as_user: Annotated[Optional[str], typer.Option("--as", help="Compute as this user's clearance "
                                                       "(default: compliance, for the operator).")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", help="File to write (default: stdout).")] = None,
) -> None:
    """Questions asked, answered, not answered, refused, conflicts and feedback per owner and source."""
    from policydesk.providers import embedding_for
    from policydesk.reports.gaps import gaps_report
    from policydesk.reports.tables import report_csv

    if fmt not in ("csv", "html"):
        _fail("--format must be csv or html")
    settings = get_settings()
    today = settings.today()
    # Traces carry real timestamps, so the default end is the real date; `today` (the business
    # date, settable for demos) decides which versions count as scheduled.
    start = _parse_date(since, "--since")
    end = _parse_date(until, "--until") or datetime.now(timezone.utc).date()
    if end < start:
        _fail(f"--until ({end}) is before --since ({start})")
    with _database() as db:
        clearance = _clearance_as(db, as_user)
        report = gaps_report(db, clearance, start=start, end=end, today=today, owner=owner,
                             embed_model=embedding_for(settings))
    if fmt == "csv":
        body = report_csv(report)
    else:
        from policydesk.reports.tables import report_view

        body = _standalone("reports/gaps_document.html", **report_view(report), form={"owner": owner or ""})
    _write(body, out, "gaps report")


@report_app.command("impact")
def report_impact(
        since: Annotated[str, typer.Option("--since", help="First day answers were given (YYYY-MM-DD).")],
        until: Annotated[Optional[str], typer.Option("--until", help="Last day (default: today).")] = None,
        fmt: Annotated[str, typer.Option("--format", help="jsonl, csv or html.")] = "jsonl",
        as_user: Annotated[Optional[str], typer.Option("--as", help="Compute as this user's clearance "
                                                       "(default: compliance, for the operator).")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", help="File to write (default: stdout).")] = None,
) -> None:
    """Answers given in the period whose cited section has since been edited or superseded."""
    import getpass

    from policydesk.reports import impact

    if fmt not in impact.FORMATS:
        _fail(f"--format must be one of {', '.join(impact.FORMATS)}")
    start = _parse_date(since, "--since")
    end = _parse_date(until, "--until") or datetime.now(timezone.utc).date()
    if end < start:
        _fail(f"--until ({end}) is before --since ({start})")
    with _database() as db:
        clearance = _clearance_as(db, as_user)
        rows = impact.impact_rows(db, clearance, start=start, end=end)
        impact.record_view(db, actor=as_user or getpass.getuser(), rows=rows, start=start, end=end, fmt=fmt,
                           role=clearance.role)
    if fmt == "jsonl":
        body = impact.impact_jsonl(rows)
    elif fmt == "csv":
        body = impact.impact_csv(rows)
    else:
        body = _standalone("reports/impact_document.html",
                           **impact.impact_view(rows, start=start, end=end, viewer_role=clearance.role))
    _write(body, out, "impact list")


@report_app.command("owners")
def report_owners(
        since: Annotated[Optional[str], typer.Option("--since", help="First day of questions (default: 30 days ago).")] = None,
        until: Annotated[Optional[str], typer.Option("--until", help="Last day (default: today).")] = None,
        owner: Annotated[Optional[str], typer.Option("--owner", help="Only this source owner.")] = None,
        directory: Annotated[Optional[Path], typer.Option("--dir", help="The document folder, for the manifest's "
                                                          "review_every (default: POLICYDESK_SYNC_DIR).")] = None,
        fmt: Annotated[str, typer.Option("--format", help="csv or html.")] = "csv",
        as_user: Annotated[Optional[str], typer.Option("--as", help="Compute as this user's clearance "
                                                       "(default: compliance, for the operator).")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", help="File to write (default: stdout).")] = None,
) -> None:
    """Per source owner: sources not yet synced, past review, with a recent or coming version, unanswered questions."""
    from datetime import timedelta

    from policydesk.ingest import IngestError
    from policydesk.providers import embedding_for
    from policydesk.reports.owners import owners_csv, owners_report

    if fmt not in ("csv", "html"):
        _fail("--format must be csv or html")
    settings = get_settings()
    end = _parse_date(until, "--until") or datetime.now(timezone.utc).date()
    start = _parse_date(since, "--since") or end - timedelta(days=30)
    if end < start:
        _fail(f"--until ({end}) is before --since ({start})")
    with _database() as db:
        try:
            report = owners_report(db, _clearance_as(db, as_user), start=start, end=end, today=settings.today(),
                                   recent_days=settings.RECENT_CHANGE_DAYS, directory=directory or settings.SYNC_DIR,
                                   owner=owner, embed_model=embedding_for(settings))
        except IngestError as exc:
            _fail(f"the folder's manifest could not be read: {exc}")
    body = owners_csv(report) if fmt == "csv" else _standalone(
        "reports/owners_document.html", report=report, form={"owner": owner or ""})
    _write(body, out, "owners report")
