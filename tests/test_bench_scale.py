"""The scale bench's 10^6 machinery on a small scale: derived filler vectors, the index rebuild's
parameters, where its dumps go, and ef_search by corpus size.

No timings are asserted (the bench prints those): these pin what its figures rest on.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from llama_index.core.schema import QueryBundle
from sqlalchemy import text

from policydesk.bench import policy_text
from policydesk.bench.recall import CASES, exact_top_k, filtered_checks
from policydesk.bench.scale import HNSW_INDEX, IndexBuild, insert_filler
from policydesk.config import Settings
from policydesk.ingest.chunking import embed_text
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.scoped import ArmConfig, PermissionScopedRetriever
from policydesk.storage.engine import open_database

SEED = 8  # insert_filler's default


def _rows(db) -> list[tuple[str, str, np.ndarray]]:
    with db.owner.connect() as conn:
        rows = conn.execute(text("SELECT node_id, text, embedding::text FROM data_chunks "
                                 "WHERE node_id LIKE 'SYN-%' ORDER BY node_id")).all()
    return [(r[0], r[1], np.array(r[2].strip("[]").split(","), dtype=np.float32)) for r in rows]


@pytest.fixture(scope="module")
def derived_db(make_db, embed_model, tmp_path_factory):
    db = make_db()
    cache = tmp_path_factory.mktemp("derived_filler")
    report = insert_filler(db, 400, filler="realistic", embed_model=embed_model, cache_dir=cache, embed_limit=120,
                           build=IndexBuild(m=8, ef_construction=32, maintenance_work_mem="64MB", parallel_workers=0))
    return db, report, cache


def test_a_filler_past_the_limit_embeds_only_the_limit_and_derives_the_rest(derived_db, make_db, embed_model):
    db, report, cache = derived_db
    derived = report["derived_vectors"]
    assert report["filler"] == 400 and report["embedded_now"] == 120
    assert derived["derived"] == report["distinct_texts"] - 120 > 0
    assert 0 < derived["nn_cosine_derived"] < 1 and 0 < derived["nn_cosine_embedded"] < 1
    rows = _rows(db)
    assert len(rows) == 400
    assert np.allclose([np.linalg.norm(v) for _, _, v in rows], 1.0, atol=1e-4)
    # the same text gets the same vector (a section a later version left unchanged)
    by_text: dict[str, np.ndarray] = {}
    for _, t, v in rows:
        assert t not in by_text or np.allclose(by_text[t], v, atol=1e-5)
        by_text.setdefault(t, v)
    # a second filler of the same size embeds nothing
    again = insert_filler(make_db(), 400, filler="realistic", embed_model=embed_model, cache_dir=cache, embed_limit=120)
    assert again["embedded_now"] == 0 and again["from_file"] == 120


def test_a_derived_vector_sits_with_its_own_topic(derived_db):
    db, _, _ = derived_db
    docs = [d for _, d in zip(range(400), policy_text.documents(SEED, 4))]
    first = list(dict.fromkeys(embed_text(d.title, t) for d in docs for v in d.versions for t in v))[:120]
    embedded_texts = set(first)
    embedded, derived = [], []
    for node_id, _, v in _rows(db):
        k, ver, sec = (int(x) for x in re.match(r"SYN-D(\d+):v(\d+):s(\d+)", node_id).groups())
        doc = docs[k]
        (embedded if embed_text(doc.title, doc.versions[ver - 1][sec]) in embedded_texts else derived).append(
            (doc.topic, v))
    topics = {t for t, _ in embedded}
    derived = [(t, v) for t, v in derived if t in topics]
    assert len(derived) > 30
    matrix = np.array([v for _, v in embedded])
    nearest = [embedded[int(np.argmax(matrix @ v))][0] == own for own, v in derived]
    assert np.mean(nearest) > 0.8


def test_the_rebuild_takes_the_given_hnsw_parameters_and_reports_each_index(derived_db):
    db, report, _ = derived_db
    with db.owner.connect() as conn:
        ddl = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :i"), {"i": HNSW_INDEX}).scalar_one()
    assert "m='8'" in ddl and "ef_construction='32'" in ddl
    indexes = report["indexes"]
    assert indexes["maintenance_work_mem"] == "64MB" and indexes["parallel_workers"] == 0
    assert indexes[HNSW_INDEX]["bytes"] > 0 and indexes[HNSW_INDEX]["build_s"] >= 0
    assert report["table_bytes"] > 0


def test_filtered_checks_write_their_plans_where_they_are_told(derived_db, embed_model, tmp_path):
    db, _, _ = derived_db
    results = filtered_checks(db, embed_model, ["Is prior authorization required for sleep studies?"],
                              tmp_path / "explain", "t")
    written = {p.name for p in (tmp_path / "explain").iterdir()}
    assert {f"t_dense_{c.name}.txt" for c in CASES} <= written
    assert all(r["recall_at_10_by_distance_mean"] >= 0 for r in results if "recall_at_10_by_distance_mean" in r)


@pytest.mark.parametrize("small_rows, large_rows, ef", [(10**6, 0, "37"), (1, 0, "211"), (0, 1, "53"),
                                                         (0, 10**6, "211"), (10**6, 10**7, "37")])
def test_a_table_searches_with_the_ef_search_of_its_size(derived_db, settings, embed_model, small_rows, large_rows, ef):
    db, _, _ = derived_db
    configured = settings.model_copy(update={"HNSW_SMALL_BELOW_ROWS": small_rows, "HNSW_EF_SEARCH_SMALL": 37,
                                             "HNSW_LARGE_FROM_ROWS": large_rows, "HNSW_EF_SEARCH_LARGE": 53,
                                             "HNSW_EF_SEARCH": 211})
    app = open_database(configured, db.owner.url.database)
    try:
        with app.app.begin() as conn:
            assert conn.execute(text("SHOW hnsw.ef_search")).scalar_one() == ef
        case = CASES[4]  # the rep's filter
        question = "How many hearing aids are covered?"
        emb = embed_model.get_query_embedding(question)
        arm = PermissionScopedRetriever(chunk_vector_store(app), embed_model,
                                        ArmConfig(clearance=case.clearance, top_k=10, mode="dense"))
        got = [n.node.node_id for n in arm.retrieve(QueryBundle(question, embedding=emb))]
        assert len(got) == 10 and len(set(got) & {r[0] for r in exact_top_k(db, case, list(emb), 10)}) >= 8
    finally:
        app.dispose()


def test_a_large_tier_below_the_small_one_is_refused():
    with pytest.raises(ValueError, match="HNSW_LARGE_FROM_ROWS .* is below .*HNSW_SMALL_BELOW_ROWS"):
        Settings(_env_file=None, ENVIRONMENT="test", HNSW_SMALL_BELOW_ROWS=20_000, HNSW_LARGE_FROM_ROWS=10_000)
    assert Settings(_env_file=None, ENVIRONMENT="test", HNSW_SMALL_BELOW_ROWS=20_000,
                    HNSW_LARGE_FROM_ROWS=500_000).HNSW_LARGE_FROM_ROWS == 500_000
