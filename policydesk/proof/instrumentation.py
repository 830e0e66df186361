"""LlamaIndex instrumentation handlers that record into the active request's `TraceDraft`.

They only observe: no step reads a result back from them (retrieval returns its
`RetrievalResult`, the synthesizer its outcome with the tokens it used). Both sit on the root
dispatcher and do nothing outside a request (no active draft):

- `TraceCollector` (events): the chunk ids every retriever returned, what reached the model,
  and the LLM calls.
- `StageTimer` (spans): stage timings from the spans around `HybridRetriever.search()` /
  `retrieve()`, the postprocessors and the synthesizer. Steps that are not LlamaIndex
  components (role, refusal gate, what-changed, trace write) are timed by the pipeline.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMChatStartEvent, LLMCompletionEndEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler

from policydesk.proof.tracing import current_trace

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


_installed = False


def install_instrumentation() -> None:
    """Add both handlers to the root dispatcher, once per process."""
    global _installed
    if not _installed:
        root = get_dispatcher()
        root.add_event_handler(TraceCollector())
        root.add_span_handler(StageTimer())
        _installed = True
