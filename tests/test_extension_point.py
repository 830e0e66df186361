"""The extension point (issue 21): registration from settings and entry points, what a component is
given, one reciprocal rank fusion with the built-in arms, the guarded result."""

from __future__ import annotations

import json
from datetime import date

import pytest
from llama_index.core.schema import QueryBundle
from pydantic import ValidationError

from policydesk.accounts.access import clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.config import Settings
from policydesk.extensions import ComponentSpec
from policydesk.extensions.registry import ExtensionError, Extensions
from policydesk.extensions.stack import RequestStack
from policydesk.pipeline import build_pipeline
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.fusion import deterministic_rerank, reciprocal_rank_fusion
from policydesk.retrievers.hybrid import deterministic_rerank_keep_order, section_key
from tests import extension_helpers as helpers
from tests.conftest import WEB_TODAY

QUESTION = "What is the timely filing limit?"


def test_components_are_declared_in_settings_as_json(monkeypatch):
    monkeypatch.setenv("POLICYDESK_RETRIEVERS", json.dumps([
        {"name": "codes", "factory": "tests.extension_helpers:CountingRetriever", "options": {"prefix": "POL-TF"}}]))
    monkeypatch.setenv("POLICYDESK_COMPONENT_OPTIONS", json.dumps({"from_ep": {"k": 3}}))
    s = Settings(_env_file=None)
    assert s.RETRIEVERS == [ComponentSpec(name="codes", factory="tests.extension_helpers:CountingRetriever",
                                          options={"prefix": "POL-TF"})]
    assert s.POSTPROCESSORS == [] and s.COMPONENT_OPTIONS == {"from_ep": {"k": 3}}


@pytest.mark.parametrize("spec, message", [
    ({"name": "Codes", "factory": "a.b:C"}, "lower_snake_case"),
    ({"name": "dense", "factory": "a.b:C"}, "taken by a built-in"),
    ({"name": "codes", "factory": "a.b.C"}, "package.module:attribute"),
    ({"name": "codes", "factory": "a.b:C", "option": {}}, "Extra inputs are not permitted"),
])
def test_a_malformed_declaration_is_refused_with_its_reason(spec, message):
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, RETRIEVERS=[spec])


def test_a_factory_that_cannot_be_imported_stops_the_pipeline_from_starting(demo_db, settings, embed_model, pipeline):
    s = settings.model_copy(update={"RETRIEVERS": [helpers.spec("codes", "NoSuchRetriever")]})
    with pytest.raises(ExtensionError, match=r"retriever 'codes' \(settings\): cannot import"):
        build_pipeline(demo_db, s, embed_model=embed_model, gate=pipeline.gate)


def test_a_factory_must_build_the_llama_index_type_of_its_kind(settings):
    s = settings.model_copy(update={"RETRIEVERS": [helpers.spec("odd", "not_a_retriever")]})
    registered = Extensions.from_settings(s).retrievers[0]
    with pytest.raises(ExtensionError, match="built a object, not a BaseRetriever"):
        registered.build(None)


def test_two_components_may_not_share_a_name(settings):
    s = settings.model_copy(update={"RETRIEVERS": [helpers.spec("twice", "ForeignRetriever")],
                                    "POSTPROCESSORS": [helpers.spec("twice", "LeakyPostprocessor", source="x")]})
    with pytest.raises(ExtensionError, match="registered twice: twice"):
        Extensions.from_settings(s)


@pytest.fixture
def entry_point_dist(tmp_path, monkeypatch):
    """An installed distribution declaring one retriever entry point (a real .dist-info on sys.path)."""
    info = tmp_path / "policydesk_codes_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: policydesk-codes-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[policydesk.retrievers]\ntf_sections = tests.extension_helpers:CountingRetriever\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "policydesk-codes-plugin"


def test_entry_point_components_are_found_and_take_options_from_settings(entry_point_dist, settings):
    s = settings.model_copy(update={"COMPONENT_OPTIONS": {"tf_sections": {"prefix": "POL-TF", "k": 2}}})
    (found,) = Extensions.from_settings(s).retrievers
    assert (found.name, found.origin, found.options) == (
        "tf_sections", f"entry point {entry_point_dist}", {"prefix": "POL-TF", "k": 2})
    off = s.model_copy(update={"ENTRY_POINT_COMPONENTS": False})
    assert Extensions.from_settings(off).retrievers == ()


def test_an_entry_point_component_gets_the_callers_clearance_and_dates_and_shows_in_the_trace(
        entry_point_dist, demo_db, settings, embed_model, pipeline, staff):
    s = settings.model_copy(update={"COMPONENT_OPTIONS": {"tf_sections": {"prefix": "POL-TF", "k": 2}}})
    with_ep = build_pipeline(demo_db, s, embed_model=embed_model, today=WEB_TODAY, gate=pipeline.gate)
    helpers.CountingRetriever.built.clear()
    result = with_ep.ask(AskRequest(user_name=staff["rep"], question=QUESTION,
                                    dates={"date_of_service": "2025-11-03"}))
    assert result.error is None and result.answerable
    (given,) = helpers.CountingRetriever.built
    assert given.clearance == clearance_for("rep")
    assert dict(given.dates) == {"date_of_service": date(2025, 11, 3)} and given.today == WEB_TODAY
    assert given.top_k == settings.TOP_K
    from sqlalchemy import text

    with demo_db.owner.connect() as conn:
        inst = conn.execute(text("SELECT answer->'instrumentation' FROM traces WHERE id = :i"),
                            {"i": result.trace_id}).scalar_one()
    assert {"name": "tf_sections", "kind": "retriever", "built_in": False, "nodes": 2, "dropped": 0} \
        in inst["components"]
    assert [c["name"] for c in inst["components"]][:2] == ["dense", "text"]
    assert inst["guard"]["dropped"] == []


def _stack(demo_db, settings, embed_model, role="rep", **update):
    s = settings.model_copy(update=update)
    return RequestStack(Extensions.from_settings(s), db=demo_db, store=chunk_vector_store(demo_db),
                        embed_model=embed_model, settings=s, clearance=clearance_for(role), dates={},
                        today=WEB_TODAY)


def test_extra_arms_join_the_same_reciprocal_rank_fusion(demo_db, settings, embed_model):
    probe = _stack(demo_db, settings, embed_model)
    dense_arm, text_arm = probe.retriever.arms
    dense, text_nodes = dense_arm.retrieve(QueryBundle(QUESTION)), text_arm.retrieve(QueryBundle(QUESTION))
    # The extra arm ranks first the best dense chunk that missed the fused top k: fusion lifts it in.
    baseline = {section_key(n) for n in probe.retriever.search(QUESTION).nodes}
    lifted = next(n.node.node_id for n in dense if section_key(n) not in baseline)
    stack = _stack(demo_db, settings, embed_model, RETRIEVERS=[helpers.spec("boost", "FixedRetriever",
                                                                           chunk_ids=[lifted])])
    extra = stack.retriever._extra[0][1].inner.retrieve(QueryBundle(QUESTION))  # noqa: SLF001
    # the request's retriever counts its top k in sections: the best-ranked version stands for each
    expected = deterministic_rerank_keep_order(deterministic_rerank(reciprocal_rank_fusion([dense, text_nodes, extra])),
                                               settings.TOP_K, key=section_key)
    result = stack.retriever.search(QUESTION)
    assert [(n.node.node_id, n.score) for n in result.nodes] == [(n.node.node_id, n.score) for n in expected]
    assert lifted in [n.node.node_id for n in result.nodes]
    assert result.arm_counts == {"dense": len(dense), "text": len(text_nodes), "boost": 1}
    assert result.sources[lifted][-1] == "boost" and "dense" in result.sources[lifted]


def test_the_stack_returns_the_guarded_result_and_credits_each_drop_to_its_arm(demo_db, settings, embed_model):
    stack = _stack(demo_db, settings, embed_model, RETRIEVERS=[
        helpers.spec("notes", "CountingRetriever", prefix="CN-05"), helpers.spec("foreign", "ForeignRetriever")])
    retrieved = stack.retrieve(QUESTION)
    ids = [n.node.node_id for n in retrieved.nodes]
    assert ids and "EXT-STORE:v1:notes" not in ids and retrieved.degraded is False
    assert retrieved.best_similarity is not None and retrieved.arm_counts["dense"] > 0
    assert stack.summary()["dropped"] == [
        {"chunk_id": "EXT-STORE:v1:notes", "reason": "not_readable", "component": "foreign", "stage": "retrieval"}]
    assert [n.node.node_id for n in stack.finish(list(retrieved.nodes))] == ids