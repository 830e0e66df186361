"""Permission-scoped hybrid retrieval: the predicate is in SQL, RLS backs it, nothing leaks."""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from sqlalchemy import event, text

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.ingest.chunks import make_node, row_metadata
from policydesk.retrievers import HybridRetriever, chunk_vector_store, split_question
from policydesk.storage.scope import permitted_scope
from tests.db_helpers import insert_chunk_rows

# Questions aimed at every level, including restricted and compliance-only topics.
PROBES = [
    "What is the timely filing limit?",
    "SIU fraud referral case scoring threshold",
    "provider contract rate schedule percent of Medicare for specialists",
    "How fast must we report a complaint to the state regulator?",
    "call quality audit pass score",
    "behavioral health caller crisis",
    "supervisor escalation after repeated calls",
    "what is the timely filing limit and how do I file an appeal?",
]


def _retriever(db, embed_model, role, **kw):
    c = clearance_for(role)
    return HybridRetriever(chunk_vector_store(db), embed_model, clearance=c, **kw)


@pytest.fixture
def chunk_sql_spy(demo_db):
    statements: list[str] = []

    def spy(conn, cursor, statement, parameters, context, executemany):
        # Bound levels (the side-path read binds them) are written into the text we check, so
        # a literal and a bound predicate are held to the same rule.
        if isinstance(parameters, dict) and isinstance(parameters.get("levels"), (list, tuple)):
            statement += " /* bound levels: " + ", ".join(f"'{v}'" for v in parameters["levels"]) + " */"
        statements.append(statement)

    event.listen(demo_db.app, "before_cursor_execute", spy)
    event.listen(demo_db.app_async.sync_engine, "before_cursor_execute", spy)
    yield statements
    event.remove(demo_db.app, "before_cursor_execute", spy)
    event.remove(demo_db.app_async.sync_engine, "before_cursor_execute", spy)


def _reads_policy_text(sql: str) -> bool:
    return bool(re.search(r"\b(FROM|JOIN)\s+(public\.)?(data_chunks|document_versions)\b", sql, re.I))


def _where_clause(sql: str) -> str:
    m = re.search(r"\bWHERE\b(.*?)(\bORDER BY\b|\bLIMIT\b|$)", sql, re.I | re.S)
    bound = re.search(r"/\* bound levels: (.*?) \*/", sql)
    return (m.group(1) if m else "") + (bound.group(1) if bound else "")


def _add_synthetic_chunks(db, demo_db, n: int, level_for) -> None:
    """n chunks whose embeddings are real demo-chunk embeddings plus small noise (random
    Gaussian vectors would make any HNSW index look broken), then ANALYZE."""
    with demo_db.owner.connect() as conn:
        base = conn.execute(text("SELECT text, embedding::text FROM data_chunks WHERE metadata_->>'source_type' = 'policy'")).all()
    rng = np.random.default_rng(7)
    rows = []
    for i in range(n):
        txt, emb = base[i % len(base)]
        vec = np.array(emb.strip("[]").split(","), dtype=np.float32) + rng.normal(0, 0.02, 384).astype(np.float32)
        vec /= np.linalg.norm(vec)
        meta = {"chunk_id": f"SYN-{i}:v1:s", "title": "Synthetic", "version": 1, "section": "S", "section_id": "s",
                "source_type": "policy", "effective_from": "2024-01-01", "effective_to": "9999-12-31",
                "supersedes": None, "superseded_by": None, "date_basis": "date_of_service",
                "access_level": level_for(i), "sensitive": False, "owner": "t", "related_policies": [],
                "source_file": "x", "text_sha256": "0"}
        node = make_node(f"SYN-{i}", txt, meta)
        rows.append(dict(node_id=node.node_id, text=txt, metadata_=row_metadata(node), embedding=vec.tolist()))
    insert_chunk_rows(db, rows)  # a bulk load: the HNSW index built once over the rows (tests/db_helpers.py)
    with db.owner.begin() as conn:
        conn.execute(text("ANALYZE data_chunks"))


@pytest.mark.parametrize("role", ROLES)
def test_no_chunk_above_clearance_comes_back_from_postgres(role, demo_db, embed_model, chunk_sql_spy):
    clearance = clearance_for(role)
    retriever = _retriever(demo_db, embed_model, role, top_k=50, arm_top_k=50)
    seen = 0
    for q in PROBES:
        for arm in retriever.arms:  # spy on each arm's raw rows, before fusion
            for n in arm.retrieve(q):
                seen += 1
                m = n.node.metadata
                assert clearance.permits(m["access_level"], m["sensitive"]), (role, n.node.node_id)
    assert seen > 0
    reads = [s for s in chunk_sql_spy if _reads_policy_text(s)]
    assert reads, "the spy saw no chunk reads"
    for sql in reads:
        where = _where_clause(sql)
        assert "access_level" in where, sql
        levels_in_sql = set(re.findall(r"'(public|internal|restricted|compliance)'", where))
        assert levels_in_sql == set(clearance.levels), sql
        if not clearance.sensitive:
            assert "sensitive" in where, sql


def test_rep_sees_less_than_compliance_for_the_same_restricted_question(demo_db, embed_model):
    q = "SIU fraud referral case scoring threshold"
    rep = {n.node.node_id for n in _retriever(demo_db, embed_model, "rep").search(q).nodes}
    comp = {n.node.node_id for n in _retriever(demo_db, embed_model, "compliance").search(q).nodes}
    assert not any(i.startswith("POL-SIU") for i in rep)
    assert any(i.startswith("POL-SIU") for i in comp)


def test_raw_select_as_rep_returns_no_restricted_row(demo_db):
    with permitted_scope(clearance_for("rep")):
        with demo_db.app.connect() as conn:
            rows = conn.execute(text("SELECT metadata_->>'access_level', (metadata_->>'sensitive')::boolean FROM data_chunks")).all()
            versions = conn.execute(text("SELECT access_level, sensitive FROM document_versions")).all()
            docs = conn.execute(text("SELECT doc_id FROM documents")).scalars().all()
    assert rows and versions
    assert {lvl for lvl, _ in rows} == {"public", "internal"}
    assert not any(s for _, s in rows) and not any(s for _, s in versions)
    assert "POL-SIU" not in docs and "POL-RATE" not in docs  # even titles of restricted documents


def test_missing_scope_setting_yields_no_rows_not_all_rows(demo_db):
    with demo_db.app.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM document_versions")).scalar_one() == 0
    with demo_db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one() > 0


def test_app_role_cannot_switch_off_rls(demo_db):
    with pytest.raises(Exception, match="permission|must be owner|denied"):
        with demo_db.app.begin() as conn:
            conn.execute(text("ALTER TABLE data_chunks DISABLE ROW LEVEL SECURITY"))
    # row_security = off makes Postgres raise rather than silently filter; it never shows all rows.
    with pytest.raises(Exception, match="would be affected by row-level security"):
        with demo_db.app.begin() as conn:
            conn.execute(text("SET row_security = off; SELECT 1 FROM data_chunks"))


def test_search_retrieve_and_aretrieve_return_the_same_nodes(demo_db, embed_model):
    r = _retriever(demo_db, embed_model, "rep")
    q = "how long do members have to appeal a denial?"
    searched = [n.node.node_id for n in r.search(q).nodes]
    assert searched == [n.node.node_id for n in r.retrieve(q)]
    assert searched == [n.node.node_id for n in asyncio.run(r.aretrieve(q))] and searched


def test_fusion_is_deterministic_and_deduplicated_by_chunk_id(demo_db, embed_model):
    r = _retriever(demo_db, embed_model, "compliance")
    runs = [[n.node.node_id for n in r.search("timely filing limit for claims").nodes] for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) == len(set(runs[0]))


def test_the_top_k_counts_sections_not_versions_of_them(demo_db, embed_model):
    # A policy's versions repeat a section nearly word for word: both versions rank side by side
    # and, counted apart, take two of the k places for one section. Counted as sections, the best
    # version stands for its section and the k places hold k different sections.
    from policydesk.retrievers.hybrid import section_key

    question = "What is the timely filing limit for a claim?"
    bare = _retriever(demo_db, embed_model, "rep", top_k=8).search(question).nodes
    assert len({section_key(n) for n in bare}) < len(bare)  # versions of one section take two places
    counted = _retriever(demo_db, embed_model, "rep", top_k=8, one_version_per_section=True).search(question).nodes
    keys = [section_key(n) for n in counted]
    assert len(keys) == 8 and len(set(keys)) == 8
    assert {section_key(n) for n in bare} <= set(keys)  # every section the bare cut had is still there
    first_in_bare = {}
    for b in bare:
        first_in_bare.setdefault(section_key(b), b.node.node_id)
    # and the best-ranked version of each section is the one that stands for it
    assert all(n.node.node_id == first_in_bare[section_key(n)] for n in counted if section_key(n) in first_in_bare)


def test_multi_part_question_is_split_and_both_parts_retrieved(demo_db, embed_model):
    q = "what is the timely filing limit and how do I file an appeal?"
    assert split_question(q) == ["what is the timely filing limit", "how do I file an appeal"]
    assert split_question("prior authorization and referrals for equipment") == ["prior authorization and referrals for equipment"]
    result = _retriever(demo_db, embed_model, "rep").search(q)
    ids = [n.node.node_id for n in result.nodes]
    assert any(i.startswith("POL-TF") for i in ids) and any(i.startswith("POL-APL") for i in ids)


class _BrokenEmbedding:
    """Stands in for a provider whose quota is exhausted."""

    def get_query_embedding(self, query):
        raise RuntimeError("429 RESOURCE_EXHAUSTED: embedding quota exceeded")


@pytest.mark.parametrize("role", ROLES)
def test_embedding_failure_degrades_to_full_text_under_the_same_predicate(role, demo_db):
    c = clearance_for(role)
    r = HybridRetriever(chunk_vector_store(demo_db), _BrokenEmbedding(), clearance=c)
    for result in (r.search("SIU fraud referral timely filing appeal"), r.search("timely filing limit")):
        assert result.degraded and "RESOURCE_EXHAUSTED" in result.degraded_reason
        assert result.nodes, "full-text fallback still answers"
        for n in result.nodes:
            assert c.permits(n.node.metadata["access_level"], n.node.metadata["sensitive"])
            assert n.node.metadata["retrieval_degraded"] is True


def test_composes_with_llama_index_query_fusion_retriever(demo_db, embed_model):
    hybrid = _retriever(demo_db, embed_model, "rep")
    # num_queries=1: no query generation, so the LLM (a MockLLM) is never called.
    fusion = QueryFusionRetriever([hybrid], llm=MockLLM(), num_queries=1, mode="reciprocal_rerank",
                                  use_async=False, similarity_top_k=5)
    nodes = fusion.retrieve("What is the timely filing limit?")
    assert nodes and all(n.node.metadata["access_level"] in ("public", "internal") for n in nodes)
    assert any(n.node.node_id.startswith("POL-TF") for n in nodes)


def test_access_predicate_can_use_its_index(demo_db):
    """EXPLAIN of the emitted predicate; at 123 rows Postgres prefers a seq scan, so the
    planner is asked to avoid one to show the expression index serves the predicate."""
    sql = ("SELECT id FROM data_chunks WHERE metadata_->>'access_level' IN ('public', 'internal') "
           "AND metadata_->>'sensitive' = 'false'")
    with demo_db.owner.begin() as conn:
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        plan = "\n".join(conn.execute(text("EXPLAIN " + sql)).scalars())
    assert "data_chunks_access_level" in plan, plan


def test_filtered_hnsw_top_k_returns_k_for_a_small_permitted_fraction(make_db, embed_model, demo_db):
    """pgvector applies WHERE after the HNSW scan; without iterative scans a selective filter
    under-returns. 2% of rows are visible to the rep here."""
    db = make_db()
    # 60 rows of 3000 visible to a rep.
    _add_synthetic_chunks(db, demo_db, 3000, lambda i: "public" if i % 50 == 0 else "restricted")
    rep = clearance_for("rep")
    retriever = HybridRetriever(chunk_vector_store(db), embed_model, clearance=rep,
                                top_k=10, arm_top_k=10)
    dense = retriever.arms[0]
    q = "timely filing limit for claims"
    # With the access-level index the planner takes the exact path for a 2% filter: recall 1.0.
    got = dense.retrieve(q)
    assert len(got) == 10 and all(n.node.metadata["access_level"] == "public" for n in got)

    # Without it, the HNSW index is the only ordered path: iterative scans must keep it from
    # under-returning, and switching them off shows what they fix.
    with db.owner.begin() as conn:
        conn.execute(text("DROP INDEX data_chunks_access_level; DROP INDEX data_chunks_metadata; DROP INDEX data_chunks_scope"))
    sql = text("SELECT id FROM data_chunks WHERE metadata_->>'access_level' IN ('public', 'internal') "
               "ORDER BY embedding <=> CAST(:q AS vector) LIMIT 10")
    qvec = {"q": str(embed_model.get_query_embedding(q))}
    counts = {}
    for mode in ("relaxed_order", "off"):
        with permitted_scope(rep), db.app.begin() as conn:
            conn.execute(text(f"SET LOCAL enable_seqscan = off; SET LOCAL hnsw.iterative_scan = {mode}"))
            plan = "\n".join(conn.execute(text("EXPLAIN " + sql.text), qvec).scalars())
            assert "data_chunks_embedding_hnsw" in plan, plan
            counts[mode] = len(conn.execute(sql, qvec).all())
    assert counts["relaxed_order"] == 10
    assert counts["off"] < 10


def test_planner_estimates_the_rep_predicate_from_statistics(make_db, demo_db):
    """Regression (migration 0004): with no statistics on metadata_->>'sensitive' the planner
    assumed 0.5% of rows passed the rep's predicate (12 of 2,700 here) and chose a full scan
    and sort over the HNSW index."""
    db = make_db()
    _add_synthetic_chunks(db, demo_db, 3000, lambda i: "public" if i % 10 else "restricted")  # 90% visible
    sql = ("EXPLAIN SELECT id FROM data_chunks WHERE metadata_->>'access_level' IN ('public', 'internal') "
           "AND metadata_->>'sensitive' = 'false'")
    with permitted_scope(clearance_for("rep")), db.app.begin() as conn:
        plan = "\n".join(conn.execute(text(sql)).scalars())
    estimated = int(re.search(r"rows=(\d+)", plan).group(1))
    assert estimated >= 0.3 * 2700, plan
