"""The worked example (examples/policy_codes): registered through the extension point, it runs in
the pipeline under the caller's clearance and shows in the trace.

Its own small corpus: section numbers and codes ("§ 3.2", "PA-104") at three access levels.
"""

from __future__ import annotations

import asyncio
from datetime import date

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.orm import Session

from examples.policy_codes import CrossReferencePostprocessor, PolicyCodeRetriever
from policydesk.accounts.access import clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.extensions import ComponentContext, ComponentSpec
from policydesk.pipeline import build_pipeline
from policydesk.accounts.users import add_user
from tests.web_helpers import PASSWORD

PATTERN = r"[A-Z]{2,4}-\d{2,4}|§\s*\d+(?:\.\d+)*"  # the plan's formats: a setting, never in policydesk/
TODAY = date(2026, 11, 29)

PAGES = {
    "desk.md": ("CODES-DESK", "Claims Desk Codes", "public", """# Claims Desk Codes

## § 3.2 Corrected claims

A corrected claim replaces the original claim and must reach the plan within 120 days of the original payment.
Imaging requests on a corrected claim follow PA-104. Suspected billing fraud on a corrected claim follows PA-300.

## § 3.4 Bulk submissions

Bulk submissions of more than fifty claims use the batch cover sheet PA-1040 and go to the electronic gateway.
"""),
    "auth.md": ("CODES-AUTH", "Authorization Codes", "internal", """# Authorization Codes

## PA-104 Imaging authorization

Advanced imaging needs an authorization before the scan, and the ordering provider requests it.
"""),
    "fraud.md": ("CODES-SIU", "Fraud Referral Codes", "restricted", """# Fraud Referral Codes

## PA-300 Fraud referral

Refer suspected billing fraud to the special investigations unit within 5 business days of spotting it.
"""),
}


@pytest.fixture(scope="module")
def code_db(make_db, embed_model, settings, tmp_path_factory):
    from policydesk.ingest import ingest_directory

    root = tmp_path_factory.mktemp("codes")
    (root / "wiki").mkdir()
    entries = []
    for file, (doc_id, title, level, body) in PAGES.items():
        (root / "wiki" / file).write_text(body)
        entries.append({"file": f"wiki/{file}", "id": doc_id, "title": title, "type": "wiki", "version": 1,
                        "effective_from": "2024-01-01", "date_basis": "none", "access_level": level,
                        "sensitive": False, "owner": "Claims Operations"})
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    db = make_db()
    ingest_directory(db, root, embed_model, settings)
    with Session(db.owner) as session, session.begin():
        for role in ("rep", "supervisor", "compliance"):
            add_user(session, name=f"codes-{role}", role=role, password=PASSWORD)
    return db


def chunk(db, doc_id: str, words: str) -> str:
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT node_id FROM data_chunks WHERE doc_id = :d AND text LIKE :w"),
                            {"d": doc_id, "w": f"%{words}%"}).scalar_one()


def context(db, role: str) -> ComponentContext:
    return ComponentContext(clearance=clearance_for(role), dates={}, today=TODAY, top_k=8, engine=db.app,
                            async_engine=db.app_async)


def ids(nodes) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_code_retriever_matches_section_numbers_and_codes_as_whole_tokens(code_db):
    retriever = PolicyCodeRetriever(context(code_db, "rep"), pattern=PATTERN)
    corrected, bulk = chunk(code_db, "CODES-DESK", "corrected claim"), chunk(code_db, "CODES-DESK", "Bulk")
    imaging = chunk(code_db, "CODES-AUTH", "Advanced imaging")
    assert ids(retriever.retrieve("What does §3.2 say?")) == [corrected]
    assert ids(retriever.retrieve("what does § 3.4 cover")) == [bulk]
    # The chunk headed PA-104 and the chunk naming it in its text; never "PA-1040".
    assert set(ids(retriever.retrieve("Which rule is pa-104?"))) == {imaging, corrected}
    assert retriever.retrieve("What is the corrected claim deadline?") == []  # no code named: no opinion


@pytest.mark.parametrize("role, sees_fraud", [("rep", False), ("supervisor", True), ("compliance", True)])
def test_code_retriever_reads_only_what_the_caller_may_read_sync_and_async(code_db, role, sees_fraud):
    retriever = PolicyCodeRetriever(context(code_db, role), pattern=PATTERN)
    fraud = chunk(code_db, "CODES-SIU", "investigations")
    sync = ids(retriever.retrieve("What is PA-300?"))
    assert (fraud in sync) is sees_fraud
    assert ids(asyncio.run(retriever.aretrieve("What is PA-300?"))) == sync
    imaging = chunk(code_db, "CODES-AUTH", "Advanced imaging")
    assert imaging in ids(retriever.retrieve("PA-104"))  # internal: every role may read it


@pytest.mark.parametrize("role, expected_added", [("rep", ["imaging"]), ("supervisor", ["imaging", "fraud"])])
def test_cross_reference_follows_codes_only_as_far_as_the_clearance(code_db, role, expected_added):
    corrected = PolicyCodeRetriever(context(code_db, role), pattern=PATTERN).retrieve("§ 3.2")
    post = CrossReferencePostprocessor(context(code_db, role), pattern=PATTERN, max_added=3)
    out = post.postprocess_nodes(corrected)
    named = {"imaging": chunk(code_db, "CODES-AUTH", "Advanced imaging"),
             "fraud": chunk(code_db, "CODES-SIU", "investigations")}
    assert ids(out)[:len(corrected)] == ids(corrected)  # what was in context keeps its place
    assert sorted(ids(out)[len(corrected):]) == sorted(named[k] for k in expected_added)
    assert post.postprocess_nodes(out) == out  # nothing left to follow: unchanged


def test_a_pattern_that_matches_everything_is_refused():
    with pytest.raises(ValueError, match="matches the empty string"):
        CrossReferencePostprocessor(None, pattern=r"\d*")


@pytest.fixture(scope="module")
def example_pipeline(code_db, settings, embed_model):
    s = settings.model_copy(update={
        "RETRIEVERS": [ComponentSpec(name="policy_codes", factory="examples.policy_codes:PolicyCodeRetriever",
                                     options={"pattern": PATTERN})],
        "POSTPROCESSORS": [ComponentSpec(name="cross_references",
                                         factory="examples.policy_codes:CrossReferencePostprocessor",
                                         options={"pattern": PATTERN, "max_added": 2})],
    })
    return build_pipeline(code_db, s, embed_model=embed_model, today=TODAY)


@pytest.mark.parametrize("role", ["rep", "supervisor"])
def test_example_components_run_in_the_pipeline_and_appear_in_the_trace(role, example_pipeline, code_db):
    result = example_pipeline.ask(AskRequest(user_name=f"codes-{role}",
                                             question="What does § 3.2 say about corrected claims?"))
    assert result.error is None and not result.refused, result.refusal_message
    corrected = chunk(code_db, "CODES-DESK", "corrected claim")
    fraud = chunk(code_db, "CODES-SIU", "investigations")
    imaging = chunk(code_db, "CODES-AUTH", "Advanced imaging")
    assert corrected in result.context_ids and imaging in result.context_ids
    assert (fraud in result.context_ids) is (role == "supervisor")
    if role == "rep":
        assert not any("investigations unit" in p for p in result.prompts)
    with code_db.owner.connect() as conn:
        inst = conn.execute(text("SELECT answer->'instrumentation' FROM traces WHERE id = :i"),
                            {"i": result.trace_id}).scalar_one()
    components = {c["name"]: c for c in inst["components"]}
    assert list(components) == ["dense", "text", "policy_codes", "cross_references"]
    assert components["policy_codes"] == {"name": "policy_codes", "kind": "retriever", "built_in": False,
                                          "nodes": 1, "dropped": 0}
    cross = components["cross_references"]
    assert cross["kind"] == "postprocessor" and cross["nodes"] >= cross["nodes_in"]
    assert inst["guard"]["dropped"] == [] and inst["guard"]["checked"] >= 1
