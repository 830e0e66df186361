"""The HNSW index's build parameters and the planner statistics the filtered dense arm relies on
(migration 0015; figures in docs/performance.md, "Retrieval at scale")."""

from __future__ import annotations

import re
import uuid

import numpy as np
from sqlalchemy import text

from policydesk.accounts.access import clearance_for
from policydesk.ingest.chunks import make_node, row_metadata
from policydesk.storage.engine import create_database, open_database
from policydesk.storage.migrate import alembic_config, upgrade
from policydesk.storage.scope import permitted_scope
from tests.db_helpers import insert_chunk_rows

INDEX = "data_chunks_embedding_hnsw"
# What migration 0015 records, chosen by the recall sweeps (docs/performance.md).
M, EF_CONSTRUCTION = 32, 400


def _index_parameters(db) -> dict[str, int]:
    with db.owner.connect() as conn:
        indexdef = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :i"), {"i": INDEX}).scalar_one()
    assert "USING hnsw (embedding vector_cosine_ops)" in indexdef, indexdef
    return {k: int(v) for k, v in re.findall(r"(m|ef_construction)='(\d+)'", indexdef)}


def _statistics(db) -> set[str]:
    with db.owner.connect() as conn:
        return set(conn.execute(text("SELECT stxname FROM pg_statistic_ext")).scalars())


def test_head_builds_the_index_with_the_measured_parameters(make_db):
    assert _index_parameters(make_db()) == {"m": M, "ef_construction": EF_CONSTRUCTION}


def test_a_database_built_otherwise_is_rebuilt_with_the_measured_parameters(settings):
    from alembic import command

    name = f"policydesk_hnsw_{uuid.uuid4().hex[:6]}"
    create_database(settings, name)
    db = open_database(settings, name)
    try:
        upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value(), "head")
        assert "data_chunks_product_expr" in _statistics(db)
        with db.owner.begin() as conn:
            command.downgrade(alembic_config(conn, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value()), "0014")
        assert "data_chunks_product_expr" not in _statistics(db)
        with db.owner.begin() as conn:  # an index tuned by hand (or the m = 16 / 64 of migrations before 0013)
            conn.execute(text(f"DROP INDEX {INDEX}; CREATE INDEX {INDEX} ON data_chunks USING hnsw "
                              "(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"))
        upgrade(db.owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value(), "head")
        assert _index_parameters(db) == {"m": M, "ef_construction": EF_CONSTRUCTION}
        assert "data_chunks_product_expr" in _statistics(db)
    finally:
        db.dispose()


def test_planner_estimates_the_product_predicate_from_statistics(make_db, demo_db):
    """Regression (migration 0015): with no statistics on metadata_->>'line_of_business' the
    planner took the product clause (`IS NULL OR @> [product]`) as selective: 135 of 8,041
    matching rows estimated at 10^4 chunks, so the rep's dense arm with a product chose an exact
    scan (60-120 ms) over the HNSW index (3-15 ms) that the same filter without a product took."""
    db = make_db()
    with demo_db.owner.connect() as conn:
        base = conn.execute(text("SELECT text, embedding::text FROM data_chunks LIMIT 50")).all()
    rng = np.random.default_rng(15)
    rows = []
    for i in range(3000):
        txt, emb = base[i % len(base)]
        vec = np.array(emb.strip("[]").split(","), dtype=np.float32) + rng.normal(0, 0.02, 384).astype(np.float32)
        meta = {"chunk_id": f"SYN-{i}:v1:s", "title": "Synthetic", "version": 1, "section": "S", "section_id": "s",
                "source_type": "policy", "effective_from": "2024-01-01", "effective_to": "9999-12-31",
                "supersedes": None, "superseded_by": None, "date_basis": "date_of_service",
                "access_level": "public", "sensitive": False, "owner": "t", "related_policies": [],
                "source_file": "x", "text_sha256": "0"}
        if i % 10 == 0:  # one source in ten is for one product; the rest apply to every product
            meta["line_of_business"] = ["medicaid" if i % 20 else "commercial"]
        node = make_node(f"SYN-{i}", txt, meta)
        rows.append(dict(node_id=node.node_id, text=txt, metadata_=row_metadata(node),
                         embedding=(vec / np.linalg.norm(vec)).tolist()))
    insert_chunk_rows(db, rows)  # a bulk load: the HNSW index built once over the rows (tests/db_helpers.py)
    with db.owner.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE data_chunks"))
    # the dense arm's product clause, as PGVectorStore renders the metadata filters
    sql = ("EXPLAIN SELECT id FROM data_chunks WHERE metadata_->>'access_level' IN ('public', 'internal') "
           "AND metadata_->>'sensitive' = 'false' AND (metadata_->>'line_of_business' IS NULL "
           "OR metadata_::jsonb->'line_of_business' @> '[\"commercial\"]')")
    with permitted_scope(clearance_for("rep").for_product("commercial")), db.app.begin() as conn:
        plan = "\n".join(conn.execute(text(sql)).scalars())
    estimated = int(re.search(r"rows=(\d+)", plan).group(1))
    assert estimated >= 0.3 * 2850, plan  # 2,700 for every product + 150 for commercial
