"""LlamaIndex instrumentation: OpenTelemetry spans for PolicyDesk's components, and a watch on model calls.

The trace is not filled from here: the pipeline assembles it from what each step returned
(`proof/tracing.py`). This module only observes:

- `ComponentSpans` (spans, on the root dispatcher): while a request exports OpenTelemetry
  (`ops.telemetry`), an OTel span for each PolicyDesk component LlamaIndex opens a span around
  (`COMPONENT_SPANS`: the hybrid search, each clearance-guard pass, version resolution, conflict
  flagging, synthesis, each model call), a child of the pipeline step it runs in, with counts read
  from its arguments and its result; never text.
- `watch_model_calls()`: every prompt any LlamaIndex LLM is sent while the block runs, whoever
  sends it (the synthesizer, an extension component with its own model). The evals' leak matrix
  reads it, so a component that sends text to a model outside the synthesizer is checked too. It
  sees the whole process: use it around one ask at a time.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatStartEvent, LLMCompletionStartEvent
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler

from policydesk.ops.telemetry import active_telemetry, component_span_end, component_span_start

log = logging.getLogger(__name__)


class ModelCallWatch(BaseEventHandler):
    """The prompts of every model call seen while it is attached (`watch_model_calls`). A model that
    serves chat() through complete() (a CustomLLM) shows up twice, the messages and the rendered
    prompt: harmless for a leak check, which asks what text reached a model, not how often."""

    prompts: list[str] = []

    @classmethod
    def class_name(cls) -> str:
        return "PolicyDeskModelCallWatch"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, LLMChatStartEvent):
            self.prompts.append("\n".join(str(m.content) for m in event.messages))
        elif isinstance(event, LLMCompletionStartEvent):
            self.prompts.append(str(event.prompt))


@contextmanager
def watch_model_calls() -> Iterator[list[str]]:
    """The prompts sent to any LlamaIndex LLM in this process while the block runs, in order."""
    watch = ModelCallWatch(prompts=[])
    root = get_dispatcher()
    root.add_event_handler(watch)
    try:
        yield watch.prompts
    finally:  # by identity: handlers are pydantic models, and two watches that saw the same calls compare equal
        root.event_handlers[:] = [h for h in root.event_handlers if h is not watch]


# "Class.method" of a LlamaIndex span -> the OTel span it becomes (a model's calls: by method, below).
COMPONENT_SPANS = {
    "HybridRetriever.search": "policydesk.hybrid_search",
    "ClearanceGuard.check": "policydesk.guard",
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


def install_instrumentation() -> None:
    """Add `ComponentSpans` to the root dispatcher, once per process (LlamaIndex keeps one
    dispatcher tree per process, so the handler is installed on it, not on a pipeline)."""
    root = get_dispatcher()
    if not any(isinstance(h, ComponentSpans) for h in root.span_handlers):
        root.add_span_handler(ComponentSpans())
