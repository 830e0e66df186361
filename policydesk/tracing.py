"""One trace row per request, fed by LlamaIndex instrumentation events and the pipeline's stages.

`TraceCollector` is an instrumentation event handler on the root dispatcher: while a request's
`TraceDraft` is active (a context variable), it records which chunks retrievers returned and
the token usage every LLM call reported. The pipeline adds stage timings and the outcome;
`trace_row` maps them (and the price of the request) onto the `traces` columns, and
`write_trace` stores the row even when the request failed.
"""

from __future__ import annotations

import contextvars
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
)
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from sqlalchemy import insert

from policydesk.answer import AskRequest, AskResult
from policydesk.storage.chain import purge_chained
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Trace


@dataclass
class TraceDraft:
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    started: float = field(default_factory=time.perf_counter)
    stage_ms: dict[str, float] = field(default_factory=dict)
    retrieved_ids: list[str] = field(default_factory=list)
    llm_calls: int = 0
    prompts: list[str] = field(default_factory=list)  # what reached the model, for leak checks
    tokens_in: int = 0
    tokens_out: int = 0
    row: dict[str, Any] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stage_ms[name] = round(self.stage_ms.get(name, 0.0) + (time.perf_counter() - t0) * 1000, 3)

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)


_active: contextvars.ContextVar[TraceDraft | None] = contextvars.ContextVar("policydesk_trace", default=None)


@contextmanager
def active_trace(draft: TraceDraft) -> Iterator[TraceDraft]:
    token = _active.set(draft)
    try:
        yield draft
    finally:
        _active.reset(token)


def _usage(response: Any) -> tuple[int, int]:
    raw = getattr(response, "raw", None) or {}
    usage = raw.get("usage_metadata") if isinstance(raw, dict) else getattr(raw, "usage_metadata", None)
    if usage is None:
        return 0, 0
    get = usage.get if isinstance(usage, dict) else lambda k, d=None: getattr(usage, k, d)
    return int(get("prompt_token_count", 0) or 0), int(get("candidates_token_count", 0) or 0)


class TraceCollector(BaseEventHandler):
    @classmethod
    def class_name(cls) -> str:
        return "PolicyDeskTraceCollector"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        draft = _active.get()
        if draft is None:
            return
        if isinstance(event, RetrievalEndEvent):
            draft.retrieved_ids.extend(n.node.node_id for n in event.nodes)
        elif isinstance(event, LLMChatStartEvent):
            draft.prompts.append("\n".join(str(m.content) for m in event.messages))
        elif isinstance(event, (LLMChatEndEvent, LLMCompletionEndEvent)):
            draft.llm_calls += 1
            tin, tout = _usage(event.response)
            draft.tokens_in += tin
            draft.tokens_out += tout


_installed = False


def install_trace_collector() -> None:
    global _installed
    if not _installed:
        get_dispatcher().add_event_handler(TraceCollector())
        _installed = True


def cost_usd(tokens_in: int, tokens_out: int, settings) -> float:
    """Price of one request from the configured per-million-token prices."""
    return (tokens_in * settings.PRICE_INPUT_PER_MTOK + tokens_out * settings.PRICE_OUTPUT_PER_MTOK) / 1_000_000


def request_cost(model: str, tokens_in: int, tokens_out: int, settings) -> float:
    """What the trace records: the Gemini price, nothing for the offline and computed answers."""
    if not model.startswith("gemini"):
        return 0.0
    return round(cost_usd(tokens_in, tokens_out, settings), 8)


def trace_row(req: AskRequest, result: AskResult, clearance: Clearance | None, draft: TraceDraft,
              settings) -> dict[str, Any]:
    """The `traces` row for one request: who, with what clearance, what was said, on what, at what cost."""
    return dict(
        id=draft.id, kind=req.kind, replay_of=req.replay_of, user_name=req.user_name[:64],
        user_role=result.role or "unknown", permitted_levels=list(clearance.levels) if clearance else [],
        sensitive_cleared=bool(clearance and clearance.sensitive), question=req.question,
        dates=result.dates, versions_applied=result.versions_applied, chunk_ids=result.context_ids,
        answer=result.to_json(), answer_text=result.answer,
        citations=[c.model_dump() for c in result.citations],
        warnings=[w.model_dump() for w in result.warnings], refused=result.refused,
        refusal_reason=result.refusal_message, abstained=result.abstained, degraded=result.degraded,
        status="failed" if result.error else "ok", error=result.error, attempts=draft.row.get("attempts", []),
        stage_ms=draft.stage_ms, latency_ms=draft.elapsed_ms(), model=result.model,
        tokens_in=draft.tokens_in, tokens_out=draft.tokens_out,
        cost_usd=request_cost(result.model, draft.tokens_in, draft.tokens_out, settings),
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
