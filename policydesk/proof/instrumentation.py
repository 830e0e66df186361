"""LlamaIndex instrumentation handlers that record into the active request's `TraceDraft`.

They only observe: no step reads a result back from them (retrieval returns its
`RetrievalResult`, the synthesizer its outcome with the tokens it used). Both sit on the root
dispatcher and do nothing outside a request (no active draft):

- `TraceCollector` (events): the chunk ids every retriever returned, what reached the model,
  and the LLM calls.
- `StageTimer` (spans): stage timings from the spans around `HybridRetriever.search()` /
  `retrieve()`, the postprocessors and the synthesizer. Steps that are not LlamaIndex
  components (role, refusal gate, what-changed, trace write) are timed by the pipeline.
- `ComponentSpans` (spans): while a request exports OpenTelemetry (`ops.telemetry`), an OTel
  span for each PolicyDesk component LlamaIndex opens a span around (`COMPONENT_SPANS`: the
  hybrid search, each clearance-guard pass, version resolution, conflict flagging, synthesis,
  each model call), a child of the pipeline step it runs in, with counts read from its
  arguments and its result; never text.
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMChatStartEvent, LLMCompletionEndEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler

from policydesk.ops.telemetry import active_telemetry, component_span_end, component_span_start
from policydesk.proof.tracing import current_trace

log = logging.getLogger(__name__)

# "Class.method" of a span (its id without the uuid) -> the trace stage it times.
SPAN_STAGES = {
    "HybridRetriever.search": "retrieval",
    "HybridRetriever.retrieve": "retrieval",
    "HybridRetriever.aretrieve": "retrieval",
    "VersionResolver.resolve": "version_resolution",
    "ConflictFlagger.flag": "version_resolution",
    "ClearanceGuard._postprocess_nodes": "clearance_guard",
    "CitedAnswerSynthesizer.synthesize": "synthesis",
    "CitedAnswerSynthesizer.asynthesize": "synthesis",
    "CitedAnswerSynthesizer.synthesize_outcome": "synthesis",
    "CitedAnswerSynthesizer.asynthesize_outcome": "synthesis",
}


class TraceCollector(BaseEventHandler):
    @classmethod
    def class_name(cls) -> str:
        return "PolicyDeskTraceCollector"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        draft = current_trace()
        if draft is None:
            return
        if isinstance(event, RetrievalEndEvent):
            draft.retrieved_ids.extend(n.node.node_id for n in event.nodes)
        elif isinstance(event, LLMChatStartEvent):
            draft.prompts.append("\n".join(str(m.content) for m in event.messages))
            draft.open_chats += 1
        elif isinstance(event, (LLMChatEndEvent, LLMCompletionEndEvent)):
            if isinstance(event, LLMChatEndEvent):
                draft.open_chats -= 1
            # A CustomLLM (a scripted or local model) serves chat() through complete(): the
            # completion inside a chat is the same model call, counted once.
            if isinstance(event, LLMChatEndEvent) or draft.open_chats == 0:
                draft.llm_calls += 1


class StageTimer(BaseSpanHandler[SimpleSpan]):
    """Adds the duration of each mapped span to the active draft's `stage_ms`."""

    @classmethod
    def class_name(cls) -> str:
        return "PolicyDeskStageTimer"

    def new_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any | None = None,
                 parent_span_id: str | None = None, tags: dict[str, Any] | None = None,
                 **kwargs: Any) -> SimpleSpan | None:
        stage = SPAN_STAGES.get(id_.rsplit("-", 5)[0])  # span ids end in "-<uuid4>"
        draft = current_trace()
        if stage is None or draft is None:
            return None
        return SimpleSpan(id_=id_, parent_id=parent_span_id,
                          metadata={"stage": stage, "draft": draft, "t0": time.perf_counter()})

    def _close(self, id_: str) -> SimpleSpan | None:
        span = self.open_spans.get(id_)
        if span is None:
            return None
        meta = span.metadata
        ms = (time.perf_counter() - meta["t0"]) * 1000
        stages = meta["draft"].stage_ms
        stages[meta["stage"]] = round(stages.get(meta["stage"], 0.0) + ms, 3)
        return span

    def prepare_to_exit_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any | None = None,
                             result: Any | None = None, **kwargs: Any) -> SimpleSpan | None:
        return self._close(id_)

    def prepare_to_drop_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any | None = None,
                             err: BaseException | None = None, **kwargs: Any) -> SimpleSpan | None:
        return self._close(id_)  # a failed stage still took its time


# "Class.method" of a LlamaIndex span -> the OTel span it becomes (a model's calls: by method, below).
COMPONENT_SPANS = {
    "HybridRetriever.search": "policydesk.hybrid_search",
    "ClearanceGuard._postprocess_nodes": "policydesk.guard",
    "VersionResolver.resolve": "policydesk.version_resolver",
    "ConflictFlagger.flag": "policydesk.conflict_flagger",
    "CitedAnswerSynthesizer.synthesize_outcome": "policydesk.synthesizer",
    "CitedAnswerSynthesizer.asynthesize_outcome": "policydesk.synthesizer",
}
LLM_METHODS = frozenset({"chat", "achat", "complete", "acomplete"})


def component_name(id_: str, instance: Any | None) -> str | None:
    """The OTel span name for a LlamaIndex span id ("Class.method-<uuid4>"), or None to pass through."""
    qualified = id_.rsplit("-", 5)[0]
    name = COMPONENT_SPANS.get(qualified)
    if name is None and isinstance(instance, BaseLLM) and qualified.rsplit(".", 1)[-1] in LLM_METHODS:
        name = "policydesk.llm." + qualified.rsplit(".", 1)[-1]
    return name


class ComponentSpans(BaseSpanHandler[SimpleSpan]):
    """Every LlamaIndex span inside an exporting request is recorded, so a component span finds
    its nearest component ancestor; only those in COMPONENT_SPANS (and model calls) become OTel
    spans. Outside such a request it records nothing."""

    @classmethod
    def class_name(cls) -> str:
        return "PolicyDeskComponentSpans"

    def new_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any | None = None,
                 parent_span_id: str | None = None, tags: dict[str, Any] | None = None,
                 **kwargs: Any) -> SimpleSpan | None:
        telemetry = active_telemetry()
        if telemetry is None:
            return None
        parent = self.open_spans.get(parent_span_id) if parent_span_id else None
        above = parent.metadata["otel"] if parent is not None else None  # None: the current step
        name = component_name(id_, instance)
        span = None
        if name is not None:
            try:
                span = component_span_start(telemetry, name, above, bound_args, instance)
            except Exception as exc:  # only observing: the component runs, without its span
                log.warning("telemetry: no span for %s (%s)", name, type(exc).__name__,
                            extra={"event": "telemetry_failed"})
        if span is None:
            return SimpleSpan(id_=id_, parent_id=parent_span_id, metadata={"otel": above, "own": False})
        return SimpleSpan(id_=id_, parent_id=parent_span_id, metadata={"otel": span, "own": True})

    def prepare_to_exit_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any | None = None,
                             result: Any | None = None, **kwargs: Any) -> SimpleSpan | None:
        span = self.open_spans.get(id_)
        if span is not None and span.metadata["own"]:
            component_span_end(span.metadata["otel"], bound_args, result=result)
        return span

    def prepare_to_drop_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any | None = None,
                             err: BaseException | None = None, **kwargs: Any) -> SimpleSpan | None:
        span = self.open_spans.get(id_)
        if span is not None and span.metadata["own"]:
            component_span_end(span.metadata["otel"], bound_args, error=err)
        return span


_installed = False


def install_instrumentation() -> None:
    """Add the handlers to the root dispatcher, once per process."""
    global _installed
    if not _installed:
        root = get_dispatcher()
        root.add_event_handler(TraceCollector())
        root.add_span_handler(StageTimer())
        root.add_span_handler(ComponentSpans())
        _installed = True
