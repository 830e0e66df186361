"""OpenTelemetry: one span per request, one child per pipeline step, exported over OTLP/HTTP.

A `Telemetry` owns its tracer provider; the app (`web.app.create_app`) and `build_pipeline` (the
CLI, the LlamaIndex entry points) make one from the settings (`telemetry_for`) and hand it on.
Nothing here is process-global: no provider is registered with `opentelemetry.trace`. Without an
endpoint the tracer is the API's no-op one and the request, step and HTTP spans below are shared
constants that do nothing, so nothing is sent and next to nothing is spent.

What a span may carry is closed: codes, counts, booleans, the role, access levels, the product,
the model's name, latency and the PolicyDesk trace row id. Never the question, the answer, a
user's name, a member identifier or source text, and never an exception's message (it may quote
what the caller typed): a failure is recorded by its class name only (docs/telemetry.md).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NoOpTracer, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from policydesk.contract.answer import Abstained, Answered, AskResult, Compared, Failed, Refused
from policydesk.contract.steps import Context, Retrieved
from policydesk.storage.clearance import Clearance

log = logging.getLogger(__name__)

# The pipeline's steps, in the order docs/design.md gives them; each is one child of the request span.
STEPS = ("resolve_role", "refuse_early", "filter", "retrieve", "resolve_versions", "generate", "trace")
REQUEST_SPAN = "policydesk.ask"
SCOPE = "policydesk"
A = "policydesk."  # every attribute PolicyDesk sets is named under this prefix (or OTel's own HTTP names)
PASSED = "passed"  # a step's outcome when the request went on to the next step
TRACERESPONSE = "traceresponse"  # W3C Trace Context level 2: the trace this response belongs to

# The request's Telemetry rides in the OTel context of its spans, so a LlamaIndex span handler
# (proof/instrumentation.py) opens component spans with the tracer of the request that runs them.
_TELEMETRY = otel_context.create_key("policydesk-telemetry")
_W3C = TraceContextTextMapPropagator()


class Telemetry:
    def __init__(self, provider=None) -> None:
        """`provider`: an SDK TracerProvider this object owns (flushes, shuts down); None: disabled."""
        self.provider = provider
        self.tracer = provider.get_tracer(SCOPE) if provider is not None else NoOpTracer()

    @property
    def enabled(self) -> bool:
        return self.provider is not None

    @classmethod
    def disabled(cls) -> "Telemetry":
        return cls(None)

    @classmethod
    def exporting_to(cls, exporter, *, service_name: str = SCOPE, batch: bool = True) -> "Telemetry":
        """Spans go to `exporter`: in batches off the request's thread (OTLP), or one by one as
        each ends (`batch=False`, for an in-memory exporter)."""
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
        provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
        return cls(provider)

    def force_flush(self, timeout_millis: int = 10_000) -> bool:
        return self.provider.force_flush(timeout_millis) if self.provider is not None else True

    def shutdown(self) -> None:
        if self.provider is not None:
            self.provider.shutdown()

    # -- the request and its steps ----------------------------------------------------------------
    def request(self, trace_row_id, kind: str) -> "RequestSpan":
        """The span of one ask: a child of the current context (an HTTP span, an incoming
        `traceparent`), or a root. It carries the id of the trace row the ask writes."""
        if not self.enabled:
            return _NO_REQUEST
        return RequestSpan(self, {A + "trace_row_id": str(trace_row_id), A + "kind": kind})

    def step(self, name: str) -> "StepSpan":
        """One step of the request (a name in STEPS), a child of the current span."""
        if not self.enabled:
            return _NO_STEP
        return StepSpan(self.tracer, name)

    def http_request(self, headers: Iterable[tuple[bytes, bytes]], method: str) -> "HttpSpan":
        """The server span of one HTTP request, a child of the caller's `traceparent` when it sent one."""
        if not self.enabled:
            return _NO_HTTP
        return HttpSpan(self.tracer, headers, method)


def active_telemetry() -> Telemetry | None:
    """The Telemetry of the request running in this context, if it exports."""
    return otel_context.get_value(_TELEMETRY)


# -- spans ------------------------------------------------------------------------------------------

def observing(method):
    """Telemetry only observes: if describing a value fails, the failure is logged (event
    `telemetry_failed`, the exception's class only) and the request goes on; a method handed a
    value returns it as if nothing happened."""
    @functools.wraps(method)
    def safe(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            log.warning("telemetry: %s failed (%s); the span lacks those attributes", method.__qualname__,
                        type(exc).__name__, extra={"event": "telemetry_failed"})
            handed = args[1:] if args and isinstance(args[0], (_Span, _NoSpan)) else args
            return handed[0] if handed else None
    return safe


class _Span:
    """A span made current for a `with` block; an exception is recorded by its class name only."""

    name = ""
    kind = SpanKind.INTERNAL

    def __init__(self, tracer, attributes: dict[str, Any]) -> None:
        self._tracer, self._attributes = tracer, attributes
        self.span = None
        self._token = None
        self._t0 = 0.0

    def _context(self):
        return None  # the current one

    def __enter__(self):
        self._t0 = time.perf_counter()
        ctx = self._context()
        self.span = self._tracer.start_span(self.name, context=ctx, kind=self.kind, attributes=self._attributes,
                                            record_exception=False, set_status_on_exception=False)
        self._token = otel_context.attach(trace.set_span_in_context(self.span, ctx))
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc is not None:
                self._failed(exc)
            self._closing()
            self.span.set_attribute(A + "latency_ms", round((time.perf_counter() - self._t0) * 1000, 3))
            self.span.end()
        finally:
            otel_context.detach(self._token)

    def _failed(self, exc: BaseException) -> None:
        self.span.set_attribute("error.type", type(exc).__name__)
        self.span.set_status(Status(StatusCode.ERROR, type(exc).__name__))

    def _closing(self) -> None:
        pass

    @observing
    def set(self, **values: Any) -> None:
        """Attributes named `policydesk.<key>`; None values are left out."""
        self.span.set_attributes({A + k: v for k, v in values.items() if v is not None})


class RequestSpan(_Span):
    name = REQUEST_SPAN

    def __init__(self, telemetry: Telemetry, attributes: dict[str, Any]) -> None:
        super().__init__(telemetry.tracer, attributes)
        self._telemetry = telemetry

    def _context(self):
        return otel_context.set_value(_TELEMETRY, self._telemetry)

    @observing
    def answered(self, result: AskResult) -> None:
        """What the request came to: role, outcome and code, counts, degraded."""
        self.set(**outcome_attributes(result.outcome) | dict(
            role=result.role or "unknown", degraded=result.degraded, citations=len(result.citations),
            context_nodes=len(result.context_ids), warnings=len(result.warnings), redactions=len(result.redactions),
            line_of_business=result.line_of_business, model=result.model or None))
        if isinstance(result.outcome, Failed) and result.outcome.inside:
            self.span.set_status(Status(StatusCode.ERROR, Failed.INSIDE))


class StepSpan(_Span):
    def __init__(self, tracer, name: str) -> None:
        super().__init__(tracer, {A + "step": name, A + "step.number": STEPS.index(name) + 1})
        self.name = A + name
        self._outcome: str | None = None

    @observing
    def decided(self, outcome):
        """This step ended the request with `outcome`; returns it."""
        attributes = outcome_attributes(outcome)
        self.set(**attributes)
        self._outcome = attributes["outcome_code"]
        return outcome

    @observing
    def record(self, value):
        """Counts and flags of what the step returned (a Retrieved, Context or Clearance); returns it."""
        self.set(**describe(value))
        return value

    def _failed(self, exc: BaseException) -> None:
        super()._failed(exc)
        code = getattr(exc, "code", None)  # an input error names its code (unknown_user, invalid_date…)
        self._outcome = code if isinstance(code, str) else Failed.INSIDE

    def _closing(self) -> None:
        self.span.set_attribute(A + "step.outcome", self._outcome or PASSED)


class HttpSpan(_Span):
    kind = SpanKind.SERVER

    def __init__(self, tracer, headers: Iterable[tuple[bytes, bytes]], method: str) -> None:
        super().__init__(tracer, {"http.request.method": method})
        self.name = method
        wanted = {b"traceparent", b"tracestate"}
        self._carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers if k in wanted}

    def _context(self):
        return _W3C.extract(self._carrier)

    def response_headers(self) -> list[tuple[bytes, bytes]]:
        """`traceresponse: 00-<trace id>-<span id>-<flags>`: which trace holds this request."""
        ctx = self.span.get_span_context()
        value = f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
        return [(TRACERESPONSE.encode(), value.encode())]

    def responded(self, route: str, status: int) -> None:
        self.span.update_name(f"{self.name} {route}")
        self.span.set_attributes({"http.route": route, "http.response.status_code": status})
        if status >= 500:
            self.span.set_status(Status(StatusCode.ERROR))


class _NoSpan:
    """The disabled Telemetry's request, step and HTTP span: does nothing, returns what it is given."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        return None

    def set(self, **values: Any) -> None:
        return None

    def answered(self, result) -> None:
        return None

    def decided(self, outcome):
        return outcome

    def record(self, value):
        return value

    def response_headers(self) -> list[tuple[bytes, bytes]]:
        return []

    def responded(self, route: str, status: int) -> None:
        return None


_NO_REQUEST = _NO_STEP = _NO_HTTP = _NoSpan()


# -- what a value says, as attributes -------------------------------------------------------------

def outcome_attributes(outcome) -> dict[str, Any]:
    """The outcome's kind and its code (for an answer: "answered" or "compared"), never its text."""
    if isinstance(outcome, Compared):
        return {"outcome": "compared", "outcome_code": "compared", "citations": len(outcome.citations)}
    if isinstance(outcome, Answered):
        return {"outcome": "answered", "outcome_code": "answered", "citations": len(outcome.citations),
                "extractive": outcome.extractive}
    kind = {Refused: "refused", Abstained: "abstained", Failed: "failed"}[type(outcome)]
    return {"outcome": kind, "outcome_code": outcome.code}


def describe(value) -> dict[str, Any]:
    if isinstance(value, Retrieved):
        return {"nodes.retrieved": len(value.nodes), "degraded": value.degraded,
                "best_similarity": None if value.best_similarity is None else round(value.best_similarity, 4)}
    if isinstance(value, Context):
        report = value.report
        return {"nodes.kept": len(value.nodes), "nodes.dropped": len(report.dropped),
                "versions_applied": len(report.applied), "versions_swapped": len(report.swaps),
                "conflicts": len(report.conflicts), "held_back": report.held_back is not None,
                "warnings": len(report.warnings)}
    if isinstance(value, Clearance):
        return {"role": value.role, "clearance.levels": list(value.levels), "clearance.sensitive": value.sensitive,
                "line_of_business": value.line_of_business}
    raise TypeError(f"no span attributes for a {type(value).__name__}")


# -- components (LlamaIndex spans, proof/instrumentation.py) ----------------------------------------

def component_span_start(telemetry: Telemetry, name: str, parent, bound_args, instance):
    """An OTel span for one component call, under `parent` (None: the current span), not made current."""
    ctx = trace.set_span_in_context(parent) if parent is not None else None
    attributes = {A + "component": name.removeprefix(A)}
    nodes = bound_args.arguments.get("nodes")
    if nodes is not None:
        attributes[A + "nodes.in"] = len(nodes)
    model = getattr(getattr(instance, "metadata", None), "model_name", None)
    if name.startswith(A + "llm.") and isinstance(model, str):
        attributes["gen_ai.request.model"] = model
    return telemetry.tracer.start_span(name, context=ctx, attributes=attributes, record_exception=False,
                                       set_status_on_exception=False)


@observing
def component_span_end(span, bound_args, *, result=None, error: BaseException | None = None) -> None:
    try:
        if error is not None:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        else:
            span.set_attributes({A + k: v for k, v in _result_counts(bound_args, result).items() if v is not None})
    finally:
        span.end()


def _result_counts(bound_args, result) -> dict[str, Any]:
    """Counts and flags of a component's result, read by shape (the components live above ops)."""
    if hasattr(result, "drops") and hasattr(result, "nodes"):  # a clearance guard pass
        return {"nodes.kept": len(result.nodes), "nodes.dropped": len(result.drops)}
    if hasattr(result, "arm_counts"):  # the hybrid search's RetrievalResult
        counts = {"nodes.retrieved": len(result.nodes), "degraded": result.degraded,
                  "question_parts": len(result.parts),
                  "best_similarity": None if result.best_similarity is None else round(result.best_similarity, 4)}
        return counts | {f"arm.{arm}.nodes": n for arm, n in result.arm_counts.items()}
    if hasattr(result, "report") and hasattr(result, "nodes"):  # version resolution, conflict flagging
        report = result.report
        return {"nodes.kept": len(result.nodes), "nodes.dropped": len(report.dropped),
                "versions_applied": len(report.applied), "versions_swapped": len(report.swaps),
                "conflicts": len(report.conflicts), "held_back": report.held_back is not None}
    if hasattr(result, "failed_closed"):  # the synthesizer's outcome
        # Not whether it drafted an answer: one drafted and then withheld for a subject above the
        # caller's clearance must read like a question the sources don't answer (docs/design.md).
        return {"failed_closed": result.failed_closed,
                "attempts": len(result.attempts), "nodes.dropped": len(result.dropped),
                "context_nodes": len(result.context), "tokens.input": result.tokens_in,
                "tokens.output": result.tokens_out}
    return {}


# -- configuration ----------------------------------------------------------------------------------

def telemetry_for(settings) -> Telemetry:
    """OTLP/HTTP export to POLICYDESK_OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT);
    unset, a disabled Telemetry (nothing imported beyond the API, nothing sent)."""
    endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT
    if not endpoint:
        return Telemetry.disabled()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    headers = settings.OTEL_EXPORTER_OTLP_HEADERS
    exporter = OTLPSpanExporter(endpoint=traces_url(endpoint),
                                headers=parse_headers(headers.get_secret_value()) if headers else None,
                                timeout=settings.OTEL_EXPORTER_OTLP_TIMEOUT)
    return Telemetry.exporting_to(exporter, service_name=settings.OTEL_SERVICE_NAME)


def traces_url(endpoint: str) -> str:
    """The traces URL under an OTLP base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT means it
    (`http://collector:4318` -> `http://collector:4318/v1/traces`); a URL already ending in
    /v1/traces is taken as it is."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


def parse_headers(value: str) -> Mapping[str, str]:
    """`key=value,key2=value2`, values percent-encoded (the OTEL_EXPORTER_OTLP_HEADERS format).
    A malformed entry is an error naming its position, never its value (it holds credentials)."""
    headers = {}
    for i, entry in enumerate(e for e in value.split(",") if e.strip()):
        key, sep, val = entry.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"OTEL_EXPORTER_OTLP_HEADERS: entry {i + 1} is not key=value")
        headers[key.strip().lower()] = unquote(val.strip())
    return headers
