"""The ask page (every role): a question, optional dates, the answer with its versions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request

from policydesk.proof.citations import own_citation
from policydesk.proof.feedback import REASONS
from policydesk.contract.answer import AskRequest
from policydesk.screening.refusal import QUESTION_TOO_LONG_MESSAGE
from policydesk.web.deps import CurrentUser, DbDep, PipelineDep, ScopedSession
from policydesk.web.limits import body_too_large
from policydesk.web.templating import render
from policydesk.versions import BASIS_KEYS, Window
from policydesk.products import normalized, remember_product, remembered_product
from policydesk.web.views import answer_view, citation_url, date_fields, product_field, timelines

router = APIRouter(tags=["ask"])


@router.get("/ask")
def show_ask(request: Request, user: CurrentUser, session: ScopedSession):
    chosen = remembered_product(session, user_name=user.name)
    return render(request, "ask.html", {"fields": date_fields(session, user.clearance), "question": "", "view": None,
                                        "product": product_field(session, user.clearance, chosen),
                                        "max_chars": request.app.state.settings.MAX_QUESTION_CHARS})


@dataclass(frozen=True)
class _Rejected:
    shown: str  # what the page says
    traced: str  # the trace's error, worded as the API's problem for the same input


def _rejected(request: Request, max_chars: int, question: str, fields: dict[str, str]) -> _Rejected | None:
    """The ask form's own input checks, before any other work, in the API's order and words."""
    if body_too_large(request) or (len(question) > max_chars and len(question.strip()) > max_chars):
        return _Rejected(QUESTION_TOO_LONG_MESSAGE.format(max_chars=max_chars),
                         f"question: is longer than {max_chars} characters")
    for name, value in {"question": question, **fields}.items():
        if "\x00" in value:
            return _Rejected(f"The {name.replace('_', ' ')} contains a NUL character, which PolicyDesk does not "
                             "accept. Remove it and try again.", f"{name}: contains a NUL character")
    if not question.strip():
        return _Rejected("Type a question first.", "question: is empty")
    return None


@router.post("/ask")
def ask_question(request: Request, user: CurrentUser, session: ScopedSession, pipeline: PipelineDep,
                 question: Annotated[str, Form()] = "", date_of_service: Annotated[str, Form()] = "",
                 denial_notice_date: Annotated[str, Form()] = "", line_of_business: Annotated[str, Form()] = ""):
    max_chars = request.app.state.settings.MAX_QUESTION_CHARS
    rejected = _rejected(request, max_chars, question, {"date_of_service": date_of_service,
                                                        "denial_notice_date": denial_notice_date,
                                                        "line_of_business": line_of_business})
    if rejected is not None:  # nothing of the input is read further, shown again or stored
        question = date_of_service = denial_notice_date = line_of_business = ""
    values = {"date_of_service": date_of_service.strip(), "denial_notice_date": denial_notice_date.strip()}
    product = normalized(line_of_business)
    ctx = {"fields": date_fields(session, user.clearance, values), "question": question, "view": None, "problem": None,
           "product": product_field(session, user.clearance, product), "max_chars": max_chars}
    # Release the read's pooled connection now rather than holding it idle through the model call.
    session.close()
    if rejected is not None:  # traced like the API's rejected input: who, which role, why nothing was answered
        pipeline.ask(AskRequest(user_name=user.name, question="", rejected=rejected.traced))
        ctx["problem"] = rejected.shown
        return render(request, "ask.html", ctx, block="result", status_code=422)
    dates = {b: values[b] for b in BASIS_KEYS if values.get(b)}
    result = pipeline.ask(AskRequest(user_name=user.name, question=question, dates=dates, line_of_business=product))
    if result.error_code != "unknown_line_of_business":  # remembered per user, server-side
        remember_product(pipeline.db, user_name=user.name, line_of_business=result.line_of_business)
    citations = [c.model_dump() for c in result.citations]
    trace_id = str(result.trace_id) if result.trace_id else None
    view = answer_view(result.to_json(), citations,
                       no_date=f"No date entered: versions in force today ({pipeline.today.isoformat()})",
                       text_url=citation_url(trace_id) if trace_id else None)
    if view.citations:
        view.timelines = timelines(pipeline.lookup, citations, user.clearance, result.dates, pipeline.today, "Today")
    ctx["view"] = view
    ctx["feedback_reasons"] = REASONS
    return render(request, "ask.html", ctx, block="result", status_code=422 if result.error else 200)


@router.get("/citations/{trace_id}/{chunk_id}")
def show_citation(request: Request, user: CurrentUser, db: DbDep, trace_id: str, chunk_id: str):
    """The cited text from the caller's own trace, shown only while the caller's CURRENT clearance
    may read that source version: a demoted user gets the same 404 as for a citation that never
    existed, so a kept link never serves text the user may no longer read."""
    cited = own_citation(db, user_name=user.name, clearance=user.clearance, trace_id=trace_id, chunk_id=chunk_id)
    if cited is None:
        raise HTTPException(status_code=404, detail="No such citation.")
    cite = cited.citation
    return render(request, "citation.html", {
        "question": cited.question, "title": cite["title"], "section": cite["section"], "text": cite["text"],
        "version_line": f"version {cite['version']} · {Window.cited(cite['effective_from'], cite.get('effective_to')).format('arrow')}",
    }, block="text")
