"""POST /api/v1/ask, GET /api/v1/citations/{trace_id}/{chunk_id}, GET /api/v1/versions/{doc_id}.

The same pipeline, traces and clearance checks as the ask page: the routes parse, call the
service and shape JSON. Dates and the product go to the pipeline as entered, and its own checks
judge them (`versions.entered_dates`, `products.checked_product`); the field it names at fault
becomes the problem's. A question refused for its input (bad date, unknown field, product) is
still traced, through the pipeline, as a failed request with the caller's role.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from policydesk.contract.answer import AskRequest
from policydesk.proof.citations import own_citation
from policydesk.versions import BASIS_KEYS, display_window
from policydesk.web.api.deps import ApiUser, body_schema, check_text, parse_body, read_body
from policydesk.web.api.problems import ApiProblem, problems
from policydesk.web.api.schemas import AnswerOut, AskBody, CitedTextOut, TimelineOut, VersionOut
from policydesk.web.deps import DbDep, PipelineDep, Staff

router = APIRouter(tags=["ask"])


@router.post("/ask", response_model=AnswerOut, openapi_extra=body_schema(AskBody),
             responses=problems(422, 503), summary="Ask a policy question")
async def ask_question(request: Request, user: ApiUser, pipeline: PipelineDep) -> dict:
    """The answer, exactly as `policydesk ask --json` prints it. A refusal is a problem of type
    `refused` that carries every field of the answer too."""
    try:
        raw = await read_body(request, request.app.state.settings.API_MAX_BODY_BYTES)
    except ApiProblem as problem:
        return await run_in_threadpool(_reject, pipeline, user, "", problem)
    return await run_in_threadpool(_answer, pipeline, user, raw)


def _reject(pipeline, user: Staff, question: str, problem: ApiProblem):
    """Trace a refused request like any failed ask (who, which role, why nothing was answered), then refuse it."""
    result = pipeline.ask(AskRequest(user_name=user.name, question=question, rejected=problem.detail))
    problem.trace_id = str(result.trace_id) if result.trace_id else None
    raise problem


def _answer(pipeline, user: Staff, raw: bytes) -> dict:
    question = ""
    try:
        body = parse_body(raw, AskBody)
        check_text(question=body.question, **{b: getattr(body, b) for b in BASIS_KEYS},
                   line_of_business=body.line_of_business)
        _check_question(body, pipeline.settings.MAX_QUESTION_CHARS)
        question = body.question  # a rejected question is traced without its text: nothing of it is read
    except ApiProblem as problem:
        _reject(pipeline, user, question, problem)
    entered = {b: getattr(body, b) for b in BASIS_KEYS if getattr(body, b) is not None}
    result = pipeline.ask(AskRequest(user_name=user.name, question=question, dates=entered,
                                     line_of_business=body.line_of_business))
    data = result.to_json()
    trace_id = data["trace_id"]
    if result.error_code in _INPUT_PROBLEMS:
        raise ApiProblem.field(result.error_code, result.error_field or "body", result.error, trace_id=trace_id)
    if result.refused:
        raise ApiProblem("refused", result.refusal_message or "The question was refused.", extra=data, trace_id=trace_id)
    if result.error and result.role is None:  # disabled or deleted since the token was checked
        raise ApiProblem("unauthorized", "The token's user may no longer ask.", trace_id=trace_id)
    if result.error:
        raise ApiProblem("unavailable", result.error, trace_id=trace_id)
    return data


# The pipeline's input error codes that are problem types of their own (web/api/problems.py).
_INPUT_PROBLEMS = ("invalid_date", "unknown_line_of_business")


def _check_question(body: AskBody, max_chars: int) -> None:
    if len(body.question) > max_chars and len(body.question.strip()) > max_chars:
        raise ApiProblem.field("invalid_request", "question", f"is longer than {max_chars} characters")
    if not body.question.strip():
        raise ApiProblem.field("invalid_request", "question", "is empty")


@router.get("/citations/{trace_id}/{chunk_id}", response_model=CitedTextOut, responses=problems(404),
            summary="The text of a citation from one of your answers")
def read_citation(user: ApiUser, db: DbDep, trace_id: str, chunk_id: str) -> CitedTextOut:
    """Only from the caller's own traces, and only while their CURRENT role may read the cited
    version; otherwise 404, exactly as for a citation that never existed."""
    cited = own_citation(db, user_name=user.name, clearance=user.clearance, trace_id=trace_id, chunk_id=chunk_id)
    if cited is None:
        raise ApiProblem("not_found", "No such citation.")
    c = cited.citation
    return CitedTextOut(trace_id=str(cited.trace_id), question=cited.question, chunk_id=c["chunk_id"],
                        doc_id=c["doc_id"], title=c["title"], section=c["section"], version=int(c["version"]),
                        effective_from=c["effective_from"], effective_to=c.get("effective_to"),
                        text_sha256=c["text_sha256"], text=c["text"])


@router.get("/versions/{doc_id}", response_model=TimelineOut, responses=problems(404),
            summary="The version timeline of a document")
def read_versions(user: ApiUser, pipeline: PipelineDep, doc_id: str) -> TimelineOut:
    """The versions the caller may see, through the same permission-scoped lookup as version
    resolution. A document the caller may not see is 404, like one that does not exist."""
    versions = pipeline.lookup.versions([doc_id], user.clearance).get(doc_id) or []
    if not versions:
        raise ApiProblem("not_found", "No such document.")
    today = pipeline.today
    out = []
    for v in versions:
        first, last = display_window(v.effective_from, v.effective_to)
        status = "scheduled" if v.effective_from > today else "in_force" if today < v.effective_to else "past"
        out.append(VersionOut(version=v.version, title=v.title, effective_from=first, effective_to=last,
                              superseded_by=v.superseded_by, status=status))
    return TimelineOut(doc_id=doc_id, title=versions[-1].title, date_basis=versions[-1].date_basis,
                       today=today.isoformat(), versions=out)
