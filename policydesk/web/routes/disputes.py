"""Disputes (compliance reviewers only): search, open, check against a member date, replay.

The whole router depends on `require_compliance`: every other role gets 403 on every URL here,
decided in code on each request from the role read from the database.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request, Response

from policydesk.proof import disputes

from policydesk.proof import exports
from policydesk.versions.dates import DateInputError, parse_input_date
from policydesk.proof.feedback import feedback_for
from policydesk.products import UnknownLineOfBusiness, checked_product, product_label, valid_products
from policydesk.storage.models import Trace
from policydesk.versions import basis_title
from policydesk.web.deps import ComplianceUser, DbDep, PipelineDep, Staff, require_compliance
from policydesk.web.templating import render
from policydesk.web.views import answer_view, citation_url, dates_line, timelines

router = APIRouter(prefix="/disputes", tags=["disputes"], dependencies=[Depends(require_compliance)])


@router.get("")
def search_answers(request: Request, reviewer: ComplianceUser, db: DbDep, words: str = "", staff: str = "",
                   asked_from: str = "", asked_to: str = "", marked_wrong: str = ""):
    form = {"words": words, "staff": staff, "asked_from": asked_from, "asked_to": asked_to, "marked_wrong": marked_wrong}
    ctx = {"form": form, "hits": None, "problem": None}
    if any(v.strip() for v in form.values()):
        try:
            start = parse_input_date(asked_from, "asked from")
            end = parse_input_date(asked_to, "asked to")
        except DateInputError as exc:
            ctx["problem"] = str(exc)
            return render(request, "disputes/search.html", ctx, block="results", status_code=422)
        ctx["hits"] = disputes.search(db, words, staff, start, end, reviewer=reviewer.name,
                                      marked_wrong=bool(marked_wrong.strip()))
        ctx["dates_entered"] = {h.id: dates_entered(h.dates, h.dates_from_question, "none") for h in ctx["hits"]}
    return render(request, "disputes/search.html", ctx, block="results")


def dates_entered(dates: dict | None, from_question: bool, none: str) -> str:
    """The dates the asker entered, or `none`; dates read from the question are said to be."""
    if from_question and dates:
        return f"{none} ({dates_line(dates, '')} read from the question)"
    return dates_line(dates, none)


@router.get("/audit")
def list_audit(request: Request, reviewer: ComplianceUser, db: DbDep, actor: str = "", action: str = "",
               logged_from: str = "", logged_to: str = ""):
    form = {"actor": actor.strip(), "action": action.strip(), "logged_from": logged_from, "logged_to": logged_to}
    actions = disputes.audit_actions(db, reviewer=reviewer.name)
    ctx = {"form": form, "actions": actions, "rows": None, "problem": None, "limit": disputes.AUDIT_LIMIT}
    try:
        start = parse_input_date(logged_from, "logged from")
        end = parse_input_date(logged_to, "logged to")
    except DateInputError as exc:
        ctx["problem"] = str(exc)
    else:
        if start and end and start > end:
            ctx["problem"] = f"'logged from' ({start}) is after 'logged to' ({end})."
        elif form["action"] and form["action"] not in actions:
            ctx["problem"] = f"No action '{form['action']}' is logged; choose one of: {', '.join(actions)}."
    if ctx["problem"]:  # nothing is listed for a filter that cannot be read
        return render(request, "disputes/audit.html", ctx, status_code=422)
    entries = disputes.audit_entries(db, reviewer=reviewer.name, actor=form["actor"] or None,
                                     action=form["action"] or None, logged_from=start, logged_to=end)
    ctx["rows"] = [{
        "at": e.at.strftime("%Y-%m-%d %H:%M:%S %Z").strip(), "actor": e.actor, "action": e.action, "target": e.target,
        "target_url": f"/disputes/{e.target}" if e.action in ("open", "check", "replay") and e.target else None,
        "details": [(key.replace("_", " "), _detail(value)) for key, value in sorted((e.details or {}).items())],
    } for e in entries]
    return render(request, "disputes/audit.html", ctx)


def _detail(value) -> str:
    """One audit detail as a reader takes it in: lists and records spelled out, not JSON."""
    if value is None or value == [] or value == {}:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')}: {_detail(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_detail(v) for v in value)
    return str(value)


@router.get("/export")
def export_answers(request: Request, reviewer: ComplianceUser, db: DbDep, asked_from: str = "", asked_to: str = "",
                   staff: str = "", format: str = "jsonl"):  # noqa: A002 - the query parameter's name
    """Every trace asked in the period (optionally one staff member's), with its chain link."""
    try:
        start = parse_input_date(asked_from, "asked from")
        end = parse_input_date(asked_to, "asked to")
        if start is None or end is None:
            raise DateInputError("Enter both 'asked from' and 'asked to' to export a period.")
        records = exports.export_traces(db, reviewer=reviewer.name, start=start, end=end, user=staff)
        body = "".join(exports.render(records, format))
    except (DateInputError, exports.ExportError) as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None
    media = "application/x-ndjson" if format == "jsonl" else "text/csv"
    name = f"policydesk-traces-{start}-{end}.{format}"
    return Response(body, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/{trace_id}")
def open_answer(request: Request, reviewer: ComplianceUser, db: DbDep, pipeline: PipelineDep, trace_id: str):
    trace = disputes.open(db, _trace_id(trace_id), reviewer=reviewer.name)
    if trace is None:
        raise HTTPException(status_code=404, detail="No answer with that id.")
    return render(request, "disputes/answer.html", _answer_context(db, pipeline, reviewer, trace))


@router.post("/{trace_id}/check")
def check_answer(request: Request, reviewer: ComplianceUser, db: DbDep, pipeline: PipelineDep, trace_id: str,
                 member_date: Annotated[str, Form()] = "", member_product: Annotated[str, Form()] = ""):
    trace = _load(db, trace_id, reviewer)
    ctx = _answer_context(db, pipeline, reviewer, trace, member_date=member_date, member_product=member_product)
    day = _member_date(member_date, ctx, "check_problem")
    product = _member_product(db, reviewer, member_product, ctx, "check_problem")
    if day is None or product is False:
        return render(request, "disputes/answer.html", ctx, block="verdicts", status_code=422)
    ctx["verdicts"] = disputes.check(db, trace, day, reviewer=reviewer.name, member_product=product)
    return render(request, "disputes/answer.html", ctx, block="verdicts")


@router.post("/{trace_id}/replay")
def replay_answer(request: Request, reviewer: ComplianceUser, db: DbDep, pipeline: PipelineDep, trace_id: str,
                  member_date: Annotated[str, Form()] = "", member_product: Annotated[str, Form()] = ""):
    trace = _load(db, trace_id, reviewer)
    ctx = _answer_context(db, pipeline, reviewer, trace, member_date=member_date, member_product=member_product)
    day = _member_date(member_date, ctx, "replay_problem")
    product = _member_product(db, reviewer, member_product, ctx, "replay_problem")
    if day is None or product is False:
        return render(request, "disputes/answer.html", ctx, block="replay", status_code=422)
    result = disputes.replay(pipeline, trace, day, reviewer=reviewer.name, member_product=product)
    citations = [c.model_dump() for c in result.citations]
    trace_ref = str(result.trace_id) if result.trace_id else None
    replayed = answer_view(result.to_json(), citations, no_date="no date entered",
                           text_url=citation_url(trace_ref) if trace_ref else None)
    replayed.timelines = timelines(pipeline.lookup, citations, reviewer.clearance, result.dates, day, "Member date")
    ctx["replay"] = replayed
    ctx["replay_role"] = trace.user_role
    return render(request, "disputes/answer.html", ctx, block="replay")


# -- helpers ------------------------------------------------------------------------------------

def _trace_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise HTTPException(status_code=404, detail="No answer with that id.") from None


def _load(db, trace_id: str, reviewer: Staff) -> Trace:
    """Read the trace for a check or replay (those write their own audit rows)."""
    trace = disputes.load(db, _trace_id(trace_id), reviewer=reviewer.name)
    if trace is None:
        raise HTTPException(status_code=404, detail="No answer with that id.")
    return trace


def _member_date(value: str, ctx: dict, problem_key: str) -> date | None:
    try:
        day = parse_input_date(value, ctx["member_label"].lower())
    except DateInputError as exc:
        ctx[problem_key] = str(exc)
        return None
    if day is None:
        ctx[problem_key] = f"Enter the {ctx['member_label'].lower()} (YYYY-MM-DD)."
    return day


def _member_product(db, reviewer: Staff, value: str, ctx: dict, problem_key: str):
    """The member's product as entered (None: not entered); False after recording the problem."""
    try:
        return checked_product(db, reviewer.clearance, value)
    except UnknownLineOfBusiness as exc:
        ctx[problem_key] = str(exc)
        return False


def _answer_context(db, pipeline, reviewer: Staff, trace: Trace, *, member_date: str = "",
                    member_product: str = "") -> dict:
    bases = disputes.date_bases(db, trace, clearance=reviewer.clearance)
    label = " / ".join(basis_title(b) for b in bases)
    view = answer_view(trace.answer or {}, trace.citations or [], no_date="no date entered", include_text=True,
                       readable=disputes.readable_citations(db, trace, reviewer.clearance))
    asked_on = trace.created_at.date()
    view.timelines = timelines(pipeline.lookup, trace.citations or [], reviewer.clearance, trace.dates,
                               asked_on, "Asked on")
    return {
        "trace": trace,
        "view": view,
        "asked_at": trace.created_at.strftime("%Y-%m-%d %H:%M %Z").strip(),
        "dates_entered": dates_entered(trace.dates, disputes.dates_from_question(trace), "no date entered"),
        "member_label": f"Member's {label[0].lower()}{label[1:]}" if label else "Member's date",
        "basis_note": label,
        "member_date": member_date,
        "product_entered": product_label(trace.line_of_business) if trace.line_of_business else "none chosen",
        "products": [(n, product_label(n)) for n in valid_products(db, reviewer.clearance)],
        "member_product": member_product,
        "replays": disputes.replays_of(db, trace.id, reviewer=reviewer.name),
        "proof": disputes.proof(db, trace.id, reviewer=reviewer.name),
        "feedback": feedback_for(db, trace.id, user_name=reviewer.name, all_users=True),
        "verdicts": None,
        "replay": None,
        "check_problem": None,
        "replay_problem": None,
    }
