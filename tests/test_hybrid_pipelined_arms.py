"""The sync hybrid search embeds the question, then reads both arms through pipelined scoped reads,
the dense arm on a second connection when the arms run side by side. Whatever the transport, the
results are the ones each arm gives alone, and the dense arm's rows are the ones
`PGVectorStore.query` returns for the same metadata filters."""

from __future__ import annotations

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from sqlalchemy import event, text

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from policydesk.retrievers.hybrid import HybridRetrievalEvent, section_key
from policydesk.retrievers.store import RankingNode, node_from_row
from policydesk.storage.pipelined import scoped_pipeline
from policydesk.storage.predicate import access_filters
from policydesk.storage.scope import permitted_scope

QUESTIONS = ["How long does a provider have to file a claim?",
             "appeal deadline after a denial notice and the prior authorization turnaround",
             "SIU fraud referral case scoring threshold", "what's the co-pay for tele-health?"]


def _view(result):
    return ([(n.node.node_id, round(float(n.score or 0), 9)) for n in result.nodes], result.arm_counts,
            result.sources, result.best_similarity, result.degraded)


@pytest.fixture
def statement_log(demo_db):
    """(kind, driver connection) of every chunk search the application engine sends."""
    seen: list[tuple[str, int]] = []

    def spy(conn, cursor, statement, parameters, context, executemany):
        kind = ("text" if "policydesk_text_search" in statement else
                "dense" if "<=>" in statement else None)
        if kind:
            seen.append((kind, id(conn.connection.driver_connection)))

    event.listen(demo_db.app, "before_cursor_execute", spy)
    yield seen
    event.remove(demo_db.app, "before_cursor_execute", spy)


@pytest.mark.parametrize("role", ROLES)
def test_one_or_two_connections_return_what_each_arm_returns_alone(role, demo_db, embed_model):
    store = chunk_vector_store(demo_db)
    c = clearance_for(role)
    two = HybridRetriever(store, embed_model, clearance=c, concurrent_arms=True)
    one = HybridRetriever(store, embed_model, clearance=c, concurrent_arms=False)
    dense_arm, text_arm = one.arms
    for q in QUESTIONS:
        got = two.search(q)
        assert got.arm_counts["text"] > 0 and got.arm_counts["dense"] > 0, q
        assert _view(got) == _view(one.search(q)), q
        parts = got.parts
        alone = one.fuse(parts, [(dense_arm.retrieve(p), text_arm.retrieve(p), []) for p in parts], None)
        assert _view(got) == _view(alone), q
        # the nodes a search returns are the stored nodes the arms return alone, not what fusion ranked
        assert [n.node.model_dump() for n in got.nodes] == [n.node.model_dump() for n in alone.nodes], q
        assert all(type(n.node) is TextNode for n in got.nodes), q


def test_fusion_ranks_rows_by_what_their_stored_nodes_say(demo_db):
    """A row stands in for its stored node while the arms' lists are fused and cut: the same id,
    source type, document and section (`section_key`), for every chunk, and for a row written
    without LlamaIndex's node metadata."""
    with demo_db.owner.connect() as conn:
        rows = conn.execute(text("SELECT node_id, text, metadata_ FROM data_chunks")).all()
    rows.append(("OTHER:v1:s", "a row written by another tool", {"doc_id": "OTHER", "section_id": "s"}))
    for node_id, body, metadata in rows:
        ranked, stored = RankingNode.of(node_id, body, metadata), node_from_row(node_id, body, metadata)
        assert ranked.node_id == stored.node_id
        assert ranked.metadata.get("source_type") == stored.metadata.get("source_type")
        assert section_key(NodeWithScore(node=ranked)) == section_key(NodeWithScore(node=stored)), node_id
        assert ranked.stored().model_dump() == stored.model_dump()


@pytest.mark.parametrize("role", ROLES)
def test_the_dense_arm_returns_the_rows_pgvectorstore_query_returns(role, demo_db, embed_model):
    # The statement is PGVectorStore's own (its metadata filters carry the access predicate); only
    # the transport differs. Same ids, same order, same scores.
    store = chunk_vector_store(demo_db)
    c = clearance_for(role)
    dense_arm = HybridRetriever(store, embed_model, clearance=c).arms[0]
    for q in QUESTIONS:
        embedding = embed_model.get_query_embedding(q)
        with permitted_scope(c):
            expected = store.query(VectorStoreQuery(query_embedding=embedding, similarity_top_k=20,
                                                    filters=access_filters(c)))
        got = dense_arm.retrieve(QueryBundle(q, embedding=embedding))
        assert [n.node.node_id for n in got] == list(expected.ids), (role, q)
        assert [n.score for n in got] == pytest.approx(expected.similarities, abs=1e-9)
        assert [n.node.get_content() for n in got] == [n.get_content() for n in expected.nodes]


@pytest.mark.parametrize("concurrent", [True, False])
def test_the_question_is_embedded_before_any_connection_is_taken(concurrent, demo_db, embed_model,
                                                                  statement_log, monkeypatch):
    # A provider that hangs until its timeout must not hold pooled connections open meanwhile.
    events = statement_log
    real = embed_model.get_query_embedding

    def embed(text):
        events.append(("embed", demo_db.app.pool.checkedout()))
        return real(text)

    monkeypatch.setattr(type(embed_model), "get_query_embedding", lambda self, text: embed(text))
    retriever = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=clearance_for("rep"),
                                concurrent_arms=concurrent)
    retriever.search(QUESTIONS[0])
    assert events[0] == ("embed", 0)
    assert [kind for kind, _ in events] == ["embed", "text", "dense"]
    (_, text_conn), (_, dense_conn) = events[1], events[2]
    assert (text_conn != dense_conn) is concurrent  # two backends only when the arms run side by side


def test_a_failed_embedding_degrades_to_text_and_sends_no_dense_statement(demo_db, embed_model, statement_log,
                                                                            monkeypatch):
    def broken(self, text):
        raise TimeoutError("provider timed out")

    monkeypatch.setattr(type(embed_model), "get_query_embedding", broken)
    retriever = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=clearance_for("supervisor"),
                                concurrent_arms=True)
    result = retriever.search(QUESTIONS[0])
    assert result.degraded and "provider timed out" in result.degraded_reason
    assert result.nodes and result.arm_counts["dense"] == 0 and result.arm_counts["text"] > 0
    assert [kind for kind, _ in statement_log] == ["text"]
    assert demo_db.app.pool.checkedout() == 0


def test_a_failing_statement_raises_and_leaves_no_connection_in_a_transaction(demo_db, embed_model):
    rep = clearance_for("rep")
    with pytest.raises(Exception, match="no_such_table"):
        with scoped_pipeline(demo_db.app, rep) as pipe:
            pipe.send("SELECT * FROM no_such_table", {})
    assert demo_db.app.pool.checkedout() == 0
    # The pool hands out a clean connection: the next search works and sees its rows.
    result = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=rep).search(QUESTIONS[0])
    assert result.nodes


@pytest.mark.parametrize("role", ROLES)
def test_a_pipelined_read_runs_under_the_callers_scope_and_the_ann_settings(role, demo_db, settings):
    c = clearance_for(role)
    with scoped_pipeline(demo_db.app, c) as pipe:
        cursor = pipe.send("SELECT current_setting('policydesk.levels'), current_setting('policydesk.sensitive'), "
                           "current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan')", {})
    levels, sensitive, ef_search, scan = cursor.fetchone()
    assert levels.split(",") == list(c.levels) and sensitive == ("on" if c.sensitive else "off")
    with demo_db.owner.connect() as conn:
        rows = conn.exec_driver_sql("SELECT reltuples FROM pg_class WHERE oid = 'data_chunks'::regclass").scalar()
    expected = (settings.HNSW_EF_SEARCH_SMALL if 0 <= rows < settings.HNSW_SMALL_BELOW_ROWS
                else settings.HNSW_EF_SEARCH_LARGE if 0 < settings.HNSW_LARGE_FROM_ROWS <= rows
                else settings.HNSW_EF_SEARCH)
    assert (int(ef_search), scan) == (expected, settings.HNSW_ITERATIVE_SCAN)
    # Rolled back: the scope does not outlive the read on the pooled connection.
    with demo_db.app.connect() as conn:
        assert conn.exec_driver_sql("SELECT current_setting('policydesk.levels', true)").scalar() in (None, "")


def test_the_retrieval_events_fire_once_per_search_and_per_retrieve(demo_db, embed_model):
    seen = []

    class Catch(BaseEventHandler):
        def handle(self, event, **kwargs) -> None:
            if isinstance(event, (HybridRetrievalEvent, RetrievalEndEvent)):
                seen.append(event)

    handler = Catch()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    retriever = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=clearance_for("supervisor"))
    try:
        result = retriever.search(QUESTIONS[0])
        searched = list(seen)
        seen.clear()
        nodes = retriever.retrieve(QUESTIONS[0])
    finally:
        dispatcher.event_handlers.remove(handler)
    for events, got in ((searched, result.nodes), (seen, nodes)):
        summary, end = events  # the summary inside the span, then LlamaIndex's end event
        assert isinstance(summary, HybridRetrievalEvent) and summary.arm_counts == result.arm_counts
        assert [n.node.node_id for n in end.nodes] == [n.node.node_id for n in got] and got


def test_a_second_connection_only_when_no_other_search_is_running(demo_db, embed_model, statement_log):
    # With other requests in flight the cores are busy; a second backend per search only adds work.
    retriever = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=clearance_for("rep"),
                                concurrent_arms=True, searches=demo_db.searches)
    alone = retriever.search(QUESTIONS[0])
    with demo_db.searches.search() as first:  # another request's search on the same pool, still running
        assert first
        crowded = retriever.search(QUESTIONS[0])
    (_, t1), (_, d1), (_, t2), (_, d2) = [e for e in statement_log if e[0] != "embed"]
    assert t1 != d1 and t2 == d2
    assert _view(crowded) == _view(alone)
    assert demo_db.searches.count == 0
