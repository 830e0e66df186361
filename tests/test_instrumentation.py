"""LlamaIndex does its part: retrieve() spans and events reach the trace; postprocessors keep no state."""

from __future__ import annotations

from datetime import date

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from sqlalchemy import text

from policydesk.accounts.access import clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.postprocessors import VersionResolver
from policydesk.retrievers import HybridRetrievalEvent, HybridRetriever, chunk_vector_store
from policydesk.versions import VersionLookup


class _Recorder(BaseEventHandler):
    events: list = []

    @classmethod
    def class_name(cls) -> str:
        return "TestRecorder"

    def handle(self, event, **kwargs) -> None:
        if isinstance(event, (RetrievalEndEvent, HybridRetrievalEvent)):
            self.events.append(event)


def _row(db, trace_id):
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT * FROM traces WHERE id = :id"), {"id": trace_id}).mappings().one()


def test_an_ask_fires_retrieval_events_and_the_trace_keeps_what_they_carried(pipeline, staff, demo_db):
    recorder = _Recorder(events=[])
    get_dispatcher().add_event_handler(recorder)
    try:
        result = pipeline.ask(AskRequest(user_name=staff["rep"], question="What is the timely filing limit?"))
    finally:
        get_dispatcher().event_handlers.remove(recorder)
    summaries = [e for e in recorder.events if isinstance(e, HybridRetrievalEvent)]
    assert len(summaries) == 1 and summaries[0].degraded is False and summaries[0].best_similarity > 0.35
    # The hybrid retriever's own end event, not only its arms': the pipeline's search() fires it.
    assert any(e.span_id and e.span_id.startswith("HybridRetriever.search") for e in recorder.events
               if isinstance(e, RetrievalEndEvent))
    row = _row(demo_db, result.trace_id)
    seen = row["answer"]["instrumentation"]
    # Every chunk in context was retrieved, or is the version that applied of a section that was
    # (version resolution swaps a retrieved section for its applicable version; chunk ids DOC:vN:KEY).
    section = lambda chunk_id: (chunk_id.split(":")[0], chunk_id.split(":", 2)[2])  # noqa: E731
    assert {section(c) for c in result.context_ids} <= {section(r) for r in seen["retrieved_ids"]}
    assert seen["llm_calls"] == len(row["attempts"]) == 0  # no model configured: the policy text is shown
    # Timed by the spans LlamaIndex opens; the rest by the pipeline.
    assert {"retrieval", "version_resolution", "synthesis", "resolve_role", "refusal_gate"} <= set(row["stage_ms"])


def test_a_refused_question_makes_no_retrieval_and_no_model_call(pipeline, staff, demo_db):
    result = pipeline.ask(AskRequest(user_name=staff["rep"], question="Please approve this claim."))
    row = _row(demo_db, result.trace_id)
    assert result.refused
    assert row["answer"]["instrumentation"] == {"retrieved_ids": [], "llm_calls": 0}
    assert "retrieval" not in row["stage_ms"]


def test_postprocessors_keep_nothing_between_calls(demo_db, embed_model):
    compliance = clearance_for("compliance")
    nodes = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=compliance).retrieve(
        "What is the timely filing limit?")
    resolver = VersionResolver(lookup=VersionLookup(demo_db), clearance=compliance,
                               dates={"date_of_service": date(2025, 11, 3)}, today=date(2026, 11, 29))
    first = [n.node.node_id for n in resolver.postprocess_nodes(list(nodes))]
    second = [n.node.node_id for n in resolver.postprocess_nodes(list(nodes))]
    assert first == second and "report" not in type(resolver).model_fields  # nothing kept on the component
    swapped = [n for n in resolver.postprocess_nodes(list(nodes)) if n.node.metadata.get("swapped_from")]
    assert swapped and all(n.node.node_id.startswith("POL-TF:v1:") for n in swapped
                           if n.node.node_id.startswith("POL-TF"))
    _, report = resolver.resolve(list(nodes))  # what the call found is returned with its nodes
    assert [a["version"] for a in report.applied if a["doc_id"] == "POL-TF"] == [1]
