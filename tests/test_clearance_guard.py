"""The clearance guard (issue 21): whatever an extension component returns, nothing above the
caller's clearance reaches version resolution, a prompt, an answer or a page; each attempt is
dropped, counted and logged naming the component. Adversarial, for every role.

The leaky components (tests/extension_helpers.py) read through the owner login, around every
layer a real extension is given, and forge `access_level: public` into their nodes' metadata.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest
from sqlalchemy import text

from policydesk.ops import metrics
from policydesk.accounts.access import clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.evals.leaks import ChunkCatalog
from policydesk.pipeline import build_pipeline
from policydesk.postprocessors.guard import verdict
from policydesk.storage import guard_read
from policydesk.storage.clearance import Clearance
from tests import extension_helpers as helpers
from tests.conftest import WEB_TODAY
from tests.web_helpers import ask, sign_in

ROLES = ("rep", "supervisor", "compliance")
QUESTION = "What is the timely filing limit for a claim?"


@pytest.fixture(scope="module")
def catalog(demo_db) -> ChunkCatalog:
    return ChunkCatalog(demo_db)


@pytest.fixture(scope="module")
def with_components(demo_db, settings, embed_model, pipeline):
    helpers.OWNER_ENGINES["demo"] = demo_db.owner

    def _build(retrievers=(), postprocessors=()):
        s = settings.model_copy(update={"RETRIEVERS": list(retrievers), "POSTPROCESSORS": list(postprocessors)})
        return build_pipeline(demo_db, s, embed_model=embed_model, today=WEB_TODAY, gate=pipeline.gate)

    return _build


def drops(component: str, reason: str) -> float:
    return metrics.REGISTRY.get_sample_value(
        "policydesk_clearance_guard_drops_total", {"component": component, "reason": reason}) or 0.0


def trace_instrumentation(db, trace_id) -> dict:
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT answer->'instrumentation' FROM traces WHERE id = :i"),
                            {"i": trace_id}).scalar_one()


def assert_nothing_above_clearance(result, role: str, catalog: ChunkCatalog) -> None:
    assert result.error is None, result.error
    assert [c for c in result.context_ids if not catalog.permitted(role, c)] == []
    assert [c.chunk_id for c in result.citations if not catalog.permitted(role, c.chunk_id)] == []
    assert catalog.restricted_in_text(role, "\n".join(result.prompts)) == set()
    assert catalog.restricted_in_text(role, result.answer) == set()


@pytest.mark.parametrize("role", ["rep", "supervisor"])  # compliance may read every chunk: nothing to leak
def test_leaky_retriever_is_dropped_counted_and_logged_before_version_resolution(
        role, with_components, staff, catalog, demo_db, caplog):
    pipeline = with_components(retrievers=[helpers.spec("leaky", "LeakyRetriever", source="demo")])
    before = drops("leaky", "not_readable")
    with caplog.at_level(logging.WARNING, logger="policydesk.extensions.stack"):
        result = pipeline.ask(AskRequest(user_name=staff[role], question=QUESTION))
    assert_nothing_above_clearance(result, role, catalog)
    assert result.answerable  # the built-in arms still answer
    inst = trace_instrumentation(demo_db, result.trace_id)
    leaky = [c for c in inst["components"] if c["name"] == "leaky"]
    assert leaky == [{"name": "leaky", "kind": "retriever", "built_in": False, "nodes": 3, "dropped": 3}]
    dropped = inst["guard"]["dropped"]
    # Positive control: what it returned really was above the clearance, and it all got dropped.
    assert dropped and all(not catalog.permitted(role, d["chunk_id"]) for d in dropped)
    assert {(d["component"], d["reason"], d["stage"]) for d in dropped} == {("leaky", "not_readable", "retrieval")}
    assert drops("leaky", "not_readable") - before == len(dropped)
    logged = [r.getMessage() for r in caplog.records if "leak attempt" in r.getMessage()]
    assert len(logged) == len(dropped) and all("component leaky" in m and f"role {role}" in m for m in logged)
    assert [r.event for r in caplog.records if "leak attempt" in r.getMessage()] == ["leak_attempt"] * len(dropped)


@pytest.mark.parametrize("role", ["rep", "supervisor"])
def test_leaky_postprocessor_is_dropped_before_the_prompt(role, with_components, staff, catalog, demo_db):
    pipeline = with_components(postprocessors=[helpers.spec("leaky_pp", "LeakyPostprocessor", source="demo")])
    before = drops("leaky_pp", "not_readable")
    result = pipeline.ask(AskRequest(user_name=staff[role], question=QUESTION))
    assert_nothing_above_clearance(result, role, catalog)
    inst = trace_instrumentation(demo_db, result.trace_id)
    pp = [c for c in inst["components"] if c["name"] == "leaky_pp"][0]
    assert pp["kind"] == "postprocessor" and pp["nodes"] == pp["nodes_in"] + 2
    assert {(d["component"], d["stage"]) for d in inst["guard"]["dropped"]} == {("leaky_pp", "context")}
    assert drops("leaky_pp", "not_readable") - before == 2


@pytest.mark.parametrize("role", ROLES)
def test_a_permitted_id_carrying_other_text_is_dropped_for_every_role(role, with_components, staff, demo_db,
                                                                      catalog):
    pipeline = with_components(retrievers=[helpers.spec("forger", "ForgingRetriever", source="demo")])
    before = drops("forger", "text_mismatch")
    result = pipeline.ask(AskRequest(user_name=staff[role], question=QUESTION))
    assert_nothing_above_clearance(result, role, catalog)
    inst = trace_instrumentation(demo_db, result.trace_id)
    assert [(d["component"], d["reason"]) for d in inst["guard"]["dropped"]] == [("forger", "text_mismatch")]
    assert drops("forger", "text_mismatch") - before == 1
    # The id it borrowed may still be in context, but only with the text stored under it.
    forged_id = inst["guard"]["dropped"][0]["chunk_id"]
    with demo_db.owner.connect() as conn:
        stored = conn.execute(text("SELECT text FROM data_chunks WHERE node_id = :i"), {"i": forged_id}).scalar_one()
    assert forged_id not in result.context_ids or all(stored in p for p in result.prompts)


@pytest.mark.parametrize("role", ROLES)
def test_nodes_from_another_store_never_reach_the_prompt(role, with_components, staff, demo_db):
    pipeline = with_components(retrievers=[helpers.spec("foreign", "ForeignRetriever")])
    result = pipeline.ask(AskRequest(user_name=staff[role], question=QUESTION))
    assert result.error is None and result.answerable
    assert "EXT-STORE:v1:notes" not in result.context_ids
    assert not any("400 days" in p for p in result.prompts) and "400 days" not in result.answer
    inst = trace_instrumentation(demo_db, result.trace_id)
    assert inst["guard"]["dropped"] == [{"chunk_id": "EXT-STORE:v1:notes", "reason": "not_readable",
                                         "component": "foreign", "stage": "retrieval"}]


def test_leaky_components_never_reach_the_rep_page(with_components, settings, demo_db, staff, catalog):
    from policydesk.web.app import create_app

    pipeline = with_components(retrievers=[helpers.spec("leaky", "LeakyRetriever", source="demo", k=6)],
                               postprocessors=[helpers.spec("leaky_pp", "LeakyPostprocessor", source="demo")])
    client = sign_in(create_app(settings, db=demo_db, pipeline=pipeline), staff["rep"])
    before = drops("leaky", "not_readable") + drops("leaky_pp", "not_readable")
    page = ask(client, QUESTION)
    assert page.status_code == 200
    assert "timely filing" in page.text.lower()
    assert catalog.restricted_in_text("rep", page.text) == set()
    assert drops("leaky", "not_readable") + drops("leaky_pp", "not_readable") - before >= 3
    metrics_page = client.get("/metrics").text
    assert 'policydesk_clearance_guard_drops_total{component="leaky",reason="not_readable"}' in metrics_page


@pytest.fixture(scope="module")
def golden_by_role(pipeline, staff, demo_db):
    """Every golden question (dev and test splits) asked as every role through the built-in
    pipeline (no extensions)."""
    from policydesk.evals.golden import EVALS_DIR, SPLITS, load_golden

    total = lambda: sum(s.value for m in metrics.CLEARANCE_GUARD_DROPS.collect()  # noqa: E731
                        for s in m.samples if s.name.endswith("_total"))
    before = total()
    ids = []
    items = load_golden([EVALS_DIR / f"golden_{split}.yaml" for split in SPLITS]).items
    for item in items:
        for role in ROLES:
            result = pipeline.ask(AskRequest(user_name=staff[role], question=item.question,
                                             dates=item.date_inputs(), kind="eval"))
            ids.append(str(result.trace_id))
    with demo_db.owner.connect() as conn:
        rows = conn.execute(text("SELECT answer->'instrumentation'->'guard' FROM traces "
                                 "WHERE id = ANY(CAST(:i AS uuid[]))"), {"i": ids}).scalars().all()
    return {"items": len(items), "asked": len(ids), "guards": rows, "counter_delta": total() - before}


def test_built_in_components_never_trip_the_guard_over_golden_set_and_roles(golden_by_role):
    guards = [g for g in golden_by_role["guards"] if g is not None]  # refused before retrieval: no guard
    assert golden_by_role["items"] >= 130  # 138 (dev and test) when written
    assert golden_by_role["asked"] == len(golden_by_role["guards"]) == 3 * golden_by_role["items"]
    assert len(guards) >= 2 * golden_by_role["items"]  # most questions reach retrieval: the guard really ran
    assert sum(g["checked"] for g in guards) >= 8 * len(guards) * 0.9
    assert [d for g in guards for d in g["dropped"]] == []
    assert golden_by_role["counter_delta"] == 0


@dataclass(frozen=True)
class _Row:
    access_level: str
    sensitive: bool
    text: str
    line_of_business: list | None = None


def test_verdict_reads_stored_columns_and_checks_product_only_when_both_sides_name_one():
    rep = clearance_for("rep")
    assert verdict(None, "x", rep) == "not_readable"
    assert verdict(_Row("restricted", False, "x"), "x", rep) == "above_clearance"
    assert verdict(_Row("internal", True, "x"), "x", rep) == "above_clearance"  # sensitive, rep not cleared
    assert verdict(_Row("public", False, "x"), "y", rep) == "text_mismatch"
    assert verdict(_Row("public", False, "x", ["medicare"]), "x", rep) is None  # clearance names no product
    medicaid = rep.for_product("medicaid")
    assert verdict(_Row("public", False, "x", ["medicare"]), "x", medicaid) == "line_of_business"
    assert verdict(_Row("public", False, "x", ["medicare", "medicaid"]), "x", medicaid) is None
    assert verdict(_Row("public", False, "x", None), "x", medicaid) is None  # a row for every product
    assert verdict(_Row("public", False, "x", []), "x", medicaid) is None
    # the access rule is judged before the product: a restricted row for another product is above clearance
    assert verdict(_Row("restricted", False, "x", ["medicare"]), "x", medicaid) == "above_clearance"


def _owner_rows(db) -> dict[str, tuple]:
    with db.owner.connect() as conn:
        rows = conn.execute(text("SELECT node_id, access_level, sensitive, text, metadata_->'line_of_business' "
                                 "FROM data_chunks")).all()
    return {r[0]: tuple(r) for r in rows}


def _expected(rows: dict[str, tuple], clearance: Clearance) -> set[str]:
    product = clearance.line_of_business
    return {i for i, (_, level, sensitive, _, products) in rows.items()
            if clearance.permits(level, sensitive) and (product is None or not products or product in products)}


def test_guard_read_returns_exactly_the_permitted_rows_for_every_role_and_product(demo_db):
    # The guard's one-round-trip read (storage/guard_read.py) against the owner's view of every row.
    rows = _owner_rows(demo_db)
    products = sorted({p for r in rows.values() if r[4] for p in r[4]})
    assert products  # the demo corpus has product variants: the product branch really runs
    asked = list(rows) + ["no-such-chunk"]
    for role in ROLES:
        for product in [None, *products]:
            clearance = clearance_for(role).for_product(product)
            got = guard_read.stored_chunks(demo_db.app, chunk_ids=asked, clearance=clearance)
            assert set(got) == _expected(rows, clearance), (role, product)
            assert all(tuple(got[i]) == rows[i] for i in got)
    assert len(_expected(rows, clearance_for("rep"))) < len(rows)  # the rep really has rows withheld


def test_guard_read_is_limited_by_row_level_security_without_its_predicate(demo_db, monkeypatch):
    # The second layer: with the WHERE predicate gone, the scope the read sets still limits it.
    from sqlalchemy import true

    rows = _owner_rows(demo_db)
    guard_read._statement.cache_clear()
    monkeypatch.setattr(guard_read, "access_clause", lambda clearance, model: true())
    try:
        for role in ("rep", "supervisor"):
            clearance = clearance_for(role)
            got = guard_read.stored_chunks(demo_db.app, chunk_ids=list(rows), clearance=clearance)
            assert set(got) == _expected(rows, clearance), role
    finally:
        guard_read._statement.cache_clear()


def test_guard_read_leaves_no_open_transaction_or_scope_on_the_pooled_connection(demo_db):
    # The read sets the caller's scope in a transaction it rolls back; the next user of the same
    # pooled connection (a pool of one, so it is the same) must find it idle, with no scope,
    # reading nothing under row-level security.
    from psycopg.pq import TransactionStatus
    from sqlalchemy import create_engine

    engine = create_engine(demo_db.app.url, pool_size=1, max_overflow=0, pool_pre_ping=True)
    try:
        for _ in range(3):
            got = guard_read.stored_chunks(engine, chunk_ids=_owner_rows(demo_db), clearance=clearance_for("compliance"))
            assert got  # the read itself saw rows under its scope
            with engine.connect() as conn:
                assert conn.connection.driver_connection.info.transaction_status == TransactionStatus.IDLE
                levels = conn.execute(text("SELECT current_setting('policydesk.levels', true)")).scalar()
                visible = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar()
            assert levels in (None, "")
            assert visible == 0
    finally:
        engine.dispose()


def test_a_guard_pass_returns_what_it_found_and_keeps_nothing(demo_db, catalog):
    """`check` returns the kept nodes, the drops with their reasons and what it verified; handed
    that back, a later pass reads only what is new or changed. The guard itself keeps no record."""
    from llama_index.core.schema import NodeWithScore, TextNode

    from policydesk.postprocessors.guard import NOT_READABLE, TEXT_MISMATCH, ClearanceGuard

    rep = clearance_for("rep")
    readable = sorted(c for c in catalog.chunks if catalog.permitted("rep", c))[0]
    hidden = sorted(c for c in catalog.chunks if not catalog.permitted("rep", c))[0]
    node = lambda cid, body: NodeWithScore(node=TextNode(id_=cid, text=body), score=1.0)  # noqa: E731
    nodes = [node(readable, catalog.chunks[readable].text), node(hidden, catalog.chunks[hidden].text),
             node("NO-SUCH:v1:chunk", "made up")]
    guard = ClearanceGuard(engine=demo_db.app, clearance=rep)
    first = guard.check(nodes)
    assert [n.node.node_id for n in first.nodes] == [readable] and first.checked == 3
    # RLS hides the row from the app login, so the guard cannot tell "above clearance" from "absent".
    assert {(d.chunk_id, d.reason) for d in first.drops} == {(hidden, NOT_READABLE), ("NO-SUCH:v1:chunk", NOT_READABLE)}
    assert first.verified == {readable: catalog.chunks[readable].text}
    again = guard.check(nodes[:1], first.verified)
    assert again.checked == 0 and [n.node.node_id for n in again.nodes] == [readable]
    changed = guard.check([node(readable, "changed text")], first.verified)
    assert changed.checked == 1 and [(d.chunk_id, d.reason) for d in changed.drops] == [(readable, TEXT_MISMATCH)]
    assert guard.postprocess_nodes(nodes) == first.nodes  # LlamaIndex composition: the same check
    assert set(type(guard).model_fields) == {"callback_manager", "engine", "clearance"}  # no report on the component
