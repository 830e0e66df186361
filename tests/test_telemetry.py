"""OpenTelemetry (issue 52, item 5): one request span with the seven step spans as children, the
W3C traceparent honoured by the web app and the JSON API, nothing the user typed or read in any
span, and OTLP/HTTP export to a receiver this test runs (none when no endpoint is set).

Spans are read from the SDK's InMemorySpanExporter or decoded from the OTLP protobuf the receiver
got; `force_flush` waits for export, nothing sleeps."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from pydantic import ValidationError
from sqlalchemy import text

from policydesk.config import Settings
from policydesk.contract.answer import AskRequest
from policydesk.ops.telemetry import STEPS, Telemetry, parse_headers, telemetry_for
from policydesk.pipeline import AskPipeline
from policydesk.web.app import create_app
from tests.api_helpers import bearer, make_token
from tests.conftest import WEB_TODAY
from tests.served_app import served

TIMELY = "What is the timely filing limit?"
MEMBER_ID = "CVM12345678"  # the demo plan's member-number shape (Settings.PLAN_ID_PATTERNS)
PHRASE = "quillfeather orchard"  # in no source: it can only reach a span from the question
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


@pytest.fixture
def recorded():
    exporter = InMemorySpanExporter()
    telemetry = Telemetry.exporting_to(exporter, batch=False)
    yield exporter, telemetry
    telemetry.shutdown()


def traced_pipeline(pipeline, demo_db, settings, telemetry: Telemetry) -> AskPipeline:
    """The session pipeline's models and gate, with its own telemetry."""
    return AskPipeline(demo_db, settings, pipeline.embed_model, None, today=WEB_TODAY, gate=pipeline.gate,
                       what_changed=pipeline.what_changed, telemetry=telemetry)


def children(spans, parent) -> list:
    return sorted((s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id),
                  key=lambda s: s.start_time)


def one(spans, name: str):
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def stored_trace(db, trace_id):
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT id, kind, refused FROM traces WHERE id = :id"),
                            {"id": trace_id}).mappings().one_or_none()


def test_an_ask_is_one_request_span_with_the_seven_steps_in_order(recorded, pipeline, demo_db, settings, staff):
    exporter, telemetry = recorded
    result = traced_pipeline(pipeline, demo_db, settings, telemetry).ask(
        AskRequest(user_name=staff["rep"], question=TIMELY))
    assert result.answerable
    spans = exporter.get_finished_spans()
    request = one(spans, "policydesk.ask")
    assert request.parent is None and {s.context.trace_id for s in spans} == {request.context.trace_id}
    attrs = request.attributes
    assert attrs["policydesk.trace_row_id"] == str(result.trace_id) and stored_trace(demo_db, result.trace_id)
    assert (attrs["policydesk.role"], attrs["policydesk.outcome"], attrs["policydesk.degraded"]) == (
        "rep", "answered", False)
    assert attrs["policydesk.citations"] == len(result.citations) > 0 and attrs["policydesk.latency_ms"] > 0

    steps = children(spans, request)
    assert [s.name for s in steps] == [f"policydesk.{name}" for name in STEPS]
    assert [s.attributes["policydesk.step.number"] for s in steps] == [1, 2, 3, 4, 5, 6, 7]
    for before, after in zip(steps, steps[1:]):  # one after the other, inside the request
        assert before.end_time <= after.start_time
    assert request.start_time <= steps[0].start_time and steps[-1].end_time <= request.end_time
    by_name = {s.name.removeprefix("policydesk."): s.attributes for s in steps}
    assert [by_name[n]["policydesk.step.outcome"] for n in STEPS] == [
        "passed", "passed", "passed", "passed", "passed", "answered", "passed"]
    assert by_name["filter"]["policydesk.role"] == "rep" and "policydesk.clearance.levels" in by_name["filter"]
    assert by_name["retrieve"]["policydesk.nodes.retrieved"] > 0
    kept = by_name["resolve_versions"]["policydesk.nodes.kept"]
    assert kept == len(result.context_ids) > 0 and by_name["resolve_versions"]["policydesk.nodes.dropped"] >= 0

    # The LlamaIndex components the steps run are spans under them: the guard once before version
    # resolution (under retrieve) and once before the prompt (under resolve_versions).
    by_step = {s.name: [c.name for c in children(spans, s)] for s in steps}
    assert by_step["policydesk.retrieve"] == ["policydesk.hybrid_search", "policydesk.guard"]
    assert by_step["policydesk.resolve_versions"] == [
        "policydesk.version_resolver", "policydesk.conflict_flagger", "policydesk.guard"]
    guards = [s for s in spans if s.name == "policydesk.guard"]
    assert all(g.attributes["policydesk.nodes.dropped"] == 0 for g in guards)
    assert guards[0].attributes["policydesk.nodes.in"] == guards[0].attributes["policydesk.nodes.kept"] == (
        by_name["retrieve"]["policydesk.nodes.retrieved"])


def test_a_refused_question_still_yields_its_spans_and_the_trace_row_id(recorded, pipeline, demo_db, settings,
                                                                          staff):
    exporter, telemetry = recorded
    result = traced_pipeline(pipeline, demo_db, settings, telemetry).ask(
        AskRequest(user_name=staff["rep"], question="Please approve this claim today."))
    assert result.refused
    spans = exporter.get_finished_spans()
    request = one(spans, "policydesk.ask")
    assert request.attributes["policydesk.trace_row_id"] == str(result.trace_id)
    assert stored_trace(demo_db, result.trace_id)["refused"] is True
    assert (request.attributes["policydesk.outcome"], request.attributes["policydesk.outcome_code"]) == (
        "refused", result.refusal_code)
    steps = children(spans, request)
    # Nothing after the gate ran but the trace write: no retrieval span, no guard, no model.
    assert [s.name for s in steps] == ["policydesk.resolve_role", "policydesk.refuse_early", "policydesk.trace"]
    assert steps[1].attributes["policydesk.step.outcome"] == result.refusal_code
    assert not any(s.name in ("policydesk.hybrid_search", "policydesk.guard") for s in spans)


def test_an_unknown_user_is_a_failed_step_one_named_by_its_code(recorded, pipeline, demo_db, settings):
    exporter, telemetry = recorded
    result = traced_pipeline(pipeline, demo_db, settings, telemetry).ask(
        AskRequest(user_name="nobody-by-this-name", question=TIMELY))
    assert result.error_code == "unknown_user"
    spans = exporter.get_finished_spans()
    step = one(spans, "policydesk.resolve_role")
    assert step.attributes["policydesk.step.outcome"] == "unknown_user"
    assert step.attributes["error.type"] == "AskError" and step.status.description == "AskError"
    assert not step.events  # no exception event: its message names the user
    request = one(spans, "policydesk.ask")
    assert request.attributes["policydesk.outcome_code"] == "unknown_user"


def test_a_telemetry_failure_is_logged_and_the_ask_goes_on(recorded, pipeline, demo_db, settings, staff,
                                                            monkeypatch, caplog):
    exporter, telemetry = recorded

    def broken(value):
        raise RuntimeError("describing failed")

    monkeypatch.setattr("policydesk.ops.telemetry.describe", broken)
    with caplog.at_level("WARNING", logger="policydesk.ops.telemetry"):
        result = traced_pipeline(pipeline, demo_db, settings, telemetry).ask(
            AskRequest(user_name=staff["rep"], question=TIMELY))
    assert result.answerable and stored_trace(demo_db, result.trace_id)  # answered and traced as ever
    failed = [r for r in caplog.records if getattr(r, "event", None) == "telemetry_failed"]
    assert failed and all("RuntimeError" in r.getMessage() for r in failed)
    retrieve = one(exporter.get_finished_spans(), "policydesk.retrieve")
    assert "policydesk.nodes.retrieved" not in retrieve.attributes  # what could not be described is missing
    assert retrieve.attributes["policydesk.step.outcome"] == "passed"


def _strings(spans) -> list[str]:
    """Every span name, attribute value and event name and attribute value, as text."""
    out = []
    for s in spans:
        out.append(s.name)
        values = list(s.attributes.values()) + list(s.resource.attributes.values())
        for event in s.events:
            out.append(event.name)
            values += list(event.attributes.values())
        for v in values:
            out += [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]
    return out


def test_no_span_carries_the_question_answer_user_member_id_or_source_text(recorded, pipeline, demo_db, settings,
                                                                           staff):
    exporter, telemetry = recorded
    asker = traced_pipeline(pipeline, demo_db, settings, telemetry)
    questions = [f"Member {MEMBER_ID} asks: {TIMELY}",  # refused before retrieval
                 f"{TIMELY} My provider runs the {PHRASE} clinic.",  # reaches retrieval and the answerer
                 f"Is {PHRASE} physiotherapy covered?",
                 TIMELY]  # answered: its answer and cited text must not reach a span either
    results = [asker.ask(AskRequest(user_name=staff["rep"], question=q)) for q in questions]
    assert results[0].refused and not results[1].refused and results[3].answerable
    spans = exporter.get_finished_spans()
    assert len([s for s in spans if s.name == "policydesk.ask"]) == 4
    assert any(s.name == "policydesk.hybrid_search" for s in spans)  # the phrase went through retrieval
    strings = _strings(spans)
    forbidden = [MEMBER_ID, PHRASE, "quillfeather", staff["rep"], TIMELY, "timely filing"]
    assert [(f, s) for f in forbidden for s in strings if f.lower() in s.lower()] == []
    # Nothing of an answer or of a cited source's text (any 20 characters of a long value).
    read = [r.answer for r in results if r.answer] + [c.text for r in results for c in r.citations if c.text]
    assert read and [s for s in strings if len(s) >= 20 and any(s in t for t in read)] == []


def test_a_subject_above_clearance_and_a_made_up_one_leave_the_same_spans(recorded, pipeline, demo_db, settings,
                                                                         staff):
    # tests/test_topic_oracle.py's first pair: the topic gate must not show in the spans either.
    exporter, telemetry = recorded
    asker = traced_pipeline(pipeline, demo_db, settings, telemetry)
    shapes = []
    for question in ("What does the fraud referral procedure say?", "What does the fitness referral procedure say?"):
        exporter.clear()
        result = asker.ask(AskRequest(user_name=staff["rep"], question=question))
        assert result.abstain_code == "not_answered"
        codes = ("policydesk.step.outcome", "policydesk.outcome", "policydesk.outcome_code")
        shapes.append([(s.name, sorted(s.attributes), [s.attributes.get(c) for c in codes])
                       for s in sorted(exporter.get_finished_spans(), key=lambda s: s.start_time)])
    assert shapes[0] == shapes[1]


# -- the web app: traceparent in, traceresponse out ------------------------------------------------

def test_the_api_honours_traceparent_and_names_the_trace(recorded, pipeline, demo_db, settings, staff):
    exporter, telemetry = recorded
    app = create_app(settings, db=demo_db, pipeline=traced_pipeline(pipeline, demo_db, settings, telemetry))
    token = make_token(demo_db, staff["rep"])
    with served(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        r = client.post("/api/v1/ask", json={"question": TIMELY},
                        headers={**bearer(token), "traceparent": TRACEPARENT})
    assert r.status_code == 200, r.text[:300]
    answer = r.json()
    spans = exporter.get_finished_spans()
    server_span = one(spans, "POST /api/v1/ask")
    assert server_span.kind == SpanKind.SERVER
    # A child of the caller's span, in the caller's trace.
    assert f"{server_span.context.trace_id:032x}" == CALLER_TRACE
    assert server_span.parent.is_remote and f"{server_span.parent.span_id:016x}" == CALLER_SPAN
    assert server_span.attributes["http.route"] == "/api/v1/ask"
    assert server_span.attributes["http.response.status_code"] == 200
    request = one(spans, "policydesk.ask")
    assert request.parent.span_id == server_span.context.span_id
    assert f"{request.context.trace_id:032x}" == CALLER_TRACE
    # The response names the trace; the request span names the trace row the JSON names.
    assert r.headers["traceresponse"] == f"00-{CALLER_TRACE}-{server_span.context.span_id:016x}-01"
    assert request.attributes["policydesk.trace_row_id"] == answer["trace_id"]
    assert [s.name for s in children(spans, request)] == [f"policydesk.{n}" for n in STEPS]
    assert token not in " ".join(_strings(spans))


def test_a_request_without_traceparent_starts_its_own_trace(recorded, pipeline, demo_db, settings, staff):
    exporter, telemetry = recorded
    app = create_app(settings, db=demo_db, pipeline=traced_pipeline(pipeline, demo_db, settings, telemetry))
    token = make_token(demo_db, staff["rep"])
    with served(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        r = client.post("/api/v1/ask", json={"question": "Please approve this claim today."}, headers=bearer(token))
        assert r.status_code == 422 and r.json()["type"] == "refused"  # a problem, still traced
        bad = client.post("/api/v1/ask", json={"question": TIMELY},
                          headers={**bearer(token), "traceparent": "00-not-a-trace-01"})
    spans = exporter.get_finished_spans()
    servers = [s for s in spans if s.kind == SpanKind.SERVER]
    assert [s.parent for s in servers] == [None, None]  # a malformed traceparent is ignored, not trusted
    request = [s for s in spans if s.name == "policydesk.ask"]
    assert [s.parent.span_id for s in request] == [s.context.span_id for s in servers]
    assert request[0].attributes["policydesk.trace_row_id"] == r.json()["trace_id"]
    assert r.headers["traceresponse"].split("-")[1] == f"{servers[0].context.trace_id:032x}"
    assert bad.status_code == 200 and bad.headers["traceresponse"].split("-")[1] != CALLER_TRACE


# -- OTLP/HTTP to a receiver ---------------------------------------------------------------------

@dataclass
class Receiver:
    url: str
    paths: list[str] = field(default_factory=list)
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)

    def spans(self) -> list:
        return [span for req in self.requests for rs in req.resource_spans for ss in rs.scope_spans
                for span in ss.spans]


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """An OTLP/HTTP trace receiver on a loopback port: POST /v1/traces, protobuf."""
    received = Receiver("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.paths.append(self.path)
            if self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf":
                received.requests.append(ExportTraceServiceRequest.FromString(body))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _attributes(span) -> dict:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}


def test_a_served_app_exports_an_asks_spans_over_otlp_http(pipeline, demo_db, settings, staff):
    with otlp_receiver() as receiver:
        configured = settings.model_copy(update={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                                                 "OTEL_SERVICE_NAME": "policydesk-under-test"})
        telemetry = telemetry_for(configured)
        assert telemetry.enabled
        app = create_app(configured, db=demo_db, pipeline=traced_pipeline(pipeline, demo_db, configured, telemetry))
        token = make_token(demo_db, staff["rep"])
        try:
            with served(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
                r = client.post("/api/v1/ask", json={"question": TIMELY},
                                headers={**bearer(token), "traceparent": TRACEPARENT})
            assert r.status_code == 200
            assert app.state.telemetry.force_flush()  # the batch goes out now, over HTTP
        finally:
            telemetry.shutdown()
    assert set(receiver.paths) == {"/v1/traces"} and receiver.requests
    resources = {a.key: a.value.string_value for req in receiver.requests for rs in req.resource_spans
                 for a in rs.resource.attributes}
    assert resources["service.name"] == "policydesk-under-test"
    spans = receiver.spans()
    names = [s.name for s in spans]
    assert {"POST /api/v1/ask", "policydesk.ask", *(f"policydesk.{n}" for n in STEPS)} <= set(names)
    assert {s.trace_id.hex() for s in spans} == {CALLER_TRACE}
    request = next(s for s in spans if s.name == "policydesk.ask")
    assert _attributes(request)["policydesk.trace_row_id"] == r.json()["trace_id"]


def test_with_no_endpoint_nothing_is_sent(pipeline, demo_db, settings, staff, monkeypatch):
    with otlp_receiver() as receiver:
        # The SDK exporter would read this if anything built one; PolicyDesk builds none without
        # its endpoint setting (or the standard OTEL_EXPORTER_OTLP_ENDPOINT).
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url + "/v1/traces")
        assert settings.OTEL_EXPORTER_OTLP_ENDPOINT is None
        telemetry = telemetry_for(settings)
        assert not telemetry.enabled
        app = create_app(settings, db=demo_db, pipeline=traced_pipeline(pipeline, demo_db, settings, telemetry))
        token = make_token(demo_db, staff["rep"])
        with served(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
            r = client.post("/api/v1/ask", json={"question": TIMELY},
                            headers={**bearer(token), "traceparent": TRACEPARENT})
        assert app.state.telemetry.force_flush()
    assert r.status_code == 200 and r.json()["answerable"]
    assert "traceresponse" not in r.headers
    assert receiver.paths == []


# -- configuration -------------------------------------------------------------------------------

def test_the_endpoint_is_read_from_policydesk_or_the_standard_variable(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert Settings(_env_file=None).OTEL_EXPORTER_OTLP_ENDPOINT == "http://collector:4318"
    monkeypatch.setenv("POLICYDESK_OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.plan.internal:4318/")
    assert Settings(_env_file=None).OTEL_EXPORTER_OTLP_ENDPOINT == "https://otel.plan.internal:4318/"
    monkeypatch.setenv("POLICYDESK_OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")  # no scheme
    with pytest.raises(ValidationError, match="OTEL_EXPORTER_OTLP_ENDPOINT"):
        Settings(_env_file=None)


def test_export_headers_parse_and_a_bad_entry_is_named_without_its_value():
    assert parse_headers("Authorization=Basic%20cGs6c2s=, x-tenant = plan-a") == {
        "authorization": "Basic cGs6c2s=", "x-tenant": "plan-a"}
    with pytest.raises(ValueError, match="entry 2 is not key=value") as raised:
        parse_headers("a=b,s3cret-token")
    assert "s3cret" not in str(raised.value)
