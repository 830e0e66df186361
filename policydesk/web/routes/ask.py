"""The ask page (every role): a question, optional dates, the answer with its versions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request

from policydesk.citations import own_citation
from policydesk.feedback import REASONS
from policydesk.answer import AskRequest
from policydesk.web.deps import CurrentUser, DbDep, PipelineDep, ScopedSession
from policydesk.web.templating import render
from policydesk.versions import BASIS_KEYS, Window
from policydesk.products import normalized, remember_product, remembered_product
from policydesk.web.views import answer_view, citation_url, date_fields, product_field, timelines

router = APIRouter(tags=["ask"])


@router.get("/ask")
def show_ask(request: Request, user: CurrentUser, session: ScopedSession):
    chosen = remembered_product(session, user_name=user.name)
    return render(request, "ask.html", {"fields": date_fields(session, user.clearance), "question": "", "view": None,
                                        "product": product_field(session, user.clearance, chosen)})


@router.post("/ask")
def ask_question(request: Request, user: CurrentUser, session: ScopedSession, pipeline: PipelineDep,
                 question: Annotated[str, Form()] = "", date_of_service: Annotated[str, Form()] = "",
                 denial_notice_date: Annotated[str, Form()] = "", line_of_business: Annotated[str, Form()] = ""):
    values = {"date_of_service": date_of_service.strip(), "denial_notice_date": denial_notice_date.strip()}
    product = normalized(line_of_business)
    ctx = {"fields": date_fields(session, user.clearance, values), "question": question, "view": None, "problem": None,
           "product": product_field(session, user.clearance, product)}
    # Release the read's pooled connection now rather than holding it idle through the model call.
    session.close()
    if not question.strip():
        ctx["problem"] = "Type a question first."
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
