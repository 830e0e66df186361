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
    from policydesk.access import clearance_for
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
        clearance = clearance_for("compliance")
        if as_user:
            from policydesk.users import get_active_user

            with Session(db.app) as session:
                user = get_active_user(session, name=as_user)
                if user is None:
                    _fail(f"no active user named {as_user!r}")
                clearance = clearance_for(user.role)
        report = gaps_report(db, clearance, start=start, end=end, today=today, owner=owner,
                             embed_model=embedding_for(settings))
    if fmt == "csv":
        body = report_csv(report)
    else:
        from policydesk.reports.tables import report_view
        from policydesk.web.app import STATIC_DIR
        from policydesk.web.templating import TEMPLATES

        body = TEMPLATES.get_template("reports/gaps_document.html").render(
            **report_view(report), form={"owner": owner or ""}, standalone=True,
            css=(STATIC_DIR / "app.css").read_text(encoding="utf-8"))
    if out is None:
        typer.echo(body, nl=False)
    else:
        out.write_text(body, encoding="utf-8")
        typer.echo(f"wrote the gaps report to {out}", err=True)
