"""The sync hybrid search runs the full-text arm on a worker thread beside the dense arm: the same
nodes, scores, provenance and retrieval events as running the arms one after the other."""

from __future__ import annotations

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler

from policydesk.access import ROLES, clearance_for
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from policydesk.retrievers.hybrid import HybridRetrievalEvent

QUESTIONS = ["How long does a provider have to file a claim?",
             "appeal deadline after a denial notice and the prior authorization turnaround",
             "SIU fraud referral case scoring threshold", "what's the co-pay for tele-health?"]


def _view(result):
    return ([(n.node.node_id, round(float(n.score or 0), 9)) for n in result.nodes], result.arm_counts,
            result.sources, result.best_similarity, result.degraded)


@pytest.mark.parametrize("role", ROLES)
def test_concurrent_arms_return_what_sequential_arms_return(role, demo_db, embed_model):
    store = chunk_vector_store(demo_db)
    c = clearance_for(role)
    together = HybridRetriever(store, embed_model, clearance=c, concurrent_arms=True)
    in_turn = HybridRetriever(store, embed_model, clearance=c, concurrent_arms=False)
    for q in QUESTIONS:
        got = together.search(q)
        assert got.arm_counts["text"] > 0, q
        assert _view(got) == _view(in_turn.search(q)), q


def test_the_retrieval_event_still_fires_once_per_retrieve(demo_db, embed_model):
    seen = []

    class Catch(BaseEventHandler):
        def handle(self, event, **kwargs) -> None:
            if isinstance(event, HybridRetrievalEvent):
                seen.append(event)

    handler = Catch()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    try:
        nodes = HybridRetriever(chunk_vector_store(demo_db), embed_model,
                                clearance=clearance_for("supervisor")).retrieve(QUESTIONS[0])
    finally:
        dispatcher.event_handlers.remove(handler)
    assert nodes and len(seen) == 1 and seen[0].arm_counts["text"] > 0


def test_the_text_arm_gets_its_own_thread_only_when_no_other_search_is_running(demo_db, embed_model, monkeypatch):
    # With other requests in flight the cores are busy and a thread per arm only adds switching,
    # so a search that is not alone runs its arms in turn; alone, the text arm goes to the pool.
    from policydesk.retrievers import hybrid

    handed_off: list[str] = []
    real = hybrid._in_background
    monkeypatch.setattr(hybrid, "_in_background", lambda fn, *a: handed_off.append("text") or real(fn, *a))
    retriever = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=clearance_for("rep"),
                                concurrent_arms=True)
    alone = retriever.search(QUESTIONS[0])
    assert handed_off == ["text"]
    with hybrid._search_in_flight() as first:  # another request's search, still running
        assert first
        crowded = retriever.search(QUESTIONS[0])
    assert handed_off == ["text"]  # not handed off this time
    assert _view(crowded) == _view(alone)
    assert hybrid._IN_FLIGHT == 0
