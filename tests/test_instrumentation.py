"""The trace is assembled from what the steps returned; LlamaIndex's events still fire for any
observer; the evals' model-call watch sees every model call; postprocessors keep no state."""

from __future__ import annotations

import json
import threading
from datetime import date

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from sqlalchemy import text

from policydesk.accounts.access import clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.postprocessors import VersionResolver
from policydesk.proof.instrumentation import watch_model_calls
from policydesk.retrievers import HybridRetrievalEvent, HybridRetriever, chunk_vector_store
from policydesk.versions import VersionLookup
from tests import extension_helpers as helpers
from tests.conftest import WEB_TODAY
from tests.stored_chunks import ScriptedLLM


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


def test_an_ask_fires_retrieval_events_and_the_trace_keeps_what_retrieval_returned(pipeline, staff, demo_db):
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
    # The fused ids the retrieval event carried are the ones the trace keeps.
    fused = [e for e in recorder.events if isinstance(e, RetrievalEndEvent) and e.span_id
             and e.span_id.startswith("HybridRetriever.search")]
    assert [n.node.node_id for n in fused[0].nodes] == seen["retrieved_ids"]
    assert {"retrieval", "clearance_guard", "version_resolution", "synthesis", "resolve_role",
            "refusal_gate"} <= set(row["stage_ms"])


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


def test_a_model_answer_traces_each_call_and_what_it_was_sent(demo_db, settings, embed_model, staff):
    """Twice badly cited: two model calls, both in the trace's count and its attempts, and the
    prompts returned to the caller (in process) are what the model received."""
    reply = json.dumps({"answerable": True, "answer": "Providers have 90 days.", "insufficient_evidence_reason": None,
                        "claims": [{"text": "Claims are due within 90 days.", "citations": ["POL-SIU:v1:scoring"]}]})
    llm = ScriptedLLM(replies=[reply, reply])
    p = build_pipeline(demo_db, settings, embed_model=embed_model, llm=llm, today=WEB_TODAY)
    result = p.ask(AskRequest(user_name=staff["rep"], question="What is the timely filing limit?"))
    row = _row(demo_db, result.trace_id)
    assert result.abstain_code == "failed_closed"
    assert row["answer"]["instrumentation"]["llm_calls"] == len(row["attempts"]) == len(llm.prompts) == 2
    assert len(result.prompts) == 2
    for sent, kept in zip(llm.prompts, result.prompts):  # the model got the same text, role-prefixed
        assert all(line in sent for line in kept.splitlines())
    assert "POL-SIU:v1:scoring" in result.prompts[1] and "POL-SIU:v1:scoring" not in result.prompts[0]
    assert {"retrieval", "version_resolution", "synthesis"} <= set(row["stage_ms"])


def test_asks_on_two_threads_each_trace_only_their_own_retrieval(pipeline, staff, demo_db):
    """Nothing is shared between requests: asked at once on one pipeline (as a server's threads
    do), each trace keeps the ids it keeps when asked alone."""
    questions = ["What is the timely filing limit?", "Does a CT scan need prior authorization?"]
    alone = [_row(demo_db, pipeline.ask(AskRequest(user_name=staff["rep"], question=q)).trace_id)
             for q in questions]
    start, results = threading.Barrier(2), {}

    def ask(q: str) -> None:
        start.wait()
        results[q] = pipeline.ask(AskRequest(user_name=staff["rep"], question=q))

    threads = [threading.Thread(target=ask, args=(q,)) for q in questions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    together = [_row(demo_db, results[q].trace_id) for q in questions]
    ids = lambda row: row["answer"]["instrumentation"]["retrieved_ids"]  # noqa: E731
    assert ids(alone[0]) != ids(alone[1])
    for a, b in zip(alone, together):
        assert ids(b) == ids(a) and b["chunk_ids"] == a["chunk_ids"]


def test_the_model_call_watch_sees_an_extension_components_own_model(demo_db, settings, embed_model, pipeline, staff):
    """An extension that sends context to a model of its own: no answering model ran (offline), so
    the trace counts no call, but the watch the evals' leak matrix reads has the text it sent."""
    s = settings.model_copy(update={"POSTPROCESSORS": [helpers.spec("model_reader", "ModelReadingPostprocessor")]})
    p = build_pipeline(demo_db, s, embed_model=embed_model, today=WEB_TODAY, gate=pipeline.gate)
    with watch_model_calls() as prompts:
        result = p.ask(AskRequest(user_name=staff["rep"], question="What is the timely filing limit?"))
    assert result.context_ids and result.prompts == []
    assert _row(demo_db, result.trace_id)["answer"]["instrumentation"]["llm_calls"] == 0
    sent = "\n".join(prompts)
    assert all(text in sent for text in _stored_texts(demo_db, result.context_ids))
    with watch_model_calls() as outer:  # nested watches each see the call and detach alone
        with watch_model_calls() as inner:
            p.ask(AskRequest(user_name=staff["rep"], question="What is the timely filing limit?"))
        p.ask(AskRequest(user_name=staff["rep"], question="What is the timely filing limit?"))
    assert inner and len(outer) == 2 * len(inner) == 2 * len(prompts)
    assert not any(type(h).__name__ == "ModelCallWatch" for h in get_dispatcher().event_handlers)


def _stored_texts(db, chunk_ids) -> list[str]:
    with db.owner.connect() as conn:
        return list(conn.execute(text("SELECT text FROM data_chunks WHERE node_id = ANY(:ids)"),
                                 {"ids": list(chunk_ids)}).scalars())
