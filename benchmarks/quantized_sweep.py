"""halfvec and binary-quantized HNSW indexes beside the float32 one, on a kept scale database.

On a database kept by `policydesk bench --scale N --keep`, each variant's index is built next to
the production one (build time, size, the server's peak resident memory; maintenance_work_mem and
workers as given), then every bench filter (policydesk/bench/recall.py `bench_cases`) runs every
question on the application login under its scope and the configured POLICYDESK_HNSW_* settings:

- `vector`: the production statement's shape on the float32 index (embedding <=> q);
- `halfvec`: an expression index on embedding::halfvec(D), the same ordering in half precision;
- `binary`: an expression index on binary_quantize(embedding)::bit(D) (Hamming), its top
  `--rerank` candidates re-ordered by the full vector's cosine distance.

Recall@10 is against an exact scan of the same predicate (owner login, index scans off), kept in
--reference and reused. The variant indexes are dropped at the end unless --leave-indexes.

    POLICYDESK_DATA_DIR=/tmp/scale/data1m .venv/bin/python benchmarks/quantized_sweep.py DBNAME \
        --variants vector,halfvec,binary --m 16 --ef-construction 64 --maintenance-work-mem 4GB --workers 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from policydesk.bench import stages
from policydesk.bench.memory import PeakRSS
from policydesk.bench.recall import bench_cases, exact_top_k, recall_at_k
from policydesk.bench.scale import EMBED_DIM
from policydesk.config import get_settings
from policydesk.providers import local_embedding
from policydesk.storage.engine import open_database
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause
from policydesk.storage.scope import permitted_scope

D = EMBED_DIM
INDEXES = {
    "halfvec": ("data_chunks_embedding_halfvec", f"((embedding::halfvec({D})) halfvec_cosine_ops)"),
    "binary": ("data_chunks_embedding_bit", f"((binary_quantize(embedding)::bit({D})) bit_hamming_ops)"),
}


def _statement(variant: str, where: str, rerank: int) -> str:
    if variant == "vector":
        return (f"SELECT node_id, embedding <=> CAST(:q AS vector({D})) AS d FROM data_chunks WHERE {where} "
                "ORDER BY d LIMIT 10")
    if variant == "halfvec":
        return (f"SELECT node_id, embedding <=> CAST(:q AS vector({D})) AS d FROM data_chunks WHERE {where} "
                f"ORDER BY embedding::halfvec({D}) <=> CAST(:q AS halfvec({D})) LIMIT 10")
    return (f"SELECT node_id, embedding <=> CAST(:q AS vector({D})) AS d FROM ("
            f"SELECT node_id, embedding FROM data_chunks WHERE {where} "
            f"ORDER BY binary_quantize(embedding)::bit({D}) <~> binary_quantize(CAST(:q AS vector({D}))) "
            f"LIMIT {int(rerank)}) c ORDER BY d LIMIT 10")


def _build(db, variant: str, m: int, efc: int, mwm: str, workers: int | None) -> dict:
    name, expr = INDEXES[variant]
    with PeakRSS(db) as rss, db.owner.begin() as conn:
        conn.execute(text("SELECT set_config('maintenance_work_mem', :m, true)"), {"m": mwm})
        if workers is not None:
            conn.execute(text("SELECT set_config('max_parallel_maintenance_workers', :w, true)"), {"w": str(workers)})
        conn.execute(text(f"DROP INDEX IF EXISTS {name}"))
        t0 = time.perf_counter()
        conn.execute(text(f"CREATE INDEX {name} ON data_chunks USING hnsw {expr} WITH (m = {m}, ef_construction = {efc})"))
        seconds = time.perf_counter() - t0
        size = conn.execute(text(f"SELECT pg_relation_size('{name}')")).scalar_one()
    with db.owner.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE data_chunks"))
    return {"index": name, "build_s": round(seconds, 1), "bytes": size, "server_peak_rss_bytes": rss.peak,
            "loadavg": os.getloadavg()}


def _reference(db, cases, embs, path: Path | None) -> dict:
    if path is not None and path.exists():
        saved = json.loads(path.read_text())
        if saved["queries"] == len(embs):
            return {n: [[tuple(x) for x in q] for q in v] for n, v in saved["exact"].items()}
    exact = {c.name: [exact_top_k(db, c, list(e), 10) for e in embs] for c in cases}
    if path is not None:
        path.write_text(json.dumps({"queries": len(embs), "exact": exact}))
    return exact


def run(argv=None) -> Path:
    settings = get_settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("database")
    ap.add_argument("--variants", default="vector,halfvec,binary")
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=64)
    ap.add_argument("--maintenance-work-mem", default="4GB")
    ap.add_argument("--workers", type=int, default=None, help="max_parallel_maintenance_workers")
    ap.add_argument("--rerank", type=int, default=100, help="binary: candidates re-ordered by the full vector")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--reference", type=Path)
    ap.add_argument("--leave-indexes", action="store_true")
    ap.add_argument("--out", type=Path, default=settings.DATA_DIR / "bench")
    args = ap.parse_args(argv)

    embed = local_embedding(settings)
    questions, _ = stages.load_questions(args.queries)
    embs = [embed.get_query_embedding(q.text) for q in questions]
    db = open_database(settings, args.database)
    cases = bench_cases(db)
    exact = _reference(db, cases, embs, args.reference)
    out = {"database": args.database, "queries": len(questions), "args": vars(args) | {"reference": str(args.reference),
           "out": str(args.out)}, "variants": {}}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"quantized_sweep_{datetime.now(timezone.utc):%Y%m%dT%H%M%S}.json"
    try:
        for variant in args.variants.split(","):
            entry = (_build(db, variant, args.m, args.ef_construction, args.maintenance_work_mem, args.workers)
                     if variant in INDEXES else {"index": "data_chunks_embedding_hnsw"})
            entry["cases"] = {}
            for case in cases:
                where = str(access_clause(case.clearance, Chunk.__table__).compile(
                    dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
                sql = _statement(variant, where, args.rerank)
                lat, rec = [], []
                for e, want in zip(embs, exact[case.name]):
                    q = "[" + ",".join(f"{x:.7f}" for x in e) + "]"
                    with permitted_scope(case.clearance), db.app.begin() as conn:
                        t0 = time.perf_counter()
                        got = [tuple(r) for r in conn.execute(text(sql), {"q": q}).all()]
                        lat.append((time.perf_counter() - t0) * 1000)
                    rec.append(recall_at_k(got, want)[1])
                with permitted_scope(case.clearance), db.app.begin() as conn:
                    plan = "\n".join(r[0] for r in conn.execute(text("EXPLAIN " + sql), {"q": q}))
                entry["cases"][case.name] = {
                    "p50_ms": round(float(np.percentile(lat, 50)), 2), "p95_ms": round(float(np.percentile(lat, 95)), 2),
                    "recall_mean": round(float(np.mean(rec)), 3), "recall_min": round(float(np.min(rec)), 2),
                    "uses_index": entry["index"] in plan}
                print(json.dumps({"variant": variant, "case": case.name, **entry["cases"][case.name]}), flush=True)
            out["variants"][variant] = entry
            path.write_text(json.dumps(out, indent=1, default=str))
    finally:
        if not args.leave_indexes:
            with db.owner.begin() as conn:
                for name, _ in INDEXES.values():
                    conn.execute(text(f"DROP INDEX IF EXISTS {name}"))
        db.dispose()
    print(f"saved {path}")
    return path


if __name__ == "__main__":
    run(sys.argv[1:])
    raise SystemExit(0)
