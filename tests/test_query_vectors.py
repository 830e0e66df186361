"""The question is embedded once per request: retrieval returns the query vectors it computed
(`RetrievalResult.query_vectors`) and the offline reader ranks sentences with them. The passages
are the ones the reader shows when it embeds the question itself, and nothing is kept past the
request (the vectors are a returned value, not a cache)."""

from __future__ import annotations

import pytest

from policydesk.contract.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.storage.guard_read import CallerChunks
from policydesk.accounts.access import clearance_for
from tests.conftest import WEB_TODAY

QUESTIONS = [
    ("What is the timely filing limit?", {}),
    ("What is the timely filing limit?", {"date_of_service": "2025-11-03"}),
    ("How long does a member have to file an appeal?", {"denial_notice_date": "2025-03-01"}),
    ("Is audio-only telehealth covered?", {}),
]


@pytest.fixture
def counted(embed_model, monkeypatch):
    """Every query the model itself embeds, in order (the model still runs)."""
    seen: list[str] = []
    engine = type(embed_model)
    original = engine._get_query_embedding

    def counting(self, query):
        seen.append(query)
        return original(self, query)

    monkeypatch.setattr(engine, "_get_query_embedding", counting)
    return seen


@pytest.fixture(scope="module")
def rep(demo_db):
    from sqlalchemy.orm import Session

    from policydesk.accounts.users import add_user

    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name="reqemb-rep", role="rep", password="correct horse battery staple")
    return "reqemb-rep"


@pytest.mark.parametrize("question,dates", QUESTIONS)
def test_the_reader_ranks_with_retrievals_vector_and_shows_what_it_shows_embedding_on_its_own(
        demo_db, settings, embed_model, rep, counted, question, dates):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY)
    counted.clear()
    result = pipeline.ask(AskRequest(user_name=rep, question=question, dates=dates))
    assert result.error is None and result.answerable and result.passages
    assert counted.count(question) == 1  # retrieval embedded it; the reader did not again
    # The same context, read with the reader embedding the question itself: the same passages.
    context, _ = CallerChunks(demo_db.app, clearance_for("rep")).reread(_nodes(demo_db, result.context_ids))
    counted.clear()
    alone = pipeline.reader.read(question, context)
    assert counted.count(question) == 1
    assert [p.model_dump() for p in alone] == [p.model_dump() for p in result.passages]


def test_vectors_are_not_kept_past_a_request(demo_db, settings, embed_model, rep, counted):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY)
    question = "What is the timely filing limit?"
    pipeline.ask(AskRequest(user_name=rep, question=question))
    pipeline.ask(AskRequest(user_name=rep, question=question))
    assert counted.count(question) == 2  # once per request: the second request embedded it again


def _nodes(db, chunk_ids):
    from llama_index.core.schema import NodeWithScore, TextNode
    from sqlalchemy import text

    with db.owner.connect() as conn:
        rows = {r.node_id: r for r in conn.execute(text(
            "SELECT node_id, text, metadata_ FROM data_chunks WHERE node_id = ANY(:ids)"), {"ids": list(chunk_ids)})}
    return [NodeWithScore(node=TextNode(id_=i, text=rows[i].text, metadata=rows[i].metadata_), score=1.0)
            for i in chunk_ids]
