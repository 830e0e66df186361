"""The question is embedded once per request (issue 17, point 4): the dense arm and the offline
answerer share its vector through `RequestEmbedding`, and nothing is kept past the request.
The answers, citations and retrieved chunks are the same as with the answerer embedding the
question on its own."""

from __future__ import annotations

import pytest

from policydesk.contract.answer import AskRequest
from policydesk.pipeline import RequestEmbedding, build_pipeline
from policydesk.pipeline import AskPipeline
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


def test_the_default_pipeline_shares_one_embedding_between_retrieval_and_the_answerer(demo_db, settings, embed_model):
    shared = build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY)
    assert isinstance(shared.embed_model, RequestEmbedding)
    assert shared.embed_model.inner is embed_model
    assert shared.llm is None and shared.reader._model is shared.embed_model


@pytest.mark.parametrize("question,dates", QUESTIONS)
def test_a_reused_question_vector_gives_the_same_answer_retrieval_and_citations(
        demo_db, settings, embed_model, rep, counted, question, dates):
    shared = build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY)
    separate = AskPipeline(demo_db, settings, embed_model, None, today=WEB_TODAY)
    assert not isinstance(separate.embed_model, RequestEmbedding)

    counted.clear()
    a = shared.ask(AskRequest(user_name=rep, question=question, dates=dates))
    shared_calls = list(counted)
    counted.clear()
    b = separate.ask(AskRequest(user_name=rep, question=question, dates=dates))
    separate_calls = list(counted)

    assert a.error is None and b.error is None
    assert a.answerable and b.answerable
    assert a.answer == b.answer
    assert a.context_ids == b.context_ids
    assert [c.chunk_id for c in a.citations] == [c.chunk_id for c in b.citations]
    assert a.versions_applied == b.versions_applied
    # The answerer asked again for the question's vector and got the one retrieval computed.
    assert separate_calls.count(question) == 2
    assert shared_calls.count(question) == 1


def test_vectors_are_not_kept_past_a_request(demo_db, settings, embed_model, rep, counted):
    shared = build_pipeline(demo_db, settings, embed_model=embed_model, today=WEB_TODAY)
    question = "What is the timely filing limit?"
    shared.ask(AskRequest(user_name=rep, question=question))
    shared.ask(AskRequest(user_name=rep, question=question))
    assert counted.count(question) == 2  # once per request: the second request embedded it again
    counted.clear()
    first = shared.embed_model.get_query_embedding(question)  # outside any request: no reuse
    second = shared.embed_model.get_query_embedding(question)
    assert counted == [question, question]
    assert first == second == embed_model.get_query_embedding(question)
