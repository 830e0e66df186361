"""POST /api/v1/feedback: "helpful" or "wrong or unclear" on one of the caller's own answers.

The same service as the ask page's feedback form (policydesk/proof/feedback.py): append-only, only on
one's own asks, and a note in which an identifier detector fires is refused and not stored.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from policydesk.proof.feedback import FeedbackError, NotYourAnswer, record_feedback
from policydesk.web.api.deps import ApiUser, body_schema, check_text, parse_body, read_body
from policydesk.web.api.problems import ApiProblem, problems
from policydesk.web.api.schemas import FeedbackBody, FeedbackOut
from policydesk.web.deps import DbDep, Staff

router = APIRouter(tags=["feedback"])


@router.post("/feedback", response_model=FeedbackOut, openapi_extra=body_schema(FeedbackBody),
             responses=problems(404, 422), summary="Mark one of your answers helpful or wrong")
async def give_feedback(request: Request, user: ApiUser, db: DbDep) -> FeedbackOut:
    raw = await read_body(request, request.app.state.settings.API_MAX_BODY_BYTES)
    return await run_in_threadpool(_record, db, user, raw)


def _record(db, user: Staff, raw: bytes) -> FeedbackOut:
    body = parse_body(raw, FeedbackBody)
    check_text(trace_id=body.trace_id, note=body.note)
    try:
        trace_id = uuid.UUID(body.trace_id)
    except ValueError:
        raise ApiProblem("not_found", "No answer of yours with that id.") from None
    try:
        entry = record_feedback(db, user_name=user.name, trace_id=trace_id, verdict=body.verdict,
                                reason=body.reason, note=body.note)
    except NotYourAnswer as exc:
        raise ApiProblem("not_found", str(exc)) from None
    except FeedbackError as exc:
        raise ApiProblem.field("invalid_request", exc.field, str(exc)) from None
    return FeedbackOut(trace_id=str(trace_id), verdict=entry.verdict, reason=entry.reason, note=entry.note)
