"""One trace row per request: the draft a request fills, the row it becomes, and its storage.

The pipeline fills its request's `TraceDraft` from what each step returned: the retrieved chunk
ids from the retrieval result, the prompts, model calls, tokens and attempts from the
synthesizer's outcome, the stage timings it measures around each step (the clearance guard's
passes are timed by the request's retrieval stack), and the stack itself, whose record of the
components that ran and what the guard dropped the trace keeps. Nothing reaches the draft
through an observer. `trace_row` maps it all, with the outcome and the price of the request, onto
the `traces` columns, and `write_trace` stores the row even when the request failed.
"""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

from sqlalchemy import insert

from policydesk.contract.answer import AskRequest, AskResult
from policydesk.detectors.redact import redact
from policydesk.storage.storable import screened
from policydesk.storage.chain import purge_chained
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Trace


@dataclass
class TraceDraft:
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    started: float = field(default_factory=time.perf_counter)
    stage_ms: dict[str, float] = field(default_factory=dict)
    retrieved_ids: list[str] = field(default_factory=list)  # the fused ids and extension arms' own, pre-guard
    llm_calls: int = 0  # the answering model's calls (the offline reader makes none)
    prompts: list[str] = field(default_factory=list)  # what reached the model, for leak checks; not stored
    tokens_in: int = 0
    tokens_out: int = 0
    attempts: list[dict] = field(default_factory=list)  # the synthesizer's attempts, raw replies and errors
    # The request's retrieval stack (extensions/stack.RequestStack), handed over by the pipeline
    # when it builds it: the trace keeps what it recorded (`recorded()`), failed requests included.
    stack: Any = None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stage_ms[name] = round(self.stage_ms.get(name, 0.0) + (time.perf_counter() - t0) * 1000, 3)

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)

    def stages(self) -> dict[str, float]:
        """Each stage's milliseconds: the pipeline's, and the guard's passes once the guard ran
        (`clearance_guard` is every pass; `retrieval` includes the first, as the stack runs it)."""
        if self.stack is None or self.stack.guard_passes == 0:
            return dict(self.stage_ms)
        return self.stage_ms | {"clearance_guard": round(self.stack.guard_ms, 3)}


def cost_usd(tokens_in: int, tokens_out: int, settings) -> float:
    """Price of one request from the configured per-million-token prices."""
    return (tokens_in * settings.PRICE_INPUT_PER_MTOK + tokens_out * settings.PRICE_OUTPUT_PER_MTOK) / 1_000_000


def request_cost(priced: bool, tokens_in: int, tokens_out: int, settings) -> float:
    """What the trace records: the configured price for a priced provider's tokens (`providers.kinds`),
    nothing for the offline answerer and other LLMs; computed answers use no tokens."""
    if not priced:
        return 0.0
    return round(cost_usd(tokens_in, tokens_out, settings), 8)


def instrumentation(draft: TraceDraft) -> dict[str, Any]:
    """What the instrumentation saw; which components ran and what the clearance guard dropped
    once retrieval ran (a refused request has neither)."""
    out: dict[str, Any] = {"retrieved_ids": list(dict.fromkeys(draft.retrieved_ids)), "llm_calls": draft.llm_calls}
    recorded = draft.stack.recorded() if draft.stack is not None else None
    return out | recorded if recorded else out


def _stored_answer(result: AskResult, draft: TraceDraft, error: str | None) -> dict[str, Any]:
    """The answer object as stored, with the screened error in place of the raw one."""
    answer = result.to_json() | {"instrumentation": instrumentation(draft)}
    if result.error:
        answer["error"] = error
        if result.abstain_reason == result.error:
            answer["abstain_reason"] = error
    return answer


def trace_row(req: AskRequest, result: AskResult, clearance: Clearance | None, draft: TraceDraft,
              settings, *, priced: bool = False) -> dict[str, Any]:
    """The `traces` row for one request: who, with what clearance, what was said, on what, at what cost.
    Caller-typed text reaches it only screened: the question redacted, and an error message (which
    may quote a field the caller filled in) redacted by the same redactor."""
    error = screened(result.error, settings.PLAN_ID_PATTERNS) if result.error else result.error
    return dict(
        id=draft.id, kind=req.kind, replay_of=req.replay_of, user_name=req.user_name[:64],
        user_role=result.role or "unknown", permitted_levels=list(clearance.levels) if clearance else [],
        # Never the raw text: redacted whether or not the gate ran, so what the gate misses is not stored.
        sensitive_cleared=bool(clearance and clearance.sensitive),
        question=redact(req.question or "", settings.PLAN_ID_PATTERNS).text,
        dates=result.dates, line_of_business=result.line_of_business, versions_applied=result.versions_applied, chunk_ids=result.context_ids,
        # No column of its own (a new column would change every stored row's canonical hash):
        # what the instrumentation saw rides with the answer it produced.
        answer=_stored_answer(result, draft, error),
        answer_text=result.answer,
        citations=[c.model_dump() for c in result.citations],
        warnings=[w.model_dump() for w in result.warnings], refused=result.refused,
        refusal_reason=result.refusal_message, abstained=result.abstained, degraded=result.degraded,
        status="failed" if result.error else "ok", error=error, attempts=draft.attempts,
        stage_ms=draft.stages(), latency_ms=draft.elapsed_ms(), model=result.model,
        tokens_in=draft.tokens_in, tokens_out=draft.tokens_out,
        cost_usd=request_cost(priced, draft.tokens_in, draft.tokens_out, settings),
    )


def write_trace(db, row: dict[str, Any]) -> None:
    """Insert the trace row through the application engine (its own transaction)."""
    with db.app.begin() as conn:
        conn.execute(insert(Trace).values(**row))


def purge_traces(db, *, older_than_days: int, actor: str, now: datetime | None = None) -> int:
    """Retention: the owner removes the oldest traces as a prefix of the hash chain and records
    the cut and an audit entry (the application role cannot delete traces at all)."""
    if older_than_days <= 0:
        raise ValueError("older_than_days must be positive")
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=older_than_days)
    return purge_chained(db.owner, cutoff=cutoff, actor=actor).rows_removed
