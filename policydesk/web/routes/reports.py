"""The gaps report page (supervisors and compliance), computed in the viewer's own scope."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response

from policydesk.versions.dates import DateInputError, parse_input_date
from policydesk.reports import impact
from policydesk.reports.owners import owners_csv, owners_report
from policydesk.reports.gaps import gaps_report
from policydesk.reports.tables import report_csv, report_view
from policydesk.web.deps import CurrentUser, DbDep, PipelineDep, Staff
from policydesk.web.templating import render

REPORT_ROLES = ("supervisor", "compliance")
DEFAULT_DAYS = 30


def require_report_reader(user: CurrentUser) -> Staff:
    if user.role not in REPORT_ROLES:
        raise HTTPException(status_code=403, detail="Reports are for supervisors and compliance reviewers.")
    return user


router = APIRouter(prefix="/reports", tags=["reports"], dependencies=[Depends(require_report_reader)])


@router.get("/gaps")
def show_gaps(request: Request, user: CurrentUser, db: DbDep, pipeline: PipelineDep, since: str = "",
              until: str = "", owner: str = "", format: str = "html"):  # noqa: A002 - the query parameter
    today = pipeline.today  # the business date: which versions are scheduled
    asked_today = datetime.now(timezone.utc).date()  # traces carry real timestamps
    form = {"since": since, "until": until, "owner": owner}
    try:
        start = parse_input_date(since, "since") or asked_today - timedelta(days=DEFAULT_DAYS)
        end = parse_input_date(until, "until") or asked_today
        report = gaps_report(db, user.clearance, start=start, end=end, today=today, owner=owner.strip() or None,
                             embed_model=pipeline.embed_model,
                             min_similarity=request.app.state.settings.GAP_MIN_SIMILARITY)
    except (DateInputError, ValueError) as exc:
        return render(request, "reports/gaps.html", {"form": form, "report": None, "problem": str(exc)},
                      status_code=422)
    if format == "csv":
        return Response(report_csv(report), media_type="text/csv", headers={
            "Content-Disposition": f'attachment; filename="policydesk-gaps-{start}-{end}.csv"'})
    return render(request, "reports/gaps.html", {"form": form, "problem": None, **report_view(report)})


@router.get("/impact")
def show_impact(request: Request, user: CurrentUser, db: DbDep, since: str = "", until: str = "",
                format: str = "html"):  # noqa: A002 - the query parameter
    """Answers whose cited text changed since; every view and download is audit-logged."""
    asked_today = datetime.now(timezone.utc).date()
    form = {"since": since, "until": until}
    try:
        if format not in impact.FORMATS:
            raise ValueError(f"format must be one of {', '.join(impact.FORMATS)}")
        start = parse_input_date(since, "since") or asked_today - timedelta(days=DEFAULT_DAYS)
        end = parse_input_date(until, "until") or asked_today
        rows = impact.impact_rows(db, user.clearance, start=start, end=end)
    except (DateInputError, ValueError) as exc:
        return render(request, "reports/impact.html", {"form": form, "period": None, "problem": str(exc)},
                      status_code=422)
    impact.record_view(db, actor=user.name, rows=rows, start=start, end=end, fmt=format, role=user.role)
    if format == "csv":
        return Response(impact.impact_csv(rows), media_type="text/csv", headers={
            "Content-Disposition": f'attachment; filename="policydesk-impact-{start}-{end}.csv"'})
    if format == "jsonl":
        return Response(impact.impact_jsonl(rows), media_type="application/x-ndjson", headers={
            "Content-Disposition": f'attachment; filename="policydesk-impact-{start}-{end}.jsonl"'})
    return render(request, "reports/impact.html", {
        "form": form, "problem": None, **impact.impact_view(rows, start=start, end=end, viewer_role=user.role)})


@router.get("/owners")
def show_owners(request: Request, user: CurrentUser, db: DbDep, pipeline: PipelineDep, since: str = "",
                until: str = "", owner: str = "", format: str = "html"):  # noqa: A002 - the query parameter
    """Per owner: not yet synced, past review, recent or coming versions, unanswered questions."""
    settings = request.app.state.settings
    asked_today = datetime.now(timezone.utc).date()
    form = {"since": since, "until": until, "owner": owner}
    try:
        start = parse_input_date(since, "since") or asked_today - timedelta(days=DEFAULT_DAYS)
        end = parse_input_date(until, "until") or asked_today
        report = owners_report(db, user.clearance, start=start, end=end, today=pipeline.today,
                               recent_days=settings.RECENT_CHANGE_DAYS, directory=settings.SYNC_DIR,
                               owner=owner.strip() or None, embed_model=pipeline.embed_model,
                               min_similarity=settings.GAP_MIN_SIMILARITY)
    except (DateInputError, ValueError) as exc:
        return render(request, "reports/owners.html", {"form": form, "report": None, "problem": str(exc)},
                      status_code=422)
    if format == "csv":
        return Response(owners_csv(report), media_type="text/csv", headers={
            "Content-Disposition": f'attachment; filename="policydesk-owners-{start}-{end}.csv"'})
    return render(request, "reports/owners.html", {"form": form, "problem": None, "report": report})
