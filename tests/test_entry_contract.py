"""The in-process entry points do what docs/extending.md says (issue 49, item 10).

- `policydesk.retriever(user, dates=...)` raises `NoVersionInForce` where `ask` refuses for it
  (the policy asked about had no version in force on the date), instead of returning `[]`;
- every node it returns carries `metadata["doc_id"]`, listed as reliable metadata;
- `engine.as_tool()` has a typed schema, so an agent can pass a date of service, a denial notice
  date and a line of business with the question; LlamaIndex's own tool-calling helpers (what an
  agent runs) reach the pipeline with them, and the trace records them.

Against the demo corpus (timely filing: version 1 from 2024-01-01, version 2 from 2026-01-01).
"""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import MockLLM
from llama_index.core.tools import QueryEngineTool
from llama_index.core.tools.calling import acall_tool, call_tool
from sqlalchemy import select
from sqlalchemy.orm import Session

import policydesk
from policydesk.contract.answer import AskRequest
from policydesk.storage.models import Trace
from policydesk.versions import NoVersionInForce

TF_QUESTION = "What is the timely filing limit for a claim?"
BEFORE_ANY_VERSION = "2023-06-01"  # timely filing had no version in force yet
UNDER_VERSION_1 = "2025-11-03"


def applied(metadata: dict, doc_id: str) -> set[int]:
    return {int(v["version"]) for v in metadata["versions_applied"] if v["doc_id"] == doc_id}


@pytest.fixture
def rep_retriever(demo_db, settings, embed_model, staff):
    def build(dates):
        return policydesk.retriever(staff["rep"], dates=dates, db=demo_db, embed_model=embed_model, settings=settings)
    return build


# -- NoVersionInForce -------------------------------------------------------------------------------

def test_the_retriever_raises_no_version_in_force_where_ask_refuses(rep_retriever, pipeline, staff):
    retriever = rep_retriever({"date_of_service": BEFORE_ANY_VERSION})
    with pytest.raises(NoVersionInForce) as raised:
        retriever.retrieve(TF_QUESTION)
    assert raised.value.doc_id == "POL-TF" and raised.value.applicable_date.isoformat() == BEFORE_ANY_VERSION
    with pytest.raises(NoVersionInForce):
        asyncio.run(retriever.aretrieve(TF_QUESTION))

    # The same request through `ask` is refused for the same policy.
    result = pipeline.ask(AskRequest(user_name=staff["rep"], question=TF_QUESTION,
                                     dates={"date_of_service": BEFORE_ANY_VERSION}))
    assert result.refused and result.to_json()["refusal_code"] == "no_version_in_force"

    # Composed as docs/extending.md shows, the query engine raises it rather than answering.
    class NeverCalled(BaseSynthesizer):
        def _get_prompts(self):
            return {}

        def _update_prompts(self, prompts):
            pass

        def get_response(self, *args, **kwargs):
            raise AssertionError("synthesis ran on a rule that was not in force")

        async def aget_response(self, *args, **kwargs):
            raise AssertionError("synthesis ran on a rule that was not in force")

    with pytest.raises(NoVersionInForce):
        RetrieverQueryEngine(retriever=retriever, response_synthesizer=NeverCalled(llm=MockLLM())).query(TF_QUESTION)

    # A date under version 1 still retrieves, and only version 1.
    nodes = rep_retriever({"date_of_service": UNDER_VERSION_1}).retrieve(TF_QUESTION)
    assert {int(n.node.metadata["version"]) for n in nodes if n.node.metadata["doc_id"] == "POL-TF"} == {1}


# -- doc_id in metadata ---------------------------------------------------------------------------

def test_every_retrieved_node_carries_its_doc_id(rep_retriever):
    retriever = rep_retriever(None)
    for nodes in (retriever.retrieve(TF_QUESTION), asyncio.run(retriever.aretrieve(TF_QUESTION)),
                  retriever.retrieve("How do I handle a provider's call about a claim denial?")):
        assert nodes
        for n in nodes:
            assert n.node.metadata["doc_id"] == n.node.node_id.split(":", 1)[0], n.node.node_id


# -- the tool's typed schema ----------------------------------------------------------------------

def test_the_engines_tool_takes_dates_and_a_product_from_an_agent(pipeline, staff, demo_db):
    engine = policydesk.query_engine(staff["rep"], pipeline=pipeline)
    tool = engine.as_tool()
    assert isinstance(tool, QueryEngineTool)
    parameters = tool.metadata.to_openai_tool()["function"]["parameters"]
    assert set(parameters["properties"]) == {"input", "date_of_service", "denial_notice_date", "line_of_business"}
    assert parameters["required"] == ["input"]
    assert parameters["properties"]["date_of_service"]["anyOf"][0] == {"format": "date", "type": "string"}

    # What an agent runs with the model's tool call (llama_index.core.tools.calling).
    then = call_tool(tool, {"input": TF_QUESTION, "date_of_service": UNDER_VERSION_1})
    now = call_tool(tool, {"input": TF_QUESTION})
    later = asyncio.run(acall_tool(tool, {"input": TF_QUESTION, "date_of_service": "2026-02-01"}))
    for output in (then, now, later):
        assert not output.is_error and isinstance(output.raw_output, Response), output.content
    assert then.raw_output.metadata["dates"]["date_of_service"] == UNDER_VERSION_1
    assert applied(then.raw_output.metadata, "POL-TF") == {1}
    assert applied(now.raw_output.metadata, "POL-TF") == {2}
    assert applied(later.raw_output.metadata, "POL-TF") == {2}
    with Session(demo_db.owner) as session:  # the trace records the date the agent passed
        dates = session.scalar(select(Trace.dates).where(Trace.id == then.raw_output.metadata["trace_id"]))
    assert dates["date_of_service"] == UNDER_VERSION_1

    # Bad input is an error result the agent can read, checked (and traced) by the pipeline;
    # nothing it sent is repeated back.
    bad_date = call_tool(tool, {"input": TF_QUESTION, "date_of_service": "4471-2290-13"})
    assert bad_date.is_error and "date of service" in bad_date.content and "4471" not in bad_date.content
    bad_product = call_tool(tool, {"input": TF_QUESTION, "line_of_business": "platinum_galaxy"})
    assert bad_product.is_error and "line of business" in bad_product.content
    unknown = call_tool(tool, {"input": TF_QUESTION, "member_id": "4471-2290-13"})
    assert unknown.is_error and "member_id" in unknown.content and "4471" not in unknown.content
    assert call_tool(tool, {"date_of_service": UNDER_VERSION_1}).is_error  # no question


def test_the_tool_keeps_the_engines_own_dates_unless_the_agent_passes_one(pipeline, staff):
    engine = policydesk.query_engine(staff["rep"], pipeline=pipeline, dates={"date_of_service": UNDER_VERSION_1})
    tool = engine.as_tool(name="plan_policies", description="Plan policy answers.")
    assert tool.metadata.name == "plan_policies"
    assert applied(call_tool(tool, {"input": TF_QUESTION}).raw_output.metadata, "POL-TF") == {1}
    assert applied(call_tool(tool, {"input": TF_QUESTION, "date_of_service": "2026-02-01"}).raw_output.metadata,
                   "POL-TF") == {2}
    assert applied(engine.query(TF_QUESTION).metadata, "POL-TF") == {1}  # the engine's dates are unchanged
