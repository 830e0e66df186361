"""Line of business (issue 18): the product filter sits beside the access predicate, in SQL and
under row-level security; variants are never picked silently; the trace keeps the product."""

from __future__ import annotations

import re
import uuid

import pytest
import yaml
from sqlalchemy import event, select, text
from sqlalchemy.dialects import postgresql

from policydesk.accounts.access import ROLES, Clearance, clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.ingest import IngestError, ingest_directory
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from policydesk.storage.chain import verify_chain
from policydesk.storage.models import Chunk, DocumentVersion
from policydesk.storage.predicate import access_clause, access_filters
from policydesk.storage.scope import scoped_session
from tests.conftest import CORPUS, table_counts
from tests.test_retrieval import PROBES, _reads_policy_text, _where_clause

PRODUCTS = ("commercial", "medicaid", "medicare_advantage")
SUPPLY = "What is the maximum days supply of a maintenance drug in one fill?"
LIMITS = {"commercial": "90-day supply", "medicare_advantage": "100-day supply", "medicaid": "34-day supply"}
EDITION = {"commercial": "POL-RXS-COM", "medicare_advantage": "POL-RXS-MA", "medicaid": "POL-RXS-MCD"}


def _sql(clause) -> str:
    return str(clause.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))


def _chunk_facts(db) -> dict[str, tuple[str, bool, list | None, str]]:
    with db.owner.connect() as conn:
        return {r.node_id: (r.access_level, r.sensitive, r.line_of_business, r.text) for r in conn.execute(
            select(Chunk.node_id, Chunk.access_level, Chunk.sensitive, Chunk.line_of_business, Chunk.text))}


@pytest.fixture
def asker(demo_db):
    from sqlalchemy.orm import Session

    from policydesk.accounts.users import add_user

    names = {}
    with Session(demo_db.owner) as session, session.begin():
        for role in ROLES:
            names[role] = f"lob-{role}-{uuid.uuid4().hex[:6]}"
            add_user(session, name=names[role], role=role, password="correct horse battery staple")
    return names


# -- the predicate -------------------------------------------------------------------------------

def test_product_clause_sits_beside_the_access_clause_and_only_when_chosen():
    rep = clearance_for("rep")
    assert "line_of_business" not in _sql(access_clause(rep, Chunk))
    clause = _sql(access_clause(rep.for_product("medicaid"), Chunk))
    assert clause == ("data_chunks.access_level IN ('public', 'internal') AND NOT data_chunks.sensitive "
                      "AND (data_chunks.line_of_business IS NULL OR (data_chunks.line_of_business ? 'medicaid'))")
    assert "document_versions.line_of_business ? 'medicaid'" in _sql(
        access_clause(clearance_for("compliance").for_product("medicaid"), DocumentVersion))
    nested = access_filters(rep.for_product("medicaid")).filters[-1]
    assert nested.condition == "or"
    assert [(f.key, f.operator, f.value) for f in nested.filters] == [
        ("line_of_business", "is_empty", None), ("line_of_business", "contains", "medicaid")]


@pytest.mark.parametrize("name", ["Medicaid", "x' OR true --", "", "a" * 65])
def test_a_product_that_is_not_a_name_never_reaches_sql(name):
    bad = clearance_for("rep").for_product(name)
    with pytest.raises(ValueError, match="refusing to build a predicate for line of business"):
        access_clause(bad, Chunk)
    with pytest.raises(ValueError, match="refusing to build a predicate for line of business"):
        access_filters(bad)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("product", PRODUCTS)
def test_predicate_and_row_level_security_agree_per_product(role, product, demo_db):
    clearance = clearance_for(role).for_product(product)
    with demo_db.owner.connect() as conn:
        by_predicate = set(conn.execute(select(Chunk.node_id).where(access_clause(clearance, Chunk))).scalars())
    with scoped_session(demo_db.app, clearance) as session:  # RLS alone, no predicate of ours
        by_rls = set(session.execute(text("SELECT node_id FROM data_chunks")).scalars())
        versions = set(session.execute(text("SELECT doc_id FROM document_versions")).scalars())
        searched = set(session.execute(text("SELECT node_id FROM policydesk_text_search('supply', 200)")).scalars())
    assert by_predicate and by_predicate == by_rls
    others = {d for p, d in EDITION.items() if p != product}
    assert EDITION[product] in versions and not versions & others
    assert any(n.startswith(EDITION[product]) for n in searched)
    assert not any(n.split(":")[0] in others for n in by_rls | searched)


def test_every_statement_that_reads_chunks_carries_the_product(demo_db, pipeline, asker):
    statements: list[str] = []

    def spy(conn, cursor, statement, parameters, context, executemany):
        if isinstance(parameters, dict) and parameters.get("product"):
            statement += f" /* scope product: {parameters['product']} */"
        statements.append(statement)

    engines = (demo_db.app, demo_db.app_async.sync_engine)
    for e in engines:
        event.listen(e, "before_cursor_execute", spy)
    try:
        result = pipeline.ask(AskRequest(user_name=asker["rep"], question=SUPPLY, line_of_business="medicaid"))
    finally:
        for e in engines:
            event.remove(e, "before_cursor_execute", spy)
    assert result.answerable, result.abstain_reason
    # The refusal gate's own reads are the one deliberate exception: it must know what exists
    # above the caller to refuse a restricted topic (policydesk/screening/topics.py), and it returns no text.
    from policydesk.screening import topics

    # (On a corpus this small its nearest-section test runs in memory: no statement of its own.)
    gate = {str(q) for q in (topics._COUNT_SQL, topics._VECTORS_SQL, topics._SIGNATURE_SQL)}
    statements = [s for s in statements if re.sub(r"%\((\w+)\)s", r":\1", s) not in gate]
    chunk_reads = [s for s in statements if re.search(r"\b(FROM|JOIN)\s+(public\.)?data_chunks\b", s, re.I)]
    assert any("policydesk_text_search" in s for s in chunk_reads), "the spy saw no full-text read"
    assert any("embedding <=>" in s for s in chunk_reads), "the spy saw no dense read"
    for sql in chunk_reads:
        where = _where_clause(sql)
        assert "access_level" in where, sql
        assert re.search(r"line_of_business.{0,40}'(\[\"medicaid\"\]|medicaid)'", where, re.S), sql
    version_reads = [s for s in statements if _reads_policy_text(s) and "jsonb_array_elements_text" not in s]
    missing = [s for s in version_reads if "medicaid" not in _where_clause(s)]
    assert version_reads and not missing, missing
    # The row-level-security layer gets the same product on every scoped transaction.
    assert any("/* scope product: medicaid */" in s for s in statements)


# -- behaviour -----------------------------------------------------------------------------------

@pytest.mark.parametrize("product", PRODUCTS)
def test_variant_question_cites_only_the_chosen_products_policy(product, pipeline, asker):
    result = pipeline.ask(AskRequest(user_name=asker["rep"], question=SUPPLY, line_of_business=product))
    assert result.answerable, result.abstain_reason
    assert LIMITS[product] in result.answer
    cited = {c.doc_id for c in result.citations}
    assert EDITION[product] in cited
    assert not cited & (set(EDITION.values()) - {EDITION[product]})
    assert not any(c.split(":")[0] in set(EDITION.values()) - {EDITION[product]} for c in result.context_ids)
    data = result.to_json()
    assert data["line_of_business"] == product
    edition = next(c for c in data["citations"] if c["doc_id"] == EDITION[product])
    assert edition["line_of_business"] == [product]
    assert "line_of_business" not in [w.kind for w in result.warnings]


def test_variant_question_without_a_product_warns_and_picks_none(pipeline, asker, demo_db):
    result = pipeline.ask(AskRequest(user_name=asker["rep"], question=SUPPLY))
    assert result.abstained and result.abstain_code == "line_of_business"
    assert result.answer == "" and result.citations == []
    warning = next(w for w in result.warnings if w.kind == "line_of_business")
    for doc in EDITION.values():
        assert doc in warning.message
    assert result.to_json()["line_of_business"] is None
    with demo_db.owner.connect() as conn:
        row = conn.execute(text("SELECT line_of_business, abstained, warnings FROM traces WHERE id = :i"),
                           {"i": result.trace_id}).one()
    assert row.line_of_business is None and row.abstained
    assert "line_of_business" in [w["kind"] for w in row.warnings]


def test_a_rule_for_every_product_answers_the_same_with_or_without_a_product(pipeline, asker):
    q = "What is the timely filing limit?"
    plain = pipeline.ask(AskRequest(user_name=asker["rep"], question=q))
    scoped = pipeline.ask(AskRequest(user_name=asker["rep"], question=q, line_of_business="medicare_advantage"))
    assert plain.answerable and scoped.answerable
    assert "90 days" in scoped.answer
    assert [c.chunk_id for c in scoped.citations if c.doc_id == "POL-TF"] == \
        [c.chunk_id for c in plain.citations if c.doc_id == "POL-TF"]


def test_unknown_product_is_an_error_listing_the_valid_ones(pipeline, asker, demo_db):
    result = pipeline.ask(AskRequest(user_name=asker["rep"], question=SUPPLY, line_of_business="dental"))
    assert result.error_code == "unknown_line_of_business"
    assert result.error == "unknown line of business 'dental'; valid: commercial, medicaid, medicare_advantage"
    assert not result.answerable and result.citations == [] and result.context_ids == []
    with demo_db.owner.connect() as conn:
        row = conn.execute(text("SELECT status, error, line_of_business FROM traces WHERE id = :i"),
                           {"i": result.trace_id}).one()
    assert row.status == "failed" and "dental" in row.error and row.line_of_business is None


@pytest.mark.parametrize("role", ROLES)
def test_nothing_above_clearance_or_of_another_product_reaches_results_or_prompts(role, demo_db, embed_model,
                                                                                   pipeline, asker):
    facts = _chunk_facts(demo_db)
    for product in PRODUCTS:
        clearance = clearance_for(role).for_product(product)
        forbidden = {n for n, (level, sens, lob, _) in facts.items() if not clearance.permits(level, sens, lob)}
        assert any(n.split(":")[0] in EDITION.values() for n in forbidden)
        retriever = HybridRetriever(chunk_vector_store(demo_db), embed_model, clearance=clearance, top_k=50,
                                    arm_top_k=50)
        for q in PROBES + [SUPPLY]:
            for arm in retriever.arms:  # each arm's raw Postgres rows, before fusion
                assert not {n.node.node_id for n in arm.retrieve(q)} & forbidden, (role, product, q)
        for q in (SUPPLY, PROBES[0], PROBES[1]):
            result = pipeline.ask(AskRequest(user_name=asker[role], question=q, line_of_business=product))
            assert not set(result.context_ids) & forbidden
            assert not {c.chunk_id for c in result.citations} & forbidden
            # Text only a forbidden chunk holds (two editions may share a sentence word for word).
            # What reached a model, or (no model) the policy text shown.
            shown = result.prompts + [p.text for p in result.passages]
            assert shown or not result.answerable, (role, product, q)
            hidden = {facts[n][3] for n in forbidden} - {t for n, (*_, t) in facts.items() if n not in forbidden}
            for text_ in [*shown, result.answer]:
                assert not [t for t in hidden if t in text_], (role, product, q)


def test_replay_and_trace_carry_the_product(pipeline, asker, demo_db):
    from datetime import date

    from policydesk.proof import disputes
    from policydesk.storage.models import Trace
    from sqlalchemy.orm import Session

    first = pipeline.ask(AskRequest(user_name=asker["rep"], question=SUPPLY, line_of_business="medicaid"))
    with Session(demo_db.owner) as session:
        trace = session.get(Trace, first.trace_id)
        session.expunge(trace)
    assert trace.line_of_business == "medicaid"
    again = disputes.replay(pipeline, trace, date(2025, 6, 1), reviewer=asker["compliance"])
    assert again.line_of_business == "medicaid" and "34-day supply" in again.answer
    with demo_db.owner.connect() as conn:
        row = conn.execute(text("SELECT kind, line_of_business FROM traces WHERE id = :i"), {"i": again.trace_id}).one()
    assert (row.kind, row.line_of_business) == ("replay", "medicaid")


# -- the hash chain across the new column ----------------------------------------------------------

def test_rows_written_before_the_product_column_still_verify_and_a_product_is_hashed(settings):
    from policydesk.storage.engine import create_database, open_database
    from policydesk.storage.migrate import upgrade

    name = f"policydesk_lob_chain_{uuid.uuid4().hex[:6]}"
    create_database(settings, name)
    db = open_database(settings, name)
    try:
        upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value(), "0013")
        insert = ("INSERT INTO traces (id, kind, user_name, user_role, permitted_levels, sensitive_cleared, question) "
                  "VALUES (:id, 'ask', 'alice', 'rep', ARRAY['public'], false, 'q')")
        old = uuid.uuid4()
        with db.owner.begin() as conn:
            conn.execute(text(insert), {"id": old})
        upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value(), "head")
        assert verify_chain(db.owner).ok  # the old row's hash did not move
        with db.owner.begin() as conn:
            conn.execute(text(insert.replace("question)", "question, line_of_business)")
                              .replace("'q')", "'q', 'medicaid')")), {"id": uuid.uuid4()})
            conn.execute(text(insert), {"id": uuid.uuid4()})
        report = verify_chain(db.owner)
        assert report.ok and report.rows == 3
        with db.owner.begin() as conn:  # a product written onto the old row afterwards shows
            conn.execute(text("UPDATE traces SET line_of_business = 'commercial' WHERE id = :id"), {"id": old})
        broken = verify_chain(db.owner).broken
        assert broken is not None and broken.row_id == str(old)
    finally:
        db.dispose()


# -- ingest ----------------------------------------------------------------------------------------

def _manifest(tmp_path, declared, products):
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text())
    entry = next(e for e in manifest["sources"] if e["id"] == "POL-RXS-MA")
    root = tmp_path / "c"
    (root / "policies").mkdir(parents=True)
    (root / entry["file"]).write_bytes((CORPUS / entry["file"]).read_bytes())
    data = {"sources": [dict(entry, line_of_business=products)]}
    if declared is not None:
        data = {"lines_of_business": declared, **data}
    (root / "manifest.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


@pytest.mark.parametrize("declared, products, message", [
    (["commercial", "medicaid"], ["medicare_advantage"],
     "policies/pol-rxs-ma-v1.pdf: line_of_business: 'medicare_advantage' is not one of the manifest's "
     "lines_of_business: commercial, medicaid"),
    (None, "medicaid", "policies/pol-rxs-ma-v1.pdf: line_of_business: must be a non-empty list of product names"),
    (None, ["Medicare Advantage"], "line_of_business: 'Medicare Advantage' is not a product name"),
    ("medicaid", ["medicaid"], "manifest.yaml: lines_of_business: must be a non-empty list"),
])
def test_manifest_product_errors_refuse_the_ingest_and_write_nothing(declared, products, message, demo_db,
                                                                     embed_model, settings, tmp_path):
    root = _manifest(tmp_path, declared, products)
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match=re.escape(message)):
        ingest_directory(demo_db, root, embed_model, settings)
    assert table_counts(demo_db) == before


def test_ingest_stores_the_products_on_versions_chunks_and_the_side_table(demo_db):
    with demo_db.owner.connect() as conn:
        versions = dict(conn.execute(text(
            "SELECT doc_id, line_of_business FROM document_versions WHERE doc_id LIKE 'POL-RXS-%' OR doc_id = 'POL-TF'")).all())
        side = conn.execute(text(
            "SELECT count(*) FROM chunk_search s, unnest(s.node_ids) AS u(id) JOIN data_chunks c ON c.node_id = u.id "
            "WHERE s.line_of_business IS DISTINCT FROM c.line_of_business")).scalar_one()
        every = conn.execute(text("SELECT count(*) FROM data_chunks WHERE line_of_business IS NULL")).scalar_one()
    assert versions == {"POL-RXS-COM": ["commercial"], "POL-RXS-MA": ["medicare_advantage"],
                        "POL-RXS-MCD": ["medicaid"], "POL-TF": None}
    assert side == 0 and every > 100


def test_clearance_permits_follows_the_product():
    c = Clearance(role="t", levels=("public",), sensitive=False).for_product("medicaid")
    assert c.permits("public", False, None) and c.permits("public", False, ["medicaid", "commercial"])
    assert not c.permits("public", False, ["commercial"])
    assert c.for_product(None).permits("public", False, ["commercial"])
