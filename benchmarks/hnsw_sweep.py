"""Filtered dense recall@10 against an exact scan, for HNSW build parameters x ef_search.

On a database kept by `policydesk bench --scale N --keep`, for each (m, ef_construction) the HNSW
index on data_chunks is rebuilt (build time and size recorded), then for each ef_search the
production dense arm (`PermissionScopedRetriever` on the application login, under RLS, with the
scope hook's `hnsw.ef_search`) runs the golden questions for every filter of the bench
(policydesk/bench/scale.py CASES); recall@10 is against the same predicate with index scans off.
The plan each filter took (HNSW or an exact scan) is recorded: a high ef_search raises the HNSW
path's cost estimate until the planner prefers an exact scan. The index is left as migration
head defines it. Prints one JSON object and saves it under
benchmarks/results/.

    POLICYDESK_DATA_DIR=/tmp/pdbench/data .venv/bin/python benchmarks/hnsw_sweep.py DBNAME \
        --configs 16:64,16:200,32:200 --ef 40,100,200,400 --queries 30
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from llama_index.core.schema import QueryBundle
from sqlalchemy import text

from policydesk.bench import stages
from policydesk.bench.scale import CASES, _Capture, _exact, _explain, _matching
from policydesk.config import get_settings
from policydesk.providers import offline_embedding
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.scoped import ArmConfig, PermissionScopedRetriever
from policydesk.storage.engine import open_database

INDEX = "data_chunks_embedding_hnsw"
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def _rebuild(db, m: int, efc: int) -> dict:
    t0 = time.perf_counter()
    with db.owner.begin() as conn:
        conn.execute(text("SET LOCAL maintenance_work_mem = '512MB'"))
        conn.execute(text(f"DROP INDEX IF EXISTS {INDEX}"))
        conn.execute(text(f"CREATE INDEX {INDEX} ON data_chunks USING hnsw (embedding vector_cosine_ops) "
                          f"WITH (m = {int(m)}, ef_construction = {int(efc)})"))
    build = time.perf_counter() - t0
    with db.owner.connect() as conn:
        size = conn.execute(text(f"SELECT pg_relation_size('{INDEX}')")).scalar_one()
    return {"build_s": round(build, 2), "index_mb": round(size / 2**20, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("database")
    ap.add_argument("--configs", default="16:64,16:200,32:200")
    ap.add_argument("--ef", default="40,100,200,400")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args(argv)

    settings = get_settings()
    embed = offline_embedding(settings.EMBED_BATCH_SIZE, 1)
    questions, _ = stages.load_questions(args.queries)
    qtexts = [q.text for q in questions]
    embs = [embed.get_query_embedding(q) for q in qtexts]
    dbs = {ef: open_database(settings.model_copy(update={"HNSW_EF_SEARCH": ef}), args.database)
           for ef in (int(x) for x in args.ef.split(","))}
    owner_db = next(iter(dbs.values()))
    with owner_db.owner.connect() as conn:
        original = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :i"), {"i": INDEX}).scalar_one()
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
    exact = {c.name: [{n for n, _ in _exact(owner_db, c, list(e), args.k)} for e in embs] for c in CASES}
    matching = {c.name: _matching(owner_db, c) for c in CASES}
    out = {"database": args.database, "rows": total, "queries": len(qtexts), "k": args.k,
           "loadavg_start": os.getloadavg(), "configs": []}
    try:
        for spec in args.configs.split(","):
            m, efc = (int(x) for x in spec.split(":"))
            entry = {"m": m, "ef_construction": efc, **_rebuild(owner_db, m, efc), "by_ef_search": {}}
            for ef, db in dbs.items():
                store = chunk_vector_store(db)
                cap = _Capture(db.app)
                cases = {}
                for case in CASES:
                    arm = PermissionScopedRetriever(store, embed, ArmConfig(clearance=case.clearance, top_k=args.k,
                                                                            mode="dense"))
                    recalls, lat = [], []
                    for q, e, want in zip(qtexts, embs, exact[case.name]):
                        t0 = time.perf_counter()
                        got = {n.node.node_id for n in arm.retrieve(QueryBundle(q, embedding=e))}
                        lat.append((time.perf_counter() - t0) * 1000)
                        recalls.append(len(got & want) / max(1, len(want)))
                    plan = _explain(db, case.clearance, cap.statement, cap.params)
                    cases[case.name] = {"fraction": round(matching[case.name] / total, 3),
                                        "plan": "hnsw" if INDEX in plan else "exact",
                                        "recall_mean": round(float(np.mean(recalls)), 3),
                                        "recall_min": round(float(np.min(recalls)), 2),
                                        "p50_ms": round(float(np.percentile(lat, 50)), 2),
                                        "p95_ms": round(float(np.percentile(lat, 95)), 2)}
                entry["by_ef_search"][ef] = cases
                print(json.dumps({"m": m, "ef_construction": efc, "ef_search": ef, "build_s": entry["build_s"],
                                  **{k: (v["recall_mean"], v["recall_min"], v["p50_ms"], v["plan"])
                                     for k, v in cases.items()}}),
                      flush=True)
            out["configs"].append(entry)
    finally:
        with owner_db.owner.begin() as conn:
            conn.execute(text(f"DROP INDEX IF EXISTS {INDEX}"))
            conn.execute(text("SET LOCAL maintenance_work_mem = '512MB'"))
            conn.execute(text(original))
        for db in dbs.values():
            db.dispose()
    out["loadavg_end"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"hnsw_sweep_{datetime.now(timezone.utc):%Y%m%dT%H%M%S}.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
