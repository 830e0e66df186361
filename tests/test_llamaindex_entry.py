"""PolicyDesk composed from LlamaIndex parts keeps the gate, the guard and the version in force.

The worked examples in docs/extending.md are executed as written, against the demo corpus on
the configured database (the session's embedded Postgres); the rest checks the engine, the
safe retriever and the bare arms directly, and that nothing above a role's clearance comes
back through the new entry points (the same checker as tests/test_api_leaks.py, with positive
controls that show the check can fail).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid

import pytest
from pydantic import SecretStr
from llama_index.core.base.response.schema import Response
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import QueryEngineTool
from sqlalchemy import text
from sqlalchemy.orm import Session

import policydesk
from policydesk.ops import metrics
from policydesk.accounts.access import clearance_for
from policydesk.evals.leaks import ChunkCatalog
from policydesk.retrievers import chunk_vector_store
from policydesk.accounts.users import add_user, get_user
from tests.api_helpers import change_role
from tests.conftest import REPO, WEB_TODAY
from tests.test_api_leaks import PROBES, SIU_QUESTION, _UnscopedPipeline
from tests.web_helpers import PASSWORD

TF_QUESTION = "What is the timely filing limit for a claim?"
ID_QUESTION = "Member ID 4471-2290-13, what is their appeal window?"
ROLES = ("rep", "supervisor", "compliance")
DEMO_USERS = {"rep": "rep", "supervisor": "supervisor", "compliance": "compliance"}  # as `policydesk demo` adds them


def doc_example(name: str) -> str:
    doc = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", doc, re.DOTALL)
    assert found, f"docs/extending.md has no example {name!r}"
    return found.group(1)


def run_example(name: str) -> dict:
    namespace: dict = {"__name__": f"extending_{name.replace('-', '_')}"}
    exec(compile(doc_example(name), f"docs/extending.md ({name})", "exec"), namespace)  # noqa: S102 - our own doc
    return namespace


def doc_of(node: NodeWithScore) -> str | None:
    return node.node.metadata.get("doc_id") or node.node.ref_doc_id  # stored nodes keep it as the source


def versions(nodes, doc_id: str) -> set[int]:
    return {int(n.node.metadata["version"]) for n in nodes if doc_of(n) == doc_id}


@pytest.fixture(scope="module")
def configured(settings, demo_db):
    """`policydesk.config.get_settings()` answering with the demo database, and its demo users."""
    with Session(demo_db.owner) as session, session.begin():
        for name, role in DEMO_USERS.items():
            user = get_user(session, name=name)
            if user is None:
                add_user(session, name=name, role=role, password=PASSWORD)
            else:
                assert user.role == role, f"demo user {name} has role {user.role}"
    # model_copy does not validate: the secret goes in as the type the setting holds
    cfg = settings.model_copy(update={"DATABASE_URL": SecretStr(demo_db.owner_url.render_as_string(hide_password=False)),
                                      "TODAY": WEB_TODAY})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("policydesk.config.get_settings", lambda: cfg)
        yield cfg


@pytest.fixture(scope="module")
def catalog(demo_db) -> ChunkCatalog:
    return ChunkCatalog(demo_db)


# -- the worked examples, as written ------------------------------------------------------------

def test_doc_example_engine_as_an_agent_tool(configured, capsys):
    ns = run_example("engine-tool")
    answer, refused, engine = ns["answer"], ns["refused"], ns["engine"]
    assert isinstance(engine, policydesk.PolicyDeskQueryEngine) and isinstance(ns["tool"], QueryEngineTool)
    assert "90 days" in ns["output"].content and "90 days" in answer.response
    assert 2 in versions(answer.source_nodes, "POL-TF") and versions(answer.source_nodes, "POL-TF") == {2}
    assert answer.metadata["refused"] is False and answer.metadata["abstained"] is False
    assert answer.metadata["trace_id"] and any(v["doc_id"] == "POL-TF" and v["version"] == 2
                                               for v in answer.metadata["versions_applied"])
    assert refused.metadata["refused"] is True and refused.metadata["refusal_code"]
    assert refused.source_nodes == [] and refused.metadata["citations"] == []
    assert "4471-2290-13" not in refused.response + json.dumps(refused.metadata)
    assert engine.pipeline.db._closed  # close() disposed of the database it opened
    assert "POL-TF" in capsys.readouterr().out


def test_doc_example_synthesizer_in_a_retriever_query_engine(configured):
    ns = run_example("retriever-query-engine")
    response = ns["response"]
    assert isinstance(ns["synthesizer"], BaseSynthesizer) and isinstance(ns["retriever"], policydesk.PolicyRetriever)
    assert versions(response.source_nodes, "POL-TF") == {1}  # the date of service falls under version 1
    assert "180 days" in response.response and "90 days" not in response.response
    cited = {c["chunk_id"] for c in response.metadata["citations"]}
    assert cited == {n.node.node_id for n in response.source_nodes}
    assert isinstance(ns["synthesizer"], policydesk.PolicyTextSynthesizer)  # no model configured here


def test_doc_example_custom_postprocessor_runs_inside_the_guarded_stack(configured):
    ns = run_example("custom-postprocessor")
    kinds = [n.node.metadata["source_type"] for n in ns["nodes"]]
    assert "policy" in kinds and any(k != "policy" for k in kinds), kinds  # the reorder had work to do
    assert kinds == sorted(kinds, key=lambda k: k != "policy")


# -- the engine -----------------------------------------------------------------------------------

def test_query_engine_on_the_configured_database(configured):
    with policydesk.query_engine("rep") as engine:
        answer = engine.query(TF_QUESTION)
        refused = engine.query(ID_QUESTION)
        tool = QueryEngineTool.from_defaults(engine, name="policydesk", description="Plan policy answers.")
        via_tool = tool.call(ID_QUESTION)
        default_tool = engine.as_tool()
        answered_by_default_tool = default_tool.call(TF_QUESTION)
    assert default_tool.metadata.name == "policydesk" and "member" in default_tool.metadata.description
    assert "90 days" in answered_by_default_tool.content
    assert "90 days" in answer.response and 2 in versions(answer.source_nodes, "POL-TF")
    assert refused.metadata["refused"] and refused.source_nodes == []
    assert via_tool.raw_output.metadata["refused"] and via_tool.raw_output.source_nodes == []
    assert via_tool.content == refused.response


def test_source_nodes_are_the_stored_cited_chunks(pipeline, staff, demo_db):
    answer = policydesk.query_engine(staff["rep"], pipeline=pipeline).query(TF_QUESTION)
    assert answer.source_nodes
    with demo_db.owner.connect() as conn:
        stored = dict(conn.execute(text("SELECT node_id, text FROM data_chunks WHERE node_id = ANY(:ids)"),
                                   {"ids": [n.node.node_id for n in answer.source_nodes]}).all())
    assert {n.node.node_id: n.node.get_content() for n in answer.source_nodes} == stored
    assert [n.node.node_id for n in answer.source_nodes] == [c["chunk_id"] for c in answer.metadata["citations"]]


def test_aquery_runs_the_same_pipeline(pipeline, staff):
    engine = policydesk.query_engine(staff["rep"], pipeline=pipeline)
    answer = asyncio.run(engine.aquery(TF_QUESTION))
    refused = asyncio.run(QueryEngineTool.from_defaults(engine, name="pd", description="d").acall(ID_QUESTION))
    assert isinstance(answer, Response) and "90 days" in answer.response
    assert refused.raw_output.metadata["refused"] and refused.raw_output.source_nodes == []


def test_the_role_is_read_again_on_every_query(pipeline, demo_db, catalog):
    name = f"engine-mover-{uuid.uuid4().hex[:6]}"
    with Session(demo_db.owner) as session, session.begin():
        add_user(session, name=name, role="supervisor", password=PASSWORD)
    engine = policydesk.query_engine(name, pipeline=pipeline)
    cleared = engine.query(SIU_QUESTION)
    assert versions(cleared.source_nodes, "POL-SIU"), "a supervisor's answer should cite the SIU procedure"
    change_role(demo_db, name, "rep")
    demoted = engine.query(SIU_QUESTION)  # the same engine object, the next query
    assert catalog.restricted_in_text("rep", _everything_in(demoted)) == set()
    assert demoted.metadata["role"] == "rep"


def test_bad_user_date_or_product_is_a_clear_error(pipeline, staff):
    with pytest.raises(policydesk.EntryError, match="unknown user 'nobody-here'"):
        policydesk.query_engine("nobody-here", pipeline=pipeline)
    with pytest.raises(policydesk.EntryError, match="unknown date field"):
        policydesk.query_engine(staff["rep"], pipeline=pipeline, dates={"service_date": "2025-01-01"})
    with pytest.raises(policydesk.EntryError):
        policydesk.query_engine(staff["rep"], pipeline=pipeline, dates={"date_of_service": "last tuesday"})
    with pytest.raises(policydesk.EntryError, match="unknown line of business"):
        policydesk.query_engine(staff["rep"], pipeline=pipeline, line_of_business="Platinum Galaxy")


# -- the safe retriever and the bare arms -------------------------------------------------------

def test_bare_arms_return_both_versions_the_safe_retriever_only_the_one_in_force(demo_db, settings, embed_model):
    bare = policydesk.HybridArmsRetriever(chunk_vector_store(demo_db), embed_model, clearance=clearance_for("rep"))
    assert versions(bare.retrieve(TF_QUESTION), "POL-TF") == {1, 2}  # the superseded rule comes back too

    def safe(dates):
        return policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=clearance_for("rep"),
                                          dates=dates, today=WEB_TODAY).retrieve(TF_QUESTION)

    assert versions(safe(None), "POL-TF") == {2}
    assert versions(safe({"date_of_service": "2025-11-03"}), "POL-TF") == {1}
    for nodes in (safe(None), safe({"date_of_service": "2025-11-03"})):
        docs = [doc_of(n) for n in nodes if n.node.metadata["source_type"] == "policy"]
        assert all(len(versions(nodes, d)) == 1 for d in docs)  # never two versions of one policy


def test_safe_retriever_refuses_a_hand_built_clearance_wider_than_the_role(demo_db, settings, embed_model):
    import dataclasses

    wider = dataclasses.replace(clearance_for("rep"), levels=clearance_for("compliance").levels, sensitive=True)
    with pytest.raises(TypeError, match="hand-built"):
        policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=wider, dates=None)
    made_up = dataclasses.replace(clearance_for("rep"), role="auditor")
    with pytest.raises(TypeError, match="hand-built"):
        policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=made_up, dates=None)


def test_safe_retriever_refuses_to_be_built_without_a_clearance(demo_db, settings, embed_model):
    for missing in (None, "rep", {"role": "rep"}):
        with pytest.raises(TypeError, match="needs the caller's Clearance"):
            policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=missing, dates=None)
    with pytest.raises(TypeError, match="dates"):
        policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=clearance_for("rep"))
    with pytest.raises(policydesk.EntryError, match="denial"):
        policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=clearance_for("rep"),
                                   dates={"date_of_service": "2025-06-01", "denial_notice_date": "2025-01-01"})


class AddsChunks(BaseNodePostprocessor):
    """Deliberately leaky: appends the given stored chunks, whoever is asking."""

    extra: list = []

    @classmethod
    def class_name(cls) -> str:
        return "AddsChunks"

    def _postprocess_nodes(self, nodes, query_bundle=None):
        return list(nodes) + list(self.extra)


def test_a_slotted_in_postprocessor_cannot_add_what_the_caller_may_not_read(demo_db, settings, embed_model, catalog):
    restricted = [c for c in catalog.chunks.values() if not catalog.permitted("rep", c.chunk_id)][:2]
    leak = AddsChunks(extra=[NodeWithScore(node=TextNode(id_=c.chunk_id, text=c.text), score=1.0) for c in restricted])
    counters = [metrics.CLEARANCE_GUARD_DROPS.labels(component="adds_restricted", reason=r)
                for r in ("not_readable", "above_clearance")]
    before = sum(c._value.get() for c in counters)
    nodes = policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=clearance_for("rep"), dates=None,
                                       today=WEB_TODAY, postprocessors={"adds_restricted": leak}).retrieve(TF_QUESTION)
    assert {c.chunk_id for c in restricted}.isdisjoint(n.node.node_id for n in nodes)
    assert versions(nodes, "POL-TF") == {2}
    # Dropped and counted under the name it was given (RLS hides the rows: "not_readable").
    assert sum(c._value.get() for c in counters) - before == len(restricted)


def test_async_retrieval_is_the_same_body(demo_db, settings, embed_model):
    retriever = policydesk.PolicyRetriever(demo_db, embed_model, settings, clearance=clearance_for("rep"),
                                           dates=None, today=WEB_TODAY)
    assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(TF_QUESTION))] == \
        [n.node.node_id for n in retriever.retrieve(TF_QUESTION)]


# -- leaks through the new entry points ---------------------------------------------------------

def _everything_in(response: Response) -> str:
    nodes = [f"{n.node.node_id}\n{n.node.get_content()}\n{json.dumps(n.node.metadata, default=str)}"
             for n in response.source_nodes]
    return "\n".join([str(response.response), json.dumps(response.metadata, default=str), *nodes])


def _engine_blob(engine) -> str:
    tool = QueryEngineTool.from_defaults(engine, name="policydesk", description="Plan policy answers.")
    out = []
    for question in PROBES:
        out.append(_everything_in(engine.query(question)))
        called = tool.call(question)
        out += [called.content, _everything_in(called.raw_output)]
    return "\n".join(out)


def _composed_blob(demo_db, settings, pipeline, clearance) -> str:
    retriever = policydesk.PolicyRetriever(demo_db, pipeline.embed_model, settings, clearance=clearance,
                                           dates=None, today=WEB_TODAY)
    engine = RetrieverQueryEngine(retriever=retriever,
                                  response_synthesizer=policydesk.PolicyTextSynthesizer(
                                      pipeline.embed_model, chunks=retriever.chunks))
    out = []
    for question in PROBES:
        nodes = retriever.retrieve(QueryBundle(question))
        out.append("\n".join(n.node.get_content() for n in nodes))
        out.append(_everything_in(engine.query(question)))
    return "\n".join(out)


@pytest.fixture(scope="module")
def engine_blobs(pipeline, staff) -> dict[str, str]:
    return {role: _engine_blob(policydesk.query_engine(staff[role], pipeline=pipeline)) for role in ROLES}


@pytest.fixture(scope="module")
def composed_blobs(demo_db, settings, pipeline) -> dict[str, str]:
    return {role: _composed_blob(demo_db, settings, pipeline, clearance_for(role)) for role in ROLES}


@pytest.mark.parametrize("role", ROLES)
def test_nothing_above_clearance_in_the_engines_responses(role, engine_blobs, catalog):
    assert catalog.restricted_in_text(role, engine_blobs[role]) == set()


@pytest.mark.parametrize("role", ROLES)
def test_nothing_above_clearance_through_the_safe_retriever_and_synthesizer(role, composed_blobs, catalog):
    assert catalog.restricted_in_text(role, composed_blobs[role]) == set()


def test_the_probes_do_reach_restricted_text_when_cleared(engine_blobs, composed_blobs, catalog):
    for blobs in (engine_blobs, composed_blobs):
        assert catalog.restricted_in_text("rep", blobs["compliance"]), "the probes never surfaced restricted text"
        assert catalog.restricted_in_text("rep", blobs["supervisor"])


def test_positive_control_an_unscoped_pipeline_behind_the_engine_is_reported(settings, demo_db, pipeline, staff,
                                                                              catalog):
    leaky = _UnscopedPipeline(demo_db, settings, pipeline.embed_model, pipeline.llm, today=WEB_TODAY,
                              gate=pipeline.gate)
    leaked = catalog.restricted_in_text("rep", _engine_blob(policydesk.query_engine(staff["rep"], pipeline=leaky)))
    assert leaked, "the leak check did not notice an unscoped pipeline behind the engine: the check is broken"
