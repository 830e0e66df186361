"""Feedback on one's own answer (every role): helpful, or wrong/unclear with a reason and a note."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request

from policydesk.proof.feedback import REASONS, FeedbackError, record_feedback
from policydesk.web.deps import CurrentUser, DbDep
from policydesk.web.templating import render

router = APIRouter(tags=["feedback"])


@router.post("/feedback/{trace_id}")
def give_feedback(request: Request, user: CurrentUser, db: DbDep, trace_id: str,
                  verdict: Annotated[str, Form()] = "", reason: Annotated[str, Form()] = "",
                  note: Annotated[str, Form()] = ""):
    ctx = {"trace_id": trace_id, "feedback_reasons": REASONS, "feedback_state": None, "feedback_problem": None}
    try:
        entry = record_feedback(db, user_name=user.name, trace_id=uuid.UUID(trace_id), verdict=verdict,
                                reason=reason, note=note)
    except ValueError as exc:  # FeedbackError, or a malformed trace id
        ctx["feedback_problem"] = str(exc) if isinstance(exc, FeedbackError) else "No answer of yours with that id."
        return render(request, "feedback.html", ctx, block="feedback", status_code=422)
    ctx |= {"feedback_state": "recorded", "feedback_entry": entry}
    return render(request, "feedback.html", ctx, block="feedback")
