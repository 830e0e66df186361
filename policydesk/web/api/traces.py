"""Compliance only: GET /api/v1/traces (search) and POST /api/v1/traces/{id}/check.

The disputes page's own service functions, so the same audit rows are written and the same
row-level-security scope (`disputes.reviewing`) applies. Other roles get 403, decided per
request from the role in the database.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from policydesk.proof import disputes
from policydesk.versions.dates import DateInputError, parse_input_date
from policydesk.products import UnknownLineOfBusiness, checked_product
from policydesk.web.api.deps import ApiReviewer, body_schema, check_text, parse_body, read_body
from policydesk.web.api.problems import ApiProblem, problems
from policydesk.web.api.schemas import DATE, CheckBody, CheckOut, TraceHitOut, TraceSearchOut, VerdictOut
from policydesk.web.deps import DbDep, Staff

router = APIRouter(prefix="/traces", tags=["disputes"])


def _date(value: str | None, field: str):
    try:
        return parse_input_date(value, field.replace("_", " "))
    except DateInputError as exc:
        raise ApiProblem.field("invalid_date", field, str(exc)) from None


@router.get("", response_model=TraceSearchOut, responses=problems(403, 422), summary="Search answers (disputes)")
def search_traces(reviewer: ApiReviewer, db: DbDep,
                  words: Annotated[str, Query(description="Words in the question or answer.")] = "",
                  staff: Annotated[str, Query(description="Exact user name of the staff member who asked.")] = "",
                  asked_from: Annotated[str | None, Query(description="YYYY-MM-DD, inclusive.", json_schema_extra=DATE)] = None,
                  asked_to: Annotated[str | None, Query(description="YYYY-MM-DD, inclusive.", json_schema_extra=DATE)] = None,
                  ) -> TraceSearchOut:
    """Asks only (never replays or eval runs), newest first; each search is written to the audit log."""
    start, end = _date(asked_from, "asked_from"), _date(asked_to, "asked_to")
    hits = disputes.search(db, words, staff, start, end, reviewer=reviewer.name)
    return TraceSearchOut(traces=[TraceHitOut(
        id=str(h.id), created_at=h.created_at, user_name=h.user_name, user_role=h.user_role, question=h.question,
        answer_text=h.answer_text, refused=h.refused, abstained=h.abstained,
        dates={k: (str(v) if v is not None else None) for k, v in (h.dates or {}).items()},
        line_of_business=h.line_of_business) for h in hits])


@router.post("/{trace_id}/check", response_model=CheckOut, openapi_extra=body_schema(CheckBody),
             responses=problems(403, 404, 422), summary="Check an answer against the member's date")
async def check_trace(request: Request, reviewer: ApiReviewer, db: DbDep, trace_id: str) -> CheckOut:
    """A verdict per cited section, computed in code from effective dates and text hashes:
    right, wrong_version (naming the version that applied), edited, section_missing,
    none_in_force, or wrong_product (with `line_of_business`, a cited source for other products only). Written to the audit log like a check on the disputes page."""
    raw = await read_body(request, request.app.state.settings.API_MAX_BODY_BYTES)
    return await run_in_threadpool(_check, db, reviewer, trace_id, raw)


def _check(db, reviewer: Staff, trace_id: str, raw: bytes) -> CheckOut:
    body = parse_body(raw, CheckBody)
    check_text(member_date=body.member_date, line_of_business=body.line_of_business)
    day = _date(body.member_date, "member_date")
    if day is None:
        raise ApiProblem.field("invalid_date", "member_date", "is empty; use YYYY-MM-DD")
    try:
        product = checked_product(db, reviewer.clearance, body.line_of_business)
    except UnknownLineOfBusiness as exc:
        raise ApiProblem.field("unknown_line_of_business", "line_of_business", str(exc)) from None
    try:
        tid = uuid.UUID(trace_id)
    except ValueError:
        raise ApiProblem("not_found", "No answer with that id.") from None
    trace = disputes.load(db, tid, reviewer=reviewer.name)
    if trace is None:
        raise ApiProblem("not_found", "No answer with that id.")
    verdicts = disputes.check(db, trace, day, reviewer=reviewer.name, member_product=product)
    # The published field keeps its name; it carries the basis as titled on pages (basis_title).
    return CheckOut(trace_id=str(trace.id), member_date=day.isoformat(), verdicts=[VerdictOut(
        chunk_id=v.chunk_id, doc_id=v.doc_id, title=v.title, section=v.section, cited_version=v.cited_version,
        cited_window=v.cited_window, basis=v.basis, basis_label=v.basis_title, member_date=v.member_date.isoformat(),
        verdict=v.kind, ok=v.ok, text=v.text, applied_version=v.applied_version, applied_window=v.applied_window)
        for v in verdicts])
