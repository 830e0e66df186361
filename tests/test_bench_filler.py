"""The scale bench's realistic filler, its vector file, and the HNSW recall sweep, on the demo scale.

No timings are asserted: the bench and the sweep print those. These pin what their figures
rest on: the same texts for the same seed, vectors that are the model's, rows that carry the
access levels and products the filters select on, and a recall that is measured against an
exact scan of the same predicate.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import typer
import yaml
from sqlalchemy import text

from policydesk.bench import policy_text
from policydesk.bench.cli import bench_command
from policydesk.bench.recall import recall_at_k
from policydesk.bench.scale import EMBED_DIM, insert_filler
from policydesk.bench.vector_file import FillerVectorFile
from policydesk.ingest.chunking import embed_text

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"


def _sweep_module():
    spec = importlib.util.spec_from_file_location("hnsw_sweep", REPO / "benchmarks" / "hnsw_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def filled_db(make_db, embed_model, settings, tmp_path_factory):
    """The demo corpus plus 240 realistic filler chunks."""
    db = make_db(demo=True)  # the demo corpus, ingested (a copy of the session's ingested template)
    cache = tmp_path_factory.mktemp("bench_filler")
    report = insert_filler(db, 240, filler="realistic", embed_model=embed_model, cache_dir=cache)
    return db, report, cache


def test_generator_gives_the_same_texts_for_a_seed_and_a_prefix_for_fewer():
    first = list(itertools.islice(policy_text.documents(5), 30))
    again = list(itertools.islice(policy_text.documents(5), 10))
    other = list(itertools.islice(policy_text.documents(6), 10))
    assert first[:10] == again
    assert [d.versions for d in other] != [d.versions for d in again]
    assert policy_text.questions(8, seed=3) == policy_text.questions(8, seed=3)
    texts = [t for d in first for v in d.versions for t in v]
    assert len(set(d.topic for d in first)) > 10  # many topics, not copies of a few
    assert all(20 <= len(t.split()) <= 160 for t in texts)


def test_a_later_policy_version_rewrites_one_or_two_sections():
    docs = [d for d in itertools.islice(policy_text.documents(9), 200) if len(d.versions) > 1]
    assert docs and all(d.source_type == "policy" for d in docs)
    for d in docs:
        for old, new in zip(d.versions, d.versions[1:]):
            changed = sum(a != b for a, b in zip(old, new))
            assert changed <= 2 and len(old) == len(new)
    # at least some revisions change text (a redrawn sentence can come out the same)
    assert any(old != new for d in docs for old, new in zip(d.versions, d.versions[1:]))


def test_generated_text_names_no_demo_document():
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text())
    ids = {s["id"] for s in manifest["sources"]}
    titles = {s["title"] for s in manifest["sources"] if s.get("title")}
    texts = [d.title + " " + t for d in itertools.islice(policy_text.documents(8), 500)
             for v in d.versions for t in v]
    assert ids and titles
    for t in texts:
        assert not any(i in t for i in ids)
        assert not any(title in t for title in titles)


def test_vector_file_embeds_each_text_once_and_survives_a_torn_tail(tmp_path, embed_model):
    texts = ["Prior authorization is required for sleep studies.", "Hearing aids are covered once every 36 months.",
             "Prior authorization is required for sleep studies."]
    vf = FillerVectorFile(tmp_path, embed_model, EMBED_DIM)
    vectors, stats = vf.vectors(texts)
    expected = np.array(embed_model.get_text_embedding_batch(texts[:2]))
    assert vectors.shape == (3, EMBED_DIM)
    assert np.allclose(vectors[:2], expected, atol=1e-5) and np.array_equal(vectors[0], vectors[2])
    assert (stats["embedded_now"], stats["from_file"]) == (2, 0)

    again, stats = FillerVectorFile(tmp_path, embed_model, EMBED_DIM).vectors(texts[::-1])
    assert stats["embedded_now"] == 0 and np.array_equal(again, vectors[::-1])

    # A run killed after writing a row but before its hash line: the row is not read, and the
    # next append starts where the hashes end.
    with (vf.directory / "vectors.f32").open("ab") as f:
        np.ones(EMBED_DIM, np.float32).tofile(f)
    more = ["Ambulance transport needs a signed order."]
    got, stats = FillerVectorFile(tmp_path, embed_model, EMBED_DIM).vectors(texts + more)
    assert stats["embedded_now"] == 1
    assert np.allclose(got[3], embed_model.get_text_embedding_batch(more)[0], atol=1e-5)
    assert np.array_equal(got[:3], vectors)
    assert (vf.directory / "vectors.f32").stat().st_size == 3 * EMBED_DIM * 4


def test_recall_counts_a_tied_row_as_found():
    exact = [("a", 0.1), ("b", 0.2), ("c", 0.3)]
    assert recall_at_k([("a", 0.1), ("b", 0.2), ("c", 0.3)], exact) == (1.0, 1.0)
    # "c2" has c's vector (the same text in another version): not the same id, the same distance
    assert recall_at_k([("a", 0.1), ("b", 0.2), ("c2", 0.3)], exact) == (pytest.approx(2 / 3), 1.0)
    assert recall_at_k([("a", 0.1), ("x", 0.5), ("y", 0.6)], exact) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert recall_at_k([], exact) == (0.0, 0.0)


def test_realistic_filler_rows_carry_model_vectors_levels_and_products(filled_db, embed_model):
    db, report, _ = filled_db
    assert report["filler_mode"] == "realistic" and report["filler"] == 240
    with db.owner.connect() as conn:
        rows = conn.execute(text(
            "SELECT text, metadata_->>'title', access_level, sensitive, line_of_business, embedding::text "
            "FROM data_chunks WHERE node_id LIKE 'SYN-%' ORDER BY node_id")).all()
        versions = conn.execute(text("SELECT count(*) FROM document_versions WHERE doc_id LIKE 'SYN-%'")).scalar()
    assert len(rows) == 240 and versions >= 60
    assert {r[2] for r in rows} >= {"public", "internal", "restricted"}
    assert any(r[4] for r in rows), "some filler policies name a product"
    assert {p for r in rows if r[4] for p in r[4]} <= set(report["products"]) and report["products"]
    # the stored vector is the model's embedding of what ingest would embed (title, then text)
    for body, title, *_, vec in rows[:3]:
        stored = np.array(json.loads(vec))
        want = np.array(embed_model.get_text_embedding(embed_text(title, body)))
        assert np.allclose(stored, want, atol=1e-5)


def test_realistic_filler_embeds_nothing_the_second_time(make_db, embed_model, filled_db):
    _, _, cache = filled_db
    db = make_db()  # no corpus: no product names to give the filler
    report = insert_filler(db, 240, filler="realistic", embed_model=embed_model, cache_dir=cache)
    assert report["embedded_now"] == 0 and report["from_file"] == report["distinct_texts"] > 0
    assert report["products"] == []
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM data_chunks WHERE line_of_business IS NOT NULL")).scalar() == 0


def test_filler_kind_is_checked(make_db):
    with pytest.raises(ValueError, match="unknown filler"):
        insert_filler(make_db(), 10, filler="copies")
    with pytest.raises(typer.BadParameter, match="--filler"):
        bench_command(scale=10, queries=1, repetitions=1, keep=False, torch_threads=1, filler="copies")


def test_sweep_measures_every_filter_against_an_exact_scan_and_restores_the_index(
        filled_db, settings, embed_model, tmp_path):
    db, _, _ = filled_db
    with db.owner.connect() as conn:
        before = conn.execute(text("SELECT indexdef FROM pg_indexes "
                                   "WHERE indexname = 'data_chunks_embedding_hnsw'")).scalar_one()
    sweep = _sweep_module()
    argv = [db.owner_url.database, "--configs", "8:32", "--builds", "1", "--ef", "40", "--iterative",
            "relaxed_order,off", "--queries", "3", "--filler-queries", "2", "--exact-timing-queries", "2",
            "--out", str(tmp_path), "--reference", str(tmp_path / "reference.json")]
    path = sweep.run(settings, argv, embed_model=embed_model)
    out = json.loads(path.read_text())
    assert out["filler_mode"] == "realistic" and out["queries"] == 5 and out["exact_reference_s"] > 0
    names = set(out["cases"])
    assert {"rep_public_internal_~88pct", "supervisor_~98pct", "compliance_role_100pct"} <= names
    assert any(n.startswith("rep_product_") for n in names)
    (build,) = out["builds"]
    assert (build["m"], build["ef_construction"]) == (8, 32)
    assert [(s["iterative_scan"], s["ef_search"]) for s in build["settings"]] == [("relaxed_order", 40), ("off", 40)]
    for name, timing in build["exact_path_ms"].items():  # the arm with index scans off: exact, so recall 1
        assert timing["plan"] == "exact" and timing["recall_by_distance_min"] == 1.0, name
    for setting in build["settings"]:
        assert set(setting["cases"]) == names
        for case in setting["cases"].values():
            assert 0.0 <= case["recall_by_distance"]["min"] <= case["recall_by_distance"]["mean"] <= 1.0
            assert case["plan"] in ("hnsw", "exact")
            if case["plan"] == "exact":  # an exact plan finds exactly what the reference scan finds
                assert case["recall_by_distance"]["mean"] == 1.0
    rows = sweep.table(path).splitlines()  # the docs table: one row per build and setting
    assert len(rows) == 2 + 2 and all(r.startswith("| 8 / 32 | 1 (") for r in rows[2:])
    # the exact reference is kept and reused for the same database and queries
    no_builds = [("0" if a == "1" and argv[i - 1] == "--builds" else a) for i, a in enumerate(argv)]
    again = json.loads(sweep.run(settings, no_builds, embed_model=embed_model).read_text())
    assert again["exact_reference_s"] == 0.0 and again["cases"] == out["cases"]
    with db.owner.connect() as conn:
        after = conn.execute(text("SELECT indexdef FROM pg_indexes "
                                  "WHERE indexname = 'data_chunks_embedding_hnsw'")).scalar_one()
    assert after == before
