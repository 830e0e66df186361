"""The synthesizer is the last gate: in a developer's own LlamaIndex composition, whatever a
node postprocessor adds (text read with another login, a made-up chunk) is re-read under the
caller's clearance from the store; what the caller may not read never reaches the model, the
page or a citation."""

from __future__ import annotations

import json

import pytest
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode
from sqlalchemy import text
from sqlalchemy.orm import Session

import policydesk
from policydesk.accounts.users import add_user, get_active_user
from tests.conftest import WEB_TODAY
from tests.stored_chunks import V2_ID, V2_QUOTE, ScriptedLLM

SECRET_ID = "CN-03:v1:call-note-cn-03-difficulty-finding-a-therapy-appointment"  # restricted and sensitive
MADE_UP_ID = "POL-FAKE:v1:made-up"
QUESTION = "What is the timely filing limit for a claim?"


class Smuggler(BaseNodePostprocessor):
    """Adds a restricted note read with the owner login, and a chunk that does not exist."""

    secret: str = ""

    def _postprocess_nodes(self, nodes, query_bundle=None):
        return [NodeWithScore(node=TextNode(id_=SECRET_ID, text=self.secret, metadata={"title": "CN-03"}), score=9.0),
                NodeWithScore(node=TextNode(id_=MADE_UP_ID, text="Claims may be filed any time.",
                                            metadata={"title": "Fake"}), score=9.0), *nodes]


def quoting(chunk_id: str, quote: str) -> str:
    return json.dumps({"answers": "yes", "answer": quote,
                       "claims": [{"text": quote, "quotes": [{"chunk_id": chunk_id, "text": quote}]}]})


@pytest.fixture
def composed(demo_db, settings, embed_model):
    with Session(demo_db.owner) as session, session.begin():
        if get_active_user(session, name="gate-rep") is None:
            add_user(session, name="gate-rep", role="rep", password="not-used-here-123")
    with demo_db.owner.connect() as conn:
        secret = conn.execute(text("SELECT text FROM data_chunks WHERE node_id = :i"), {"i": SECRET_ID}).scalar_one()
    cfg = settings.model_copy(update={"TODAY": WEB_TODAY})
    retriever = policydesk.retriever("gate-rep", dates=None, db=demo_db, settings=cfg, embed_model=embed_model)
    return retriever, Smuggler(secret=secret), secret


def test_a_model_is_never_shown_and_never_cites_what_a_postprocessor_smuggled_in(composed):
    retriever, smuggler, secret = composed
    first_sentence = secret.splitlines()[1].split(". ")[0]
    llm = ScriptedLLM(replies=[quoting(SECRET_ID, first_sentence), quoting(MADE_UP_ID, "Claims may be filed any time.")])
    engine = RetrieverQueryEngine(retriever=retriever, node_postprocessors=[smuggler],
                                  response_synthesizer=policydesk.CitedAnswerSynthesizer(llm=llm, chunks=retriever.chunks))
    response = engine.query(QUESTION)
    # Neither is a source block of any prompt (the retry turn repeats only the model's own reply).
    assert first_sentence not in llm.prompts[0] and "filed any time" not in llm.prompts[0]
    assert all(f'<source id="{i}"' not in p for p in llm.prompts for i in (SECRET_ID, MADE_UP_ID))
    assert response.source_nodes == [] and response.metadata["failed_closed"] is True
    assert set(response.metadata["dropped"]) == {SECRET_ID, MADE_UP_ID}


def test_the_readable_context_still_answers_through_the_same_composition(composed):
    retriever, smuggler, _ = composed
    llm = ScriptedLLM(replies=[quoting(V2_ID, V2_QUOTE)])
    engine = RetrieverQueryEngine(retriever=retriever, node_postprocessors=[smuggler],
                                  response_synthesizer=policydesk.CitedAnswerSynthesizer(llm=llm, chunks=retriever.chunks))
    response = engine.query(QUESTION)
    assert [n.node.node_id for n in response.source_nodes] == [V2_ID]


def test_policy_text_shown_offline_is_only_what_the_caller_may_read(composed, embed_model):
    retriever, smuggler, secret = composed
    engine = RetrieverQueryEngine(retriever=retriever, node_postprocessors=[smuggler],
                                  response_synthesizer=policydesk.PolicyTextSynthesizer(embed_model,
                                                                                      chunks=retriever.chunks))
    response = engine.query(QUESTION)
    shown = " ".join([response.response, *(p["text"] for p in response.metadata["passages"])])
    assert secret.splitlines()[1][:60] not in shown and "filed any time" not in shown
    assert {n.node.node_id for n in response.source_nodes} <= {c["chunk_id"] for c in response.metadata["citations"]}
    assert not {n.node.node_id for n in response.source_nodes} & {SECRET_ID, MADE_UP_ID}


def test_a_synthesizer_without_the_callers_chunks_is_refused(composed):
    retriever, smuggler, _ = composed
    synthesizer = policydesk.CitedAnswerSynthesizer(llm=ScriptedLLM(replies=[]))
    with pytest.raises(TypeError, match="caller's chunks"):
        synthesizer.synthesize(QUESTION, retriever.retrieve(QUESTION))
